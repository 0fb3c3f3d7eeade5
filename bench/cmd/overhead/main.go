// Command overhead draws the plots of bench/overhead.sh from its results.csv: for each
// sysbench workload, each proxy's processor time per query (the median over the rounds)
// against the thread count, written as cpu-WORKLOAD.png beside the CSV or into -out.
//
//	go run ./bench/cmd/overhead -csv bench/results/overhead/results.csv [-out DIR]
//
// bench/overhead.sh runs it at the end when Go is installed.
package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/gatekeeperdb/gatekeeper/bench/plot"
	"github.com/gatekeeperdb/gatekeeper/bench/stats"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "overhead:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("overhead", flag.ContinueOnError)
	in := fs.String("csv", "bench/results/overhead/results.csv", "the results.csv bench/overhead.sh wrote")
	out := fs.String("out", "", "directory for the plots; empty is the CSV's")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q; the flags are -csv and -out", fs.Args())
	}
	if *out == "" {
		*out = filepath.Dir(*in)
	}
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer f.Close()
	runs, err := readRuns(f)
	if err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}
	for _, c := range charts(runs) {
		path := filepath.Join(*out, "cpu-"+c.Title+".png")
		c.Title = "Proxy CPU per query, sysbench " + c.Title
		if err := plot.Lines(path, c); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "overhead: wrote", path)
	}
	return nil
}

// A sample is one line of the CSV: one sysbench run against one target. CPU is the proxy's
// processor time per query in µs; direct has none (HasCPU false).
type sample struct {
	Workload, Target string
	Threads          int
	CPU              float64
	HasCPU           bool
}

// readRuns reads the CSV by its header's column names, so that columns may be added.
func readRuns(r io.Reader) ([]sample, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, errors.New("empty file")
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, name := range []string{"workload", "threads", "target", "cpu_us_per_query"} {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("no %s column in the header", name)
		}
	}
	var runs []sample
	for i, row := range rows[1:] {
		th, err := strconv.Atoi(row[col["threads"]])
		if err != nil {
			return nil, fmt.Errorf("line %d: threads: %w", i+2, err)
		}
		r := sample{Workload: row[col["workload"]], Target: row[col["target"]], Threads: th}
		if s := row[col["cpu_us_per_query"]]; s != "" {
			if r.CPU, err = strconv.ParseFloat(s, 64); err != nil {
				return nil, fmt.Errorf("line %d: cpu_us_per_query: %w", i+2, err)
			}
			r.HasCPU = true
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// charts gives one chart per workload, titled with the workload's name, in the order of
// their first runs: a series per proxy (targets with a CPU figure), each point the median
// over the rounds at a thread count. A target keeps its color from chart to chart.
func charts(runs []sample) []plot.Chart {
	type key struct {
		workload, target string
		threads          int
	}
	var workloads, targets []string
	cpu := map[key][]float64{}
	for _, r := range runs {
		if !slices.Contains(workloads, r.Workload) {
			workloads = append(workloads, r.Workload)
		}
		if !r.HasCPU {
			continue
		}
		if !slices.Contains(targets, r.Target) {
			targets = append(targets, r.Target)
		}
		k := key{r.Workload, r.Target, r.Threads}
		cpu[k] = append(cpu[k], r.CPU)
	}
	var out []plot.Chart
	for _, w := range workloads {
		c := plot.Chart{Title: w, X: "sysbench threads", Y: "proxy CPU µs per query", FromZero: true}
		for i, t := range targets {
			s := plot.Series{Name: t, Style: i + 1}
			for k, v := range cpu {
				if k.workload == w && k.target == t {
					s.Points = append(s.Points, [2]float64{float64(k.threads), stats.Median(v)})
				}
			}
			slices.SortFunc(s.Points, func(a, b [2]float64) int { return int(a[0] - b[0]) })
			c.Series = append(c.Series, s)
		}
		out = append(out, c)
	}
	return out
}
