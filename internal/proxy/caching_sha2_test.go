package proxy

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"
	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// answerer answers every query with one row holding the text of the query.
type answerer struct{ server.EmptyHandler }

func (answerer) HandleQuery(q string) (*gomysql.Result, error) {
	rs, err := gomysql.BuildSimpleTextResultset([]string{"q"}, [][]any{{q}})
	if err != nil {
		return nil, err
	}
	return gomysql.NewResult(rs), nil
}

// mysql8 serves the MySQL protocol with caching_sha2_password as its default method, as
// MySQL 8 does; MariaDB has no such method, so the integration suite cannot cover it.
func mysql8(t *testing.T, user, password string) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.NewServer("8.0.36", gomysql.DEFAULT_COLLATION_ID, gomysql.AUTH_CACHING_SHA2_PASSWORD, key, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() { // ends when ln is closed
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // ends when the client leaves
				c, err := srv.NewConn(nc, user, password, answerer{})
				if err != nil {
					nc.Close()
					return
				}
				for c.HandleCommand() == nil {
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func startTestProxy(t *testing.T, primary string) string {
	t.Helper()
	cfg := config.Default()
	cfg.Backends.Primary = primary
	addr, _ := serveTestProxy(t, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return addr
}

// testParts are the parts a test proxy of cfg runs on: its pools, and admission as cfg
// turns it on or off, at a capacity no test reaches (package wiring builds a daemon's
// from every setting; its tests and the integration suite run those).
func testParts(cfg config.Config) Parts {
	p := cfg.Pools
	return Parts{
		Admission: Admission{Enabled: cfg.Admission.Enabled, Primary: admission.Config{Capacity: time.Hour,
			QueueTimeout: cfg.Admission.QueueTimeout, MaxQueue: cfg.Admission.MaxQueue}},
		Pools: backend.PoolConfig{MaxOpen: p.MaxOpen, MaxIdle: p.MaxIdle, IdleTimeout: p.IdleTimeout,
			MaxLifetime: p.MaxLifetime, WaitTimeout: p.WaitTimeout},
	}
}

// serveTestProxy runs a proxy for cfg on a loopback port until the test ends.
func serveTestProxy(t *testing.T, cfg config.Config, log *slog.Logger) (string, *Server) {
	t.Helper()
	srv, err := New(cfg, testParts(cfg), log, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }() // ends at Shutdown
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return ln.Addr().String(), srv
}

func TestCachingSha2PasswordThroughProxy(t *testing.T) {
	backend := mysql8(t, "alice", "s3cret")
	addr := startTestProxy(t, backend)
	query := func(password string) (string, error) {
		db, err := sql.Open("mysql", fmt.Sprintf("alice:%s@tcp(%s)/", password, addr))
		if err != nil {
			return "", err
		}
		defer db.Close()
		var got string
		err = db.QueryRow("SELECT 'through the proxy'").Scan(&got)
		return got, err
	}
	// The first login takes the full path (the server's public key is fetched and the
	// password sent encrypted); the second takes the fast path from the server's cache.
	for _, round := range []string{"full authentication", "fast path"} {
		got, err := query("s3cret")
		if err != nil {
			t.Fatalf("%s: %v", round, err)
		}
		if got != "SELECT 'through the proxy'" {
			t.Errorf("%s: got %q", round, got)
		}
	}
	_, err := query("wrong")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1045 {
		t.Errorf("wrong password: %v, want the server's error 1045", err)
	}
}
