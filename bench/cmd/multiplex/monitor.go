package main

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// monitorEvery is how often the primary's Threads_connected is read.
const monitorEvery = 500 * time.Millisecond

// monitor reads the primary's Threads_connected over a connection of its own, straight to
// the server: how many connections the database holds, whoever opened them.
type monitor struct {
	db *sql.DB

	mu       sync.Mutex
	samples  []threadsSample
	failures int
}

type threadsSample struct {
	at time.Time
	n  int
}

// openMonitor opens the monitor's connection and reads Threads_connected once: before the
// clients connect, the baseline.
func openMonitor(ctx context.Context, dsn string) (m *monitor, baseline int, err error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, 0, fmt.Errorf("--monitor: %w", err)
	}
	cfg.Logger = &mysql.NopLogger{}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, 0, fmt.Errorf("--monitor: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	m = &monitor{db: db}
	if baseline, err = m.read(ctx); err != nil {
		db.Close()
		return nil, 0, fmt.Errorf("--monitor: %w", err)
	}
	return m, baseline, nil
}

// read returns the server's Threads_connected now.
func (m *monitor) read(ctx context.Context) (int, error) {
	var name, value string
	if err := m.db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Threads_connected'").Scan(&name, &value); err != nil {
		return 0, fmt.Errorf("read Threads_connected: %w", err)
	}
	return strconv.Atoi(value)
}

// run samples every monitorEvery until ctx is done; a failed read is counted and skipped.
func (m *monitor) run(ctx context.Context) {
	tick := time.NewTicker(monitorEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n, err := m.read(ctx)
		m.mu.Lock()
		if err != nil {
			if ctx.Err() == nil {
				m.failures++
			}
		} else {
			m.samples = append(m.samples, threadsSample{time.Now(), n})
		}
		m.mu.Unlock()
	}
}

// latest is the last value read, if any.
func (m *monitor) latest() (int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.samples) == 0 {
		return 0, false
	}
	return m.samples[len(m.samples)-1].n, true
}

// between returns the values read from a to b, sorted.
func (m *monitor) between(a, b time.Time) []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	var v []int
	for _, s := range m.samples {
		if !s.at.Before(a) && !s.at.After(b) {
			v = append(v, s.n)
		}
	}
	slices.Sort(v)
	return v
}

func (m *monitor) close() error { return m.db.Close() }

// medianInt is the median of sorted values (of an even count, the lower middle one, so that
// it is a value that was read); 0 when there are none.
func medianInt(sorted []int) int {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)/2]
}
