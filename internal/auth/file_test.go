package auth

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// writeUsersFile writes content to a users file of the given mode and returns its path.
func writeUsersFile(t *testing.T, content string, mode fs.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // WriteFile's mode is subject to the umask
		t.Fatal(err)
	}
	return path
}

func TestLoadFile(t *testing.T) {
	const content = `# the proxy's accounts
users:
  - user: app
    password: secret
    max_connections: 10
    consistency: session
  - user: reporting
    password_hash: "*14E65567ABDB5135D0CFD9A70B3032C179A49EE7"
  - user: lower
    password_hash: "*14e65567abdb5135d0cfd9a70b3032c179a49ee7"
  - user: nopass
    password: ""
    max_connections: 0
  - user: digits
    password: 0123
  - user: 42
    password: yes
`
	users, err := LoadFile(writeUsersFile(t, content, 0o600))
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	if n := users.Len(); n != 6 {
		t.Errorf("Len = %d, want 6", n)
	}
	stage2 := stage2Of("secret")
	tests := []struct {
		name           string
		password       string
		hasPassword    bool
		stage2         []byte
		maxConnections int
	}{
		{"app", "secret", true, nil, 10},
		{"reporting", "", false, stage2, 0},
		{"lower", "", false, stage2, 0},
		{"nopass", "", true, nil, 0},
		{"digits", "0123", true, nil, 0},
		{"42", "yes", true, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, from := range []string{"10.1.2.3", "127.0.0.1", "2001:db8::1"} {
				u, ok := users.Lookup(tt.name, netip.MustParseAddr(from))
				if !ok {
					t.Fatalf("Lookup(%s, %s) found nothing", tt.name, from)
				}
				if u.Password != tt.password || u.HasPassword != tt.hasPassword || !bytes.Equal(u.Stage2, tt.stage2) ||
					u.MaxConnections != tt.maxConnections || u.Host != "%" || u.Plugin != "" || u.Ed25519Key != nil {
					t.Errorf("Lookup(%s, %s) = {Password:%q HasPassword:%v Stage2:%x MaxConnections:%d Host:%q Plugin:%q}, want {%q %v %x %d %q %q}",
						tt.name, from, u.Password, u.HasPassword, u.Stage2, u.MaxConnections, u.Host, u.Plugin,
						tt.password, tt.hasPassword, tt.stage2, tt.maxConnections, "%", "")
				}
			}
		})
	}

	if u, _ := users.Lookup("app", netip.Addr{}); u.Consistency != "session" {
		t.Errorf("app's consistency = %q, want session", u.Consistency)
	}
	if u, _ := users.Lookup("lower", netip.Addr{}); u.Consistency != "" {
		t.Errorf("lower's consistency = %q, want none", u.Consistency)
	}

	// The hashed entry checks a native login and yields SHA1(password).
	u, _ := users.Lookup("reporting", netip.Addr{})
	scramble := []byte(testScramble)
	cred, err := u.Verify(protocol.NativePassword, scramble, answer(protocol.NativePassword, "secret", scramble))
	if err != nil || !bytes.Equal(cred.Stage1, protocol.NativeStage1("secret")) {
		t.Errorf("Verify of the hashed entry = %s, %v; want Stage1 = SHA1(secret)", dump(cred), err)
	}
}

func TestLoadFileEmptyList(t *testing.T) {
	for _, content := range []string{"users: []\n", "users:\n", "users: # none yet\n"} {
		users, err := LoadFile(writeUsersFile(t, content, 0o600))
		if err != nil {
			t.Errorf("LoadFile(%q): %v", content, err)
			continue
		}
		if users.Len() != 0 {
			t.Errorf("LoadFile(%q).Len() = %d, want 0", content, users.Len())
		}
	}
}

