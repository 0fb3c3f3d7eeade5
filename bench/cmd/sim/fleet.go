package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gatekeeperdb/gatekeeper/bench/sim"
)

// runFleet runs the fleet experiment: sim fleet [flags].
func runFleet(args []string) error {
	def := sim.DefaultFleetSetup(false)
	fs := flag.NewFlagSet("sim fleet", flag.ContinueOnError)
	out := fs.String("out", "bench/results/sim-fleet", "directory for the charts and README.md")
	seed := fs.Uint64("seed", 1, "seed of the simulations; the same seed gives the same results")
	quick := fs.Bool("quick", false, "shorter runs")
	workers := fs.Int("workers", 0, "simulations run at once; 0 is one per CPU")
	sizes := fs.String("sizes", joinInts(def.Sizes), "fleet sizes, comma-separated, the first 1")
	overload := fs.Float64("overload", def.Overload, "clients as a multiple of those that saturate the database")
	seeds := fs.Int("seeds", def.Seeds, "seeds the alone and coordinated runs are made with (the first shown in full); -quick makes one unless set")
	interval := fs.Duration("interval", sim.ProxyTiming.Interval, "the fleet's interval; the coordinated runs are made at it and at it on the model's time scale")
	ttl := fs.Duration("ttl", sim.ProxyTiming.TTL, "how long a member's record is held after it was published (its lease)")
	latency := fs.Duration("latency", sim.ProxyTiming.Latency, "how long what the adjuster tells between intervals takes to act at the followers, and a follower's word that it drained takes to reach the adjuster (rules drain and react)")
	rules := fs.String("rules", joinRules(sim.AllRules), "the fleet's rules the coordinated runs are made with, comma-separated: drain (the proxy's), react and interval (the ones before)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("fleet: unexpected arguments %q", fs.Args())
	}

	s := sim.DefaultFleetSetup(*quick)
	s.Overload = *overload
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "seeds" {
			s.Seeds = *seeds
		}
	})
	var err error
	if s.Sizes, err = parseInts(*sizes); err != nil {
		return fmt.Errorf("fleet: -sizes: %w", err)
	}
	if s.Rules, err = parseRules(*rules); err != nil {
		return fmt.Errorf("fleet: -rules: %w", err)
	}
	s.Timings = sim.ProxyTimings(sim.FleetTiming{Interval: *interval, TTL: *ttl, Latency: *latency}, s.AutoInterval)
	if err := s.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}

	start := time.Now()
	res, err := sim.RunFleet(s, *seed, *workers)
	if err != nil {
		return err
	}
	path, meta, err := writeExperiment(res, *out, "fleet", args, start)
	if err != nil {
		return err
	}

	h := res.Headlines()
	fmt.Printf("sim fleet: in %s; wrote %s\n", meta.Elapsed.Round(time.Millisecond), path)
	fmt.Printf("sim fleet: single controller settled at %s; %d alone add up to %.2fx it", h.Settled.Round(time.Millisecond), h.Largest, h.Alone.SumRatio)
	for k, co := range s.Coordinations() {
		fmt.Printf(", %s every %s %.2fx", co.Rule, co.Timing.Interval, h.Coordinated[k].SumRatio)
	}
	fmt.Println()
	return nil
}

// parseRules reads a comma-separated list of the fleet's rules.
func parseRules(list string) ([]sim.FleetRule, error) {
	var out []sim.FleetRule
	for name := range strings.SplitSeq(list, ",") {
		r, err := sim.ParseFleetRule(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func joinRules(rs []sim.FleetRule) string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.String()
	}
	return strings.Join(names, ",")
}
