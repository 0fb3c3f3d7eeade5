package integration

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// loginError logs in to addr as user with password and returns the server's refusal.
func loginError(t *testing.T, addr, user, password string) *mysql.MySQLError {
	t.Helper()
	db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/%s", user, password, addr, env.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Ping()
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		t.Fatalf("login as %q to %s: err = %v, want a MySQL error", user, addr, err)
	}
	return me
}

// poolOf bounds the proxy's pool to the primary at n connections.
func poolOf(n int) func(*config.Config) {
	return func(c *config.Config) {
		c.Pools.MaxOpen = n
		c.Pools.MaxIdle = min(c.Pools.MaxIdle, n)
	}
}

// TestAccessDenied refuses logins in the primary's own words, whichever refuses them.
func TestAccessDenied(t *testing.T) {
	cases := []struct{ name, user, password, using string }{
		{"wrong password", env.User, "wrong", "YES"},
		{"unknown user", "gk_nobody", "secret", "YES"},
		{"unknown user without password", "gk_nobody", "", "NO"},
	}
	// What the primary itself answers this client for the same credentials.
	want := make([]*mysql.MySQLError, len(cases))
	for i, c := range cases {
		want[i] = loginError(t, env.Primary, c.user, c.password)
		text := fmt.Sprintf("Access denied for user '%s'@'127.0.0.1' (using password: %s)", c.user, c.using)
		if want[i].Number != 1045 || want[i].Message != text {
			t.Fatalf("%s: the primary says %v, want error 1045 %q", c.name, want[i], text)
		}
	}
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		for i, c := range cases {
			got := loginError(t, p.Addr, c.user, c.password)
			if got.Number != want[i].Number || got.SQLState != want[i].SQLState || got.Message != want[i].Message {
				t.Errorf("%s: through the proxy: %d (%s) %q; directly: %d (%s) %q", c.name,
					got.Number, got.SQLState[:], got.Message, want[i].Number, want[i].SQLState[:], want[i].Message)
			}
		}
		// The session counts the failure after the client has its error: wait for it.
		waitFor(t, 5*time.Second, "every refused login counted", func() bool {
			return metricValue(t, p, "gatekeeper_client_handshake_failures_total", map[string]string{"reason": "auth"}) >= float64(len(cases))
		})
		if v := metricValue(t, p, "gatekeeper_client_handshake_failures_total", map[string]string{"reason": "auth"}); v != float64(len(cases)) {
			t.Errorf("handshake failures for auth = %v, want %d", v, len(cases))
		}
		wrong := metricValue(t, p, "gatekeeper_auth_failures_total", map[string]string{"reason": "wrong_password"})
		unknown := metricValue(t, p, "gatekeeper_auth_failures_total", map[string]string{"reason": "unknown_user"})
		switch mode {
		case config.ModePassthrough:
			// The primary refuses; the proxy has no accounts of its own to count against.
			if wrong != 0 || unknown != 0 {
				t.Errorf("auth failures in passthrough: %v wrong password, %v unknown user", wrong, unknown)
			}
		case config.ModePooled:
			if wrong != 1 || unknown != 2 {
				t.Errorf("auth failures: %v wrong password, %v unknown user; want 1 and 2", wrong, unknown)
			}
		}
		waitFor(t, 5*time.Second, "the refused connections to close", func() bool { return p.Open() == 0 })
	})
}

