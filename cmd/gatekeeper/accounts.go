package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// accounts keeps pooled mode's accounts: those of auth.users_file, read again on reload,
// and those read from the primary with auth.from_backend, read again periodically. The
// file's entries win for a name both have.
type accounts struct {
	store *auth.Store
	file  string
	log   *slog.Logger
	// fromFile and fromBackend are the last accounts read from each source.
	fromFile, fromBackend atomic.Pointer[auth.Users]
	refresher             *auth.Refresher
	db                    *sql.DB
}

// newAccounts reads the accounts of cfg into store and, with auth.from_backend, starts
// reading them again until ctx ends, from the server primary names (nil: backends.primary).
func newAccounts(ctx context.Context, cfg config.Config, store *auth.Store, primary func() string, log *slog.Logger) (*accounts, error) {
	a := &accounts{store: store, file: cfg.Auth.UsersFile, log: log}
	if a.file != "" {
		users, err := auth.LoadFile(a.file)
		if err != nil {
			return nil, fmt.Errorf("auth.users_file: %w", err)
		}
		a.fromFile.Store(users)
		log.Info("accounts read", "source", a.file, "accounts", users.Len())
	}
	a.swap()
	if !cfg.Auth.FromBackend {
		return a, nil
	}
	mc := mysql.NewConfig()
	mc.Net, mc.Addr, mc.User, mc.Passwd = "tcp", cfg.Backends.Primary, cfg.Monitor.User, cfg.Monitor.Password
	mc.Timeout, mc.ReadTimeout, mc.WriteTimeout = cfg.Backends.ConnectTimeout, 10*time.Second, 10*time.Second
	if primary != nil {
		// Accounts are read from the primary of the moment: after a failover, the one
		// promoted.
		var d net.Dialer
		mc.DialFunc = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, primary())
		}
	}
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("auth.from_backend: %w", err)
	}
	a.db = sql.OpenDB(conn)
	a.db.SetMaxOpenConns(1)
	a.db.SetConnMaxIdleTime(time.Minute)
	load := func(ctx context.Context) (*auth.Users, error) {
		users, err := auth.LoadFromBackend(ctx, a.db)
		if err != nil {
			return nil, err
		}
		a.fromBackend.Store(users)
		return a.merged(), nil
	}
	a.refresher = auth.NewRefresher(store, load, cfg.Auth.RefreshInterval, log)
	if !a.refresher.RefreshNow(ctx) {
		log.Warn("cannot read the accounts from the primary yet; clients of users not in auth.users_file are refused until it answers",
			"backend", cfg.Backends.Primary)
	} else {
		log.Info("accounts read", "source", "primary", "accounts", store.Users().Len())
	}
	go a.refresher.Run(ctx) // ends with ctx
	return a, nil
}

// refresh reads the backend's accounts again at once, for a user nobody knows (rate
// limited by the refresher); nil without auth.from_backend.
func (a *accounts) refresh() func(context.Context) bool {
	if a.refresher == nil {
		return nil
	}
	return a.refresher.RefreshNow
}

func (a *accounts) merged() *auth.Users {
	return auth.Merge(a.fromFile.Load(), a.fromBackend.Load())
}

func (a *accounts) swap() { a.store.Swap(a.merged()) }

// reload reads the users file again (on SIGHUP or /-/reload).
func (a *accounts) reload() error {
	if a.file == "" {
		return nil
	}
	users, err := auth.LoadFile(a.file)
	if err != nil {
		return fmt.Errorf("auth.users_file: %w", err)
	}
	a.fromFile.Store(users)
	a.swap()
	a.log.Info("accounts read again", "source", a.file, "accounts", users.Len())
	return nil
}

func (a *accounts) close() {
	if a.db != nil {
		_ = a.db.Close()
	}
}
