package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// prober runs a script of statements on one client connection and writes down every
// answer, so that the answers through the proxy can be compared with the primary's own
// answers to the same script.
type prober struct {
	ctx context.Context
	// conn is the probe: a connection to the primary directly, or through the proxy.
	conn *sql.Conn
	// watch is a connection to the primary directly that looks on from outside.
	watch   *sql.Conn
	answers []string
}

// query runs a statement that returns rows on the probe.
func (p *prober) query(q string, args ...any) {
	rows, err := p.conn.QueryContext(p.ctx, q, args...)
	p.rows("probe", q, args, rows, err)
}

// exec runs a statement that returns no rows on the probe.
func (p *prober) exec(q string, args ...any) {
	res, err := p.conn.ExecContext(p.ctx, q, args...)
	p.result("probe", q, args, res, err)
}

// look runs a statement that returns rows on the watching connection.
func (p *prober) look(q string, args ...any) {
	rows, err := p.watch.QueryContext(p.ctx, q, args...)
	p.rows("watch", q, args, rows, err)
}

// lookExec runs a statement that returns no rows on the watching connection.
func (p *prober) lookExec(q string, args ...any) {
	res, err := p.watch.ExecContext(p.ctx, q, args...)
	p.result("watch", q, args, res, err)
}

// probeStmt is a statement prepared on the probe (the binary protocol).
type probeStmt struct {
	p  *prober
	q  string
	st *sql.Stmt
}

func (p *prober) prepare(q string) *probeStmt {
	st, err := p.conn.PrepareContext(p.ctx, q)
	p.result("prepare", q, nil, nil, err)
	return &probeStmt{p: p, q: q, st: st}
}

func (s *probeStmt) query(args ...any) {
	if s.st == nil {
		s.p.rows("execute", s.q, args, nil, errors.New("not prepared"))
		return
	}
	rows, err := s.st.QueryContext(s.p.ctx, args...)
	s.p.rows("execute", s.q, args, rows, err)
}

func (s *probeStmt) exec(args ...any) {
	if s.st == nil {
		s.p.result("execute", s.q, args, nil, errors.New("not prepared"))
		return
	}
	res, err := s.st.ExecContext(s.p.ctx, args...)
	s.p.result("execute", s.q, args, res, err)
}

func (s *probeStmt) close() {
	if s.st != nil {
		s.st.Close()
	}
}

// rows writes down a result set, or the error instead.
func (p *prober) rows(who, q string, args []any, rows *sql.Rows, err error) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s %v ->", who, q, args)
	if err == nil {
		cols, _ := rows.Columns()
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err = rows.Scan(ptrs...); err != nil {
				break
			}
			b.WriteString(" [")
			for i, v := range vals {
				if i > 0 {
					b.WriteString(" ")
				}
				if v.Valid {
					fmt.Fprintf(&b, "%q", v.String)
				} else {
					b.WriteString("NULL")
				}
			}
			b.WriteString("]")
		}
		if err == nil {
			err = rows.Err()
		}
		rows.Close()
	}
	p.write(&b, err)
}

// result writes down what a statement without rows did, or the error instead.
func (p *prober) result(who, q string, args []any, res sql.Result, err error) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s %v ->", who, q, args)
	if err == nil && res != nil {
		affected, _ := res.RowsAffected()
		id, _ := res.LastInsertId()
		fmt.Fprintf(&b, " %d affected, insert id %d", affected, id)
	}
	p.write(&b, err)
}

func (p *prober) write(b *strings.Builder, err error) {
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &me):
		fmt.Fprintf(b, " error %d", me.Number)
	case err != nil:
		fmt.Fprintf(b, " failed: %v", err)
	}
	p.answers = append(p.answers, b.String())
}

// stateCase is one kind of session state: a script that sets it and uses it over many
// units of work, the tables it needs made afresh before each run, and the reasons pooled
// mode must pin the session for it (none: the state moves with the session).
type stateCase struct {
	name   string
	tables []string
	pins   []string
	script func(p *prober)
}

// units is how many units of work each script spreads its state over.
const units = 50