// churn keeps n clients of their own busy through addr until stop is called: autocommit
// statements and short transactions on their own rows, each client checking its answers,
// with 0-2 ms of think time. A third of them set a time zone of their own and a third
// use server-side prepared statements. Their tables are made on the primary with setup.
// stop returns the first wrong answer or failure.
func churn(t *testing.T, setup *sql.DB, addr string, n int) (stop func() error) {
	t.Helper()
	counters, log := tableName(t)+"_churn", tableName(t)+"_churn_log"
	mustExec(t, setup, "DROP TABLE IF EXISTS "+counters+", "+log)
	mustExec(t, setup, "CREATE TABLE "+counters+" (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB")
	mustExec(t, setup, "CREATE TABLE "+log+" (id INT AUTO_INCREMENT PRIMARY KEY, who INT NOT NULL) ENGINE=InnoDB")
	var values []string
	for k := range n {
		values = append(values, fmt.Sprintf("(%d, 0)", k))
	}
	mustExec(t, setup, "INSERT INTO "+counters+" VALUES "+strings.Join(values, ", "))

	text := openDB(t, addr, "interpolateParams=true")
	binary := openDB(t, addr, "interpolateParams=false")
	for _, db := range []*sql.DB{text, binary} {
		db.SetMaxOpenConns(n)
		db.SetMaxIdleConns(n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	fail := func(k int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil && ctx.Err() == nil {
			first = fmt.Errorf("churn client %d: %w", k, err)
		}
	}
	conns := make([]*sql.Conn, n)
	for k := range n {
		db := text
		if k%3 == 1 {
			db = binary
		}
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatalf("churn client %d: %v", k, err)
		}
		conns[k] = c
	}
	// done counts the statements the clients finished: churn returns once they run.
	var done atomic.Int64
	for k, c := range conns {
		wg.Go(func() {
			defer c.Close()
			zone := "SYSTEM"
			if k%3 == 2 {
				zone = "-03:00"
				if _, err := c.ExecContext(ctx, "SET time_zone = '-03:00'"); err != nil {
					fail(k, err)
					return
				}
			}
			count := 0
			for i := 0; ctx.Err() == nil; i++ {
				var err error
				switch i % 4 {
				case 0:
					_, err = c.ExecContext(ctx, "UPDATE "+counters+" SET n = n + 1 WHERE id = ?", k)
					count++
				case 1:
					var got int
					var tz string
					err = c.QueryRowContext(ctx, "SELECT n, @@time_zone FROM "+counters+" WHERE id = ?", k).Scan(&got, &tz)
					if err == nil && (got != count || tz != zone) {
						err = fmt.Errorf("read n = %d in zone %s, want %d in %s", got, tz, count, zone)
					}
				case 2:
					var res sql.Result
					if res, err = c.ExecContext(ctx, "INSERT INTO "+log+" (who) VALUES (?)", k); err == nil {
						var id int64
						if id, err = res.LastInsertId(); err == nil && id <= 0 {
							err = fmt.Errorf("insert id %d", id)
						}
					}
				case 3:
					err = churnTransaction(ctx, c, counters, k, &count)
				}
				if err != nil {
					if ctx.Err() == nil {
						fail(k, err)
					}
					return
				}
				done.Add(1)
				time.Sleep(time.Duration(k*7919+i*104729) % (2 * time.Millisecond)) // think time
			}
		})
	}
	// A test that runs its own client beside the churn needs the connections changing
	// hands already: on a loaded machine the clients' goroutines can start late.
	waitFor(t, 30*time.Second, "the churn clients to run", func() bool {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		return failed || done.Load() >= int64(2*n)
	})
	return func() error {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return first
	}
}

// churnTransaction increments client k's counter in a transaction and checks it.
func churnTransaction(ctx context.Context, c *sql.Conn, counters string, k int, count *int) error {
	if _, err := c.ExecContext(ctx, "BEGIN"); err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, "UPDATE "+counters+" SET n = n + 1 WHERE id = ?", k); err != nil {
		return err
	}
	var got int
	if err := c.QueryRowContext(ctx, "SELECT n FROM "+counters+" WHERE id = ?", k).Scan(&got); err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	if *count++; got != *count {
		return fmt.Errorf("read n = %d in a transaction, want %d", got, *count)
	}
	return nil
}

