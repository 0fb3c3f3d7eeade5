package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/top"
)

func newTopCommand() *cobra.Command {
	var (
		addr     string
		interval time.Duration
		sortBy   string
		limit    int
		once     bool
	)
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Show the request types, their costs and the admission queue, live",
		Long: `top shows what a running proxy has learned: each request type with its rate, estimated
cost (the mean), percentiles and share of the database's load, and the admission queue;
in pooled mode the pools and, with replicas, the routing (with the rule strong reads go by
and the binlog follower they count every writer with) and each replica's standing; with
cache.mode, the result cache's hit ratio and the database time its hits saved.
It reads the admin API, so it works against a proxy on another machine (--admin host:port).
Keys: s share, r rate, m mean, 5 p95, 9 p99, c count, t type; q quits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !top.ValidSort(sortBy) {
				return fmt.Errorf("--sort %q: want one of %s", sortBy, strings.Join(top.Sorts, ", "))
			}
			if interval < 100*time.Millisecond {
				return fmt.Errorf("--interval %s: want at least 100ms", interval)
			}
			c, err := top.NewClient(addr)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			v := top.View{Source: addr, Sort: sortBy, Limit: limit}
			if once || !term.IsTerminal(int(os.Stdout.Fd())) {
				f, err := c.Fetch(ctx)
				if err != nil {
					return err
				}
				v.Render(cmd.OutOrStdout(), f)
				return nil
			}
			v.Keys = true
			return top.Live(ctx, c, v, interval, os.Stdin, os.Stdout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "admin", config.Default().Admin.Listen, "the proxy's admin listener, host:port or URL")
	f.DurationVar(&interval, "interval", time.Second, "refresh interval")
	f.StringVar(&sortBy, "sort", "share", "sort by: "+strings.Join(top.Sorts, ", "))
	f.IntVar(&limit, "limit", 0, "show at most this many types (0: as many as fit, all with --once)")
	f.BoolVar(&once, "once", false, "print the table once and exit (the default when stdout is not a terminal)")
	return cmd
}
