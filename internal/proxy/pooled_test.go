package proxy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol/mysqltest"
)

// pooledProxy runs a proxy in pooled mode in front of primary, with the accounts given,
// and returns its address.
func pooledProxy(t *testing.T, primary string, edit func(*config.Config), users ...auth.User) (string, *Server) {
	t.Helper()
	cfg := config.Default()
	cfg.Backends.Primary = primary
	cfg.Mode = config.ModePooled
	cfg.Pools.MaxOpen = 2
	if edit != nil {
		edit(&cfg)
	}
	addr, srv := serveTestProxy(t, cfg, slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelDebug})))
	for i := range users {
		users[i].Host = "%"
	}
	srv.Accounts(nil).Swap(auth.NewUsers(users...))
	return addr, srv
}

func account(name, password string) auth.User {
	return auth.User{Name: name, Password: password, HasPassword: true}
}

// conn opens one client connection through the proxy.
func conn(t *testing.T, addr, user, password, params string) *sql.Conn {
	t.Helper()
	db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/?%s", user, password, addr, params))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func queryString(t *testing.T, c *sql.Conn, q string, args ...any) string {
	t.Helper()
	var s sql.NullString
	if err := c.QueryRowContext(context.Background(), q, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s.String
}

func exec(t *testing.T, c *sql.Conn, q string, args ...any) {
	t.Helper()
	if _, err := c.ExecContext(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// ranOn returns the fake connection that received q last.
func ranOn(srv *mysqltest.Server, q string) *mysqltest.Conn {
	var last *mysqltest.Conn
	for _, c := range srv.Conns() {
		for _, got := range c.Queries() {
			if got == q {
				last = c
			}
		}
	}
	return last
}

func TestPooledSessionStateFollowsTheSession(t *testing.T) {
	db := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw"}})
	addr, _ := pooledProxy(t, db.Addr, func(c *config.Config) { c.Pools.MaxOpen = 1 }, account("app", "pw"))
	a := conn(t, addr, "app", "pw", "")
	b := conn(t, addr, "app", "pw", "")

	exec(t, a, "SET SESSION sql_mode='ANSI'")
	exec(t, a, "USE shop")
	// B runs on the one connection after A: it must not see A's state.
	if got := queryString(t, b, "SELECT @@sql_mode"); got == "ANSI" {
		t.Errorf("B sees A's sql_mode")
	}
	if got := queryString(t, b, "SELECT DATABASE()"); got == "shop" {
		t.Errorf("B sees A's schema")
	}
	exec(t, b, "SET SESSION time_zone='+05:00'")
	// And A gets its own back.
	if got := queryString(t, a, "SELECT @@sql_mode"); got != "ANSI" {
		t.Errorf("A's sql_mode = %q, want ANSI", got)
	}
	if got := queryString(t, a, "SELECT DATABASE()"); got != "shop" {
		t.Errorf("A's schema = %q, want shop", got)
	}
	if got := queryString(t, a, "SELECT @@time_zone"); got == "+05:00" {
		t.Errorf("A sees B's time_zone")
	}
	if n := db.Logins(); n != 1 {
		t.Errorf("logins = %d, want 1: both sessions share one connection", n)
	}
	for _, c := range db.Conns() {
		for _, q := range c.Queries() {
			if strings.HasPrefix(q, "KILL") {
				t.Errorf("unexpected %q", q)
			}
		}
	}
}

func TestPooledPinsKeepTheConnection(t *testing.T) {
	db := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw"}})
	addr, _ := pooledProxy(t, db.Addr, func(c *config.Config) { c.Pools.MaxOpen = 2 }, account("app", "pw"))
	a := conn(t, addr, "app", "pw", "")
	b := conn(t, addr, "app", "pw", "")
	exec(t, a, "SET @v = 42") // pins A
	for i := range 5 {
		exec(t, b, fmt.Sprintf("DO %d", i))
		if got := queryString(t, a, "SELECT @v"); got != "42" {
			t.Fatalf("round %d: @v = %q, want 42", i, got)
		}
	}
	held := ranOn(db, "SET @v = 42")
	if held == nil || ranOn(db, "SELECT @v") != held {
		t.Fatal("A's statements ran on another connection than its SET")
	}
	if ranOn(db, "DO 4") == held {
		t.Error("B ran on the connection A is pinned to")
	}
}

func TestPooledClosedConnectionIsNotGivenToAClient(t *testing.T) {
	db := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw"}})
	addr, _ := pooledProxy(t, db.Addr, nil, account("app", "pw"))
	a := conn(t, addr, "app", "pw", "")
	exec(t, a, "DO 1")
	db.CloseAll() // the backend hangs up on the idle pooled connection (wait_timeout, a restart)
	waitFor(t, func() bool { return db.Open() == 0 })
	// Between units the client never notices: the next statement runs on a new connection.
	exec(t, a, "DO 2")
	if db.Logins() != 2 {
		t.Errorf("logins = %d, want 2", db.Logins())
	}
}

func TestPooledPreparedStatementMovesBetweenConnections(t *testing.T) {
	db := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw"},
		Handler: func(c *mysqltest.Conn, q string) mysqltest.Reply {
			return mysqltest.Reply{Columns: []string{"c"}, Rows: [][]any{{"row"}}}
		}})
	addr, _ := pooledProxy(t, db.Addr, func(c *config.Config) { c.Pools.MaxOpen = 2 }, account("app", "pw"))
	a := conn(t, addr, "app", "pw", "interpolateParams=false")
	stmt, err := a.PrepareContext(context.Background(), "SELECT c FROM t WHERE a = ? AND b = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	run := func() {
		var s string
		if err := stmt.QueryRowContext(context.Background(), 1, "x").Scan(&s); err != nil {
			t.Fatal(err)
		}
	}
	run()
	// B takes the connection A's statement was prepared on, and holds it, so that A's next
	// execution has to prepare it again on the other connection.
	b := conn(t, addr, "app", "pw", "")
	exec(t, b, "SET @pin = 1")
	run()
	run()
	prepared := 0
	for _, c := range db.Conns() {
		for _, text := range c.Prepared() {
			if strings.HasPrefix(text, "SELECT c FROM t") {
				prepared++
			}
		}
	}
	if prepared < 1 {
		t.Fatalf("statement prepared on %d connections", prepared)
	}
}

func TestPooledExecuteSendsTypesAgainOnAnotherConnection(t *testing.T) {
	db := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw"}})
	addr, _ := pooledProxy(t, db.Addr, func(c *config.Config) { c.Pools.MaxOpen = 1 }, account("app", "pw"))
	a := conn(t, addr, "app", "pw", "interpolateParams=false")
	b := conn(t, addr, "app", "pw", "interpolateParams=false")
	sa, err := a.PrepareContext(context.Background(), "INSERT INTO t VALUES (?)")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.PrepareContext(context.Background(), "INSERT INTO t VALUES (?)")
	if err != nil {
		t.Fatal(err)
	}
	// go-sql-driver sends the parameter types with every execution; the fake refuses an
	// execution without types on a statement that never had any, so this passes only when
	// each client's executions carry types the statement on the one connection accepts.
	for i := range 3 {
		if _, err := sa.ExecContext(context.Background(), i); err != nil {
			t.Fatalf("A: %v", err)
		}
		if _, err := sb.ExecContext(context.Background(), "s"); err != nil {
			t.Fatalf("B: %v", err)
		}
	}
	if n := db.Logins(); n != 1 {
		t.Errorf("logins = %d, want 1", n)
	}
}

func TestPooledConnectionIDAndKill(t *testing.T) {
	db := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw", "other": "pw"},
		Handler: func(c *mysqltest.Conn, q string) mysqltest.Reply {
			if q == "SELECT sleep" {
				return mysqltest.Reply{Delay: 10 * time.Second, Columns: []string{"c"}, Rows: [][]any{{"1"}}}
			}
			return mysqltest.Reply{}
		}})
	addr, _ := pooledProxy(t, db.Addr, nil, account("app", "pw"), account("other", "pw"))
	a := conn(t, addr, "app", "pw", "")
	b := conn(t, addr, "app", "pw", "")
	id := queryString(t, a, "SELECT CONNECTION_ID()")
	if id == "" || id == queryString(t, b, "SELECT CONNECTION_ID()") {
		t.Fatalf("connection ids %q and B's are not distinct proxy ids", id)
	}
	done := make(chan error, 1)
	go func() {
		var s string
		done <- a.QueryRowContext(context.Background(), "SELECT sleep").Scan(&s)
	}()
	waitFor(t, func() bool { return ranOn(db, "SELECT sleep") != nil })
	start := time.Now()
	exec(t, b, "KILL QUERY "+id)
	select {
	case err := <-done:
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1317 {
			t.Fatalf("killed statement: %v, want error 1317", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("KILL QUERY did not interrupt the statement")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("KILL QUERY took %v", d)
	}
	exec(t, a, "DO 1") // A lives on
	_, err := b.ExecContext(context.Background(), "KILL 999999")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1094 {
		t.Errorf("KILL of an unknown id: %v, want 1094", err)
	}
	other := conn(t, addr, "other", "pw", "")
	_, err = other.ExecContext(context.Background(), "KILL "+id)
	if !errors.As(err, &me) || me.Number != 1095 {
		t.Errorf("KILL of another user's connection: %v, want 1095", err)
	}
	exec(t, b, "KILL CONNECTION "+id)
	if _, err := a.ExecContext(context.Background(), "DO 2"); err == nil {
		t.Error("A's connection survived KILL CONNECTION")
	}
}

func TestPooledLoginErrors(t *testing.T) {
	db := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw"}})
	addr, _ := pooledProxy(t, db.Addr, nil, account("app", "pw"), account("stale", "not-the-databases"))
	for _, tc := range []struct {
		user, password string
		code           uint16
		text           string
	}{
		{"app", "wrong", 1045, "Access denied for user 'app'@'127.0.0.1' (using password: YES)"},
		{"nobody", "pw", 1045, "Access denied for user 'nobody'@'127.0.0.1' (using password: YES)"},
		{"app", "", 1045, "Access denied for user 'app'@'127.0.0.1' (using password: NO)"},
		// The proxy accepts the client, but the database refuses the proxy's login as it.
		{"stale", "not-the-databases", 1045, "gatekeeper: the backend"},
	} {
		sdb, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/", tc.user, tc.password, addr))
		if err != nil {
			t.Fatal(err)
		}
		err = sdb.Ping()
		sdb.Close()
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != tc.code || !strings.HasPrefix(me.Message, tc.text) {
			t.Errorf("%s/%s: %v, want %d %q", tc.user, tc.password, err, tc.code, tc.text)
		}
	}
	if db.Logins() > 1 {
		t.Errorf("%d logins reached the database, want at most the one of the refused user", db.Logins())
	}
}

func TestPooledCachingSha2Backend(t *testing.T) {
	backend := mysql8(t, "alice", "s3cret")
	addr, _ := pooledProxy(t, backend, nil, account("alice", "s3cret"))
	for _, round := range []string{"full authentication", "fast path"} {
		c := conn(t, addr, "alice", "s3cret", "")
		if got := queryString(t, c, "SELECT 'through the pool'"); got != "SELECT 'through the pool'" {
			t.Errorf("%s: got %q", round, got)
		}
	}
}

func TestPooledClientWithCachingSha2(t *testing.T) {
	db := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw"}})
	addr, _ := pooledProxy(t, db.Addr, nil, account("app", "pw"))
	// A client that answers the greeting with caching_sha2_password, as MySQL 8 clients do.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := sha2Login(c, "app", "pw"); err != nil {
		t.Fatal(err)
	}
}