// globalStatus returns a counter of the primary's SHOW GLOBAL STATUS.
func globalStatus(t *testing.T, db *sql.DB, name string) int64 {
	t.Helper()
	var n int64
	var ignored string
	if err := db.QueryRow("SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&ignored, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPreparedStatementsUnderChurn prepares statements once on a small *sql.DB and
// executes them from many goroutines with parameters of every type in turn, while other
// clients keep the proxy's connections busy: each execution may find its statement on a
// connection where it was never prepared.
func TestPreparedStatementsUnderChurn(t *testing.T) {
	table := tableName(t)
	setup := openDB(t, env.Primary, "")
	mustExec(t, setup, "DROP TABLE IF EXISTS "+table)
	mustExec(t, setup, "CREATE TABLE "+table+" (id INT PRIMARY KEY, v VARBINARY(64) NULL) ENGINE=InnoDB")
	var rows []string
	for i := range 64 {
		rows = append(rows, fmt.Sprintf("(%d, NULL)", i))
	}
	mustExec(t, setup, "INSERT INTO "+table+" VALUES "+strings.Join(rows, ", "))

	var (
		selectText = "SELECT CONCAT('[', COALESCE(HEX(?), 'null'), ']'), ? + 1"
		updateText = "UPDATE " + table + " SET v = ? WHERE id = ?"
		readText   = "SELECT COALESCE(HEX(v), 'null') FROM " + table + " WHERE id = ?"
	)
	// One statement, its parameter bound to values of every type in turn.
	values := []any{int64(42), "forty-two", nil, []byte{0, 1, 0xff}, time.Date(2026, 3, 4, 5, 6, 7, 800000000, time.UTC), 3.25}
	// What the primary answers for each value, and what a row written with it reads back.
	want := make([]string, len(values))
	wantStored := make([]string, len(values))
	direct := openDB(t, env.Primary, "interpolateParams=false")
	for i, v := range values {
		var a string
		var b int
		if err := direct.QueryRow(selectText, v, i).Scan(&a, &b); err != nil {
			t.Fatal(err)
		}
		want[i] = fmt.Sprintf("%s %d", a, b)
		mustExec(t, direct, updateText, v, 63)
		if err := direct.QueryRow(readText, 63).Scan(&wantStored[i]); err != nil {
			t.Fatal(err)
		}
	}

	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, poolOf(4)))
		prepares := globalStatus(t, setup, "Com_stmt_prepare")
		const churners = 12
		stopChurn := churn(t, setup, p.Addr, churners)

		db := openDB(t, p.Addr, "interpolateParams=false")
		db.SetMaxOpenConns(3)
		db.SetMaxIdleConns(3)
		sel, err := db.Prepare(selectText)
		if err != nil {
			t.Fatal(err)
		}
		defer sel.Close()
		upd, err := db.Prepare(updateText)
		if err != nil {
			t.Fatal(err)
		}
		defer upd.Close()
		read, err := db.Prepare(readText)
		if err != nil {
			t.Fatal(err)
		}
		defer read.Close()

		const workers, rounds = 8, 40
		errs := make(chan error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for r := range rounds {
					i := (w + r) % len(values)
					var a string
					var b int
					if err := sel.QueryRow(values[i], i).Scan(&a, &b); err != nil {
						errs <- fmt.Errorf("worker %d round %d: select with %T: %w", w, r, values[i], err)
						return
					}
					if got := fmt.Sprintf("%s %d", a, b); got != want[i] {
						errs <- fmt.Errorf("worker %d round %d: select with %T %v = %s, want %s", w, r, values[i], values[i], got, want[i])
						return
					}
					id := w*5 + r%5 // five rows of the worker's own
					if _, err := upd.Exec(values[i], id); err != nil {
						errs <- fmt.Errorf("worker %d round %d: update with %T: %w", w, r, values[i], err)
						return
					}
					var stored string
					if err := read.QueryRow(id).Scan(&stored); err != nil {
						errs <- fmt.Errorf("worker %d round %d: read back: %w", w, r, err)
						return
					}
					if stored != wantStored[i] {
						errs <- fmt.Errorf("worker %d round %d: wrote %T %v, read back %s, want %s", w, r, values[i], values[i], stored, wantStored[i])
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if err := stopChurn(); err != nil {
			t.Error(err)
		}
		backendPrepares := globalStatus(t, setup, "Com_stmt_prepare") - prepares
		clientPrepares := metricValue(t, p, "gatekeeper_client_commands_total", map[string]string{"command": "stmt_prepare"})
		t.Logf("prepares: %v from clients, %d on the primary", clientPrepares, backendPrepares)
		switch mode {
		case config.ModePassthrough:
			// Each client's statements live on its own backend connection: the primary
			// prepares what the clients prepare, no more. Stopping the churn cancels its
			// clients mid-command: a prepare the proxy has counted may still be on its way
			// to the primary when the primary's count is read, or die with its client's
			// connection. One per churn client at most.
			if missed := clientPrepares - float64(backendPrepares); missed < 0 || missed > churners {
				t.Errorf("the primary prepared %d statements, the clients %v", backendPrepares, clientPrepares)
			}
		case config.ModePooled:
			// A statement executed on a connection where its session never prepared it is
			// prepared there again by the proxy: the primary prepares more than the clients.
			if float64(backendPrepares) <= clientPrepares {
				t.Errorf("the primary prepared %d statements, the clients %v: no statement was prepared again on another connection", backendPrepares, clientPrepares)
			}
		}
	})
}

// stmtExecute sends COM_STMT_EXECUTE for one parameter: with its type when typ is not 0,
// without (the types bound before apply) when it is 0, NULL when value is nil.
func stmtExecute(t *testing.T, c *client.Conn, id uint32, typ byte, value []byte) {
	t.Helper()
	p := []byte{gomysql.COM_STMT_EXECUTE}
	p = binary.LittleEndian.AppendUint32(p, id)
	p = append(p, 0, 1, 0, 0, 0) // no cursor, one iteration
	if value == nil {
		p = append(p, 1) // null bitmap
	} else {
		p = append(p, 0)
	}
	if typ != 0 {
		p = append(p, 1, typ, 0)
	} else {
		p = append(p, 0)
	}
	send(t, c, append(p, value...)...)
}

// readOneString reads a binary result set of one string column and one row.
func readOneString(t *testing.T, c *client.Conn) (string, error) {
	t.Helper()
	first := read(t, c)
	if first[0] == gomysql.ERR_HEADER {
		return "", c.HandleErrorPacket(first)
	}
	if first[0] != 1 {
		t.Fatalf("column count packet = %q, want one column", first)
	}
	read(t, c) // the column definition
	if !strings.Contains(c.CapabilityString(), "CLIENT_DEPRECATE_EOF") {
		read(t, c) // the end of the metadata
	}
	var row []byte
	for {
		p := read(t, c)
		if p[0] == gomysql.EOF_HEADER && len(p) < 0xffffff {
			break
		}
		if p[0] == gomysql.ERR_HEADER {
			return "", c.HandleErrorPacket(p)
		}
		if row != nil {
			t.Fatalf("more than one row: %q", p)
		}
		row = p
	}
	// A binary row: 0x00, the null bitmap (offset 2), the value.
	if len(row) < 2 || row[0] != 0 {
		t.Fatalf("row = %q", row)
	}
	if row[1]&(1<<2) != 0 {
		return "NULL", nil
	}
	n, _, size := gomysql.LengthEncodedInt(row[2:])
	if 2+size+int(n) > len(row) {
		t.Fatalf("row = %q", row)
	}
	return string(row[2+size : 2+size+int(n)]), nil
}

// TestPreparedStatementTypesAcrossSessions executes a statement without sending its
// parameter types (as libmysqlclient does after the first execution), after another client
// bound other types to the same statement text. Through a pool of one connection both
// clients' statements run on the same backend connection.
func TestPreparedStatementTypesAcrossSessions(t *testing.T) {
	const text = "SELECT CONCAT('<', ?, '>')"
	longlong := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	str := func(s string) []byte { return append(gomysql.PutLengthEncodedInt(uint64(len(s))), s...) }
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, poolOf(1)))
		x, y := connect(t, p.Addr), connect(t, p.Addr)
		sx, err := x.Prepare(text)
		if err != nil {
			t.Fatal(err)
		}
		sy, err := y.Prepare(text)
		if err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			who   string
			c     *client.Conn
			id    uint32
			typ   byte
			value []byte
			want  string
		}{
			{"x binds an integer", x, sx.ID, gomysql.MYSQL_TYPE_LONGLONG, longlong(7), "<7>"},
			{"y binds a string", y, sy.ID, gomysql.MYSQL_TYPE_VAR_STRING, str("hello"), "<hello>"},
			{"x sends an integer without types", x, sx.ID, 0, longlong(8), "<8>"},
			{"y sends a string without types", y, sy.ID, 0, str("world"), "<world>"},
			{"x sends NULL without types", x, sx.ID, 0, nil, "NULL"},
			{"y binds an integer", y, sy.ID, gomysql.MYSQL_TYPE_LONGLONG, longlong(-5), "<-5>"},
			{"x sends an integer without types again", x, sx.ID, 0, longlong(9), "<9>"},
			{"y sends an integer without types", y, sy.ID, 0, longlong(10), "<10>"},
		}
		for _, s := range steps {
			stmtExecute(t, s.c, s.id, s.typ, s.value)
			got, err := readOneString(t, s.c)
			if err != nil || got != s.want {
				t.Errorf("%s: got %q, %v; want %q", s.who, got, err, s.want)
			}
		}
	})
}

