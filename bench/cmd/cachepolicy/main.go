// Command cachepolicy compares result-cache replacement policies side by side: the same
// seeded trace of reads goes through proxies that differ only in cache.replacement, each
// with a cache smaller than the reads' working set, and the report says how much database
// time each policy's hits saved per second, and the memory each proxy used.
//
//	go run ./bench/cmd/cachepolicy --prepare --primary-dsn 'gk:gk@tcp(127.0.0.1:13306)/gktest'
//	go run ./bench/cmd/cachepolicy \
//		--arm cost_aware --dsn 'gk:gk@tcp(127.0.0.1:6033)/gktest' --admin 127.0.0.1:6080 --pid 1234 \
//		--arm lru --dsn 'gk:gk@tcp(127.0.0.1:6034)/gktest' --admin 127.0.0.1:6081 --pid 1235
//
// The workload reads one table, cp_items (--prepare creates and fills it straight on the
// primary), with four kinds of read whose costs and result sizes differ, so that a policy
// that weighs both keeps other results than one that weighs recency alone:
//
//   - point: a row by its primary key; cheap, small;
//   - range: --span consecutive rows by primary key; cheap, large;
//   - report: totals over --width groups through the grp index; costly, small;
//   - bigreport: the same groups' totals per group and bucket; costly, large.
//
// Each request picks a kind by --mix and a key of that kind from a Zipf distribution
// (--zipf) over the kind's keys, shuffled, and sends its statement as text with the key's
// literals in it, so that every key is a statement and an entry of its own. The trace is
// fixed by --seed.
//
// Each arm first runs the trace's warm-up (--warmup requests, unmeasured); then the arms
// take turns, a phase of --requests each (the order reversed every other phase), over
// --phases phases: phase p of every arm runs the same part of the trace. --clients
// goroutines, each on a connection of its own to each arm, send the requests of a phase in
// a closed loop. Only one arm runs at a time; each arm's cache counters are read from its
// /metrics before and after each of its phases, and its per-type figures from
// /api/v1/cache at the start and end of the measured phases.
//
// With --primary-dsn, each kind's cost on its own is measured first (--calibrate): the
// mean time of its requests sent one at a time straight to the primary. The report then
// also values each arm's hits at those costs, which do not depend on how busy the database
// was when an arm filled its results (the proxy's own measure does).
//
// The exit status is 0 when the run completed (the caller judges the figures), 1 when it
// failed or more than 1% of the requests failed, 2 for bad flags. bench/cache-policy.sh
// runs it against two proxies, cost_aware and lru.
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

	"github.com/gatekeeperdb/gatekeeper/bench/listflag"
)

// maxErrorShare is the share of failed requests past which the run fails.
const maxErrorShare = 0.01

