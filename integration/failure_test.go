package integration

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

func TestPrimaryUnreachable(t *testing.T) {
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, func(c *config.Config) {
			c.Backends.Primary = dead
			c.Backends.ConnectTimeout = 2 * time.Second
		}))
		db := openDB(t, p.Addr, "")
		start := time.Now()
		err := db.Ping()
		var me *mysql.MySQLError
		if !errors.As(err, &me) || !strings.HasPrefix(me.Message, "gatekeeper:") || !strings.Contains(me.Message, dead) {
			t.Fatalf("err = %v, want a gatekeeper error naming %s", err, dead)
		}
		if me.Number != 1043 || me.SQLState != [5]byte{'0', '8', 'S', '0', '1'} {
			t.Errorf("error %d (%s), want 1043 (08S01)", me.Number, me.SQLState[:])
		}
		// The mariadb CLI (libmariadb) shows the proxy's message, not "malformed packet"
		// (a CLI that tries TLS first wraps it in a note that it came before TLS).
		_, port := hostPort(t, p.Addr)
		out, _ := exec.Command(needTool(t, "mariadb"), "--no-defaults", "-h127.0.0.1", "-P"+port,
			"-u"+env.User, "-p"+env.Password, "-e", "SELECT 1").CombinedOutput()
		if !strings.Contains(string(out), "1043") || !strings.Contains(string(out), "gatekeeper: cannot reach the primary backend "+dead) {
			t.Errorf("mariadb CLI says %q", out)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("took %v, longer than the connect timeout", d)
		}
		if v := metricValue(t, p, "gatekeeper_backend_dial_errors_total", map[string]string{"backend": dead}); v < 1 {
			t.Errorf("dial errors = %v", v)
		}
	})
}

func TestPrimaryTimesOut(t *testing.T) {
	// A listener that accepts and never greets: the connect timeout must still hold.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // ends when ln is closed
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, func(c *config.Config) {
			c.Backends.Primary = ln.Addr().String()
			c.Backends.ConnectTimeout = 300 * time.Millisecond
		}))
		db := openDB(t, p.Addr, "timeout=5s")
		start := time.Now()
		err := db.Ping()
		var me *mysql.MySQLError
		if !errors.As(err, &me) || !strings.Contains(me.Message, "timed out") {
			t.Fatalf("err = %v, want a gatekeeper timeout error", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("took %v with a 300ms connect timeout", d)
		}
	})
}

// cutter relays TCP between the proxy and the backend and can sever every connection.
type cutter struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	// down refuses new connections, as a dead server does.
	down bool
}

func newCutter(t *testing.T, target string) *cutter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln}
	t.Cleanup(func() { ln.Close(); c.cut() })
	go func() { // ends when ln is closed
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			down := c.down
			c.mu.Unlock()
			if down {
				in.Close()
				continue
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, in, out)
			c.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }() // ends when either side closes
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return c
}

func (c *cutter) addr() string { return c.ln.Addr().String() }

// setDown makes the relay refuse new connections (true) or take them again.
func (c *cutter) setDown(down bool) {
	c.mu.Lock()
	c.down = down
	c.mu.Unlock()
}

func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

