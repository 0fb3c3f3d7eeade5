package integration

import (
	"context"
	"database/sql"
	"fmt"
	"net"
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
			waitFor(t, 5*time.Second, "the proxy to close the client's connection", func() bool {
				return metricValue(t, p, "gatekeeper_backend_closed_idle_total", nil) >= 1
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