type options struct {
	// arms, dsns, admins and pids describe the proxies compared, in the same order.
	arms, dsns, admins listflag.Strings
	pids               listflag.Ints
	primaryDSN         string
	prepare            bool
	shape              shape
	mix                string
	zipf               float64
	warmup, requests   int
	phases, clients    int
	calibrate          int
	seed               uint64
	json               string
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cachepolicy:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "cachepolicy:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("cachepolicy", flag.ContinueOnError)
	fs.Var(&o.arms, "arm", "name of an arm, e.g. its cache.replacement (repeatable; one for each --dsn, in the same order)")
	fs.Var(&o.dsns, "dsn", "go-sql-driver DSN of an arm's proxy, e.g. gk:gk@tcp(127.0.0.1:6033)/gktest (repeatable)")
	fs.Var(&o.admins, "admin", "an arm's admin address, host:port, for /metrics and /api/v1/cache (repeatable)")
	fs.Var(&o.pids, "pid", "an arm's proxy process, whose VmRSS and VmHWM are reported (repeatable; 0: not read)")
	fs.StringVar(&o.primaryDSN, "primary-dsn", "", "DSN straight to the primary, where --prepare creates cp_items and --calibrate measures each kind's cost")
	fs.BoolVar(&o.prepare, "prepare", false, "create and fill cp_items on --primary-dsn, then exit")
	fs.IntVar(&o.shape.rows, "rows", 20000, "rows of cp_items (ids 1..rows)")
	fs.IntVar(&o.shape.groups, "groups", 200, "values of cp_items.grp, spread over the rows")
	fs.IntVar(&o.shape.span, "span", 40, "rows a range read returns")
	fs.IntVar(&o.shape.width, "width", 40, "groups a report (and a bigreport) reads")
	fs.IntVar(&o.shape.buckets, "buckets", 20, "buckets per group of a bigreport's result (id DIV rows/buckets)")
	fs.StringVar(&o.mix, "mix", defaultMix, "share of each kind of read, name=weight,...")
	fs.Float64Var(&o.zipf, "zipf", 1.1, "exponent s of the Zipf distribution of each kind's keys (more than 1; larger: more skewed)")
	fs.IntVar(&o.warmup, "warmup", 10000, "requests each arm runs before the measured phases (the same ones)")
	fs.IntVar(&o.requests, "requests", 10000, "requests in each phase of each arm")
	fs.IntVar(&o.phases, "phases", 10, "measured phases of each arm")
	fs.IntVar(&o.clients, "clients", 8, "client goroutines, each on a connection of its own to each arm")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the trace")
	fs.IntVar(&o.calibrate, "calibrate", 100, "before the run, send this many requests of each kind straight to --primary-dsn, one at a time, for each kind's cost on its own (0, or no --primary-dsn: not measured)")
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
	if err := o.shape.validate(); err != nil {
		return err
	}
	if o.prepare {
		if o.primaryDSN == "" {
			return errors.New("--prepare needs --primary-dsn")
		}
		return nil
	}
	if _, err := parseMix(o.mix, o.shape.kinds()); err != nil {
		return err
	}
	switch {
	case len(o.dsns) == 0:
		return errors.New("--dsn is required (once for each arm), unless --prepare")
	case len(o.arms) != len(o.dsns) || len(o.admins) != len(o.dsns):
		return fmt.Errorf("%d --arm, %d --dsn and %d --admin: give one of each for every arm, in the same order",
			len(o.arms), len(o.dsns), len(o.admins))
	case len(o.pids) > 0 && len(o.pids) != len(o.dsns):
		return fmt.Errorf("%d --pid for %d --dsn: give one for each, in the same order (0: not read)", len(o.pids), len(o.dsns))
	case hasDuplicate(o.arms):
		return fmt.Errorf("--arm names %q: give a different one to each arm", o.arms)
	case o.zipf <= 1:
		return errors.New("--zipf must be more than 1")
	case o.warmup < 0 || o.requests < 1 || o.phases < 1 || o.clients < 1 || o.calibrate < 0:
		return errors.New("--requests, --phases and --clients must be at least 1, --warmup and --calibrate at least 0")
	}
	return nil
}

func hasDuplicate(names []string) bool {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return true
		}
		seen[n] = true
	}
	return false
}

func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if o.prepare {
		return prepare(ctx, o.primaryDSN, o.shape, stderr)
	}
	kinds := o.shape.kinds()
	weights, _ := parseMix(o.mix, kinds) // validated
	tr := newTrace(kinds, weights, o.zipf, o.warmup+o.phases*o.requests, o.seed)
	var costs []time.Duration
	if o.primaryDSN != "" && o.calibrate > 0 {
		var err error
		if costs, err = calibrate(ctx, o.primaryDSN, kinds, tr, o.calibrate); err != nil {
			return err
		}
	}
	arms := make([]*arm, len(o.dsns))
	for i := range arms {
		pid := 0
		if len(o.pids) > 0 {
			pid = o.pids[i]
		}
		a, err := openArm(ctx, o.arms[i], o.dsns[i], o.admins[i], pid, o.clients, len(kinds))
		if err != nil {
			return err
		}
		defer a.close()
		arms[i] = a
	}
	res, err := compare(ctx, arms, kinds, tr, costs, o, stderr)
	if err != nil {
		return err
	}
	res.writeMarkdown(stdout)
	if o.json != "" {
		if err := res.writeJSON(o.json); err != nil {
			return err
		}
	}
	if share := res.errorShare(); share > maxErrorShare {
		return fmt.Errorf("%.1f%% of the requests failed, more than %.0f%%", 100*share, 100*maxErrorShare)
	}
	return nil
}
