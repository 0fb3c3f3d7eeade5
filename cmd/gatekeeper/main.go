// Command gatekeeper is a MySQL wire-protocol proxy that admits work to the database only
// while it has capacity, schedules what waits shortest-job-first, and routes reads to
// replicas without showing clients stale data.
//
// Usage:
//
//	gatekeeper serve [--config FILE] [--listen ADDR] [--admin-listen ADDR] [--primary ADDR] [--replica ADDR]...
//	gatekeeper check-config FILE
//	gatekeeper calibrate --dsn DSN --workload FILE [--write CONFIG]
//	gatekeeper top [--admin ADDR] [--sort KEY] [--once]
//	gatekeeper hash-password [--cost N]
//	gatekeeper version
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "gatekeeper:", err)
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "gatekeeper",
		Short:         "A MySQL proxy that keeps the database at its peak under overload",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCommand(), newCheckConfigCommand(), newCalibrateCommand(), newTopCommand(), newHashPasswordCommand(), newVersionCommand())
	return root
}
