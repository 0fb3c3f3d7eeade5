// Command bookstore loads and runs a TPC-W-like online bookstore against MariaDB or
// MySQL, directly or through gatekeeper: 14 interactions whose costs span three orders
// of magnitude, driven by emulated customers (closed loop) or by Poisson or bursty
// arrivals (open loop).
//
// Usage:
//
//	bookstore load  --dsn DSN [--database NAME] [--items N] [--customers N] [--seed N]
//	bookstore run   --dsn DSN [--database NAME] [--mix shopping] [--clients 50] [--think 100ms]
//	                [--rate 0] [--burst-factor 0 --burst-high 2s --burst-low 8s] [--duration 60s]
//	                [--warmup 10s] [--timeout 30s] [--seed 1] [--json FILE] [--seconds FILE]
//	bookstore costs --dsn DSN [--database NAME] [--rounds 3] [--per-class 30]
//
// --database names the database, overriding the DSN's; load creates it if it is missing.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gatekeeperdb/gatekeeper/internal/bookstore"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "bookstore:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "bookstore",
		Short:         "A TPC-W-like online bookstore workload for MariaDB",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newLoadCommand(), newRunCommand(), newCostsCommand())
	return root
}

// signalContext is cancelled by SIGINT or SIGTERM.
func signalContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
}

// target is the database a command works on: a DSN, and optionally a database name that
// overrides the DSN's.
type target struct {
	dsn, database string
}

func (t *target) flags(f *pflag.FlagSet, what string) {
	f.StringVar(&t.dsn, "dsn", "", "go-sql-driver/mysql DSN of "+what+", as in 'user:password@tcp(127.0.0.1:3306)/bookstore'")
	f.StringVar(&t.database, "database", "", "database name, instead of the DSN's")
}

// config returns the DSN's settings with the database set.
func (t *target) config() (*mysql.Config, error) {
	if t.dsn == "" {
		return nil, errors.New("--dsn is required, as in --dsn 'user:password@tcp(127.0.0.1:3306)/bookstore'")
	}
	mc, err := mysql.ParseDSN(t.dsn)
	if err != nil {
		return nil, fmt.Errorf("--dsn: %w; use the go-sql-driver/mysql form user:password@tcp(host:port)/database", err)
	}
	if t.database != "" {
		mc.DBName = t.database
	}
	if mc.DBName == "" {
		return nil, errors.New("no database: add one to the DSN after the slash (user:password@tcp(host:port)/bookstore) or give --database")
	}
	return mc, nil
}

// resolved returns the DSN with the database set.
func (t *target) resolved() (string, error) {
	mc, err := t.config()
	if err != nil {
		return "", err
	}
	return mc.FormatDSN(), nil
}

