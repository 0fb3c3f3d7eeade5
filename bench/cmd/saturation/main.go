// Command saturation is the load of bench/saturation.sh: many clients running a table scan
// in a loop, which keeps every processor of the database's host busy, beside a few clients
// running a quick statement in a loop, whose response time shows what the backlog costs
// the statements that should not wait for it. Pointed at the database directly and at
// gatekeeper on the same host, it shows whether the proxy still gets its share of the
// processors, and whether admission keeps the quick statements ahead of the scans.
//
//	saturation prepare --addr 127.0.0.1:13306 --rows 200000
//	saturation run --addr 127.0.0.1:6033 --route admission-off --round 1 --csv runs.csv
//	saturation report --csv runs.csv
//
// prepare creates and fills the scanned table. run connects every client first (a few at
// a time, within the proxy's bounds on logins at once), runs them for --warmup and then
// --duration, counts what ends in the measured period and appends one line to --csv.
// report reads those lines and prints a markdown table of each route's medians over the
// rounds.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "saturation:", err)
		os.Exit(1)
	}
}

const usage = "usage: saturation prepare|run|report [flags]; saturation COMMAND --help lists a command's flags"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "prepare":
		o, err := parseLoadFlags("prepare", args[1:], stderr)
		if err != nil {
			return err
		}
		began := time.Now()
		if err := prepare(ctx, o.config(), o.table, o.rows); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		fmt.Fprintf(stderr, "saturation: %s.%s with %d rows on %s in %s\n",
			o.database, o.table, o.rows, o.addr, time.Since(began).Round(time.Millisecond))
		return nil
	case "run":
		o, err := parseLoadFlags("run", args[1:], stderr)
		if err != nil {
			return err
		}
		res, err := load(ctx, o, stderr)
		if err != nil {
			return err
		}
		return appendRun(o.csv, res)
	case "report":
		fs := flag.NewFlagSet("report", flag.ContinueOnError)
		fs.SetOutput(stderr)
		in := fs.String("csv", "", "the CSV that saturation run appended to")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *in == "" || fs.NArg() > 0 {
			return errors.New("report takes --csv FILE and nothing else")
		}
		runs, err := readRuns(*in)
		if err != nil {
			return err
		}
		return writeReport(stdout, runs)
	case "-h", "--help", "help":
		fmt.Fprintln(stderr, usage)
		return flag.ErrHelp
	}
	return fmt.Errorf("unknown command %q; %s", args[0], usage)
}

// options are the flags of prepare and run.
type options struct {
	addr, user, password, database, table string
	rows                                  int
	scanClients, shortClients             int
	scanQuery, shortQuery                 string
	shortInterval                         time.Duration
	warmup, duration, drain               time.Duration
	connectAtOnce                         int
	proxyPID                              int
	route                                 string
	round                                 int
	csv                                   string
}

func parseLoadFlags(name string, args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:6033", "where the clients connect, host:port: the proxy or the database")
	fs.StringVar(&o.user, "user", envOr("GK_USER", "gk"), "user (default $GK_USER, else gk)")
	fs.StringVar(&o.password, "password", envOr("GK_PASSWORD", "gk"), "its password (default $GK_PASSWORD, else gk)")
	fs.StringVar(&o.database, "db", envOr("GK_DATABASE", "gktest"), "database of the table (default $GK_DATABASE, else gktest)")
	fs.StringVar(&o.table, "table", "saturation", "the scanned table")
	fs.IntVar(&o.rows, "rows", 200000, "prepare: rows of the table")
	fs.IntVar(&o.scanClients, "scan-clients", 128, "clients that run --scan-query in a loop")
	fs.IntVar(&o.shortClients, "short-clients", 4, "clients that run --short-query in a loop")
	fs.StringVar(&o.scanQuery, "scan-query", "", "the long statement (default: SELECT SUM(k) over the whole table, which no index answers)")
	fs.StringVar(&o.shortQuery, "short-query", "SELECT 1", "the quick statement")
	fs.DurationVar(&o.shortInterval, "short-interval", 0, "each short client starts a statement this often, on a fixed schedule (a probe of the wait); 0: back to back, so that the short clients are a load of their own")
	fs.DurationVar(&o.warmup, "warmup", 5*time.Second, "time from the last client connected to the measured period")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "measured period")
	fs.DurationVar(&o.drain, "drain", 30*time.Second, "after the measured period, how long the statements running may take to end before their connections are closed")
	fs.IntVar(&o.connectAtOnce, "connect-at-once", 8, "clients that log in at the same time (the proxy bounds logins at once per client address)")
	fs.IntVar(&o.proxyPID, "proxy-pid", 0, "a process (the proxy) whose processor time over the measured period is reported (0: none)")
	fs.StringVar(&o.route, "route", "", "run: the route's name in the CSV (direct, admission-off, ...)")
	fs.IntVar(&o.round, "round", 1, "run: the round's number in the CSV")
	fs.StringVar(&o.csv, "csv", "", "run: append the result to this CSV (with a header when it is new); empty: standard output")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.scanQuery == "" {
		o.scanQuery = scanQuery(o.table)
	}
	switch {
	case o.rows < 1:
		return o, errors.New("--rows must be at least 1")
	case o.scanClients < 0 || o.shortClients < 0 || o.scanClients+o.shortClients == 0:
		return o, errors.New("--scan-clients and --short-clients must not be negative, and one must be positive")
	case o.warmup < 0 || o.drain < 0 || o.shortInterval < 0:
		return o, errors.New("--warmup, --drain and --short-interval must not be negative")
	case o.duration <= 0:
		return o, errors.New("--duration must be positive")
	case o.connectAtOnce < 1:
		return o, errors.New("--connect-at-once must be at least 1")
	case name == "run" && o.route == "":
		return o, errors.New("--route is required: it names the run in the CSV")
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
	cfg.Timeout = 10 * time.Second
	// A refused or broken statement is counted by the client; the driver's own line for
	// each would bury the progress lines.
	cfg.Logger = &mysql.NopLogger{}
	return cfg
}
