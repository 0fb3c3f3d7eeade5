// Command cacheflood sends a flood of distinct cacheable statements through proxies, one
// after another, and reports the memory each held at the end: the check that a result
// cache bounded by cache.max_bytes keeps the process within that bound (plus a margin)
// above what the same proxy holds without the cache.
//
//	go run ./bench/cmd/cacheflood --prepare --primary-dsn 'gk:gk@tcp(127.0.0.1:13306)/gktest'
//	go run ./bench/cmd/cacheflood --max-bytes 67108864 \
//		--arm off --dsn 'gk:gk@tcp(127.0.0.1:6033)/gktest' --admin 127.0.0.1:6080 --pid 1234 \
//		--arm on --dsn 'gk:gk@tcp(127.0.0.1:6034)/gktest' --admin 127.0.0.1:6081 --pid 1235
//
// Statement i (0..--statements-1) is `SELECT id, pad FROM cf_t WHERE id = <i mod rows + 1>
// AND <i> = <i>`: a small result, and a text no other statement has, so that through a
// caching proxy every one is a miss that fills an entry, and past cache.max_bytes every
// fill evicts. --connections clients, each on a connection of its own, send them as fast
// as they are answered, keeping nothing of the results. Each arm gets the same statements;
// only one arm runs at a time. --prepare creates cf_t (--rows rows) straight on the
// primary.
//
// During an arm's flood the proxy's VmRSS and its Go heap in use are sampled every second
// (their maxima are reported), and a line every --progress says how it goes. At the end:
// VmRSS and VmHWM (the peak) from /proc/PID/status, go_memstats_heap_inuse_bytes,
// go_memstats_heap_alloc_bytes and go_memstats_sys_bytes, and the cache's bytes, entries,
// fills and evictions from the arm's /metrics. The report compares each arm with the first
// (the baseline, the cache off): its memory above the baseline's against --max-bytes plus
// 5%.
//
// The exit status is 0 when the run completed (the caller judges the figures), 1 when it
// failed or more than 1% of the statements failed, 2 for bad flags. bench/cache-flood.sh
// runs it against a proxy with the cache off and one with it on.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/bench/listflag"
)

// maxErrorShare is the share of failed statements past which the run fails.
const maxErrorShare = 0.01

type options struct {
	// arms, dsns, admins and pids describe the proxies flooded, in order; the first is the
	// baseline.
	arms, dsns, admins listflag.Strings
	pids               listflag.Ints
	primaryDSN         string
	prepare            bool
	rows               int
	statements         int64
	connections        int
	progress           time.Duration
	maxBytes           int64
	json               string
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cacheflood:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "cacheflood:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("cacheflood", flag.ContinueOnError)
	fs.Var(&o.arms, "arm", "name of an arm (repeatable; one for each --dsn, in the same order; the first is the baseline)")
	fs.Var(&o.dsns, "dsn", "go-sql-driver DSN of an arm's proxy, e.g. gk:gk@tcp(127.0.0.1:6033)/gktest (repeatable)")
	fs.Var(&o.admins, "admin", "an arm's admin address, host:port, for /metrics (repeatable)")
	fs.Var(&o.pids, "pid", "an arm's proxy process, whose VmRSS and VmHWM are read (repeatable)")
	fs.StringVar(&o.primaryDSN, "primary-dsn", "", "DSN straight to the primary, where --prepare creates cf_t")
	fs.BoolVar(&o.prepare, "prepare", false, "create and fill cf_t on --primary-dsn, then exit")
	fs.IntVar(&o.rows, "rows", 10000, "rows of cf_t (ids 1..rows)")
	fs.Int64Var(&o.statements, "statements", 1_000_000, "distinct statements sent to each arm")
	fs.IntVar(&o.connections, "connections", 16, "clients, each on a connection of its own to the arm flooded")
	fs.DurationVar(&o.progress, "progress", 5*time.Second, "how often a line says how the flood goes")
	fs.Int64Var(&o.maxBytes, "max-bytes", 0, "the caching arms' cache.max_bytes in bytes, for the verdict (0: no verdict)")
	fs.StringVar(&o.json, "json", "", "also write the result to this file as JSON")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return o, o.validate()
}

func (o options) validate() error {
	if o.rows < 1 {
		return errors.New("--rows must be at least 1")
	}
	if o.prepare {
		if o.primaryDSN == "" {
			return errors.New("--prepare needs --primary-dsn")
		}
		return nil
	}
	switch {
	case len(o.dsns) == 0:
		return errors.New("--dsn is required (once for each arm), unless --prepare")
	case len(o.arms) != len(o.dsns) || len(o.admins) != len(o.dsns) || len(o.pids) != len(o.dsns):
		return fmt.Errorf("%d --arm, %d --dsn, %d --admin and %d --pid: give one of each for every arm, in the same order",
			len(o.arms), len(o.dsns), len(o.admins), len(o.pids))
	case o.statements < 1 || o.connections < 1 || o.progress <= 0:
		return errors.New("--statements, --connections and --progress must be positive")
	case o.maxBytes < 0:
		return errors.New("--max-bytes must not be negative")
	}
	seen := map[string]bool{}
	for i, name := range o.arms {
		if seen[name] {
			return fmt.Errorf("--arm %q given twice: give a different name to each arm", name)
		}
		seen[name] = true
		if o.pids[i] < 1 {
			return fmt.Errorf("--pid %d of arm %s: give the proxy's process id", o.pids[i], name)
		}
	}
	return nil
}

func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if o.prepare {
		return prepare(ctx, o.primaryDSN, o.rows, stderr)
	}
	res := &result{Statements: o.statements, Connections: o.connections, Rows: o.rows, MaxBytes: o.maxBytes}
	for i := range o.dsns {
		ar, err := flood(ctx, o, i, stderr)
		if err != nil {
			return fmt.Errorf("arm %s: %w", o.arms[i], err)
		}
		res.Arms = append(res.Arms, ar)
	}
	res.writeMarkdown(stdout)
	if o.json != "" {
		if err := res.writeJSON(o.json); err != nil {
			return err
		}
	}
	for _, a := range res.Arms {
		if float64(a.Errors) > maxErrorShare*float64(a.Sent) {
			return fmt.Errorf("arm %s: %d of %d statements failed (%s)", a.Name, a.Errors, a.Sent, a.FirstError)
		}
	}
	return nil
}

// openConns opens n connections to the proxy, each kept for the whole flood.
func openConns(ctx context.Context, dsn string, n int) (*sql.DB, []*sql.Conn, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("--dsn: %w", err)
	}
	cfg.Timeout = 10 * time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(0)
	conns := make([]*sql.Conn, 0, n)
	for range n {
		c, err := db.Conn(ctx)
		if err == nil {
			err = c.PingContext(ctx)
		}
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			db.Close()
			return nil, nil, fmt.Errorf("connect to %s: %w", cfg.Addr, err)
		}
		conns = append(conns, c)
	}
	return db, conns, nil
}
