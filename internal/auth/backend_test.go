package auth

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/base64"
	"errors"
	"io"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

func TestAccountFromRow(t *testing.T) {
	const hash = "*14E65567ABDB5135D0CFD9A70B3032C179A49EE7" // PASSWORD('secret')
	stage2 := stage2Of("secret")
	key := protocol.Ed25519PublicKey("secret")
	const native = protocol.NativePassword
	tests := []struct {
		name        string
		row         accountRow
		plugin      string
		hasPassword bool
		stage2      []byte
		key         []byte
	}{
		{"native hash", accountRow{Plugin: native, AuthString: hash}, native, false, stage2, nil},
		{"native hash in lower case", accountRow{Plugin: native, AuthString: strings.ToLower(hash)}, native, false, stage2, nil},
		{"old server, no plugin", accountRow{AuthString: hash}, native, false, stage2, nil},
		{"old server, hash in Password", accountRow{Plugin: native, Password: hash}, native, false, stage2, nil},
		{"native empty password", accountRow{Plugin: native}, native, true, nil, nil},
		{"no plugin, empty password", accountRow{}, native, true, nil, nil},
		{"native, invalid hash", accountRow{Plugin: native, AuthString: "invalid"}, native, false, nil, nil},
		{"native, pre-4.1 hash", accountRow{Plugin: native, AuthString: "6f8c114b58f2ce9e"}, native, false, nil, nil},
		{"ed25519", accountRow{Plugin: "ed25519", AuthString: base64.RawStdEncoding.EncodeToString(key)}, "ed25519", false, nil, key},
		{"ed25519 padded", accountRow{Plugin: "ed25519", AuthString: base64.StdEncoding.EncodeToString(key)}, "ed25519", false, nil, key},
		{"ed25519 not base64", accountRow{Plugin: "ed25519", AuthString: "not a key!"}, "ed25519", false, nil, nil},
		{"ed25519 short key", accountRow{Plugin: "ed25519", AuthString: base64.RawStdEncoding.EncodeToString(key[:31])}, "ed25519", false, nil, nil},
		{"ed25519 empty", accountRow{Plugin: "ed25519"}, "ed25519", false, nil, nil},
		{"caching_sha2 hash", accountRow{Plugin: protocol.CachingSHA2, AuthString: "$A$005$salt..."}, protocol.CachingSHA2, false, nil, nil},
		{"caching_sha2 empty password", accountRow{Plugin: protocol.CachingSHA2}, protocol.CachingSHA2, true, nil, nil},
		{"sha256_password empty password", accountRow{Plugin: "sha256_password"}, "sha256_password", true, nil, nil},
		{"unix_socket", accountRow{Plugin: "unix_socket"}, "unix_socket", false, nil, nil},
		{"gssapi", accountRow{Plugin: "gssapi", AuthString: "app@EXAMPLE.COM"}, "gssapi", false, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.row.User, tt.row.Host = "app", "10.%"
			u := accountFromRow(tt.row)
			if u.Name != "app" || u.Host != "10.%" || u.Plugin != tt.plugin || u.HasPassword != tt.hasPassword ||
				u.Password != "" || !bytes.Equal(u.Stage2, tt.stage2) || !bytes.Equal(u.Ed25519Key, tt.key) || u.MaxConnections != 0 {
				t.Errorf("accountFromRow = {Name:%q Host:%q Plugin:%q HasPassword:%v Password:%q Stage2:%x Key:%x MaxConnections:%d}, want plugin %q, HasPassword %v, Stage2 %x, key %x",
					u.Name, u.Host, u.Plugin, u.HasPassword, u.Password, u.Stage2, u.Ed25519Key, u.MaxConnections,
					tt.plugin, tt.hasPassword, tt.stage2, tt.key)
			}
		})
	}
}

// An account without a usable secret stays, so that the proxy can say why its login fails.
func TestAccountWithoutSecretSaysWhy(t *testing.T) {
	u := accountFromRow(accountRow{User: "app", Host: "%", Plugin: protocol.CachingSHA2, AuthString: "$A$005$x"})
	scramble := []byte(testScramble)
	_, err := u.Verify(protocol.CachingSHA2, scramble, answer(protocol.CachingSHA2, "secret", scramble))
	if !errors.Is(err, ErrMethod) || !strings.Contains(err.Error(), "caching_sha2_password") {
		t.Errorf("Verify = %v, want ErrMethod naming caching_sha2_password", err)
	}
}

func TestUsersFromRows(t *testing.T) {
	const hash = "*14E65567ABDB5135D0CFD9A70B3032C179A49EE7"
	users := usersFromRows([]accountRow{
		{User: "", Host: "%", Plugin: protocol.NativePassword},                                    // anonymous
		{User: "mariadb.sys", Host: "localhost", Plugin: protocol.NativePassword, Disabled: true}, // locked
		{User: "app_role", Host: "", Plugin: "", Disabled: true},                                  // a role
		{User: "app", Host: "%", Plugin: protocol.NativePassword, AuthString: hash},
		{User: "app", Host: "localhost", Plugin: "unix_socket"},
		{User: "app", Host: "10.0.0.%", Plugin: protocol.NativePassword},
	})
	if n := users.Len(); n != 3 {
		t.Errorf("Len = %d, want 3 (anonymous, locked and role left out)", n)
	}
	tests := []struct {
		name, from string
		wantHost   string // "" for none
	}{
		{"app", "10.0.0.9", "10.0.0.%"},
		{"app", "127.0.0.1", "localhost"},
		{"app", "192.0.2.1", "%"},
		{"", "192.0.2.1", ""},
		{"mariadb.sys", "127.0.0.1", ""},
		{"app_role", "192.0.2.1", ""},
	}
	for _, tt := range tests {
		u, ok := users.Lookup(tt.name, netip.MustParseAddr(tt.from))
		got := ""
		if ok {
			got = u.Host
		}
		if got != tt.wantHost {
			t.Errorf("Lookup(%q, %s) = %q, want %q", tt.name, tt.from, got, tt.wantHost)
		}
	}
}

