package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatekeeperdb/gatekeeper/internal/binlog"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/wiring"
)

func newCheckConfigCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "check-config FILE",
		Short: "Validate a configuration file (with GATEKEEPER_* variables applied) and exit",
		Long: "Loads FILE as serve would, with the GATEKEEPER_* environment variables applied,\n" +
			"and reports every unknown key and bad value. Exits non-zero if there is any.\n" +
			"With reads routed under routing.strong_rule per_table, it also says whether\n" +
			"monitor.user may read the primary's binary log (a warning, not an error: the\n" +
			"proxy runs without it, counting only its own writes for strong reads). It warns\n" +
			"when the admin listener may be reached from other hosts without admin.auth, or\n" +
			"takes credentials over plain HTTP.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src := config.Sources{File: args[0]}
			cfg, err := config.Load(src)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			if err := checkShared(ctx, cfg, src, out); err != nil {
				return err
			}
			if _, err := fmt.Fprintf(out, "%s: configuration is valid\n", args[0]); err != nil {
				return err
			}
			checkRules(cfg, out)
			checkAdmin(cfg, out)
			checkBinlogGrant(cmd.Context(), cfg, out)
			return nil
		},
	}
}

// grantTimeout bounds check-config's look at the primary.
const grantTimeout = 3 * time.Second

// checkRules reports the query rules that can never decide some or all of what they set.
func checkRules(cfg config.Config, out io.Writer) {
	_, warnings, err := wiring.Rules(nil, cfg.Rules)
	if err != nil {
		fmt.Fprintf(out, "warning: %v\n", err) // validated already: not expected
		return
	}
	for _, w := range warnings {
		fmt.Fprintf(out, "warning: %s\n", w.String())
	}
}

// checkAdmin reports an admin listener open to other hosts without credentials, or
// taking them in clear text.
func checkAdmin(cfg config.Config, out io.Writer) {
	for _, w := range adminWarnings(cfg.Admin) {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
}

// checkBinlogGrant says whether monitor.user may follow the primary's binary log, which
// strong reads under routing.strong_rule per_table and the result cache need.
func checkBinlogGrant(ctx context.Context, cfg config.Config, out io.Writer) {
	caching := cfg.Mode == config.ModePooled && cfg.Cache.Mode != config.CacheOff
	if !(cfg.Routes() || caching) || cfg.Routing.StrongRule != "per_table" {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, grantTimeout)
	defer cancel()
	cfg = findPrimary(ctx, cfg, slog.New(slog.DiscardHandler))
	ok, err := binlog.CheckGrant(ctx, cfg.Backends.Primary, cfg.Monitor.User, cfg.Monitor.Password)
	switch {
	case err != nil:
		fmt.Fprintf(out, "warning: cannot check that monitor.user %q may read the binary log of the primary %s (%v); strong reads need it (routing.strong_rule per_table)\n",
			cfg.Monitor.User, cfg.Backends.Primary, err)
	case !ok:
		fmt.Fprintf(out, "warning: monitor.user %q lacks REPLICATION SLAVE on the primary %s: run GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO it; "+
			"until then strong reads count only the writes this proxy acknowledged (as routing.strong_rule proxy_local) and may miss writes that bypass it, and the result cache serves no hit\n",
			cfg.Monitor.User, cfg.Backends.Primary)
	default:
		fmt.Fprintf(out, "monitor.user %q may read the binary log of the primary %s: strong reads count every writer (routing.strong_rule per_table)\n",
			cfg.Monitor.User, cfg.Backends.Primary)
	}
}
