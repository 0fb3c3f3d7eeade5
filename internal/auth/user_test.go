package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// testScramble is the challenge of these tests, fixed so that answers are reproducible.
const testScramble = "abcdefghij0123456789"

// answer is what a client that knows password answers with method to scramble. A client
// answers the empty password with nothing, except that client_ed25519 always signs.
func answer(method, password string, scramble []byte) []byte {
	switch method {
	case protocol.NativePassword:
		if password == "" {
			return nil
		}
		return protocol.NativeResponse(protocol.NativeStage1(password), scramble)
	case protocol.CachingSHA2:
		return protocol.SHA2Response(password, scramble)
	case protocol.Ed25519:
		return protocol.Ed25519Response(password, scramble)
	}
	return append([]byte(password), 0) // mysql_clear_password
}

func stage2Of(password string) []byte {
	return protocol.NativeStage2(protocol.NativeStage1(password))
}

// testAccounts are accounts of each kind of secret, all with the password "secret" where
// they have one.
type testAccounts struct {
	clear, empty, hash, key, none User
}

func accountKinds() testAccounts {
	return testAccounts{
		clear: User{Name: "app", Password: "secret", HasPassword: true, Host: "%"},
		empty: User{Name: "app", HasPassword: true, Host: "%"},
		hash:  User{Name: "app", Stage2: stage2Of("secret"), Plugin: protocol.NativePassword, Host: "%"},
		key:   User{Name: "app", Ed25519Key: protocol.Ed25519PublicKey("secret"), Plugin: "ed25519", Host: "%"},
		none:  User{Name: "app", Plugin: protocol.CachingSHA2, Host: "%"},
	}
}

func TestVerify(t *testing.T) {
	acc := accountKinds()
	scramble := []byte(testScramble)
	const (
		native = protocol.NativePassword
		sha2   = protocol.CachingSHA2
		ed     = protocol.Ed25519
		plain  = protocol.ClearPassword
	)
	// Credentials that a successful login yields.
	withPassword := Credential{User: "app", Password: "secret", HasPassword: true, Stage1: protocol.NativeStage1("secret")}
	withEmpty := Credential{User: "app", HasPassword: true}
	withStage1 := Credential{User: "app", Stage1: protocol.NativeStage1("secret")}
	nameOnly := Credential{User: "app"}

	tests := []struct {
		name    string
		user    User
		method  string
		answer  []byte
		want    Credential
		wantErr error
	}{
		{"clear native right", acc.clear, native, answer(native, "secret", scramble), withPassword, nil},
		{"clear native wrong", acc.clear, native, answer(native, "wrong", scramble), Credential{}, ErrWrongPassword},
		{"clear native empty", acc.clear, native, nil, Credential{}, ErrWrongPassword},
		{"clear native short", acc.clear, native, []byte("short"), Credential{}, ErrWrongPassword},
		{"clear sha2 right", acc.clear, sha2, answer(sha2, "secret", scramble), withPassword, nil},
		{"clear sha2 wrong", acc.clear, sha2, answer(sha2, "wrong", scramble), Credential{}, ErrWrongPassword},
		{"clear sha2 empty", acc.clear, sha2, nil, Credential{}, ErrWrongPassword},
		{"clear ed25519 right", acc.clear, ed, answer(ed, "secret", scramble), withPassword, nil},
		{"clear ed25519 wrong", acc.clear, ed, answer(ed, "wrong", scramble), Credential{}, ErrWrongPassword},
		{"clear ed25519 empty", acc.clear, ed, nil, Credential{}, ErrWrongPassword},
		{"clear ed25519 other scramble", acc.clear, ed, answer(ed, "secret", []byte("another scramble 123")), Credential{}, ErrWrongPassword},
		{"clear cleartext method", acc.clear, plain, answer(plain, "secret", nil), Credential{}, ErrMethod},
		{"clear unknown method", acc.clear, "sha256_password", answer(sha2, "secret", scramble), Credential{}, ErrMethod},

		{"empty native empty", acc.empty, native, nil, withEmpty, nil},
		{"empty native wrong", acc.empty, native, answer(native, "wrong", scramble), Credential{}, ErrWrongPassword},
		{"empty sha2 empty", acc.empty, sha2, nil, withEmpty, nil},
		{"empty sha2 NUL", acc.empty, sha2, []byte{0}, withEmpty, nil},
		{"empty sha2 wrong", acc.empty, sha2, answer(sha2, "wrong", scramble), Credential{}, ErrWrongPassword},
		{"empty ed25519 signed", acc.empty, ed, answer(ed, "", scramble), withEmpty, nil},
		{"empty ed25519 empty", acc.empty, ed, nil, withEmpty, nil},
		{"empty ed25519 wrong", acc.empty, ed, answer(ed, "wrong", scramble), Credential{}, ErrWrongPassword},

		{"hash native right", acc.hash, native, answer(native, "secret", scramble), withStage1, nil},
		{"hash native wrong", acc.hash, native, answer(native, "wrong", scramble), Credential{}, ErrWrongPassword},
		{"hash native empty", acc.hash, native, nil, Credential{}, ErrWrongPassword},
		{"hash native NUL", acc.hash, native, []byte{0}, Credential{}, ErrWrongPassword},
		{"hash sha2", acc.hash, sha2, answer(sha2, "secret", scramble), Credential{}, ErrMethod},
		{"hash ed25519", acc.hash, ed, answer(ed, "secret", scramble), Credential{}, ErrMethod},

		{"key ed25519 right", acc.key, ed, answer(ed, "secret", scramble), nameOnly, nil},
		{"key ed25519 wrong", acc.key, ed, answer(ed, "wrong", scramble), Credential{}, ErrWrongPassword},
		{"key ed25519 empty", acc.key, ed, nil, Credential{}, ErrWrongPassword},
		{"key native", acc.key, native, answer(native, "secret", scramble), Credential{}, ErrMethod},
		{"key sha2", acc.key, sha2, answer(sha2, "secret", scramble), Credential{}, ErrMethod},

		{"none native", acc.none, native, answer(native, "secret", scramble), Credential{}, ErrMethod},
		{"none sha2", acc.none, sha2, answer(sha2, "secret", scramble), Credential{}, ErrMethod},
		{"none ed25519", acc.none, ed, answer(ed, "secret", scramble), Credential{}, ErrMethod},
		{"none empty", acc.none, sha2, nil, Credential{}, ErrMethod},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.user.Verify(tt.method, scramble, tt.answer)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Verify = %v, want %v", err, tt.wantErr)
				}
				if !credentialEqual(got, Credential{}) {
					t.Errorf("Verify returned %#v with its error, want the zero Credential", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !credentialEqual(got, tt.want) {
				t.Errorf("Verify = %s, want %s", dump(got), dump(tt.want))
			}
		})
	}
}