func TestLoadFromBackend(t *testing.T) {
	const hash = "*14E65567ABDB5135D0CFD9A70B3032C179A49EE7"
	rows := [][]driver.Value{
		{"app", "%", "mysql_native_password", hash, "", int64(0)},
		{"old", "%", "", "", hash, int64(0)},
		{"locked", "%", "mysql_native_password", "", "", int64(1)},
		{"nulls", "%", nil, nil, nil, nil},
	}
	noTable := &mysql.MySQLError{Number: 1146, Message: "Table 'mysql.global_priv' doesn't exist"}
	noColumn := &mysql.MySQLError{Number: 1054, Message: "Unknown column 'account_locked'"}
	denied := &mysql.MySQLError{Number: 1142, Message: "SELECT command denied"}
	down := errors.New("connection refused")
	tests := []struct {
		name    string
		answers map[string]fakeAnswer // by query; a query not listed fails with noColumn
		asked   []string
		wantErr error
	}{
		{"MariaDB", map[string]fakeAnswer{accountsMariaDB: {rows: rows}},
			[]string{accountsMariaDB}, nil},
		{"MySQL", map[string]fakeAnswer{accountsMariaDB: {err: noTable}, accountsMySQL: {rows: rows}},
			[]string{accountsMariaDB, accountsMySQL}, nil},
		{"global_priv not readable", map[string]fakeAnswer{accountsMariaDB: {err: denied}, accountsPlain: {rows: rows}},
			[]string{accountsMariaDB, accountsMySQL, accountsPlain}, nil},
		{"neither", map[string]fakeAnswer{accountsPlain: {rows: rows}},
			[]string{accountsMariaDB, accountsMySQL, accountsPlain}, nil},
		{"server down", map[string]fakeAnswer{accountsMariaDB: {err: down}},
			[]string{accountsMariaDB}, down},
		{"mysql.user not readable", map[string]fakeAnswer{accountsMariaDB: {err: denied}, accountsMySQL: {err: denied}, accountsPlain: {err: denied}},
			[]string{accountsMariaDB, accountsMySQL, accountsPlain}, denied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeServer{answers: tt.answers, otherwise: noColumn}
			db := sql.OpenDB(fake)
			defer db.Close()
			users, err := LoadFromBackend(t.Context(), db)
			if got := fake.queries(); !slices.Equal(got, tt.asked) {
				t.Errorf("queries asked:\n%s\nwant:\n%s", strings.Join(got, "\n--\n"), strings.Join(tt.asked, "\n--\n"))
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), "mysql.user") {
					t.Fatalf("LoadFromBackend = %v, want an error wrapping %v that names mysql.user", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadFromBackend: %v", err)
			}
			if users.Len() != 3 {
				t.Errorf("Len = %d, want 3 (the locked account left out)", users.Len())
			}
			from := netip.MustParseAddr("192.0.2.1")
			for _, name := range []string{"app", "old"} {
				if u, ok := users.Lookup(name, from); !ok || !bytes.Equal(u.Stage2, stage2Of("secret")) {
					t.Errorf("Lookup(%s) = %v, %v; want the account with the hash of secret", name, u, ok)
				}
			}
			if u, ok := users.Lookup("nulls", from); !ok || !u.HasPassword || u.Password != "" {
				t.Errorf("Lookup(nulls) = %v, %v; want an account with the empty password", u, ok)
			}
		})
	}
}

// fakeServer answers queries with canned rows, as a database/sql driver, so that the
// choice of query is tested without a server.
type fakeServer struct {
	answers   map[string]fakeAnswer
	otherwise error

	mu    sync.Mutex
	asked []string
}

type fakeAnswer struct {
	rows [][]driver.Value
	err  error
}

func (s *fakeServer) queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.asked)
}

func (s *fakeServer) Connect(context.Context) (driver.Conn, error) { return fakeConn{s}, nil }
func (s *fakeServer) Driver() driver.Driver                        { return fakeDriver{s} }

type fakeDriver struct{ s *fakeServer }

func (d fakeDriver) Open(string) (driver.Conn, error) { return fakeConn(d), nil }

type fakeConn struct{ s *fakeServer }

func (fakeConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("fake: no statements") }
func (fakeConn) Close() error                        { return nil }
func (fakeConn) Begin() (driver.Tx, error)           { return nil, errors.New("fake: no transactions") }

func (c fakeConn) QueryContext(_ context.Context, query string, _ []driver.NamedValue) (driver.Rows, error) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.s.asked = append(c.s.asked, query)
	a, ok := c.s.answers[query]
	if !ok {
		return nil, c.s.otherwise
	}
	if a.err != nil {
		return nil, a.err
	}
	return &fakeRows{rows: a.rows}, nil
}

type fakeRows struct {
	rows [][]driver.Value
	next int
}

func (r *fakeRows) Columns() []string {
	return []string{"User", "Host", "plugin", "authentication_string", "Password", "disabled"}
}
func (r *fakeRows) Close() error { return nil }
func (r *fakeRows) Next(dest []driver.Value) error {
	if r.next == len(r.rows) {
		return io.EOF
	}
	copy(dest, r.rows[r.next])
	r.next++
	return nil
}