// sha2Login logs in over c answering with caching_sha2_password.
func sha2Login(c net.Conn, user, password string) error {
	pc := protocol.NewConn(c)
	p, err := pc.ReadPacket()
	if err != nil {
		return err
	}
	g, err := protocol.ParseGreeting(p)
	if err != nil {
		return err
	}
	login := &protocol.Login{
		Capabilities: gomysql.CLIENT_PROTOCOL_41 | gomysql.CLIENT_SECURE_CONNECTION | gomysql.CLIENT_PLUGIN_AUTH |
			gomysql.CLIENT_LONG_PASSWORD | gomysql.CLIENT_TRANSACTIONS,
		Charset: 45, User: user, AuthPlugin: gomysql.AUTH_CACHING_SHA2_PASSWORD,
		AuthResponse: gomysql.CalcCachingSha2Password(g.Scramble, []byte(password)),
	}
	if err := pc.WritePacket(protocol.AppendHandshakeResponse(nil, login)); err != nil {
		return err
	}
	if err := pc.Flush(); err != nil {
		return err
	}
	for {
		p, err := pc.ReadPacket()
		if err != nil {
			return err
		}
		switch {
		case p[0] == gomysql.OK_HEADER:
			return nil
		case p[0] == gomysql.ERR_HEADER:
			return fmt.Errorf("refused: %q", p)
		case p[0] == gomysql.MORE_DATE_HEADER && len(p) == 2 && p[1] == gomysql.CACHE_SHA2_FAST_AUTH:
		default:
			return fmt.Errorf("unexpected %q", p)
		}
	}
}