func TestBackendDiesMidResponse(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		cut := newCutter(t, env.Primary)
		p := startProxy(t, inMode(mode, func(c *config.Config) { c.Backends.Primary = cut.addr() }))
		db := openDB(t, p.Addr, "")
		db.SetMaxOpenConns(1)
		rows, err := db.Query("SELECT seq, REPEAT('x', 200) FROM seq_1_to_2000000")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
			if n == 1000 {
				cut.cut()
			}
		}
		err = rows.Err()
		rows.Close()
		if err == nil {
			t.Fatalf("read %d rows of 2000000 and the result looked complete", n)
		}
		if n >= 2000000 {
			t.Fatalf("all rows arrived")
		}
		// The rows end with the proxy's error, not a bare broken connection.
		var lost *mysql.MySQLError
		if !errors.As(err, &lost) || lost.Number != 1158 || !strings.HasPrefix(lost.Message, "gatekeeper: lost the connection to backend") {
			t.Errorf("after %d rows: err = %v, want gatekeeper error 1158", n, err)
		}
		waitFor(t, 5*time.Second, "the client connection to close", func() bool { return p.Open() == 0 })
		if v := metricValue(t, p, "gatekeeper_backend_lost_total", nil); v != 1 {
			t.Errorf("backend lost = %v, want 1", v)
		}

		// A backend that dies before answering: the client is told why.
		monitor := openDB(t, env.Primary, "")
		db2 := openDB(t, p.Addr, "")
		db2.SetMaxOpenConns(1)
		if err := db2.Ping(); err != nil {
			t.Fatal(err)
		}
		// Each statement is tagged: the server runs a cut statement to its end.
		sleep := fmt.Sprintf("DO SLEEP(5) /* %s %d */", t.Name(), time.Now().UnixNano())
		done := make(chan error, 1)
		go func() { _, err := db2.Exec(sleep); done <- err }()
		waitForRunning(t, monitor, sleep)
		cut.cut()
		err = <-done
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1158 || !strings.HasPrefix(me.Message, "gatekeeper: lost the connection to backend") {
			t.Errorf("err = %v, want gatekeeper error 1158", err)
		}

		// The same seen by the mariadb CLI (libmariadb): the message, not "malformed packet".
		_, port := hostPort(t, p.Addr)
		cli := exec.Command(needTool(t, "mariadb"), "--no-defaults", "-h127.0.0.1", "-P"+port,
			"-u"+env.User, "-p"+env.Password, "--comments", "-e", sleep+" /* cli */")
		var out strings.Builder
		cli.Stdout, cli.Stderr = &out, &out
		if err := cli.Start(); err != nil {
			t.Fatal(err)
		}
		waitForRunning(t, monitor, sleep+" /* cli */")
		cut.cut()
		_ = cli.Wait()
		if !strings.Contains(out.String(), "ERROR 1158 (08S01) at line 1: gatekeeper: lost the connection to backend") {
			t.Errorf("mariadb CLI says %q", out.String())
		}
	})
}

// rawConnect opens a TCP connection to the proxy and reads its greeting.
func rawConnect(t *testing.T, addr string) (net.Conn, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, readRaw(t, c)
}

func readRaw(t *testing.T, c net.Conn) []byte {
	t.Helper()
	var h [4]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		t.Fatalf("read header: %v", err)
	}
	p := make([]byte, int(h[0])|int(h[1])<<8|int(h[2])<<16)
	if _, err := io.ReadFull(c, p); err != nil {
		t.Fatalf("read payload: %v", err)
	}
	return p
}

func writeRaw(t *testing.T, c net.Conn, seq byte, payload []byte) {
	t.Helper()
	n := len(payload)
	if _, err := c.Write(append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)); err != nil {
		t.Fatal(err)
	}
}

// expectClosed reads until the connection ends and fails if that takes too long.
func expectClosed(t *testing.T, c net.Conn, within time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v", within)
	}
}

func TestMalformedHandshake(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		c, greeting := rawConnect(t, p.Addr)
		if greeting[0] != 10 {
			t.Fatalf("greeting = %q", greeting)
		}
		// A handshake response whose user name runs past the end.
		bad := make([]byte, 40)
		binary.LittleEndian.PutUint32(bad, mysql_CLIENT_PROTOCOL_41|mysql_CLIENT_SECURE_CONNECTION)
		for i := 32; i < 40; i++ {
			bad[i] = 'u'
		}
		writeRaw(t, c, 1, bad)
		p2 := readRaw(t, c)
		if p2[0] != 0xff || !bytes.Contains(p2, []byte("gatekeeper: bad handshake")) {
			t.Fatalf("reply = %q, want a gatekeeper bad-handshake error", p2)
		}
		expectClosed(t, c, 5*time.Second)
		waitFor(t, 5*time.Second, "the session to end", func() bool { return p.Open() == 0 })
		waitFor(t, 5*time.Second, "the session goroutine to end", func() bool { return sessionGoroutines() == 0 })
		// The proxy still serves.
		if err := openDB(t, p.Addr, "").Ping(); err != nil {
			t.Fatal(err)
		}

		// A login packet over 64 KiB is refused with a reason, and counted as malformed.
		c2, _ := rawConnect(t, p.Addr)
		huge := make([]byte, 70<<10)
		binary.LittleEndian.PutUint32(huge, mysql_CLIENT_PROTOCOL_41|mysql_CLIENT_SECURE_CONNECTION)
		writeRaw(t, c2, 1, huge)
		p3 := readRaw(t, c2)
		if p3[0] != 0xff || binary.LittleEndian.Uint16(p3[1:]) != 1153 || !bytes.Contains(p3, []byte("gatekeeper: got a packet bigger than")) {
			t.Fatalf("reply to a 70 KiB login = %q, want a gatekeeper error 1153", p3)
		}
		if v := metricValue(t, p, "gatekeeper_client_handshake_failures_total", map[string]string{"reason": "malformed"}); v < 1 {
			t.Errorf("handshake failures for malformed = %v, want the oversized login counted", v)
		}
	})
}

