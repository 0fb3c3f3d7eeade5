// Package monitor reads the primary's own view of its load: it logs in with a monitoring
// account and polls SHOW GLOBAL STATUS for Threads_running, a signal the rate policers can
// steer by.
package monitor

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Poller polls Threads_running on one server.
type Poller struct {
	// db reaches addr; both owned by Run's goroutine once it runs.
	db             *sql.DB
	addr           string
	user, password string
	// primary, when set, names the server to read (Follow).
	primary  func() string
	interval time.Duration
	log      *slog.Logger

	mu    sync.Mutex
	value float64
	at    time.Time
	err   error
}

// New returns a poller of the server at addr, logging in as user. It does not connect
// until Run.
func New(addr, user, password string, interval time.Duration, log *slog.Logger) (*Poller, error) {
	p := &Poller{user: user, password: password, interval: interval, log: log}
	if err := p.open(addr); err != nil {
		return nil, err
	}
	return p, nil
}

// Follow makes the poller read the server primary names at each poll, after a failover
// the one promoted, rather than the address New was given. Call it before Run.
func (p *Poller) Follow(primary func() string) { p.primary = primary }

// open points the poller's connection at addr; owned by Run's goroutine once it runs.
func (p *Poller) open(addr string) error {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", addr, p.user, p.password
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 5*time.Second, 5*time.Second, 5*time.Second
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	if p.db != nil {
		p.db.Close()
	}
	p.db, p.addr = sql.OpenDB(conn), addr
	p.db.SetMaxOpenConns(1)
	p.db.SetMaxIdleConns(1)
	return nil
}

// Run polls until ctx ends, then closes the connection.
func (p *Poller) Run(ctx context.Context) {
	defer func() { p.db.Close() }()
	t := time.NewTicker(p.interval)
	defer t.Stop()
	failing := false
	for {
		if p.primary != nil {
			if a := p.primary(); a != p.addr {
				_ = p.open(a) // a config that opened once opens again
			}
		}
		err := p.poll(ctx)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			p.log.Warn("cannot read Threads_running from the primary; check monitor.user and monitor.password", "err", err)
			failing = true
		case err == nil && failing:
			p.log.Info("reading Threads_running from the primary again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *Poller) poll(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var name, value string
	err := p.db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Threads_running'").Scan(&name, &value)
	var v float64
	if err == nil {
		v, err = strconv.ParseFloat(value, 64)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
	if err == nil {
		p.value, p.at = v, time.Now()
	}
	return err
}

// ThreadsRunning returns the last value read, when it was read (zero before the first
// success), and the error of the last poll.
func (p *Poller) ThreadsRunning() (float64, time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.value, p.at, p.err
}
