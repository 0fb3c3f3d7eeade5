package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/handover"
	"github.com/gatekeeperdb/gatekeeper/internal/proxy"
)

// handOver moves from's listener and sessions to to, as two processes do over their
// socket pair: the listener first, then each session as it goes idle outside a
// transaction, its sockets passed with SCM_RIGHTS and its state as the record the new
// process reads. It returns once from holds no session, with what moved and what was
// drained, by reason.
func handOver(t *testing.T, from, to *testProxy) (handed int, drained map[string]int) {
	t.Helper()
	files, next, err := from.Detach()
	if err != nil {
		t.Fatal(err)
	}
	to.SetNextID(next)
	ln, err := net.FileListener(files[0])
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = to.Serve(ln) }() // ends when to shuts down

	oldEnd, theirs, err := handover.Pair()
	if err != nil {
		t.Fatal(err)
	}
	newEnd, err := handover.Open(theirs)
	if err != nil {
		t.Fatal(err)
	}
	adopted := make(chan error, 1)
	go func() { // ends when oldEnd closes
		defer newEnd.Close()
		for {
			m, err := newEnd.Receive()
			if err != nil {
				adopted <- nil
				return
			}
			var rec proxy.SessionRecord
			if err := m.Decode(&rec); err != nil {
				adopted <- err
				return
			}
			if err := to.Adopt(&rec, m.Files); err != nil {
				adopted <- err
				return
			}
		}
	}()
	h := &proxy.Handoff{Send: func(rec *proxy.SessionRecord, files []*os.File) error {
		return oldEnd.Send(handover.KindSession, rec, files...)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := from.HandOver(ctx, h); err != nil {
		t.Errorf("hand-over: %v", err)
	}
	oldEnd.Close()
	if err := <-adopted; err != nil {
		t.Fatalf("adopting: %v", err)
	}
	return h.Counts()
}

// TestHandoverKeepsSessions hands a proxy's clients over to another proxy between their
// statements, and checks that each client goes on as if nothing happened: the same
// connection, the same session variables, schema and prepared statements, the same
// CONNECTION_ID(), and the answers a direct connection gives to the same script. A client
// in a transaction moves once it commits; a TLS client and a pooled session pinned by a
// temporary table are drained, and counted.
func TestHandoverKeepsSessions(t *testing.T) {
	ctx := context.Background()
	other := env.Database + "_other"
	mustExec(t, openDB(t, env.Primary, ""), "CREATE DATABASE IF NOT EXISTS "+other)
	table := "handover_ledger"
	setup := openDB(t, env.Primary, "")
	mustExec(t, setup, "DROP TABLE IF EXISTS "+other+"."+table)
	mustExec(t, setup, "CREATE TABLE "+other+"."+table+" (id INT PRIMARY KEY, note VARCHAR(20))")
	mustExec(t, setup, "INSERT INTO "+other+"."+table+" VALUES (1, 'one'), (2, 'two')")

	pem, err := os.ReadFile(env.TLSCA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	if err := mysql.RegisterTLSConfig("gk-handover", &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}

	// script sets up a session and reads it back; after a hand-over, check reads it again.
	type session struct {
		conn *sql.Conn
		stmt *sql.Stmt
	}
	script := func(t *testing.T, db *sql.DB) (*session, []string) {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			"SET SESSION sql_mode = 'ANSI_QUOTES,NO_ENGINE_SUBSTITUTION'",
			"SET SESSION time_zone = '+03:00'",
			"SET NAMES utf8mb4 COLLATE utf8mb4_bin",
			"USE " + other,
		} {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		stmt, err := conn.PrepareContext(ctx, `SELECT "note" FROM `+table+` WHERE id = ?`)
		if err != nil {
			t.Fatal(err)
		}
		s := &session{conn: conn, stmt: stmt}
		return s, check(t, s.conn, s.stmt)
	}
	eachMode(t, func(t *testing.T, mode string) {
		edit := inMode(mode, func(c *config.Config) {
			c.TLS.CertFile, c.TLS.KeyFile = env.TLSCert, env.TLSKey
		})
		direct := openDB(t, env.Primary, "")
		_, want := script(t, direct)

		a := startProxy(t, edit)
		b := startProxy(t, edit)
		db := openDB(t, a.Addr, "")
		s, before := script(t, db)
		defer s.conn.Close()
		compareAnswers(t, before, want)
		id := connectionID(t, s.conn)

		// One client in a transaction, one on TLS, and in pooled mode one pinned.
		txnDB := openDB(t, a.Addr, "")
		txn, err := txnDB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Exec("INSERT INTO " + other + "." + table + " VALUES (3, 'three')"); err != nil {
			t.Fatal(err)
		}
		tlsConn, err := openDB(t, a.Addr, "tls=gk-handover").Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tlsConn.Close()
		if err := tlsConn.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		var pinned *sql.Conn
		if mode == config.ModePooled {
			if pinned, err = openDB(t, a.Addr, "").Conn(ctx); err != nil {
				t.Fatal(err)
			}
			defer pinned.Close()
			if _, err := pinned.ExecContext(ctx, "CREATE TEMPORARY TABLE handover_pin (id INT)"); err != nil {
				t.Fatal(err)
			}
		}

		// The transaction commits while the hand-over waits for it.
		var committed sync.WaitGroup
		committed.Go(func() {
			waitFor(t, 10*time.Second, "the proxy to hand the idle sessions over", func() bool {
				return a.Open() <= 1
			})
			if err := txn.Commit(); err != nil {
				t.Errorf("commit during the hand-over: %v", err)
			}
		})
		handed, drained := handOver(t, a, b)
		committed.Wait()

		wantDrained := map[string]int{"tls": 1}
		if mode == config.ModePooled {
			wantDrained["temporary_table"] = 1
		}
		if fmt.Sprint(drained) != fmt.Sprint(wantDrained) {
			t.Errorf("drained %v, want %v", drained, wantDrained)
		}
		if handed < 2 {
			t.Errorf("%d sessions handed over, want the scripted one and the one that committed at least", handed)
		}
		if a.Open() != 0 {
			t.Errorf("the old proxy still holds %d connections", a.Open())
		}

		compareAnswers(t, check(t, s.conn, s.stmt), want) // after the hand-over
		if got := connectionID(t, s.conn); got != id {
			t.Errorf("CONNECTION_ID() = %d after the hand-over, %d before", got, id)
		}
		var n int
		if err := txnDB.QueryRow("SELECT COUNT(*) FROM " + other + "." + table).Scan(&n); err != nil || n != 3 {
			t.Errorf("rows after the committed transaction: %d, %v; want 3", n, err)
		}
		if err := tlsConn.PingContext(ctx); err == nil {
			t.Errorf("the TLS connection still answers after the hand-over; it should have been drained")
		}
		if pinned != nil {
			if _, err := pinned.ExecContext(ctx, "SELECT 1"); err == nil {
				t.Errorf("the pinned session still answers after the hand-over; it should have been drained")
			}
		}
		mustExec(t, setup, "DELETE FROM "+other+"."+table+" WHERE id = 3")
	})
}

// check reads back what script set.
func check(t *testing.T, conn *sql.Conn, stmt *sql.Stmt) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, q := range []string{
		"SELECT @@SESSION.sql_mode, @@SESSION.time_zone, @@character_set_client, @@collation_connection, DATABASE()",
		`SELECT "note" FROM ` + "handover_ledger" + ` ORDER BY id LIMIT 1`,
	} {
		rows, err := conn.QueryContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, dumpRows(t, rows))
	}
	for _, id := range []int{1, 2} {
		var note string
		if err := stmt.QueryRowContext(ctx, id).Scan(&note); err != nil {
			t.Fatalf("prepared statement: %v", err)
		}
		out = append(out, note)
	}
	return out
}

func connectionID(t *testing.T, conn *sql.Conn) int64 {
	t.Helper()
	var id int64
	if err := conn.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// dumpRows returns the rows as text.
func dumpRows(t *testing.T, rows *sql.Rows) string {
	t.Helper()
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out string
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			out += string(v) + "|"
		}
		out += "\n"
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
