package main

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// TestHashPassword: the hash printed checks out against the password read, and is one
// admin.auth.users accepts.
func TestHashPassword(t *testing.T) {
	cmd := newHashPasswordCommand()
	var out bytes.Buffer
	cmd.SetIn(strings.NewReader("correct horse\nignored\n"))
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--cost", "4"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	hash := strings.TrimSuffix(out.String(), "\n")
	if err := bcrypt.CompareHashAndPassword([]byte(hash), []byte("correct horse")); err != nil {
		t.Fatalf("%q is not the hash of the first line: %v", hash, err)
	}
	if cost, err := bcrypt.Cost([]byte(hash)); err != nil || cost != 4 {
		t.Errorf("cost %d, %v; want 4", cost, err)
	}
	cfg := config.Default()
	cfg.Admin.Auth.Users = map[string]string{"ops": hash}
	if err := cfg.Validate(); err != nil {
		t.Errorf("admin.auth.users refuses the hash: %v", err)
	}

	for _, in := range []string{"", "\n", strings.Repeat("x", 73) + "\n"} {
		cmd := newHashPasswordCommand()
		cmd.SetIn(strings.NewReader(in))
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetArgs([]string{"--cost", "4"})
		if err := cmd.Execute(); err == nil {
			t.Errorf("password %q accepted", in)
		}
	}
}