// sessionGoroutines counts the goroutines running proxy sessions in this process.
func sessionGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return bytes.Count(buf, []byte("proxy.(*session).run("))
}

const (
	mysql_CLIENT_PROTOCOL_41       = 1 << 9
	mysql_CLIENT_SECURE_CONNECTION = 1 << 15
)

func TestOversizedPacket(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, func(c *config.Config) { c.Client.MaxPacketSize = 1 << 20 }))
		db := openDB(t, p.Addr, "interpolateParams=true")
		db.SetMaxOpenConns(1)
		if err := db.Ping(); err != nil {
			t.Fatal(err)
		}
		threads := backendThreads(t)
		_, err := db.Exec("SELECT ?", strings.Repeat("x", 2<<20))
		if err == nil {
			t.Fatal("a 2 MiB statement through a 1 MiB limit succeeded")
		}
		// The client reads the proxy's error, not a reset of the connection.
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1153 || !strings.HasPrefix(me.Message, "gatekeeper:") {
			t.Errorf("err = %v, want gatekeeper error 1153", err)
		}
		waitFor(t, 5*time.Second, "the session to end", func() bool { return p.Open() == 0 })
		switch mode {
		case config.ModePassthrough:
			// The session's own backend connection ends with it.
			waitFor(t, 5*time.Second, "the backend connection to close", func() bool { return backendThreads(t) < threads })
		case config.ModePooled:
			// The session held no backend connection between commands: the pool's stays
			// open and idle for the next session.
			leased := metricValue(t, p, "gatekeeper_backend_connections", map[string]string{"state": "leased"})
			idle := metricValue(t, p, "gatekeeper_backend_connections", map[string]string{"state": "idle"})
			if leased != 0 || idle != 1 || backendThreads(t) != threads {
				t.Errorf("after the session ended: %v leased and %v idle pooled connections, the primary %d connections (%d before); want 0, 1 and the same",
					leased, idle, backendThreads(t), threads)
			}
		}
		if v := metricValue(t, p, "gatekeeper_client_protocol_errors_total", map[string]string{"reason": "packet_too_large"}); v != 1 {
			t.Errorf("protocol errors = %v", v)
		}
	})
}

// backendThreads returns how many connections the primary has open, seen directly.
func backendThreads(t *testing.T) int {
	t.Helper()
	db, err := sql.Open("mysql", dsn(env.Primary, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var name string
	var n int
	if err := db.QueryRow("SHOW GLOBAL STATUS LIKE 'Threads_connected'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n - 1 // this connection
}

func TestHandshakeTimeout(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, func(c *config.Config) { c.Client.HandshakeTimeout = 300 * time.Millisecond }))
		c, _ := rawConnect(t, p.Addr)
		start := time.Now()
		expectClosed(t, c, 5*time.Second)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("a silent client held its connection for %v with a 300ms handshake timeout", d)
		}
		waitFor(t, 5*time.Second, "the session to end", func() bool { return p.Open() == 0 })
		if v := metricValue(t, p, "gatekeeper_client_handshake_failures_total", map[string]string{"reason": "timeout"}); v != 1 {
			t.Errorf("handshake timeouts = %v, want 1", v)
		}
	})
}