// isConnError tells whether err is go-sql-driver's report of a connection that is gone.
func isConnError(err error) bool {
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn)
}

// TestKill kills a statement and then a connection by the id the client reads, from
// another connection of the same user.
func TestKill(t *testing.T) {
	ctx := context.Background()
	monitor := openDB(t, env.Primary, "")
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))

		// The connection id a client reads is the one the greeting gave it.
		g := connect(t, p.Addr)
		for _, q := range []string{"SELECT CONNECTION_ID()", "SELECT CONNECTION_ID() AS id", "select connection_id()"} {
			r, err := g.Execute(q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if id, _ := r.GetUint(0, 0); id != uint64(g.GetConnectionID()) {
				t.Errorf("%s = %d, the greeting said %d", q, id, g.GetConnectionID())
			}
		}
		// The same statement prepared (as JDBC with useServerPrepStmts, or a driver's
		// Prepare, asks for it).
		st, err := g.Prepare("SELECT CONNECTION_ID()")
		if err != nil {
			t.Fatal(err)
		}
		r, err := st.Execute()
		if err != nil {
			t.Fatal(err)
		}
		if id, _ := r.GetUint(0, 0); id != uint64(g.GetConnectionID()) {
			t.Errorf("prepared SELECT CONNECTION_ID() = %d, the greeting said %d", id, g.GetConnectionID())
		}
		g.Close()
		waitFor(t, 5*time.Second, "the go-mysql connection to close", func() bool { return p.Open() == 0 })

		conn := func() *sql.Conn {
			db := openDB(t, p.Addr, "")
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		a, b := conn(), conn()
		var id int64
		if err := a.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatal(err)
		}

		// KILL QUERY interrupts the statement and leaves the connection usable.
		done := make(chan error, 1)
		go func() { // ends when the statement does
			var v int
			err := a.QueryRowContext(ctx, "SELECT SLEEP(10)").Scan(&v)
			if err == nil && v == 1 {
				// MariaDB's SLEEP() returns 1 instead of failing when the kill lands while it
				// checks for one, directly as through the proxy: the statement was interrupted.
				err = &mysql.MySQLError{Number: 1317, Message: "SLEEP() returned 1: interrupted"}
			}
			done <- err
		}()
		waitForRunning(t, monitor, "SELECT SLEEP(10)")
		killed := time.Now()
		if _, err := b.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", id)); err != nil {
			t.Fatalf("KILL QUERY %d: %v", id, err)
		}
		select {
		case err := <-done:
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != 1317 {
				t.Errorf("killed statement: err = %v, want error 1317", err)
			}
			if d := time.Since(killed); d > time.Second {
				t.Errorf("the killed statement ended %v after KILL QUERY", d)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the statement still runs 5s after KILL QUERY")
		}
		var v int
		if err := a.QueryRowContext(ctx, "SELECT 41 + 1").Scan(&v); err != nil || v != 42 {
			t.Fatalf("after KILL QUERY: %d, %v; want 42", v, err)
		}

		// An id that no connection has.
		_, err = b.ExecContext(ctx, "KILL 999999")
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1094 || me.Message != "Unknown thread id: 999999" {
			t.Errorf("KILL 999999: err = %v, want error 1094 Unknown thread id: 999999", err)
		}

		// KILL ends the connection: its next statement fails as on a connection gone.
		if p.Open() != 2 {
			t.Fatalf("%d connections open, want 2", p.Open())
		}
		if _, err := b.ExecContext(ctx, fmt.Sprintf("KILL %d", id)); err != nil {
			t.Fatalf("KILL %d: %v", id, err)
		}
		err = a.QueryRowContext(ctx, "SELECT 1").Scan(&v)
		switch {
		case isConnError(err):
			// The connection is gone, as it is directly: pooled mode closes the client's
			// connection at the KILL; in passthrough the proxy sees the backend hang up
			// and closes the idle client's connection at once.
		case mode == config.ModePassthrough && errors.As(err, &me) && me.Number == 1158 &&
			strings.HasPrefix(me.Message, "gatekeeper: lost the connection to backend"):
			// The statement raced the hang-up to the proxy: it is told the backend is
			// lost (1158, a connection error to drivers) and then closed.
		default:
			t.Errorf("statement after KILL: err = %v, want a connection error (%v or %v)", err, driver.ErrBadConn, mysql.ErrInvalidConn)
		}
		waitFor(t, 5*time.Second, "the killed connection to close", func() bool { return p.Open() == 1 })
		if err := b.PingContext(ctx); err != nil {
			t.Errorf("the killing connection: %v", err)
		}
	})
}

