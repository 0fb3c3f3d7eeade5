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
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
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
// backend connections (passthrough dials the backend as soon as a client connects), while
// they wait and while they give way: a client from another address still logs in, and so
// does one from theirs, in the place of one of them.
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
		// So does one from their address, once the grace of the oldest is over.
		start = time.Now()
		if err := pingFrom(p.Addr, "127.0.0.1"); err != nil {
			t.Fatalf("a client from 127.0.0.1 while 60 idle sockets from 127.0.0.1 hold and wait: %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the client from the idle sockets' address took %v to log in", d)
		}
		if v := metricValue(t, p, "gatekeeper_client_handshake_failures_total", map[string]string{"reason": "evicted"}); v < 1 {
			t.Errorf("handshake failures for evicted = %v, want an idle socket closed to make room", v)
		}
		// The idle sockets that find no place are refused when their time to wait is up,
		// and those that gave way took their backend connections with them.
		waitFor(t, 10*time.Second, "the idle sockets to be refused", func() bool {
			return metricValue(t, p, "gatekeeper_client_connections_refused_total", map[string]string{"reason": "max_handshakes_per_client"}) > 0
		})
		waitFor(t, time.Second, "the idle sockets to hold at most 4 backend connections", func() bool {
			return threads()-before <= 4
		})
	})
}

// 600 sockets that connect from an application server's address and never speak do not
// lock the application out: its client logs in within a second, in the place of one of
// them, and all of them cost the primary fewer than 100 connections.
func TestSilentSocketsLeaveRoomForAClientAtTheirAddress(t *testing.T) {
	const silent = 600
	// Both ends of each socket are in this process.
	needFiles(t, 2*silent+500)
	// Passthrough, where a login holds a backend connection, with the default client limits.
	p := startProxy(t, inMode(config.ModePassthrough, nil))
	peak := watchThreads(t)
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range silent {
		c, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	waitFor(t, 10*time.Second, "the proxy to accept the silent sockets", func() bool {
		return metricValue(t, p, "gatekeeper_client_connections_total", nil) >= silent
	})
	db := openDB(t, p.Addr, "timeout=5s")
	start := time.Now()
	if err := db.Ping(); err != nil {
		t.Fatalf("a client from 127.0.0.1 while %d silent sockets from 127.0.0.1 are open: %v", silent, err)
	}
	took := time.Since(start)
	t.Logf("the client logged in in %v", took)
	if took > time.Second {
		t.Errorf("the client took %v to log in, want within 1s", took)
	}
	if v := metricValue(t, p, "gatekeeper_client_handshake_failures_total", map[string]string{"reason": "evicted"}); v < 1 {
		t.Errorf("handshake failures for evicted = %v, want the client to have taken a silent socket's place", v)
	}
	grew := peak()
	t.Logf("the primary's connections grew by %d at most", grew)
	if grew >= 100 {
		t.Errorf("the primary's connections grew by %d for %d silent sockets, want fewer than 100", grew, silent)
	}
}

// watchThreads samples the primary's Threads_connected until the function it returns is
// called, which returns its peak above the first sample.
func watchThreads(t *testing.T) (stop func() int) {
	t.Helper()
	direct := openDB(t, env.Primary, "")
	direct.SetMaxOpenConns(1)
	sample := func() (int, error) {
		var name string
		var n int
		err := direct.QueryRow("SHOW STATUS LIKE 'Threads_connected'").Scan(&name, &n)
		return n, err
	}
	before, err := sample()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	result := make(chan int, 1)
	go func() { // ends when stop is called
		peak := before
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if n, err := sample(); err == nil {
				peak = max(peak, n)
			}
			select {
			case <-done:
				result <- peak - before
				return
			case <-tick.C:
			}
		}
	}()
	return func() int {
		close(done)
		return <-result
	}
}

// needFiles raises the open-file limit of the test process to n when it is lower.
func needFiles(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max < n {
		t.Fatalf("the open-file limit is %d at most (ulimit -Hn); the test needs %d", lim.Max, n)
	}
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
}

// answeredLogin connects to the proxy, answers its greeting with a login by a method the
// account does not use, and leaves the request to switch methods unanswered: a login that
// has spoken, which keeps its slot until its handshake time is up.
func answeredLogin(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, _ := rawConnect(t, addr)
	writeRaw(t, c, 1, protocol.AppendHandshakeResponse(nil, &protocol.Login{
		Capabilities: gomysql.CLIENT_LONG_PASSWORD | gomysql.CLIENT_PROTOCOL_41 | gomysql.CLIENT_SECURE_CONNECTION |
			gomysql.CLIENT_PLUGIN_AUTH,
		MaxPacketSize: 1 << 24, Charset: 33, User: env.User, AuthResponse: make([]byte, 20), AuthPlugin: "dialog",
	}))
	if p := readRaw(t, c); p[0] != 0xfe {
		t.Fatalf("the answer to a login by method dialog: %q, want a request to switch methods", p)
	}
	return c
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
			// A login that answered its greeting and stalls holds the only login slot; one
			// that never spoke would give way to the CLI.
			answeredLogin(t, p.Addr)
			if v := metricValue(t, p, "gatekeeper_client_handshakes", nil); v != 1 {
				t.Fatalf("%v logins in progress, want the stalled one", v)
			}
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