func credentialEqual(a, b Credential) bool {
	return a.User == b.User && a.Password == b.Password && a.HasPassword == b.HasPassword &&
		bytes.Equal(a.Stage1, b.Stage1)
}

// dump shows a credential's fields, secrets included, for a failing test.
func dump(c Credential) string {
	return fmt.Sprintf("{User:%q Password:%q HasPassword:%v Stage1:%x}", c.User, c.Password, c.HasPassword, c.Stage1)
}

// A native login checked against the stored hash alone yields SHA1(password), with which
// the proxy answers a backend's own challenge.
func TestNativeStage1LogsIn(t *testing.T) {
	for _, password := range []string{"secret", "p@ss wörd", strings.Repeat("x", 200)} {
		u := User{Name: "app", Stage2: stage2Of(password), Host: "%"}
		scramble := protocol.NewScramble()
		cred, err := u.Verify(protocol.NativePassword, scramble, answer(protocol.NativePassword, password, scramble))
		if err != nil {
			t.Fatalf("password %q: Verify: %v", password, err)
		}
		if want := protocol.NativeStage1(password); !bytes.Equal(cred.Stage1, want) {
			t.Fatalf("password %q: Stage1 = %x, want SHA1(password) %x", password, cred.Stage1, want)
		}
		if !cred.CanLogin() {
			t.Errorf("password %q: CanLogin = false with a Stage1", password)
		}
		backend := protocol.NewScramble()
		if _, ok := protocol.NativeVerify(u.Stage2, backend, protocol.NativeResponse(cred.Stage1, backend)); !ok {
			t.Errorf("password %q: the backend refuses the answer made from Stage1", password)
		}
	}
}