// mustQuery runs q on c and returns the first row's values as text.
func mustQuery(t *testing.T, c *client.Conn, q string) []string {
	t.Helper()
	r, err := c.Execute(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var row []string
	for i := range r.ColumnNumber() {
		v, _ := r.GetString(0, i)
		row = append(row, v)
	}
	return row
}

// queryError runs q on c and returns the number of the error it must fail with.
func queryError(t *testing.T, c *client.Conn, q string) uint16 {
	t.Helper()
	_, err := c.Execute(q)
	var me *gomysql.MyError
	if !errors.As(err, &me) {
		t.Fatalf("%s: err = %v, want a server error", q, err)
	}
	return me.Code
}

// TestResetConnectionAndChangeUser leaves a user variable, a session variable and a
// temporary table behind, and checks that COM_RESET_CONNECTION and COM_CHANGE_USER each
// start the session afresh.
func TestResetConnectionAndChangeUser(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		c := connect(t, p.Addr)
		defaultMode := mustQuery(t, c, "SELECT @@sql_mode")[0]
		leave := func() {
			t.Helper()
			for _, q := range []string{"SET @x = 1", "SET sql_mode = 'ANSI'", "CREATE TEMPORARY TABLE gk_reset (id INT)", "INSERT INTO gk_reset VALUES (1), (2)"} {
				mustQuery(t, c, q)
			}
			if got := strings.Join(mustQuery(t, c, "SELECT @x, @@sql_mode LIKE 'REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES%', COUNT(*) FROM gk_reset"), " "); got != "1 1 2" {
				t.Fatalf("state before the reset: %s, want 1 1 2", got)
			}
		}
		cleared := func(what string) {
			t.Helper()
			if got := mustQuery(t, c, "SELECT @x IS NULL, @@sql_mode, DATABASE()"); got[0] != "1" || got[1] != defaultMode || got[2] != env.Database {
				t.Errorf("after %s: @x IS NULL, @@sql_mode, DATABASE() = %q, want 1, %q, %q", what, got, defaultMode, env.Database)
			}
			if code := queryError(t, c, "SELECT COUNT(*) FROM gk_reset"); code != 1146 {
				t.Errorf("after %s: the temporary table: error %d, want 1146 (no such table)", what, code)
			}
		}

		leave()
		send(t, c, gomysql.COM_RESET_CONNECTION)
		expectOK(t, c, "reset connection")
		cleared("COM_RESET_CONNECTION")
		switch mode {
		case config.ModePooled:
			// The connection that held the temporary table was reset before another session
			// could get it.
			if v := metricValue(t, p, "gatekeeper_backend_resets_total", nil); v < 1 {
				t.Errorf("backend resets = %v, want at least 1", v)
			}
		case config.ModePassthrough:
			// The client's own connection is reset by the server; the proxy resets none.
			if v := metricValue(t, p, "gatekeeper_backend_resets_total", nil); v != 0 {
				t.Errorf("backend resets = %v in passthrough", v)
			}
		}

		leave()
		changeUser(t, c, mode, env.EdUser, env.EdPassword, env.Database)
		for range 3 { // over several units
			if user := mustQuery(t, c, "SELECT CURRENT_USER()")[0]; !strings.HasPrefix(user, env.EdUser+"@") {
				t.Errorf("CURRENT_USER() = %q after COM_CHANGE_USER to %s", user, env.EdUser)
			}
		}
		cleared("COM_CHANGE_USER")
	})
}