// stateCases are the kinds of session state a client may rely on: session variables and
// the schema, which pooled mode carries to whichever connection a unit gets, and state
// that lives in one connection (user variables, temporary tables, locks, the next
// statement's FOUND_ROWS, the next transaction's isolation), which pins the session to its
// connection. Prepared statements are prepared again where they are missing; state set
// through them must be seen as from text statements. other is a second schema.
func stateCases(other string) []stateCase {
	return []stateCase{
		{name: "sql_mode", script: func(p *prober) {
			p.exec("SET SESSION sql_mode = 'ANSI'")
			for range units {
				p.query("SELECT @@sql_mode, 'a' || 'b'") // || concatenates under ANSI only
			}
		}},
		{name: "time_zone", script: func(p *prober) {
			p.exec("SET time_zone = '+05:30'")
			for i := range units {
				p.query("SELECT @@time_zone, FROM_UNIXTIME(?)", i*3600)
			}
		}},
		{name: "NAMES latin1", script: func(p *prober) {
			p.exec("SET NAMES latin1")
			for range units {
				// The two bytes of UTF-8 'é' are two characters in latin1, and come back as sent.
				p.query("SELECT @@character_set_client, @@character_set_connection, @@character_set_results, HEX('é'), CHAR_LENGTH('é'), 'é'")
			}
		}},
		{name: "NAMES COLLATE", script: func(p *prober) {
			p.exec("SET NAMES utf8mb4 COLLATE utf8mb4_bin")
			for range units {
				p.query("SELECT @@collation_connection, 'a' = 'A'") // equal under a _ci collation only
			}
		}},
		{name: "SET STATEMENT", script: func(p *prober) {
			// A setting for one statement: the session's own is unchanged after it.
			p.query("SET STATEMENT sql_mode = 'ANSI' FOR SELECT 'a' || 'b'")
			for range units {
				p.query("SELECT @@sql_mode, 'a' || 'b'")
			}
		}},
		{name: "user variables", pins: []string{"user_variable"}, script: func(p *prober) {
			p.exec("SET @v = 'probe', @n = 0")
			for range units {
				p.exec("SET @n = @n + 1")
				p.query("SELECT @v, @n")
			}
		}},
		{name: "temporary table", pins: []string{"temporary_table"}, tables: []string{"DROP TABLE IF EXISTS t_state_tmp"}, script: func(p *prober) {
			p.exec("CREATE TEMPORARY TABLE t_state_tmp (id INT PRIMARY KEY)")
			for i := range units {
				p.exec("INSERT INTO t_state_tmp VALUES (?)", i)
				p.query("SELECT COUNT(*), SUM(id) FROM t_state_tmp")
			}
			p.exec("DROP TEMPORARY TABLE t_state_tmp")
			p.query("SELECT COUNT(*) FROM t_state_tmp")
		}},
		{name: "GET_LOCK", pins: []string{"get_lock"}, script: func(p *prober) {
			p.query("SELECT GET_LOCK('gk_state_lock', 5)")
			for range units {
				p.query("SELECT IS_USED_LOCK('gk_state_lock') IS NOT NULL")
				p.look("SELECT IS_FREE_LOCK('gk_state_lock')")
			}
			p.query("SELECT RELEASE_LOCK('gk_state_lock')")
			p.look("SELECT IS_FREE_LOCK('gk_state_lock')")
		}},
		{name: "LOCK TABLES", pins: []string{"lock_tables"}, tables: []string{
			"DROP TABLE IF EXISTS t_state_locked, t_state_unlocked",
			"CREATE TABLE t_state_locked (id INT PRIMARY KEY)",
			"CREATE TABLE t_state_unlocked (id INT PRIMARY KEY)",
		}, script: func(p *prober) {
			p.exec("LOCK TABLES t_state_locked WRITE")
			for i := range units {
				p.exec("INSERT INTO t_state_locked VALUES (?)", i)
				p.query("SELECT COUNT(*) FROM t_state_locked")
				p.query("SELECT COUNT(*) FROM t_state_unlocked") // error 1100: not locked
			}
			p.exec("UNLOCK TABLES")
			p.query("SELECT COUNT(*) FROM t_state_unlocked")
			p.look("SELECT COUNT(*) FROM t_state_locked")
		}},
		{name: "prepared statement", script: func(p *prober) {
			p.exec("SET time_zone = '-04:00'")
			st := p.prepare("SELECT ? * 2, FROM_UNIXTIME(?), @@time_zone, CONCAT('#', ?)")
			defer st.close()
			for i := range units {
				var third any = i
				if i%2 == 1 {
					third = fmt.Sprintf("s%d", i)
				}
				st.query(i, i*3600, third)
			}
		}},
		{name: "PREPARE", pins: []string{"prepared_sql"}, script: func(p *prober) {
			p.exec("PREPARE gk_state_triple FROM 'SELECT ? * 3, CONCAT(''#'', ?)'")
			for i := range units {
				p.query(fmt.Sprintf("EXECUTE gk_state_triple USING %d, 'x%d'", i, i))
			}
			p.query("EXECUTE gk_state_triple USING 7, 'y'")
			p.exec("DEALLOCATE PREPARE gk_state_triple")
			p.query("EXECUTE gk_state_triple USING 8, 'z'")
		}},
		{name: "prepared in another schema", tables: []string{
			"DROP TABLE IF EXISTS " + other + ".t_state_which",
			"CREATE TABLE " + other + ".t_state_which (name VARCHAR(16))",
			"INSERT INTO " + other + ".t_state_which VALUES ('other')",
			"DROP TABLE IF EXISTS t_state_which",
			"CREATE TABLE t_state_which (name VARCHAR(16))",
			"INSERT INTO t_state_which VALUES ('home')",
		}, script: func(p *prober) {
			// A prepared statement's tables are those of the schema it was prepared in.
			p.exec("USE " + other)
			st := p.prepare("SELECT name, ? FROM t_state_which")
			defer st.close()
			p.exec("USE " + env.Database)
			for i := range units {
				st.query(i)
			}
		}},
		{name: "prepared under another sql_mode", script: func(p *prober) {
			// A prepared statement keeps the parse of the sql_mode it was prepared under:
			// "seq" is a column under ANSI_QUOTES, a string otherwise.
			p.exec("SET sql_mode = 'ANSI_QUOTES'")
			st := p.prepare(`SELECT "seq" FROM seq_1_to_3 WHERE seq = ?`)
			defer st.close()
			p.exec("SET sql_mode = DEFAULT")
			for i := range units {
				st.query(i%3 + 1)
			}
		}},
		{name: "prepared GET_LOCK", pins: []string{"get_lock"}, script: func(p *prober) {
			lock := p.prepare("SELECT GET_LOCK(?, 5)")
			defer lock.close()
			lock.query("gk_state_lock")
			for range units {
				p.query("SELECT IS_USED_LOCK('gk_state_lock') IS NOT NULL")
				p.look("SELECT IS_FREE_LOCK('gk_state_lock')")
			}
			release := p.prepare("SELECT RELEASE_LOCK(?)")
			defer release.close()
			release.query("gk_state_lock")
			p.look("SELECT IS_FREE_LOCK('gk_state_lock')")
		}},
		{name: "prepared user variable", pins: []string{"user_variable"}, script: func(p *prober) {
			set := p.prepare("SET @v = ?")
			defer set.close()
			for i := range units {
				set.exec(fmt.Sprintf("v%d", i))
				p.query("SELECT @v")
			}
		}},
		{name: "prepared temporary table", pins: []string{"temporary_table"}, tables: []string{"DROP TABLE IF EXISTS t_state_ptmp"}, script: func(p *prober) {
			create := p.prepare("CREATE TEMPORARY TABLE t_state_ptmp (id INT PRIMARY KEY)")
			defer create.close()
			create.exec()
			insert := p.prepare("INSERT INTO t_state_ptmp VALUES (?)")
			defer insert.close()
			for i := range units {
				insert.exec(i)
				p.query("SELECT COUNT(*), SUM(id) FROM t_state_ptmp")
			}
		}},
		{name: "LAST_INSERT_ID", tables: []string{
			"DROP TABLE IF EXISTS t_state_ai",
			"CREATE TABLE t_state_ai (id INT AUTO_INCREMENT PRIMARY KEY, v INT)",
		}, script: func(p *prober) {
			for i := range units {
				p.exec("INSERT INTO t_state_ai (v) VALUES (?)", i)
				p.query("SELECT LAST_INSERT_ID()")
			}
		}},
		{name: "FOUND_ROWS", pins: []string{"found_rows"}, tables: []string{
			"DROP TABLE IF EXISTS t_state_rows",
			"CREATE TABLE t_state_rows (id INT PRIMARY KEY)",
			"INSERT INTO t_state_rows SELECT seq FROM seq_1_to_30",
		}, script: func(p *prober) {
			for i := range units {
				p.query("SELECT SQL_CALC_FOUND_ROWS id FROM t_state_rows WHERE id > ? ORDER BY id LIMIT 3", i%10)
				p.query("SELECT FOUND_ROWS()")
			}
		}},
		{name: "prepared SQL_CALC_FOUND_ROWS", pins: []string{"found_rows"}, tables: []string{
			"DROP TABLE IF EXISTS t_state_prows",
			"CREATE TABLE t_state_prows (id INT PRIMARY KEY)",
			"INSERT INTO t_state_prows SELECT seq FROM seq_1_to_30",
		}, script: func(p *prober) {
			page := p.prepare("SELECT SQL_CALC_FOUND_ROWS id FROM t_state_prows WHERE id > ? ORDER BY id LIMIT 3")
			defer page.close()
			for i := range units {
				page.query(i % 10)
				p.query("SELECT FOUND_ROWS()")
			}
		}},
		{name: "transaction isolation", pins: []string{"next_transaction"}, tables: []string{
			"DROP TABLE IF EXISTS t_state_iso",
			"CREATE TABLE t_state_iso (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
			"INSERT INTO t_state_iso VALUES (1, 0)",
		}, script: func(p *prober) {
			transaction := func() {
				p.exec("BEGIN")
				p.query("SELECT @@tx_isolation, v FROM t_state_iso WHERE id = 1")
				p.lookExec("UPDATE t_state_iso SET v = v + 1 WHERE id = 1")
				p.query("SELECT v FROM t_state_iso WHERE id = 1") // sees the update under READ COMMITTED only
				p.exec("COMMIT")
			}
			p.exec("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
			for range units {
				transaction()
			}
			p.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ") // the next transaction only
			transaction()
			transaction()
		}},
		{name: "autocommit off", tables: []string{
			"DROP TABLE IF EXISTS t_state_ac",
			"CREATE TABLE t_state_ac (id INT PRIMARY KEY) ENGINE=InnoDB",
		}, script: func(p *prober) {
			p.exec("SET autocommit = 0")
			for i := range units {
				p.exec("INSERT INTO t_state_ac VALUES (?)", i)
				p.query("SELECT @@autocommit, COUNT(*) FROM t_state_ac")
				p.look("SELECT COUNT(*) FROM t_state_ac")
				p.exec("ROLLBACK")
				p.query("SELECT COUNT(*) FROM t_state_ac")
				p.exec("COMMIT")
			}
			p.exec("SET autocommit = 1")
			p.look("SELECT COUNT(*) FROM t_state_ac")
		}},
		{name: "USE", tables: []string{
			"DROP TABLE IF EXISTS " + other + ".t_state_where",
			"CREATE TABLE " + other + ".t_state_where (name VARCHAR(16))",
			"INSERT INTO " + other + ".t_state_where VALUES ('other')",
		}, script: func(p *prober) {
			p.exec("USE " + other)
			for range units {
				p.query("SELECT DATABASE(), name FROM t_state_where")
			}
			p.exec("USE " + env.Database)
			p.query("SELECT DATABASE()")
		}},
	}
}

// TestSessionStateUnderChurn has one client work through every kind of session state
// while 50 others keep the proxy's few backend connections changing hands, and checks
// that it gets the answers the primary gives to the same script on a connection of its
// own. Passthrough, where each client keeps its backend connection, is the control.
func TestSessionStateUnderChurn(t *testing.T) {
	other := env.Database + "_other"
	mustExec(t, openDB(t, env.Primary, ""), "CREATE DATABASE IF NOT EXISTS "+other)
	checkStateUnderChurn(t, stateCases(other))
}

// checkStateUnderChurn runs each case's script on the primary directly, then in each mode
// through a proxy that 50 other clients keep busy, and compares the answers.
func checkStateUnderChurn(t *testing.T, cases []stateCase) {
	ctx := context.Background()
	setup := openDB(t, env.Primary, "")
	setup.SetMaxOpenConns(1)
	watchDB := openDB(t, env.Primary, "")
	watch, err := watchDB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()

	run := func(t *testing.T, addr string, c stateCase) []string {
		t.Helper()
		for _, q := range c.tables {
			mustExec(t, setup, q)
		}
		// A client of its own for each script: no state is left from another.
		db, err := sql.Open("mysql", dsn(addr, "interpolateParams=true"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		p := &prober{ctx: ctx, conn: conn, watch: watch}
		c.script(p)
		return p.answers
	}
	want := make([][]string, len(cases))
	for i, c := range cases {
		want[i] = run(t, env.Primary, c)
	}

	eachMode(t, func(t *testing.T, mode string) {
		const clients, maxOpen = 50, 8
		primary := newPrimaryConns(t)
		before, _ := primary.read(t)
		p := startProxy(t, inMode(mode, poolOf(maxOpen)))
		stopChurn := churn(t, setup, p.Addr, clients)

		// The primary's connections, sampled while every client is connected.
		var (
			peak, peakNew, samples int
			sampling               sync.WaitGroup
		)
		stopSampling := make(chan struct{})
		sampling.Go(func() {
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stopSampling:
					return
				case <-tick.C:
				}
				all, opened, err := primary.sample()
				if err == nil && p.Open() >= clients+1 {
					peak, peakNew, samples = max(peak, all), max(peakNew, opened), samples+1
				}
			}
		})

		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				pins := make(map[string]float64)
				for _, r := range pinReasons {
					pins[r] = metricValue(t, p, "gatekeeper_session_pins_total", map[string]string{"reason": r})
				}
				syncs := metricValue(t, p, "gatekeeper_session_state_syncs_total", nil)

				got := run(t, p.Addr, c)
				compareAnswers(t, got, want[i])

				pinned := map[string]float64{}
				for _, r := range pinReasons {
					if d := metricValue(t, p, "gatekeeper_session_pins_total", map[string]string{"reason": r}) - pins[r]; d > 0 {
						pinned[r] = d
					}
				}
				syncs = metricValue(t, p, "gatekeeper_session_state_syncs_total", nil) - syncs
				switch mode {
				case config.ModePassthrough:
					// Each client keeps its backend connection: nothing to pin or carry.
					if len(pinned) > 0 || syncs != 0 {
						t.Errorf("passthrough pinned %v and carried state %v times", pinned, syncs)
					}
				case config.ModePooled:
					for _, r := range c.pins {
						if pinned[r] == 0 {
							t.Errorf("no %s pin recorded (pins: %v)", r, pinned)
						}
					}
					if len(c.pins) == 0 {
						// This state moves with the session, to whichever connection it gets.
						if len(pinned) > 0 {
							t.Errorf("the session was pinned (%v) for state that can move", pinned)
						}
						if syncs == 0 {
							t.Errorf("no session state was carried to another connection: the pool was not shared")
						}
					}
				}
			})
		}
		close(stopSampling)
		sampling.Wait()
		if err := stopChurn(); err != nil {
			t.Error(err)
		}

		t.Logf("the primary had %d connections before, at most %d (%d opened since) with %d clients connected (%d samples)",
			before, peak, peakNew, clients+1, samples)
		if samples == 0 {
			t.Fatalf("no sample of the primary's connections with all %d clients connected", clients+1)
		}
		switch mode {
		case config.ModePassthrough:
			// One backend connection per client.
			if peakNew < clients {
				t.Errorf("the primary had at most %d connections from passthrough with %d clients", peakNew, clients+1)
			}
		case config.ModePooled:
			// The clients share pools.max_open connections; before counts the monitor.
			if peak > before+maxOpen || peakNew > maxOpen {
				t.Errorf("the primary had up to %d connections (%d before), %d of them opened by the proxy, with pools.max_open %d",
					peak, before, peakNew, maxOpen)
			}
		}
		waitFor(t, 10*time.Second, "the pinned sessions to end", func() bool {
			return metricValue(t, p, "gatekeeper_sessions_pinned", nil) == 0
		})
	})
}

// pinReasons are the reasons of gatekeeper_session_pins_total the scripts can cause.
var pinReasons = []string{
	"user_variable", "get_lock", "lock_tables", "temporary_table", "prepared_sql", "found_rows",
	"last_insert_id", "next_transaction", "session_tracking", "session_variable", "session_state",
	"no_tracking",
}

// compareAnswers reports where the answers through the proxy differ from the primary's.
func compareAnswers(t *testing.T, got, want []string) {
	t.Helper()
	diffs := 0
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g == w {
			continue
		}
		if diffs++; diffs <= 3 {
			t.Errorf("answer %d differs:\nthrough the proxy: %s\nthe primary:       %s", i, g, w)
		}
	}
	if diffs > 3 {
		t.Errorf("%d answers of %d differ", diffs, len(want))
	}
}
