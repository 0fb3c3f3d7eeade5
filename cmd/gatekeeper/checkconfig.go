package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

func newCheckConfigCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "check-config FILE",
		Short: "Validate a configuration file (with GATEKEEPER_* variables applied) and exit",
		Long: "Loads FILE as serve would, with the GATEKEEPER_* environment variables applied,\n" +
			"and reports every unknown key and bad value. Exits non-zero if there is any.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := config.Load(config.Sources{File: args[0]}); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s: configuration is valid\n", args[0])
			return err
		},
	}
}