// primaryConns counts the primary's connections on a direct monitor connection of its
// own: all of them, and those of the test user opened since it was made, which are the
// connections of the proxy under test.
type primaryConns struct {
	db    *sql.DB
	since int64
}

func newPrimaryConns(t *testing.T) *primaryConns {
	t.Helper()
	db := openDB(t, env.Primary, "")
	db.SetMaxOpenConns(1)
	c := &primaryConns{db: db}
	if err := db.QueryRow("SELECT MAX(ID) FROM information_schema.PROCESSLIST").Scan(&c.since); err != nil {
		t.Fatal(err)
	}
	return c
}

// read returns the primary's Threads_connected and how many connections of the test user
// were opened since c was made.
func (c *primaryConns) read(t *testing.T) (all, opened int) {
	t.Helper()
	all, opened, err := c.sample()
	if err != nil {
		t.Fatal(err)
	}
	return all, opened
}

// sample is read for other goroutines than the test's.
func (c *primaryConns) sample() (all, opened int, err error) {
	err = c.db.QueryRow(`SELECT
		(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'THREADS_CONNECTED'),
		(SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID > ? AND USER = ?)`, c.since, env.User).Scan(&all, &opened)
	return all, opened, err
}

// metricSum returns the sum of every series of the gauge or counter name, read at once.
func metricSum(t *testing.T, p *testProxy, name string) float64 {
	t.Helper()
	families, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return sum
}