func TestEd25519KnownKey(t *testing.T) {
	// SELECT ed25519_password("secret") on MariaDB, from its documentation.
	const stored = "ZIgUREUg5PVgQ6LskhXmO+eZLS0nC8be6HPjYWR4YJY"
	if got := base64.RawStdEncoding.EncodeToString(protocol.Ed25519PublicKey("secret")); got != stored {
		t.Fatalf("Ed25519PublicKey(secret) = %s, want %s", got, stored)
	}
	u := accountFromRow(accountRow{User: "app", Host: "%", Plugin: "ed25519", AuthString: stored})
	if _, err := u.Verify(protocol.Ed25519, []byte(testScramble), protocol.Ed25519Response("secret", []byte(testScramble))); err != nil {
		t.Fatalf("Verify of a client_ed25519 signature against the stored key: %v", err)
	}
}

func TestMethods(t *testing.T) {
	acc := accountKinds()
	all := []string{protocol.NativePassword, protocol.CachingSHA2, protocol.Ed25519}
	tests := []struct {
		name string
		user User
		want []string
	}{
		{"clear password", acc.clear, all},
		{"empty password", acc.empty, all},
		{"native hash", acc.hash, []string{protocol.NativePassword}},
		{"ed25519 key", acc.key, []string{protocol.Ed25519}},
		{"no secret", acc.none, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.user.Methods(); !slices.Equal(got, tt.want) {
				t.Errorf("Methods = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMethodErrorSaysWhy(t *testing.T) {
	acc := accountKinds()
	tests := []struct {
		name   string
		user   User
		method string
		want   []string
	}{
		{"hash, sha2 answer", acc.hash, protocol.CachingSHA2, []string{"mysql_native_password", `not "caching_sha2_password"`}},
		{"no secret", acc.none, protocol.NativePassword, []string{"caching_sha2_password", "auth.users_file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.user.Verify(tt.method, []byte(testScramble), []byte("x"))
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Verify = %v, want a message containing %q", err, w)
				}
			}
		})
	}
}

func TestCanLogin(t *testing.T) {
	tests := []struct {
		name string
		c    Credential
		want bool
	}{
		{"password", Credential{User: "a", Password: "x", HasPassword: true}, true},
		{"empty password", Credential{User: "a", HasPassword: true}, true},
		{"stage1", Credential{User: "a", Stage1: protocol.NativeStage1("x")}, true},
		{"short stage1", Credential{User: "a", Stage1: []byte{1, 2}}, false},
		{"nothing", Credential{User: "a"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.CanLogin(); got != tt.want {
				t.Errorf("CanLogin = %v, want %v", got, tt.want)
			}
		})
	}
}

// Neither a Credential nor a User shows its secrets, whatever prints it.
func TestSecretsNeverPrinted(t *testing.T) {
	const password = "hunter2-Secret"
	stage1 := protocol.NativeStage1(password)
	stage2 := stage2Of(password)
	key := protocol.Ed25519PublicKey(password)
	cred := Credential{User: "app", Password: password, HasPassword: true, Stage1: stage1}
	user := User{Name: "app", Password: password, HasPassword: true, Stage2: stage2, Ed25519Key: key, Host: "%"}

	forbidden := []string{password}
	for _, b := range [][]byte{stage1, stage2, key} {
		forbidden = append(forbidden, hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
			fmt.Sprint(b), fmt.Sprintf("%#v", b), base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b))
	}
	check := func(t *testing.T, what, out string) {
		t.Helper()
		for _, f := range forbidden {
			if strings.Contains(out, f) {
				t.Errorf("%s shows a secret (%q): %s", what, f, out)
			}
		}
		if !strings.Contains(out, "app") {
			t.Errorf("%s does not name the user: %s", what, out)
		}
	}
	for name, v := range map[string]any{"Credential": cred, "*Credential": &cred, "User": user, "*User": &user} {
		t.Run(name, func(t *testing.T) {
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%-40v"} {
				check(t, verb, fmt.Sprintf(verb, v))
			}
			check(t, "Sprint", fmt.Sprint(v))
			check(t, "Sprintln", fmt.Sprintln(v))
			check(t, "a struct holding it", fmt.Sprintf("%+v", struct{ X any }{v}))

			var buf bytes.Buffer
			slog.New(slog.NewJSONHandler(&buf, nil)).Info("login", "cred", v)
			check(t, "slog JSON", buf.String())
			buf.Reset()
			slog.New(slog.NewTextHandler(&buf, nil)).Info("login", "cred", v)
			check(t, "slog text", buf.String())

			js, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			check(t, "json", string(js))
		})
	}
}
