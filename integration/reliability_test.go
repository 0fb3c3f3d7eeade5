package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// A backend that closes the connection of an idle client (its wait_timeout here; a
// restart or a KILL alike) must not leave the client holding a dead connection: a pool
// that checks its idle connections, as go-sql-driver's does, sees it closed and opens
// another, and the next statement works, as it does directly.
func TestBackendClosesAnIdleConnection(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		db := openDB(t, p.Addr, "")
		db.SetMaxOpenConns(1)
		direct := openDB(t, env.Primary, "")
		ctx := context.Background()
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var thread int64
		if err := conn.QueryRowContext(ctx, "SELECT @@pseudo_thread_id").Scan(&thread); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "SET @@SESSION.wait_timeout = 1"); err != nil {
			t.Fatal(err)
		}
		conn.Close() // back to database/sql's pool, idle
		waitFor(t, 15*time.Second, "the primary to close the idle backend connection", func() bool {
			var n int
			_ = direct.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", thread).Scan(&n)
			return n == 0
		})
		if mode == config.ModePassthrough {
			// The counter moves when the proxy sees the hang-up; the client's socket closes
			// a moment later, when its session ends. A BEGIN sent in between is relayed to
			// the dead connection and fails, as one sent directly at the instant the server
			// closes would, so wait for the close itself.
			waitFor(t, 5*time.Second, "the proxy to close the client's connection", func() bool {
				return metricValue(t, p, "gatekeeper_backend_closed_idle_total", nil) >= 1 &&
					metricValue(t, p, "gatekeeper_client_connections_open", nil) == 0
			})
		}
		tx, err := db.Begin()
		if err != nil {
			t.Fatalf("BEGIN after the backend closed the idle connection: %v", err)
		}
		var one int
		if err := tx.QueryRow("SELECT 1").Scan(&one); err != nil {
			t.Fatalf("a statement in that transaction: %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	})
}

// Inside a transaction the same is an error: the transaction's connection is gone with its
// work, and neither mode may carry on over another as if nothing happened.
func TestBackendClosesAConnectionInATransaction(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		db := openDB(t, p.Addr, "")
		direct := openDB(t, env.Primary, "")
		table := tableName(t)
		if _, err := direct.Exec("CREATE OR REPLACE TABLE " + table + " (id INT PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var thread int64
		for _, q := range []string{"SET @@SESSION.wait_timeout = 1", "BEGIN", "INSERT INTO " + table + " VALUES (1)"} {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := conn.QueryRowContext(ctx, "SELECT @@pseudo_thread_id").Scan(&thread); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 15*time.Second, "the primary to close the connection idle in its transaction", func() bool {
			var n int
			_ = direct.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", thread).Scan(&n)
			return n == 0
		})
		_, err = conn.ExecContext(ctx, "INSERT INTO "+table+" VALUES (2)")
		if err == nil {
			_, err = conn.ExecContext(ctx, "COMMIT")
		}
		if err == nil {
			t.Fatal("the transaction went on after its backend connection was closed")
		}
		t.Logf("the client got: %v", err)
		var n int
		if err := direct.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil || n != 0 {
			t.Errorf("%d rows (%v) in the table: want none, the transaction never committed", n, err)
		}
	})
}

// Sockets that connect and never speak hold no more than client.max_handshakes_per_client
// backend connections (passthrough dials the backend as soon as a client connects), and a
// client from another address still logs in.
func TestIdleSocketsCannotExhaustTheDatabase(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, func(c *config.Config) {
			c.Client.MaxHandshakes, c.Client.MaxHandshakesPerClient = 8, 4
			c.Client.HandshakeTimeout = 3 * time.Second
		}))
		direct := openDB(t, env.Primary, "")
		threads := func() int {
			var name string
			var n int
			if err := direct.QueryRow("SHOW STATUS LIKE 'Threads_connected'").Scan(&name, &n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		// Warm: pooled mode reads the primary's greeting once.
		if err := openDB(t, p.Addr, "").Ping(); err != nil {
			t.Fatal(err)
		}
		before := threads()
		var idle []net.Conn
		for range 60 {
			c, err := net.Dial("tcp", p.Addr)
			if err != nil {
				t.Fatal(err)
			}
			idle = append(idle, c)
		}
		defer func() {
			for _, c := range idle {
				c.Close()
			}
		}()
		waitFor(t, 5*time.Second, "the idle sockets to take their slots", func() bool {
			return metricValue(t, p, "gatekeeper_client_handshakes", nil) >= 4
		})
		if held := threads() - before; held > 4 {
			t.Errorf("60 idle sockets hold %d backend connections, want at most 4 (client.max_handshakes_per_client)", held)
		}
		// A client from another address logs in meanwhile.
		start := time.Now()
		if err := pingFrom(p.Addr, "127.0.0.2"); err != nil {
			t.Fatalf("a client from 127.0.0.2 while 60 idle sockets from 127.0.0.1 wait: %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the other client took %v to log in", d)
		}
		// The idle sockets past the bound are refused when their handshake time is up.
		waitFor(t, 10*time.Second, "the idle sockets to be refused", func() bool {
			return metricValue(t, p, "gatekeeper_client_connections_refused_total", map[string]string{"reason": "max_handshakes_per_client"}) > 0
		})
	})
}

