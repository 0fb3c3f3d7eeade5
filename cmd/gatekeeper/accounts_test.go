package main

import (
	"context"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

func TestAccountsReloadTheUsersFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.yaml")
	write := func(data string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("users:\n  - user: app\n    password: one\n")
	cfg := config.Default()
	cfg.Mode, cfg.Auth.UsersFile = config.ModePooled, path
	store := auth.NewStore()
	acc, err := newAccounts(context.Background(), cfg, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer acc.close()
	from := netip.MustParseAddr("10.0.0.1")
	if _, ok := store.Lookup("app", from); !ok {
		t.Fatal("app is not among the accounts")
	}
	write("users:\n  - user: app\n    password: two\n  - user: report\n    password_hash: \"*6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9\"\n")
	if err := acc.reload(); err != nil {
		t.Fatal(err)
	}
	if u, ok := store.Lookup("app", from); !ok || u.Password != "two" {
		t.Error("app's new password was not read")
	}
	if _, ok := store.Lookup("report", from); !ok {
		t.Error("report, added to the file, is not among the accounts")
	}
	// A file that no longer loads leaves the accounts as they were.
	write("users:\n  - user: app\n    pasword: three\n")
	if err := acc.reload(); err == nil {
		t.Fatal("a misspelt key was accepted")
	}
	if u, ok := store.Lookup("app", from); !ok || u.Password != "two" {
		t.Error("a bad file changed the accounts")
	}
}
