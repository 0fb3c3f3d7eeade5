package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// writeSecret writes text to a file of dir with mode, and returns its path.
func writeSecret(t *testing.T, dir, name, text string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return path
}

// writeCert writes a self-signed certificate and its key for 127.0.0.1 to dir.
func writeCert(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gatekeeper admin"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cert = writeSecret(t, dir, "admin.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), 0o644)
	key = writeSecret(t, dir, "admin.key", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})), 0o600)
	return cert, key
}

func TestAdminAuthAndTLS(t *testing.T) {
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	token := writeSecret(t, dir, "token", "  0123456789abcdef0123\n", 0o600)
	cert, key := writeCert(t, dir)

	c, err := Load(Sources{File: writeFile(t, `
admin:
  listen: 0.0.0.0:6080
  auth:
    bearer_token_file: `+token+`
    users:
      Ops: "`+string(hash)+`"
      htpasswd: "$2y$05$UXK.9YbOEgPzYDXSb6Wg/.yiGkjHVR5qMz37ocu9f1FBW34RARcMy"
    protect_reads: true
  tls:
    cert_file: `+cert+`
    key_file: `+key+`
`)})
	if err != nil {
		t.Fatal(err)
	}
	a := c.Admin.Auth
	if !a.Enabled() || !a.ProtectReads || c.Admin.TLS.CertFile != cert || c.Admin.TLS.KeyFile != key {
		t.Errorf("admin = %+v", c.Admin)
	}
	if got := a.Users["ops"]; got != string(hash) {
		t.Errorf("users = %v: want ops (the file's keys in lower case) with its hash", a.Users)
	}
	got, err := a.ReadToken()
	if err != nil || string(got) != "0123456789abcdef0123" {
		t.Errorf("ReadToken = %q, %v; want the token without the white space around it", got, err)
	}

	def := Default()
	if def.Admin.Auth.Enabled() {
		t.Error("the default asks for credentials; it must behave as before admin.auth")
	}
}

func TestAdminAuthErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeSecret(t, dir, "good", "0123456789abcdef0123\n", 0o600)
	loose := writeSecret(t, dir, "loose", "0123456789abcdef0123\n", 0o644)
	short := writeSecret(t, dir, "short", "hunter2\n", 0o600)
	twoLines := writeSecret(t, dir, "two", "0123456789abcdef\n0123456789abcdef\n", 0o600)
	cert, key := writeCert(t, dir)
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error
	}{
		{
			name: "plain password",
			yaml: "admin:\n  auth:\n    users:\n      ops: hunter2\n",
			want: []string{`line 3: admin.auth.users: user "ops": the password is not a bcrypt hash`, "gatekeeper hash-password", `htpasswd -nBC 10 "" | tr -d ':\n'`},
		},
		{
			name: "truncated hash",
			yaml: "admin:\n  auth:\n    users:\n      ops: \"$2y$10$UXK.9YbOEgPz\"\n",
			want: []string{`admin.auth.users: user "ops": the password is not a bcrypt hash`},
		},
		{
			name: "missing token file",
			yaml: "admin:\n  auth:\n    bearer_token_file: " + filepath.Join(dir, "nope") + "\n",
			want: []string{"line 3: admin.auth.bearer_token_file: open " + filepath.Join(dir, "nope") + ": no such file or directory"},
		},
		{
			name: "token readable by others",
			yaml: "admin:\n  auth:\n    bearer_token_file: " + loose + "\n",
			want: []string{"admin.auth.bearer_token_file: mode 0644 lets group or others read or write this token; chmod 600 " + loose},
		},
		{
			name: "short token",
			yaml: "admin:\n  auth:\n    bearer_token_file: " + short + "\n",
			want: []string{"admin.auth.bearer_token_file: " + short + " holds 7 characters; a token has at least 16", "openssl rand -hex 32"},
		},
		{
			name: "token of two lines",
			yaml: "admin:\n  auth:\n    bearer_token_file: " + twoLines + "\n",
			want: []string{"holds white space or control characters inside the token"},
		},
		{
			name: "token file is a directory",
			yaml: "admin:\n  auth:\n    bearer_token_file: " + dir + "\n",
			want: []string{"admin.auth.bearer_token_file: " + dir + " is not a regular file"},
		},
		{
			name: "protect reads without credentials",
			yaml: "admin:\n  auth:\n    protect_reads: true\n",
			want: []string{"line 3: admin.auth.protect_reads: needs admin.auth.bearer_token_file or admin.auth.users"},
		},
		{
			name: "certificate without key",
			yaml: "admin:\n  tls:\n    cert_file: " + cert + "\n",
			want: []string{"line 3: admin.tls.cert_file: cert_file and key_file go together"},
		},
		{
			name: "key without certificate",
			yaml: "admin:\n  tls:\n    key_file: " + key + "\n",
			want: []string{"admin.tls.cert_file: cert_file and key_file go together"},
		},
		{
			name: "key that is not the certificate's",
			yaml: "admin:\n  tls:\n    cert_file: " + cert + "\n    key_file: " + good + "\n",
			want: []string{"admin.tls.cert_file: cannot load the certificate and key"},
		},
		{
			name: "misspelt key",
			yaml: "admin:\n  auth:\n    bearer_token: x\n",
			want: []string{`unknown key "admin.auth.bearer_token"`},
		},
	}
	for _, tt := range tests {
		_, err := Load(Sources{File: writeFile(t, tt.yaml)})
		if err == nil {
			t.Errorf("%s: accepted", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tt.name, err, w)
			}
		}
	}
}