// testLog sends log lines to the test's log.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatal("condition not reached in 5s")
		case <-tick.C:
		}
	}
}

// A client that prepares statements without closing them is refused past the bounds, as
// the server refuses past max_prepared_stmt_count: the proxy keeps each statement's text.
func TestPooledPreparedStatementsAreBounded(t *testing.T) {
	db := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw"}})
	addr, srv := pooledProxy(t, db.Addr, nil, account("app", "pw"))
	srv.pooled.shared.MaxStmts, srv.pooled.shared.MaxStmtBytes = 20, 1<<20
	b := conn(t, addr, "app", "pw", "interpolateParams=false")
	_, err := b.PrepareContext(context.Background(), "SELECT '"+strings.Repeat("x", 1<<20)+"'")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1461 || !strings.Contains(me.Message, "bytes of text") {
		t.Fatalf("a statement past the bytes bound: %v, want error 1461", err)
	}
	a := conn(t, addr, "app", "pw", "interpolateParams=false")
	n := 0
	for err = nil; n < 100 && err == nil; n++ {
		var st *sql.Stmt
		if st, err = a.PrepareContext(context.Background(), fmt.Sprintf("SELECT %d", n)); err == nil {
			defer st.Close()
		}
	}
	if !errors.As(err, &me) || me.Number != 1461 || n != 21 {
		t.Fatalf("after %d statements: %v, want error 1461 at the 21st", n, err)
	}
	exec(t, a, "DO 1") // the connections live on
	exec(t, b, "DO 1")
}

func TestPooledDefaultBoundsOnPreparedStatements(t *testing.T) {
	db := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw"}})
	_, srv := pooledProxy(t, db.Addr, nil, account("app", "pw"))
	if srv.pooled.shared.MaxStmts != 16382 || srv.pooled.shared.MaxStmtBytes != 64<<20 {
		t.Errorf("bounds %d statements, %d bytes; want 16382 and 64 MiB", srv.pooled.shared.MaxStmts, srv.pooled.shared.MaxStmtBytes)
	}
}