func TestLoadFileErrors(t *testing.T) {
	const hash = `"*14E65567ABDB5135D0CFD9A70B3032C179A49EE7"`
	tests := []struct {
		name    string
		content string
		line    int    // 0: the problem has no line
		want    string // in the message, after path:line:
	}{
		{"both secrets", "users:\n  - user: app\n    password: secret\n    password_hash: " + hash + "\n",
			4, `user "app": password and password_hash are exclusive; keep one`},
		{"both secrets, hash first", "users:\n  - user: app\n    password_hash: " + hash + "\n    password: secret\n",
			4, `user "app": password and password_hash are exclusive; keep one`},
		{"no secret", "users:\n  - user: app\n    max_connections: 3\n",
			2, `user "app": no password or password_hash`},
		{"unknown key", "users:\n  - user: app\n    pasword: secret\n",
			3, `unknown key "pasword"`},
		{"unknown top-level key", "users: []\nlisten: 3306\n",
			2, `unknown key "listen"`},
		{"no user", "users:\n  - password: secret\n",
			2, "entry has no user"},
		{"empty user", "users:\n  - user: \"\"\n    password: secret\n",
			2, "empty user name"},
		{"null user", "users:\n  - user:\n    password: secret\n",
			2, "user must be a string"},
		{"null password", "users:\n  - user: app\n    password:\n",
			3, "password must be a string"},
		{"list password", "users:\n  - user: app\n    password: [a, b]\n",
			3, "password must be a string"},
		{"short hash", "users:\n  - user: app\n    password_hash: \"*1234\"\n",
			3, `user "app": password_hash must be "*" followed by 40 hex digits`},
		{"hash without star", "users:\n  - user: app\n    password_hash: \"14E65567ABDB5135D0CFD9A70B3032C179A49EE7\"\n",
			3, `must be "*" followed by 40 hex digits`},
		{"hash not hex", "users:\n  - user: app\n    password_hash: \"*" + strings.Repeat("Z", 40) + "\"\n",
			3, "not a hex digit"},
		{"empty hash", "users:\n  - user: app\n    password_hash: \"\"\n",
			3, `must be "*" followed by 40 hex digits`},
		{"unknown consistency", "users:\n  - user: app\n    password: x\n    consistency: causal\n",
			4, `consistency "causal": must be one of strong, session, eventual`},
		{"negative max_connections", "users:\n  - user: app\n    password: x\n    max_connections: -1\n",
			4, "max_connections must be a whole number, 0 or more"},
		{"word max_connections", "users:\n  - user: app\n    password: x\n    max_connections: many\n",
			4, "max_connections must be a whole number"},
		{"fractional max_connections", "users:\n  - user: app\n    password: x\n    max_connections: 1.5\n",
			4, "max_connections must be a whole number"},
		{"duplicate user", "users:\n  - user: app\n    password: a\n  - user: other\n    password: b\n  - user: app\n    password: c\n",
			6, `user "app" is listed twice (lines 2 and 6)`},
		{"repeated key", "users:\n  - user: app\n    password: a\n    user: app2\n",
			4, `key "user" repeated (first on line 2)`},
		{"users not a list", "users: app\n",
			1, `"users" must be a list`},
		{"entry not a mapping", "users:\n  - app\n",
			2, "an entry of \"users\" must be a mapping"},
		{"top level not a mapping", "- user: app\n",
			1, `expected a mapping with the key "users"`},
		{"no users key", "{}\n",
			1, `no "users" key`},
		{"not YAML", "users:\n\t- user: app\n",
			2, "not valid YAML: found character that cannot start any token"},
		{"unterminated string", "users:\n  - user: app\n    password: \"abc\n",
			3, "not valid YAML"},
		{"two documents", "users: []\n---\nusers: []\n",
			2, "a second YAML document"},
		{"empty file", "",
			0, "the file is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeUsersFile(t, tt.content, 0o600)
			users, err := LoadFile(path)
			if err == nil {
				t.Fatalf("LoadFile = %d users, want an error", users.Len())
			}
			prefix := path + ": "
			if tt.line > 0 {
				prefix = fmt.Sprintf("%s:%d: ", path, tt.line)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tt.want) {
				t.Errorf("LoadFile = %q, want %q…%q", msg, prefix, tt.want)
			}
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != path || fe.Line != tt.line {
				t.Errorf("LoadFile = %#v, want a *FileError at line %d", err, tt.line)
			}
		})
	}
}

// Every problem of a file is reported at once, each with its line.
func TestLoadFileReportsAllProblems(t *testing.T) {
	const content = "users:\n  - user: app\n    pasword: x\n  - user: b\n    password: y\n    max_connections: -2\n"
	path := writeUsersFile(t, content, 0o600)
	_, err := LoadFile(path)
	if err == nil {
		t.Fatal("LoadFile: no error")
	}
	for _, want := range []string{
		path + `:3: unknown key "pasword"`,
		path + `:2: user "app": no password or password_hash`,
		path + ":6: max_connections must be a whole number",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("LoadFile = %q, want it to contain %q", err, want)
		}
	}
}

func TestLoadFileMode(t *testing.T) {
	tests := []struct {
		mode fs.FileMode
		ok   bool
	}{
		{0o600, true},
		{0o400, true},
		{0o644, false},
		{0o640, false},
		{0o604, false},
		{0o620, false},
		{0o666, false},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			path := writeUsersFile(t, "users:\n  - user: app\n    password: secret\n", tt.mode)
			_, err := LoadFile(path)
			if tt.ok {
				if err != nil {
					t.Fatalf("LoadFile: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("LoadFile: no error for a file open to others")
			}
			for _, want := range []string{fmt.Sprintf("%04o", tt.mode), "chmod 600 " + path} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("LoadFile = %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

func TestLoadFileMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.yaml")
	_, err := LoadFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LoadFile = %v, want an error wrapping fs.ErrNotExist", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, path+": ") || strings.Count(msg, path) != 1 {
		t.Errorf("LoadFile = %q, want the path named once, first", msg)
	}
}

func TestLoadFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFile(dir)
	if err == nil || !strings.Contains(err.Error(), dir+": not a regular file") {
		t.Fatalf("LoadFile(a directory) = %v, want %q", err, dir+": not a regular file")
	}
}
