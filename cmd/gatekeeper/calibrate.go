package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/gatekeeperdb/gatekeeper/internal/capacity"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
	"github.com/gatekeeperdb/gatekeeper/internal/wiring"
)

type calibrateOptions struct {
	dsn, workload, configFile, write string
	clients                          int
	step, warmup                     time.Duration
	maxFactor                        int
	threshold                        float64
}

func newCalibrateCommand() *cobra.Command {
	var o calibrateOptions
	cmd := &cobra.Command{
		Use:   "calibrate --dsn DSN --workload FILE [--write CONFIG]",
		Short: "Find admission.capacity for a database by incremental steps",
		Long: "Runs a workload against the database through an in-process proxy with admission on,\n" +
			"at capacities doubling from a quarter of the mean learned cost up to --max-factor\n" +
			"times it (then refined around the best), measures the throughput at each, and\n" +
			"chooses the smallest capacity whose throughput, taken as the median of its own and\n" +
			"its neighbours' (single steps are noisy), is within --threshold of the highest.\n" +
			"It prints the throughput curve and the settings to use, and with --write sets\n" +
			"admission.capacity in a configuration file, keeping the rest of it and its comments.\n\n" +
			"The workload is bookstore[:MIX], the bookstore benchmark's customers without think\n" +
			"time (load it first: go run ./bench/cmd/bookstore load), or a file of SQL\n" +
			"statements, each ending with ; at the end of a line; blank lines and lines starting\n" +
			"with -- are skipped. Each client runs them in order from a random starting point, in\n" +
			"a loop, with no think time. Use statements that can run again and again (reads, or\n" +
			"writes that do not grow without bound).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return calibrate(ctx, o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dsn, "dsn", "", "the database, as a go-sql-driver DSN: user:password@tcp(host:port)/schema (required)")
	f.StringVar(&o.workload, "workload", "", "file of SQL statements to run, or bookstore[:browsing|shopping|ordering] (required)")
	f.StringVar(&o.configFile, "config", "", "gatekeeper configuration to calibrate with (classify, estimator keys)")
	f.StringVar(&o.write, "write", "", "configuration file in which to set admission.capacity")
	f.IntVar(&o.clients, "clients", 32, "concurrent clients; enough to overload the database")
	f.DurationVar(&o.step, "step-duration", 10*time.Second, "measurement per capacity")
	f.DurationVar(&o.warmup, "warmup", 5*time.Second, "first run without admission, to learn the costs")
	f.IntVar(&o.maxFactor, "max-factor", 64, "largest capacity tried, in multiples of the mean learned cost")
	f.Float64Var(&o.threshold, "threshold", 0.95, "share of the peak throughput the chosen capacity must reach")
	return cmd
}

func calibrate(ctx context.Context, o calibrateOptions, out io.Writer) error {
	if o.dsn == "" {
		return errors.New("--dsn is required: the database to calibrate, such as 'app:secret@tcp(db1:3306)/shop'")
	}
	if o.workload == "" {
		return errors.New("--workload is required: a file of the statements your application runs, or bookstore")
	}
	if o.clients < 1 || o.maxFactor < 1 || o.threshold <= 0 || o.threshold > 1 || o.step <= 0 {
		return errors.New("--clients and --max-factor must be at least 1, --threshold in (0, 1], --step-duration positive")
	}
	dsn, err := mysql.ParseDSN(o.dsn)
	if err != nil {
		return fmt.Errorf("--dsn: %w", err)
	}
	load, err := newCalibrationLoad(o)
	if err != nil {
		return err
	}
	cfg := config.Default()
	if o.configFile != "" {
		if cfg, err = config.Load(config.Sources{File: o.configFile}); err != nil {
			return err
		}
	}
	cfg.Listen, cfg.Admin.Listen, cfg.Backends.Primary = "127.0.0.1:0", "", dsn.Addr
	cfg.Admission.Enabled = false
	costs, err := estimator.New(estimatorConfig(cfg.Estimator))
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := wiring.Proxy(cfg, costs, log, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	go func() { _ = srv.Serve(ln) }() // ends at Shutdown
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	dsn.Addr = ln.Addr().String()
	if err := load.start(ctx, dsn.FormatDSN(), o.clients); err != nil {
		return fmt.Errorf("cannot run the workload through the proxy to %s: %w", cfg.Backends.Primary, err)
	}
	defer load.stop()
	unit := load.unit()
	fmt.Fprintf(out, "calibrate: %s, %d clients, against %s\n", load, o.clients, cfg.Backends.Primary)
	base, err := load.measure(ctx, 0, o.warmup)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil && base.Errors*100 > int(base.Throughput*o.warmup.Seconds())+base.Errors {
		return fmt.Errorf("more than 1%% of the %s failed while learning their costs (%d); last error: %w", unit, base.Errors, err)
	}
	mean := meanCost(costs)
	if mean == 0 {
		return fmt.Errorf("no %s completed while learning costs; check the workload and the database", unit)
	}
	mean = max(mean, time.Millisecond)
	fmt.Fprintf(out, "without admission: %.1f %s/s, mean %.2f ms; mean learned cost %.2f ms\n",
		base.Throughput, unit, float64(base.Mean)/1e6, float64(mean)/1e6)

	var steps []capacity.Step
	measure := func(c time.Duration) error {
		a := cfg.Admission
		a.Enabled, a.Capacity = true, config.Capacity(c)
		a.QueueTimeout, a.MaxQueue = time.Hour, 1<<20
		adm, err := wiring.Admission(a)
		if err != nil {
			return err
		}
		if err := srv.ReloadAdmission(adm); err != nil {
			return err
		}
		s, serr := load.measure(ctx, time.Second, o.step)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.Capacity = c
		steps = append(steps, s)
		fmt.Fprintf(out, "  capacity %-10s %10.1f %s/s  mean %7.2f ms  p95 %7.2f ms  errors %d\n",
			capacity.Round(c), s.Throughput, unit, float64(s.Mean)/1e6, float64(s.P95)/1e6, s.Errors)
		if serr != nil && s.Errors > 0 {
			fmt.Fprintf(out, "    last error: %v\n", serr)
		}
		return nil
	}
	// Doubling from a quarter of the mean cost, to see the curve rise.
	for _, c := range capacity.Candidates(mean/4, 4*o.maxFactor) {
		if err := measure(c); err != nil {
			return err
		}
	}
	// While the smallest capacity tried reaches the peak, the curve's knee lies lower.
	for range 4 {
		low := capacity.Choose(steps, o.threshold)
		c := steps[low].Capacity / 2
		if c < time.Millisecond || slices.IndexFunc(steps, func(s capacity.Step) bool { return s.Capacity < steps[low].Capacity }) >= 0 {
			break
		}
		if err := measure(c); err != nil {
			return err
		}
	}
	for range 2 {
		chosen := capacity.Choose(steps, o.threshold)
		for _, c := range capacity.Refine(steps, chosen, steps[chosen].Capacity/8) {
			if err := measure(c); err != nil {
				return err
			}
		}
	}
	chosen := capacity.Choose(steps, o.threshold)
	fmt.Fprintf(out, "mean learned cost at the end: %.2f ms (capacity counts in these costs)\n\n", float64(meanCost(costs))/1e6)
	capacity.Print(out, steps, chosen, unit)
	c := capacity.Round(steps[chosen].Capacity)
	if slices.IndexFunc(steps, func(s capacity.Step) bool { return s.Capacity > steps[chosen].Capacity }) < 0 {
		fmt.Fprintf(out, "\nwarning: the largest capacity tried was chosen, so the peak may lie beyond it;"+
			" run again with a larger --max-factor than %d\n", o.maxFactor)
	}
	fmt.Fprintf(out, "\nchosen: the smallest capacity within %.0f%% of the peak throughput (each step's the median of it and its neighbours)\n\nadmission:\n  capacity: %s\n",
		100*o.threshold, c)
	if o.write != "" {
		if err := setCapacity(o.write, c); err != nil {
			return err
		}
		fmt.Fprintf(out, "\nwrote admission.capacity: %s to %s\n", c, o.write)
	}
	return nil
}

// meanCost returns the expected cost of the next statement: the types' current estimates
// weighted by their recent rates (by their counts without recent samples), or 0.
func meanCost(costs *estimator.Table) time.Duration {
	var sum, weight, total float64
	var count uint64
	for _, ts := range costs.Snapshot() {
		sum += ts.Rate * float64(ts.Mean)
		weight += ts.Rate
		total += float64(ts.Count) * float64(ts.Mean)
		count += ts.Count
	}
	switch {
	case weight > 0:
		return time.Duration(sum / weight)
	case count > 0:
		return time.Duration(total / float64(count))
	}
	return 0
}

// setCapacity sets admission.capacity in the YAML file at path (created if missing),
// keeping its other keys and comments.
func setCapacity(path string, c time.Duration) error {
	var doc yaml.Node
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("--write: %w", err)
	default:
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("--write %s: not YAML: %w", path, err)
		}
	}
	if len(doc.Content) == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("--write %s: the document is not a mapping of keys", path)
	}
	adm := mapping(root, "admission")
	if adm == nil {
		return fmt.Errorf("--write %s: admission is not a mapping of keys", path)
	}
	v := &yaml.Node{Kind: yaml.ScalarNode, Value: c.String()}
	if old := lookup(adm, "capacity"); old != nil {
		old.Value, old.Tag, old.Style = v.Value, "", 0
	} else {
		adm.Content = append(adm.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "capacity"}, v)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// mapping returns the mapping under key in m, adding it when missing, or nil if key holds
// something else.
func mapping(m *yaml.Node, key string) *yaml.Node {
	if n := lookup(m, key); n != nil {
		if n.Kind != yaml.MappingNode {
			return nil
		}
		return n
	}
	n := &yaml.Node{Kind: yaml.MappingNode}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, n)
	return n
}
