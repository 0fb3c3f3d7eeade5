// Command sim runs the simulator's experiments (bench/sim) and writes their charts and a
// markdown report with tables into a directory. Without a subcommand it runs the admission
// experiments:
//
//	go run ./bench/cmd/sim -out bench/results/sim [-seed 1] [-quick]
//
// make sim runs it with the defaults. The balance subcommand runs the load-balancing
// experiment instead, reads across a primary and its replicas under each balance policy:
//
//	go run ./bench/cmd/sim balance -out bench/results/sim-balance [-seed 1] [-quick] [-limit 8s] ...
//
// The fleet subcommand runs the fleet experiment: N proxies, each with its own adaptive
// controller, in front of one database, alone and coordinated by internal/fleet's rule, and a
// fleet whose members join and leave:
//
//	go run ./bench/cmd/sim fleet -out bench/results/sim-fleet [-seed 1] [-quick] [-sizes 1,2,3,10] ...
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/gatekeeperdb/gatekeeper/bench/sim"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "sim:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "balance":
			return runBalance(args[1:])
		case "fleet":
			return runFleet(args[1:])
		}
	}
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	out := fs.String("out", "bench/results/sim", "directory for the charts and README.md")
	seed := fs.Uint64("seed", 1, "seed of the simulations; the same seed gives the same results")
	quick := fs.Bool("quick", false, "a smaller sweep: fewer points, shorter runs, fewer sessions")
	workers := fs.Int("workers", 0, "simulations run at once; 0 is one per CPU")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q; the flags are -out, -seed, -quick and -workers, or the subcommand balance or fleet first", fs.Args())
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}

	start := time.Now()
	res, err := sim.RunAll(sim.DefaultSetup(*quick), *seed, *workers)
	if err != nil {
		return err
	}
	simulated := time.Since(start)
	if err := res.WriteCharts(*out); err != nil {
		return err
	}
	elapsed := time.Since(start)

	command := "go run ./bench/cmd/sim " + strings.Join(args, " ")
	meta := sim.Meta{
		Command:   strings.TrimSpace(command),
		Machine:   machine(),
		GoVersion: runtime.Version(),
		Elapsed:   elapsed,
	}
	path := filepath.Join(*out, "README.md")
	if err := writeReport(path, func(w io.Writer) error { return res.WriteMarkdown(w, meta) }); err != nil {
		return err
	}

	h := res.Headlines()
	fmt.Printf("sim: %d simulations, %d sessions, in %s (simulation %s, charts %s); wrote %s\n",
		res.Runs, res.SessionsRun, elapsed.Round(time.Millisecond), simulated.Round(time.Millisecond),
		(elapsed - simulated).Round(time.Millisecond), path)
	fmt.Printf("sim: closed loop at %d clients: direct %.1f/s (peak %.1f), fifo %.1f/s (peak %.1f)\n",
		h.MostClients, h.DirectAtMost, h.DirectPeak, h.FIFOAtMost, h.FIFOPeak)
	fmt.Printf("sim: open loop at %d clients' rate: mean response fifo %s, sjf %s\n",
		h.OpenAt, h.OpenFIFO.Round(time.Millisecond), h.OpenSJF.Round(time.Millisecond))
	return nil
}

// writeReport creates the file at path and writes the report into it.
// experiment is what an experiment's results write: their charts into a directory, and the
// report.
type experiment interface {
	WriteCharts(dir string) error
	WriteMarkdown(w io.Writer, m sim.Meta) error
}

// writeExperiment writes res's charts and README.md into out, the report naming the command
// (sim NAME ARGS) and the time since start; it returns the report's path and its meta.
func writeExperiment(res experiment, out, name string, args []string, start time.Time) (string, sim.Meta, error) {
	if err := res.WriteCharts(out); err != nil {
		return "", sim.Meta{}, err
	}
	meta := sim.Meta{
		Command:   strings.TrimSpace("go run ./bench/cmd/sim " + name + " " + strings.Join(args, " ")),
		Machine:   machine(),
		GoVersion: runtime.Version(),
		Elapsed:   time.Since(start),
	}
	path := filepath.Join(out, "README.md")
	return path, meta, writeReport(path, func(w io.Writer) error { return res.WriteMarkdown(w, meta) })
}

func writeReport(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// machine describes the computer: the CPU model where Linux tells it, and the CPU count.
func machine() string {
	model := runtime.GOARCH
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	return fmt.Sprintf("%s/%s, %s, %d CPUs", runtime.GOOS, runtime.GOARCH, model, runtime.NumCPU())
}