// pingFrom logs in to addr with the test user from the local address from, and pings.
func pingFrom(addr, from string) error {
	network := "from-" + from
	mysql.RegisterDialContext(network, func(ctx context.Context, addr string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		return d.DialContext(ctx, "tcp", addr)
	})
	db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@%s(%s)/%s", env.User, env.Password, network, addr, env.Database))
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Ping()
}

// Every error the proxy writes in its own name reaches the mariadb CLI (libmariadb, which
// shows "malformed packet" for an error whose code is a client's) as the proxy wrote it:
// code, state and the whole "gatekeeper:" message. The connection errors (1043, 1158) are
// checked where they happen (failure_test.go); here the refusals of a statement and of a
// login.
func TestMariaDBClientShowsGatekeeperErrors(t *testing.T) {
	cli := needTool(t, "mariadb")
	run := func(t *testing.T, addr, stdin string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// --no-defaults goes first, where the client looks for it.
		args := append([]string{"--no-defaults"}, cliArgs(t, addr, "--batch", "-D", env.Database)...)
		cmd := exec.CommandContext(ctx, cli, args...)
		cmd.Stdin = strings.NewReader(stdin)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	// want checks the CLI's line: "ERROR code (state) at line 1: gatekeeper: ...".
	want := func(t *testing.T, out, code, state, message string) {
		t.Helper()
		prefix := "ERROR " + code + " (" + state + ")"
		if !strings.Contains(out, prefix) || !strings.Contains(out, ": gatekeeper: "+message) {
			t.Errorf("mariadb CLI says %q, want %s with gatekeeper: %s...", out, prefix, message)
		}
	}
	eachMode(t, func(t *testing.T, mode string) {
		t.Run("packet too large", func(t *testing.T) {
			p := startProxy(t, inMode(mode, func(c *config.Config) { c.Client.MaxPacketSize = 1 << 20 }))
			out := run(t, p.Addr, "SELECT LENGTH('"+strings.Repeat("x", 2<<20)+"');\n")
			want(t, out, "1153", "08S01", "")
		})
		t.Run("queue timeout", func(t *testing.T) {
			p := startProxy(t, inMode(mode, func(c *config.Config) {
				c.Admission.Enabled = true
				c.Admission.Capacity = config.Capacity(10 * time.Millisecond)
				c.Admission.QueueTimeout = 300 * time.Millisecond
			}))
			// A type never measured is charged the whole capacity: while one runs, the
			// next waits, here past the queue timeout.
			db := openDB(t, p.Addr, "")
			held := make(chan error, 1)
			go func() { _, err := db.Exec("DO SLEEP(2)"); held <- err }()
			waitFor(t, 5*time.Second, "the SLEEP to be admitted", func() bool {
				return metricValue(t, p, "gatekeeper_admission_running", nil) >= 1
			})
			out := run(t, p.Addr, "SELECT 1;\n")
			want(t, out, "1205", "HY000", "queue timeout")
			if err := <-held; err != nil {
				t.Errorf("the SLEEP holding the capacity: %v", err)
			}
		})
		t.Run("too many logins", func(t *testing.T) {
			p := startProxy(t, inMode(mode, func(c *config.Config) {
				c.Client.MaxHandshakes = 1
				c.Client.HandshakeTimeout = time.Second
			}))
			// A socket that never speaks holds the only login slot.
			idle, err := net.Dial("tcp", p.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer idle.Close()
			waitFor(t, 5*time.Second, "the idle socket to hold the login slot", func() bool {
				return metricValue(t, p, "gatekeeper_client_handshakes", nil) >= 1
			})
			// Refused before TLS could start, the CLI (which tries TLS first) says the
			// message came before TLS, and shows it whole, as it does for a server's 1040.
			out := run(t, p.Addr, "SELECT 1;\n")
			whole := "gatekeeper: too many connections: 1 connections are logging in at once"
			if !strings.Contains(out, "1040 - "+whole) && !strings.Contains(out, "ERROR 1040 (08004) at line 1: "+whole) {
				t.Errorf("mariadb CLI says %q, want 1040 with the whole gatekeeper message", out)
			}
		})
	})
}

// A backend that stops answering in the middle of a login (it sent its greeting, and the
// answer to the login never comes) leaves the client with the proxy's error when the
// login's time is up, not a connection closed without a word.
func TestBackendStallsDuringLogin(t *testing.T) {
	// A relay to the primary that passes what the server sends and swallows what the proxy
	// sends: the greeting arrives, the login is never answered.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", env.Primary)
			if err != nil {
				c.Close()
				continue
			}
			go func() {
				defer c.Close()
				defer server.Close()
				go func() { _, _ = io.Copy(io.Discard, c) }()
				_, _ = io.Copy(c, server)
			}()
		}
	}()
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, func(c *config.Config) {
			c.Backends.Primary = ln.Addr().String()
			c.Client.HandshakeTimeout = 2 * time.Second
			c.Backends.ConnectTimeout = 2 * time.Second
		}))
		db := openDB(t, p.Addr, "timeout=10s")
		start := time.Now()
		err := db.Ping()
		took := time.Since(start)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || !strings.HasPrefix(me.Message, "gatekeeper:") {
			t.Fatalf("after %v: %v; want the proxy's error", took, err)
		}
		t.Logf("after %v: %v", took, err)
		if took > 4*time.Second {
			t.Errorf("the error came after %v, want it within the handshake timeout and a second", took)
		}
	})
}