func TestIdleTimeout(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, func(c *config.Config) { c.Client.IdleTimeout = 500 * time.Millisecond }))
		c := connect(t, p.Addr)
		if err := c.Ping(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "the idle connection to be closed", func() bool { return p.Open() == 0 })
		if err := c.Ping(); err == nil {
			t.Error("ping on a connection closed for idleness succeeded")
		}
	})
}

func TestMaxConnections(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, func(c *config.Config) { c.Client.MaxConnections = 2 }))
		a, b := connect(t, p.Addr), connect(t, p.Addr)
		defer a.Close()
		defer b.Close()
		db := openDB(t, p.Addr, "")
		err := db.Ping()
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1040 || !strings.Contains(me.Message, "client.max_connections") {
			t.Fatalf("third connection: err = %v, want gatekeeper error 1040", err)
		}
	})
}

func TestGracefulShutdown(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, func(c *config.Config) { c.Shutdown.DrainTimeout = 5 * time.Second }))
		table := tableName(t)
		setup := openDB(t, env.Primary, "")
		mustExec(t, setup, "DROP TABLE IF EXISTS "+table)
		mustExec(t, setup, "CREATE TABLE "+table+" (id INT PRIMARY KEY)")

		inTx := connect(t, p.Addr)
		idle := connect(t, p.Addr)
		if _, err := inTx.Execute("BEGIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := inTx.Execute("INSERT INTO " + table + " VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		if err := idle.Ping(); err != nil {
			t.Fatal(err)
		}

		shut := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			shut <- p.Shutdown(ctx)
		}()
		waitFor(t, 5*time.Second, "the idle connection to close", func() bool { return p.Open() == 1 })
		if _, err := net.DialTimeout("tcp", p.Addr, time.Second); err == nil {
			t.Error("the proxy still accepts connections while draining")
		}
		// The transaction finishes and commits.
		if _, err := inTx.Execute("INSERT INTO " + table + " VALUES (2)"); err != nil {
			t.Fatalf("statement in an open transaction during the drain: %v", err)
		}
		if _, err := inTx.Execute("COMMIT"); err != nil {
			t.Fatalf("commit during the drain: %v", err)
		}
		if err := <-shut; err != nil {
			t.Fatalf("shutdown: %v", err)
		}
		var n int
		if err := setup.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil || n != 2 {
			t.Fatalf("rows committed = %d, %v; want 2", n, err)
		}
	})
}

func TestDrainTimeoutClosesOpenTransactions(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		c := connect(t, p.Addr)
		if _, err := c.Execute("BEGIN"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		if err := p.Shutdown(ctx); err == nil {
			t.Error("shutdown reported a complete drain with a transaction left open")
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("shutdown took %v with a 300ms drain timeout", d)
		}
		if p.Open() != 0 {
			t.Errorf("%d connections open after the drain timeout", p.Open())
		}
	})
}

// TestUnknownDatabaseAsDirect logs in with a schema that does not exist: the client gets the
// server's own error, as directly, in both modes (pooled mode relays it when it leases the
// connection, passthrough when the server refuses the login), and it is counted as the
// server's.
func TestUnknownDatabaseAsDirect(t *testing.T) {
	login := func(addr string) error {
		db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/gk_no_such_schema", env.User, env.Password, addr))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		return db.Ping()
	}
	var direct *mysql.MySQLError
	if !errors.As(login(env.Primary), &direct) || direct.Number != 1049 {
		t.Fatalf("directly: %v, want error 1049", direct)
	}
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		var got *mysql.MySQLError
		if err := login(p.Addr); !errors.As(err, &got) || *got != *direct {
			t.Fatalf("through the proxy: %v, want %v", err, direct)
		}
		// The schema was the client's mistake: the same user's next login, to a schema that
		// exists, is served at once, not held back or failed as if the database had
		// refused the user.
		if err := openDB(t, p.Addr, "").Ping(); err != nil {
			t.Errorf("the same user's login to %s right after: %v", env.Database, err)
		}
		// Passthrough counts the error once it has relayed it: the client may read it first.
		waitFor(t, 5*time.Second, "the server's 1049 counted", func() bool {
			return metricValue(t, p, "gatekeeper_client_errors_total", map[string]string{"origin": "server", "code": "1049"}) == 1
		})
	})
}
