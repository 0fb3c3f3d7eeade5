package auth

import (
	"crypto/ed25519"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// Why a client's answer was refused. The proxy turns each into an access-denied packet.
var (
	// ErrWrongPassword: the answer does not prove the account's password.
	ErrWrongPassword = errors.New("wrong password")
	// ErrMethod: the client answered with a method that what the proxy knows of the
	// account's secret cannot check. The wrapped message says which methods it can check.
	ErrMethod = errors.New("authentication method not usable for this account")
)

// User is one account.
type User struct {
	Name string
	// Password is the clear-text password, when known ("" with HasPassword false when only
	// a hash is known). An empty password is legal: HasPassword true, Password "".
	Password    string
	HasPassword bool
	// Stage2 is SHA1(SHA1(password)) (20 bytes) for a mysql_native_password account, or nil.
	Stage2 []byte
	// Ed25519Key is the public key (32 bytes) of a MariaDB ed25519 account, or nil.
	Ed25519Key []byte
	// Plugin is the account's authentication method on the server, as mysql.user names it;
	// "" for users-file entries, which any method the known secret allows may check.
	Plugin string
	// MaxConnections bounds the user's client connections; zero means no bound.
	MaxConnections int
	// Host is the account's host pattern: as in mysql.user for accounts read from the
	// backend, "%" for users-file entries.
	Host string
	// Consistency is the user's consistency for reads routed to replicas (strong,
	// session, eventual); "" for routing.consistency.
	Consistency string
}

// Methods lists the methods whose answers the account's known secret can check, best
// first, so that the proxy can ask a client to switch to the first one: all three with a
// clear password, mysql_native_password with a Stage2 hash, client_ed25519 with a public
// key; none when no secret is known.
func (u *User) Methods() []string {
	var m []string
	if u.HasPassword || len(u.Stage2) == sha1.Size {
		m = append(m, protocol.NativePassword)
	}
	if u.HasPassword {
		m = append(m, protocol.CachingSHA2)
	}
	if u.HasPassword || len(u.Ed25519Key) == ed25519.PublicKeySize {
		m = append(m, protocol.Ed25519)
	}
	return m
}

// Verify checks a client's answer response, made with method plugin, to the challenge
// scramble. On success it returns what the proxy knows, after the login, to log in to a
// backend as the user: the clear password if the account has one, else, for a
// mysql_native_password answer checked against Stage2, the SHA1(password) that the answer
// reveals. It fails with ErrWrongPassword or ErrMethod (see errors.Is).
//
// An empty answer (or a lone NUL byte, which some clients send for caching_sha2_password)
// proves the empty password and nothing else; client_ed25519 clients sign even for the
// empty password, and that signature is checked like any other. Comparisons of secrets
// take constant time.
func (u *User) Verify(plugin string, scramble, response []byte) (Credential, error) {
	if !slices.Contains(u.Methods(), plugin) {
		return Credential{}, u.methodError(plugin)
	}
	if isEmptyAnswer(response) {
		if u.HasPassword && u.Password == "" {
			return u.credential(nil), nil
		}
		return Credential{}, ErrWrongPassword
	}
	switch plugin {
	case protocol.NativePassword:
		stage2 := u.Stage2
		if u.HasPassword {
			stage2 = nil // the empty password, answered with nothing
			if u.Password != "" {
				stage2 = protocol.NativeStage2(protocol.NativeStage1(u.Password))
			}
		}
		stage1, ok := protocol.NativeVerify(stage2, scramble, response)
		if !ok {
			return Credential{}, ErrWrongPassword
		}
		return u.credential(stage1), nil
	case protocol.CachingSHA2:
		if !protocol.SHA2Verify(u.Password, scramble, response) {
			return Credential{}, ErrWrongPassword
		}
		return u.credential(nil), nil
	case protocol.Ed25519:
		key := u.Ed25519Key
		if u.HasPassword {
			key = protocol.Ed25519PublicKey(u.Password)
		}
		if !protocol.Ed25519Verify(key, scramble, response) {
			return Credential{}, ErrWrongPassword
		}
		return u.credential(nil), nil
	}
	return Credential{}, u.methodError(plugin) // unreachable: Methods lists only the above
}

// credential is what the proxy holds after a successful login; stage1 is SHA1(password)
// when the answer revealed it.
func (u *User) credential(stage1 []byte) Credential {
	c := Credential{User: u.Name, Stage1: stage1}
	if u.HasPassword {
		c.Password, c.HasPassword = u.Password, true
		c.Stage1 = nil
		if u.Password != "" {
			c.Stage1 = protocol.NativeStage1(u.Password)
		}
	}
	return c
}

func (u *User) methodError(plugin string) error {
	methods := u.Methods()
	if len(methods) == 0 {
		what := "no password or hash the proxy can use"
		if u.Plugin != "" {
			what = "the " + u.Plugin + " method, whose stored secret the proxy cannot use"
		}
		return fmt.Errorf("%w: account '%s'@'%s' has %s; list the user with its password in auth.users_file",
			ErrMethod, u.Name, u.Host, what)
	}
	return fmt.Errorf("%w: account '%s'@'%s' can be checked with %s, not %q",
		ErrMethod, u.Name, u.Host, strings.Join(methods, ", "), plugin)
}

// isEmptyAnswer reports whether response is the answer of the empty password.
func isEmptyAnswer(response []byte) bool {
	return len(response) == 0 || len(response) == 1 && response[0] == 0
}

// Credential is what the proxy needs to log in to a backend as the user. It never prints
// its secrets: every fmt verb, slog and encoding/json see them redacted.
type Credential struct {
	User string
	// Password is the clear-text password, when HasPassword.
	Password    string
	HasPassword bool
	// Stage1 is SHA1(password) when known: derived from a mysql_native_password login or
	// computed from Password. It is nil for the empty password, which is answered with
	// nothing.
	Stage1 []byte
}

// CanLogin reports whether the credential suffices to log in to a backend: a clear
// password (the empty one included), or a Stage1 for mysql_native_password.
func (c Credential) CanLogin() bool {
	return c.HasPassword || len(c.Stage1) == sha1.Size
}

// secrets says which secrets the credential holds, without them.
func (c Credential) secrets() string {
	var s []string
	if c.HasPassword {
		s = append(s, "password")
	}
	if len(c.Stage1) > 0 {
		s = append(s, "stage1")
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "+") + " redacted"
}

// String names the user and the kinds of secret held, never their values.
func (c Credential) String() string {
	return fmt.Sprintf("credential for %q (%s)", c.User, c.secrets())
}

// GoString is String for %#v.
func (c Credential) GoString() string {
	return fmt.Sprintf("auth.Credential{User: %q, secrets: %s}", c.User, c.secrets())
}

// Format prints String for every verb, so that no verb reaches the fields.
func (c Credential) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, c.GoString())
		return
	}
	fmt.Fprint(f, c.String())
}

