package integration

import (
	"context"
	"database/sql"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// loadBackendAccounts reads the primary's accounts as auth.from_backend does, with the
// test user as the monitor account, into the proxy's store.
func loadBackendAccounts(t *testing.T, p *testProxy) {
	t.Helper()
	mc := mysql.NewConfig()
	mc.Net, mc.Addr, mc.User, mc.Passwd = "tcp", env.Primary, env.User, env.Password
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	users, err := auth.LoadFromBackend(ctx, db)
	if err != nil {
		t.Fatalf("reading mysql.user: %v", err)
	}
	if _, ok := users.Lookup(env.User, netip.MustParseAddr("127.0.0.1")); !ok {
		t.Fatalf("the primary's accounts (%d) lack %s", users.Len(), env.User)
	}
	p.Accounts(nil).Swap(users)
}

func fromBackend(mode string) func(*config.Config) {
	return func(c *config.Config) {
		c.Mode = mode
		c.Auth.FromBackend = true
		c.Monitor.User, c.Monitor.Password = env.User, env.Password
	}
}

// Pooled mode with the accounts of the primary's mysql.user: a native-password client is
// checked against the stored hash, and the SHA1(password) its answer reveals logs the
// proxy in to the database as the same user. An ed25519 account can be checked but not
// used to log in, and the client is told why.
func TestPooledAccountsFromBackend(t *testing.T) {
	p := startProxy(t, fromBackend(config.ModePooled))
	loadBackendAccounts(t, p)
	db := openDB(t, p.Addr, "")
	var user string
	if err := db.QueryRow("SELECT CURRENT_USER()").Scan(&user); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(user, env.User+"@") {
		t.Errorf("CURRENT_USER() = %q", user)
	}
	bad, err := sql.Open("mysql", strings.Replace(dsn(p.Addr, ""), env.User+":"+env.Password, env.User+":wrong", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	var me *mysql.MySQLError
	if err := bad.Ping(); !errors.As(err, &me) || me.Number != 1045 {
		t.Errorf("wrong password: %v, want 1045", err)
	}
	ed, err := sql.Open("mysql", env.EdUser+":"+env.EdPassword+"@tcp("+p.Addr+")/"+env.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer ed.Close()
	// Each login draws a fresh 32-byte nonce; the driver strips a NUL that ends it, so a
	// nonce ending in 0 (one in 256) once came back as a malformed packet.
	for i := range 1000 {
		if err := ed.Ping(); !errors.As(err, &me) || me.Number != 1045 || !strings.Contains(me.Message, "cannot log in to the database") {
			t.Fatalf("ed25519 account from the backend, login %d: %v, want 1045 saying the proxy cannot log in as it", i+1, err)
		}
	}
}

// Passthrough with auth.from_backend: the login is relayed as always, and for a native
// password the proxy also derives what it needs to open more connections as the user.
func TestPassthroughDerivesCredentials(t *testing.T) {
	p := startProxy(t, fromBackend(config.ModePassthrough))
	loadBackendAccounts(t, p)
	db := openDB(t, p.Addr, "")
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	ed, err := sql.Open("mysql", env.EdUser+":"+env.EdPassword+"@tcp("+p.Addr+")/"+env.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer ed.Close()
	// The server draws the ed25519 nonce here, and the driver strips a NUL that ends it: one
	// login in 256 fails as a malformed packet, straight to the server as through the proxy.
	err = ed.Ping()
	for try := 0; errors.Is(err, mysql.ErrMalformPkt) && try < 3; try++ {
		err = ed.Ping()
	}
	if err != nil {
		t.Fatalf("an ed25519 user still logs in through passthrough: %v", err)
	}
	derived := metricValue(t, p, "gatekeeper_passthrough_credentials_total", map[string]string{"outcome": "derived"})
	underivable := metricValue(t, p, "gatekeeper_passthrough_credentials_total", map[string]string{"outcome": "underivable"})
	if derived != 1 || underivable != 1 {
		t.Errorf("credentials derived %v, underivable %v; want 1 and 1", derived, underivable)
	}
	var creds []string
	for _, s := range p.Sessions() {
		creds = append(creds, s.User+":"+s.Credential)
	}
	if got := strings.Join(creds, " "); !strings.Contains(got, env.User+":derived") || !strings.Contains(got, env.EdUser+":none") {
		t.Errorf("sessions %q, want %s derived and %s none", got, env.User, env.EdUser)
	}
}
