package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/term"
)

func newHashPasswordCommand() *cobra.Command {
	var cost int
	cmd := &cobra.Command{
		Use:   "hash-password",
		Short: "Print the bcrypt hash of a password, for admin.auth.users",
		Long: "Reads a password, from the terminal without echo (twice), or else the first line of\n" +
			"standard input, and prints its bcrypt hash: the value of a user of admin.auth.users.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			password, err := readPassword(cmd.InOrStdin(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			hash, err := bcrypt.GenerateFromPassword(password, cost)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), string(hash))
			return err
		},
	}
	cmd.Flags().IntVar(&cost, "cost", bcrypt.DefaultCost, fmt.Sprintf("bcrypt cost, %d to %d: each step doubles the time a check takes", bcrypt.MinCost, bcrypt.MaxCost))
	return cmd
}

// readPassword reads the password: from a terminal twice without echo, prompting on
// prompt; from anything else, its first line.
func readPassword(in io.Reader, prompt io.Writer) ([]byte, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(prompt, "Password: ")
		first, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return nil, err
		}
		fmt.Fprint(prompt, "Again: ")
		again, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return nil, err
		}
		if string(first) != string(again) {
			return nil, errors.New("the passwords differ")
		}
		return checkPassword(first)
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return checkPassword([]byte(strings.TrimRight(line, "\r\n")))
}

// checkPassword refuses what bcrypt cannot hash, or should not.
func checkPassword(p []byte) ([]byte, error) {
	switch {
	case len(p) == 0:
		return nil, errors.New("the password is empty")
	case len(p) > 72:
		return nil, errors.New("the password is longer than 72 bytes, which bcrypt ignores past; use a shorter one")
	}
	return p, nil
}