// LogValue gives slog the user and the kinds of secret held.
func (c Credential) LogValue() slog.Value {
	return slog.GroupValue(slog.String("user", c.User), slog.String("secrets", c.secrets()))
}

// MarshalJSON encodes the user and the kinds of secret held.
func (c Credential) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		User    string `json:"user"`
		Secrets string `json:"secrets"`
	}{c.User, c.secrets()})
}

// SecretCredential is a Credential with its secrets in the open, for the one place they
// must travel: the socket pair of a hand-over to a new process of the proxy (package
// handover), which no other process can reach. Never log or store it.
type SecretCredential struct {
	User        string `json:"user"`
	Password    string `json:"password,omitempty"`
	HasPassword bool   `json:"has_password,omitempty"`
	Stage1      []byte `json:"stage1,omitempty"`
}

// Secret returns the credential with its secrets, for a hand-over.
func (c Credential) Secret() SecretCredential {
	return SecretCredential{User: c.User, Password: c.Password, HasPassword: c.HasPassword, Stage1: c.Stage1}
}

// Credential returns the credential s carries.
func (s SecretCredential) Credential() Credential {
	return Credential{User: s.User, Password: s.Password, HasPassword: s.HasPassword, Stage1: s.Stage1}
}

// The secrets of a User (a clear password, or a Stage2 hash that, with one overheard
// login, yields SHA1(password)) are redacted the same way.

func (u User) secrets() string {
	var s []string
	if u.HasPassword {
		s = append(s, "password")
	}
	if len(u.Stage2) > 0 {
		s = append(s, "stage2")
	}
	if len(u.Ed25519Key) > 0 {
		s = append(s, "ed25519 key")
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "+") + " redacted"
}

// String names the account and the kinds of secret known, never their values.
func (u User) String() string {
	return fmt.Sprintf("account '%s'@'%s' (plugin %q, %s)", u.Name, u.Host, u.Plugin, u.secrets())
}

// GoString is String for %#v.
func (u User) GoString() string {
	return fmt.Sprintf("auth.User{Name: %q, Host: %q, Plugin: %q, MaxConnections: %d, secrets: %s}",
		u.Name, u.Host, u.Plugin, u.MaxConnections, u.secrets())
}

// Format prints String for every verb, so that no verb reaches the fields.
func (u User) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, u.GoString())
		return
	}
	fmt.Fprint(f, u.String())
}

// LogValue gives slog the account and the kinds of secret known.
func (u User) LogValue() slog.Value {
	return slog.GroupValue(slog.String("user", u.Name), slog.String("host", u.Host),
		slog.String("plugin", u.Plugin), slog.String("secrets", u.secrets()))
}

// MarshalJSON encodes the account and the kinds of secret known.
func (u User) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		User           string `json:"user"`
		Host           string `json:"host"`
		Plugin         string `json:"plugin,omitempty"`
		MaxConnections int    `json:"max_connections"`
		Secrets        string `json:"secrets"`
	}{u.Name, u.Host, u.Plugin, u.MaxConnections, u.secrets()})
}