// TestPooledConnectionsBound holds 200 clients open and busy through a pool of 16: the
// primary never sees more than 16 connections from the proxy.
func TestPooledConnectionsBound(t *testing.T) {
	const clients, maxOpen, queries = 200, 16, 60
	ctx := context.Background()
	primary := newPrimaryConns(t)
	before, _ := primary.read(t)
	p := startProxy(t, inMode(config.ModePooled, poolOf(maxOpen)))

	db := openDB(t, p.Addr, "interpolateParams=true")
	db.SetMaxOpenConns(clients)
	db.SetMaxIdleConns(clients)
	conns := make([]*sql.Conn, clients)
	for i := range conns {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		defer c.Close()
		conns[i] = c
	}
	if p.Open() != clients {
		t.Fatalf("%d clients connected, want %d", p.Open(), clients)
	}

	var (
		wg   sync.WaitGroup
		errs = make(chan error, clients)
		done = make(chan struct{})
	)
	for i, c := range conns {
		wg.Go(func() {
			for q := range queries {
				var got int
				if err := c.QueryRowContext(ctx, "SELECT ? + 1", i*queries+q).Scan(&got); err != nil || got != i*queries+q+1 {
					errs <- fmt.Errorf("client %d query %d: %d, %v", i, q, got, err)
					return
				}
				time.Sleep(time.Duration(1+(i+q)%4) * time.Millisecond) // think time
			}
		})
	}
	go func() { // ends when the clients are done
		wg.Wait()
		close(done)
	}()
	var peak, peakNew, samples int
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(10 * time.Millisecond):
		}
		all, opened := primary.read(t)
		peak, peakNew, samples = max(peak, all), max(peakNew, opened), samples+1
		if open := metricSum(t, p, "gatekeeper_backend_connections"); open > maxOpen {
			t.Errorf("the proxy counts %v connections, idle and leased, with pools.max_open %d", open, maxOpen)
		}
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("the primary had %d connections before, at most %d (%d opened since) over %d samples with %d clients",
		before, peak, peakNew, samples, clients)
	// before counts the monitor connection.
	if peak > before+maxOpen || peakNew > maxOpen {
		t.Errorf("the primary had up to %d connections (%d before), %d of them opened by the proxy, with pools.max_open %d",
			peak, before, peakNew, maxOpen)
	}
}

// TestPooledLeaseWaitTimeout has one client hold the only backend connection in a
// transaction: another client's statement waits pools.wait_timeout and is refused.
func TestPooledLeaseWaitTimeout(t *testing.T) {
	const wait = 300 * time.Millisecond
	p := startProxy(t, inMode(config.ModePooled, func(c *config.Config) {
		poolOf(1)(c)
		c.Pools.WaitTimeout = wait
	}))
	// Both log in first: a login leases a connection too.
	a, b := connect(t, p.Addr), connect(t, p.Addr)
	for _, q := range []string{"BEGIN", "SELECT 1"} {
		if _, err := a.Execute(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	start := time.Now()
	_, err := b.Execute("SELECT 2")
	waited := time.Since(start)
	var me *gomysql.MyError
	if !errors.As(err, &me) || me.Code != 1205 || !strings.HasPrefix(me.Message, "gatekeeper:") {
		t.Fatalf("statement while the only connection is leased: err = %v, want gatekeeper error 1205", err)
	}
	if waited < wait-50*time.Millisecond || waited > wait+time.Second {
		t.Errorf("refused after %v with pools.wait_timeout %v", waited, wait)
	}
	if _, err := a.Execute("COMMIT"); err != nil {
		t.Fatal(err)
	}
	if got := mustQuery(t, b, "SELECT 2"); got[0] != "2" {
		t.Errorf("after the transaction ended: SELECT 2 = %v", got)
	}
	if v := metricValue(t, p, "gatekeeper_backend_lease_wait_failures_total", map[string]string{"reason": "timeout"}); v != 1 {
		t.Errorf("lease wait failures = %v, want 1", v)
	}
}
