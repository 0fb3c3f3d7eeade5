package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gatekeeperdb/gatekeeper/bench/sim"
)

// runBalance runs the load-balancing experiment: sim balance [flags].
func runBalance(args []string) error {
	def := sim.DefaultBalanceSetup(false)
	fs := flag.NewFlagSet("sim balance", flag.ContinueOnError)
	out := fs.String("out", "bench/results/sim-balance", "directory for the charts and README.md")
	seed := fs.Uint64("seed", 1, "seed of the simulations; the same seed gives the same results")
	quick := fs.Bool("quick", false, "fewer loads, one seed a point")
	workers := fs.Int("workers", 0, "simulations run at once; 0 is one per CPU")
	replicas := fs.String("replicas", joinInts(def.Replicas), "cluster sizes: numbers of replicas beside the primary, comma-separated")
	policies := fs.String("policies", joinBalances(def.Policies), "balance policies, comma-separated: self, lard, sqf, rr")
	clients := fs.String("clients", joinInts(def.ClientsPerBackend), "loads: closed-loop clients per database, comma-separated")
	detail := fs.Int("detail", def.Detail, "the load, among -clients, whose response times are shown per class")
	seeds := fs.Int("seeds", def.Seeds, "runs of each point, each with its own seed, pooled in the report")
	applyShare := fs.Float64("apply-share", def.ApplyShare, "share of a write's cost that applying it costs each replica")
	primaryReads := fs.Bool("primary-reads", def.PrimaryReads, "the primary takes reads beside the replicas")
	limit := fs.Duration("limit", def.Limit, "per-backend limit on running estimated work for a second set of runs; 0: none")
	lardLow := fs.Duration("lard-low", def.LARDLow, "LARD's low threshold of outstanding estimated work")
	lardHigh := fs.Duration("lard-high", def.LARDHigh, "LARD's high threshold of outstanding estimated work")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("balance: unexpected arguments %q", fs.Args())
	}

	s := sim.DefaultBalanceSetup(*quick)
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err != nil {
			return
		}
		switch f.Name {
		case "replicas":
			s.Replicas, err = parseInts(*replicas)
		case "policies":
			s.Policies, err = parseBalances(*policies)
		case "clients":
			s.ClientsPerBackend, err = parseInts(*clients)
		case "detail":
			s.Detail = *detail
		case "seeds":
			s.Seeds = *seeds
		case "apply-share":
			s.ApplyShare = *applyShare
		case "primary-reads":
			s.PrimaryReads = *primaryReads
		case "limit":
			s.Limit = *limit
		case "lard-low":
			s.LARDLow = *lardLow
		case "lard-high":
			s.LARDHigh = *lardHigh
		}
		if err != nil {
			err = fmt.Errorf("balance: -%s: %w", f.Name, err)
		}
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}

	start := time.Now()
	res, err := sim.RunBalance(s, *seed, *workers)
	if err != nil {
		return err
	}
	path, meta, err := writeExperiment(res, *out, "balance", args, start)
	if err != nil {
		return err
	}

	h := res.Headlines()
	fmt.Printf("sim balance: in %s; wrote %s\n", meta.Elapsed.Round(time.Millisecond), path)
	for p, pol := range s.Policies {
		fmt.Printf("sim balance: %-4s peak interactions/s by replicas", pol)
		for r, n := range s.Replicas {
			fmt.Printf("  %d: %.1f", n, h.Peak[p][r])
		}
		fmt.Printf("; %s at %d clients per database on %d replicas %s\n", sim.PointReadClass, s.Detail, s.Replicas[h.Largest], h.DetailPointRead[p].Round(100*time.Microsecond))
	}
	return nil
}

func parseInts(list string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func parseBalances(list string) ([]sim.Balance, error) {
	var out []sim.Balance
	for f := range strings.SplitSeq(list, ",") {
		b, err := sim.ParseBalance(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func joinBalances(bs []sim.Balance) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = b.String()
	}
	return strings.Join(s, ",")
}