func newLoadCommand() *cobra.Command {
	var (
		t     target
		scale = bookstore.DefaultScale()
	)
	cmd := &cobra.Command{
		Use:   "load --dsn DSN [--database NAME] [--items N] [--customers N] [--seed N]",
		Short: "Create the bookstore's tables and load deterministic data",
		Long: "Creates the database if it is missing, drops the bookstore's tables in it if they\n" +
			"exist, creates them and loads the data of the scale: the same seed and sizes load the\n" +
			"same rows.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mc, err := t.config()
			if err != nil {
				return err
			}
			if scale.Items < 10 || scale.Customers < 10 {
				return fmt.Errorf("--items is %d and --customers %d; use at least 10 of each", scale.Items, scale.Customers)
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			if err := createDatabase(ctx, *mc); err != nil {
				return err
			}
			connector, err := mysql.NewConnector(mc)
			if err != nil {
				return err
			}
			db := sql.OpenDB(connector)
			defer db.Close()
			return bookstore.Load(ctx, db, scale, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	t.flags(f, "the server to load into")
	f.IntVar(&scale.Items, "items", scale.Items, "number of books")
	f.IntVar(&scale.Customers, "customers", scale.Customers, "number of customers (0.9 orders each)")
	f.Int64Var(&scale.Seed, "seed", scale.Seed, "seed of the generated data")
	return cmd
}

// createDatabase creates the database mc names if it does not exist.
func createDatabase(ctx context.Context, mc mysql.Config) error {
	name := mc.DBName
	mc.DBName = ""
	connector, err := mysql.NewConnector(&mc)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+strings.ReplaceAll(name, "`", "``")+"`"); err != nil {
		return fmt.Errorf("creating database %s: %w", name, err)
	}
	return nil
}

func newRunCommand() *cobra.Command {
	var (
		t                    target
		cfg                  bookstore.Config
		burstFactor          float64
		burstHigh, burstLow  time.Duration
		jsonFile, cpuProfile string
		secondsFile          string
	)
	cmd := &cobra.Command{
		Use:   "run --dsn DSN [--database NAME] [flags]",
		Short: "Emulate customers of the bookstore and report per-interaction results",
		Long: "Closed loop (the default): --clients customers, each a session on its own connection,\n" +
			"alternate an exponential think time (--think) with an interaction drawn from the mix.\n" +
			"Open loop (--rate above 0): interactions arrive at --rate per second, Poisson or, with\n" +
			"--burst-factor, a two-state MMPP whose high state runs at factor x rate for a mean of\n" +
			"--burst-high and whose low state lasts a mean of --burst-low, keeping the mean at --rate;\n" +
			"at most --clients are outstanding, later arrivals are counted as refused (overflow).\n\n" +
			"Prints a markdown table per interaction; --json also writes the result as JSON.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dsn, err := t.resolved()
			if err != nil {
				return err
			}
			cfg.DSN = dsn
			cfg.PerSecond = secondsFile != ""
			if err := checkRunFlags(cfg, burstFactor); err != nil {
				return err
			}
			if burstFactor != 0 {
				cfg.Burst = &bookstore.Burst{HighFactor: burstFactor, MeanHigh: burstHigh, MeanLow: burstLow}
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return fmt.Errorf("--cpuprofile: %w", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("--cpuprofile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			out := cmd.OutOrStdout()
			loop := fmt.Sprintf("closed loop, %d clients, think %v", cfg.Clients, cfg.Think)
			if cfg.Rate > 0 {
				loop = fmt.Sprintf("open loop, %g/s Poisson, at most %d outstanding", cfg.Rate, cfg.Clients)
				if cfg.Burst != nil {
					loop = fmt.Sprintf("open loop, %g/s MMPP (x%g for %v, then %v), at most %d outstanding",
						cfg.Rate, burstFactor, burstHigh, burstLow, cfg.Clients)
				}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "running the %s mix, %s: %v warm-up, %v measured\n", cfg.Mix, loop, cfg.Warmup, cfg.Duration)
			res, err := bookstore.Run(ctx, cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%s mix, %s, measured %.1fs\n\n", cfg.Mix, loop, res.Elapsed.Seconds())
			if err := res.WriteTable(out); err != nil {
				return err
			}
			if err := writeFile(jsonFile, "--json", res.WriteJSON); err != nil {
				return err
			}
			return writeFile(secondsFile, "--seconds", res.WriteSeconds)
		},
	}
	f := cmd.Flags()
	t.flags(f, "the loaded bookstore, directly or through gatekeeper")
	f.StringVar(&cfg.Mix, "mix", bookstore.DefaultMix, "TPC-W mix: browsing, shopping or ordering; or weights such as home=90,best_sellers=10")
	f.IntVar(&cfg.Clients, "clients", bookstore.DefaultClients, "closed loop: emulated customers; open loop: most interactions outstanding")
	f.DurationVar(&cfg.Think, "think", 100*time.Millisecond, "closed loop: mean think time between a customer's interactions")
	f.Float64Var(&cfg.Rate, "rate", 0, "open loop: mean arrivals per second (0: closed loop)")
	f.Float64Var(&burstFactor, "burst-factor", 0, "open loop: rate in the burst state as a multiple of --rate (0: Poisson)")
	f.DurationVar(&burstHigh, "burst-high", 2*time.Second, "open loop: mean time in the burst state")
	f.DurationVar(&burstLow, "burst-low", 8*time.Second, "open loop: mean time in the quiet state")
	f.DurationVar(&cfg.Duration, "duration", bookstore.DefaultDuration, "measured period")
	f.DurationVar(&cfg.Warmup, "warmup", 10*time.Second, "period run before the measured one, not counted")
	f.DurationVar(&cfg.Timeout, "timeout", bookstore.DefaultTimeout, "bound on each interaction; past it the interaction counts as timed out")
	f.Int64Var(&cfg.Seed, "seed", 1, "seed of the run's random choices")
	f.IntVar(&cfg.BestSellersWindow, "best-sellers-window", bookstore.DefaultBestSellersWindow, "recent orders Best Sellers ranks items over")
	f.IntVar(&cfg.RelatedWindow, "related-window", bookstore.DefaultRelatedWindow, "recent orders Admin Confirm finds the item's buyers in")
	f.StringVar(&jsonFile, "json", "", "also write the result as JSON to this file")
	f.StringVar(&secondsFile, "seconds", "", "also write, as CSV, the interactions of each class completed in each second of the run, warm-up included")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write the load generator's CPU profile to this file")
	return cmd
}

// writeFile writes to the file name with write, if name is set; flag names it in errors.
func writeFile(name, flag string, write func(io.Writer) error) error {
	if name == "" {
		return nil
	}
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", flag, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return nil
}

// checkRunFlags says which flag is wrong and what to use instead.
func checkRunFlags(cfg bookstore.Config, burstFactor float64) error {
	if _, err := bookstore.MixByName(cfg.Mix); err != nil {
		return fmt.Errorf("--mix: %w", err)
	}
	switch {
	case cfg.Clients <= 0:
		return fmt.Errorf("--clients is %d; use a positive number", cfg.Clients)
	case cfg.Think < 0:
		return fmt.Errorf("--think is %v; use 0 or a positive duration such as 100ms", cfg.Think)
	case cfg.Rate < 0:
		return fmt.Errorf("--rate is %g; use 0 for the closed loop or a positive rate for the open loop", cfg.Rate)
	case burstFactor != 0 && cfg.Rate == 0:
		return errors.New("--burst-factor needs the open loop; set --rate too")
	case burstFactor != 0 && burstFactor < 1:
		return fmt.Errorf("--burst-factor is %g; use 0 (Poisson) or a factor of at least 1", burstFactor)
	case cfg.Duration <= 0:
		return fmt.Errorf("--duration is %v; use a positive duration such as 60s", cfg.Duration)
	case cfg.Warmup < 0:
		return fmt.Errorf("--warmup is %v; use 0 or a positive duration", cfg.Warmup)
	case cfg.Timeout <= 0:
		return fmt.Errorf("--timeout is %v; use a positive duration such as 30s", cfg.Timeout)
	case cfg.BestSellersWindow <= 0 || cfg.RelatedWindow <= 0:
		return errors.New("--best-sellers-window and --related-window must be positive numbers of orders")
	}
	return nil
}

func newCostsCommand() *cobra.Command {
	var (
		t   target
		cfg bookstore.CostConfig
	)
	cmd := &cobra.Command{
		Use:   "costs --dsn DSN [--database NAME] [--rounds 3] [--per-class 30]",
		Short: "Measure what each interaction costs alone (one client, no think time)",
		Long: "Runs each interaction by itself on one connection, --per-class times in a row, in\n" +
			"--rounds passes over the 14 after a warm-up pass, and prints the mean and median\n" +
			"per interaction as a markdown table like Table 1 of the Gatekeeper paper.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dsn, err := t.resolved()
			if err != nil {
				return err
			}
			cfg.DSN = dsn
			if cfg.Rounds <= 0 || cfg.PerClass <= 0 {
				return fmt.Errorf("--rounds is %d and --per-class %d; use positive numbers", cfg.Rounds, cfg.PerClass)
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			costs, err := bookstore.MeasureCosts(ctx, cfg)
			if err != nil {
				return err
			}
			return costs.WriteTable(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	t.flags(f, "the loaded bookstore")
	f.IntVar(&cfg.Rounds, "rounds", 3, "passes over the 14 interactions")
	f.IntVar(&cfg.PerClass, "per-class", 30, "runs of each interaction in a row, per pass")
	f.Int64Var(&cfg.Seed, "seed", 1, "seed of the random choices")
	f.IntVar(&cfg.BestSellersWindow, "best-sellers-window", bookstore.DefaultBestSellersWindow, "recent orders Best Sellers ranks items over")
	f.IntVar(&cfg.RelatedWindow, "related-window", bookstore.DefaultRelatedWindow, "recent orders Admin Confirm finds the item's buyers in")
	return cmd
}
