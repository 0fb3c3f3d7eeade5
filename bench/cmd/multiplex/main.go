// Command multiplex is the load of many application connections that are idle most of the
// time: thousands of clients, each holding one connection for the whole run as an
// application's connection pool would, thinking between short units of work. Through
// gatekeeper in pooled mode those sessions share a few dozen database connections; through
// passthrough, or straight to the database, each holds its own.
//
//	go run ./bench/cmd/multiplex --addr 127.0.0.1:6033 --clients 2000 --think 1s \
//		--monitor 'gk:gk@tcp(127.0.0.1:13306)/'
//
// A unit is a transaction that reads a random row of a random table and updates it, or
// with --read-only one autocommit point select; --prepare creates the tables. Statements are
// sent as text (the driver interpolates the parameters), so that a unit is the same four
// round trips on every path. bench/multiplex.sh compares pooled and passthrough with it.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/procstat"
)

// reportEvery is how often a line tells how the run is going.
const reportEvery = 5 * time.Second

type options struct {
	addr, user, password, database string
	clients                        int
	think, duration, warmup, ramp  time.Duration
	monitor                        string
	tables, rows                   int
	prepare, readOnly              bool
	json                           string
	seed                           uint64
	proxyPID                       int
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "multiplex:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "multiplex:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("multiplex", flag.ContinueOnError)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:6033", "where the clients connect, host:port: the proxy or the database")
	fs.StringVar(&o.user, "user", envOr("GK_USER", "gk"), "user of the clients (default $GK_USER, else gk)")
	fs.StringVar(&o.password, "password", envOr("GK_PASSWORD", "gk"), "its password (default $GK_PASSWORD, else gk)")
	fs.StringVar(&o.database, "db", envOr("GK_DATABASE", "gktest"), "database of the tables (default $GK_DATABASE, else gktest)")
	fs.IntVar(&o.clients, "clients", 2000, "clients, each with one connection for the whole run")
	fs.DurationVar(&o.think, "think", time.Second, "mean think time between a client's units (exponentially distributed)")
	fs.DurationVar(&o.duration, "duration", 60*time.Second, "measured period")
	fs.DurationVar(&o.warmup, "warmup", 10*time.Second, "time from the first connection to the measured period, in which the clients connect and run unmeasured; never less than --ramp")
	fs.DurationVar(&o.ramp, "ramp", 5*time.Second, "time over which the clients connect, evenly spread (default 5s, or --warmup if that is shorter)")
	fs.StringVar(&o.monitor, "monitor", "", "go-sql-driver DSN straight to the primary, to read Threads_connected every 500ms (empty: not read)")
	fs.IntVar(&o.tables, "tables", 16, "tables m1..mN")
	fs.IntVar(&o.rows, "rows", 10000, "rows of each table")
	fs.BoolVar(&o.prepare, "prepare", false, "create and fill the tables, then exit")
	fs.BoolVar(&o.readOnly, "read-only", false, "a unit is one autocommit point select instead of a read-and-update transaction")
	fs.StringVar(&o.json, "json", "", "also write the result to this file as JSON")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the think times and of the rows the clients pick")
	fs.IntVar(&o.proxyPID, "proxy-pid", 0, "a process (the proxy) whose CPU time over the measured period and resident memory at its end are reported (0: none)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	rampSet := false
	fs.Visit(func(f *flag.Flag) { rampSet = rampSet || f.Name == "ramp" })
	if !rampSet {
		o.ramp = min(o.ramp, o.warmup)
	}
	switch {
	case o.clients < 1:
		return o, errors.New("--clients must be at least 1")
	case o.tables < 1 || o.rows < 1:
		return o, errors.New("--tables and --rows must be at least 1")
	case o.think < 0 || o.warmup < 0 || o.ramp < 0:
		return o, errors.New("--think, --warmup and --ramp must not be negative")
	case o.duration <= 0:
		return o, errors.New("--duration must be positive")
	case o.database == "":
		return o, errors.New("--db is required")
	}
	return o, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// config is the clients' connection settings.
func (o options) config() *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = o.user, o.password
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", o.addr, o.database
	cfg.InterpolateParams = true // text statements: no prepare round trips, no server-side statements
	cfg.Timeout = 10 * time.Second
	// A broken connection is counted by the client; the driver's own line for each would
	// bury the progress lines when a thousand break at once.
	cfg.Logger = &mysql.NopLogger{}
	return cfg
}

func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	cfg := o.config()
	if o.prepare {
		began := time.Now()
		if err := prepare(ctx, cfg, o.tables, o.rows); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		fmt.Fprintf(stderr, "multiplex: %d tables of %d rows in %s on %s, in %s\n",
			o.tables, o.rows, o.database, o.addr, time.Since(began).Round(time.Millisecond))
		return nil
	}
	if o.proxyPID > 0 {
		if _, err := procstat.CPU(o.proxyPID); err != nil {
			return fmt.Errorf("--proxy-pid: %w", err)
		}
	}
	res := result{
		Addr: o.addr, Clients: o.clients, Think: o.think.String(), ThinkSeconds: o.think.Seconds(),
		WarmupSeconds: max(o.warmup, o.ramp).Seconds(), RampSeconds: o.ramp.Seconds(),
		Workload: "read-write", Seed: o.seed, Tables: o.tables, Rows: o.rows,
	}
	if o.readOnly {
		res.Workload = "read-only"
	}

	var mon *monitor
	if o.monitor != "" {
		var baseline int
		var err error
		if mon, baseline, err = openMonitor(ctx, o.monitor); err != nil {
			return err
		}
		defer mon.close()
		res.ThreadsConnected = &threadsResult{Baseline: baseline}
	}

	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	// Each client takes a connection of its own with db.Conn and keeps it; one it closes is
	// closed, never kept for another.
	db.SetMaxIdleConns(0)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)

	w := newWorkload(o.tables, o.rows, o.readOnly)
	t := newTally()
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // before the wait: deferred calls run last first
	start := time.Now()
	if mon != nil {
		wg.Go(func() { mon.run(runCtx) }) // ends with the run
	}
	wg.Go(func() { // ends when every client is started or the run ends
		for i := range o.clients {
			at := start.Add(o.ramp * time.Duration(i) / time.Duration(o.clients))
			if d := time.Until(at); d > 0 {
				select {
				case <-time.After(d):
				case <-runCtx.Done():
					return
				}
			}
			c := &client{db: db, w: w, think: o.think, tally: t,
				rng: rand.New(rand.NewPCG(o.seed, uint64(i)))}
			wg.Go(func() { c.run(runCtx) }) // ends with the run
		}
	})

	measureStart := start.Add(max(o.warmup, o.ramp))
	measureEnd := measureStart.Add(o.duration)
	tick := time.NewTicker(reportEvery)
	defer tick.Stop()
	startTimer := time.NewTimer(time.Until(measureStart))
	endTimer := time.NewTimer(time.Until(measureEnd))
	prev := t.snapshot()
	var first snapshot
	var cpu0 time.Duration
	measuring := false
	// line tells how the run went since the last line, unless that was only a moment ago
	// (a tick that came just before the measured period began or ended).
	line := func(now snapshot) {
		if now.at.Sub(prev.at) < time.Second {
			return
		}
		res.Intervals = append(res.Intervals, progressLine(stderr, start, between(prev, now), now, measuring, mon))
		prev = now
	}
	for done := false; !done; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			line(t.snapshot())
		case <-startTimer.C:
			first = t.snapshot()
			t.maxNS.Store(0)
			if o.proxyPID > 0 {
				if cpu0, err = procstat.CPU(o.proxyPID); err != nil {
					return fmt.Errorf("--proxy-pid: %w", err)
				}
			}
			line(first)
			measuring = true
			tick.Reset(reportEvery)
		case <-endTimer.C:
			last := t.snapshot()
			maxLatency := time.Duration(t.maxNS.Load())
			if o.proxyPID > 0 {
				cpu1, err := procstat.CPU(o.proxyPID)
				if err != nil {
					return fmt.Errorf("--proxy-pid: the process ended during the run: %w", err)
				}
				rss, err := procstat.RSS(o.proxyPID)
				if err != nil {
					return fmt.Errorf("--proxy-pid: %w", err)
				}
				res.setProxy(o.proxyPID, cpu1-cpu0, rss)
			}
			line(last)
			res.setPeriod(between(first, last), maxLatency, last)
			if mon != nil {
				res.ThreadsConnected.set(mon.between(first.at, last.at))
			}
			done = true
		}
	}
	cancel()
	wg.Wait()
	res.Messages = t.messages()
	if mon != nil {
		res.MonitorFailures = mon.failures // its goroutine has ended
	}
	if res.Proxy != nil {
		res.Proxy.CPUSecondsPer1000Units = per1000(res.Proxy.CPUSeconds, res.Units)
	}
	res.writeSummary(stdout)
	if o.json != "" {
		if err := res.writeJSON(o.json); err != nil {
			return err
		}
	}
	return nil
}
