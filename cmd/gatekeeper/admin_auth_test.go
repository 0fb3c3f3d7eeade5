package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
	"github.com/gatekeeperdb/gatekeeper/internal/handover"
	"github.com/gatekeeperdb/gatekeeper/internal/wiring"
)

const adminToken = "0123456789abcdef0123456789abcdef"

// logBuffer is a log that the admin server's goroutines write and the test reads.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// adminSecrets writes a token file and a self-signed certificate for 127.0.0.1 to a
// temporary directory, and returns their paths and the certificate's PEM.
func adminSecrets(t *testing.T) (token, cert, key string, certPEM []byte) {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data []byte, mode os.FileMode) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return path
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gatekeeper admin"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return write("admin.token", []byte(adminToken+"\n"), 0o600),
		write("admin.crt", certPEM, 0o644),
		write("admin.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600),
		certPEM
}

func TestCheckConfigWarnsOfAnOpenAdminListener(t *testing.T) {
	token, cert, key, _ := adminSecrets(t)
	const open = "may be reached from other hosts and admin.auth sets no credentials"
	const clear = "may be reached from other hosts and serves plain HTTP"
	tests := []struct {
		name  string
		admin string // the admin section
		want  string // the warning, or "" for none
	}{
		{"loopback", "  listen: 127.0.0.1:6080\n", ""},
		{"loopback v6", "  listen: \"[::1]:6080\"\n", ""},
		{"localhost", "  listen: localhost:6080\n", ""},
		{"disabled", "  listen: \"\"\n", ""},
		{"every interface", "  listen: 0.0.0.0:6080\n", open},
		{"every interface, no host", "  listen: \":6080\"\n", open},
		{"a host name", "  listen: gk1.example.com:6080\n", open},
		{"token over HTTP", "  listen: 10.0.0.5:6080\n  auth:\n    bearer_token_file: " + token + "\n", clear},
		{"token over HTTPS", "  listen: 10.0.0.5:6080\n  auth:\n    bearer_token_file: " + token +
			"\n  tls:\n    cert_file: " + cert + "\n    key_file: " + key + "\n", ""},
	}
	for _, tt := range tests {
		file := filepath.Join(t.TempDir(), "gatekeeper.yaml")
		if err := os.WriteFile(file, []byte("admin:\n"+tt.admin), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := newCheckConfigCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs([]string{file})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got := out.String()
		if !strings.Contains(got, "configuration is valid") {
			t.Errorf("%s: output %q", tt.name, got)
		}
		switch {
		case tt.want == "" && strings.Contains(got, "warning:"):
			t.Errorf("%s: unexpected warning: %q", tt.name, got)
		case tt.want != "" && !(strings.Contains(got, "warning: admin.listen ") && strings.Contains(got, tt.want)):
			t.Errorf("%s: output %q lacks the warning %q", tt.name, got, tt.want)
		}
	}
}

// adminUnderTest runs the admin listener as serve does, on aln, with cfg.
func adminUnderTest(t *testing.T, cfg config.Config, aln net.Listener, log *slog.Logger) *http.Server {
	t.Helper()
	costs, err := estimator.New(estimatorConfig(cfg.Estimator))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	srv, err := wiring.Proxy(cfg, costs, log, reg)
	if err != nil {
		t.Fatal(err)
	}
	rl := &reloader{load: func() (config.Config, error) { return cfg, nil }, cur: cfg, srv: srv, costs: costs, log: log}
	adminSrv, err := startAdmin(cfg, aln, srv, costs, rl, &handing{}, fleetSource{}, reg, make(chan struct{}), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopAdmin(adminSrv) })
	return adminSrv
}

// do sends method url with the header authorization (none when empty) and returns the
// status and the WWW-Authenticate challenges.
func do(t *testing.T, client *http.Client, method, url, authorization string) (int, []string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Values("WWW-Authenticate")
}

// TestAdminServesHTTPSWithAuth runs the admin listener through serve's wiring with
// admin.tls and admin.auth: HTTPS only, the endpoints that change the proxy behind
// credentials, and the same once its socket is handed over as a hand-over passes it.
func TestAdminServesHTTPSWithAuth(t *testing.T) {
	token, cert, key, certPEM := adminSecrets(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Admin.Auth = config.AdminAuth{BearerTokenFile: token, Users: map[string]string{"ops": string(hash)}}
	cfg.Admin.TLS = config.AdminTLS{CertFile: cert, KeyFile: key}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logged logBuffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	first := adminUnderTest(t, cfg, aln, log)

	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		t.Fatal("no certificate in the PEM")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	defer client.CloseIdleConnections()
	base := "https://" + aln.Addr().String()
	bearer := "Bearer " + adminToken
	req, _ := http.NewRequest(http.MethodPost, base, nil)
	req.SetBasicAuth("ops", "s3cret")
	basic := req.Header.Get("Authorization")

	check := func(stage string) {
		t.Helper()
		if code, _ := do(t, client, http.MethodGet, base+"/healthz", ""); code != http.StatusOK {
			t.Errorf("%s: GET /healthz: %d", stage, code)
		}
		if code, _ := do(t, client, http.MethodGet, base+"/metrics", ""); code != http.StatusOK {
			t.Errorf("%s: GET /metrics without protect_reads: %d", stage, code)
		}
		for _, path := range []string{"/api/v1/types/reset", "/-/reload", "/-/handover"} {
			code, challenge := do(t, client, http.MethodPost, base+path, "")
			if code != http.StatusUnauthorized || len(challenge) != 2 {
				t.Errorf("%s: POST %s without credentials: %d %q, want 401 with two challenges", stage, path, code, challenge)
			}
			if code, _ := do(t, client, http.MethodPost, base+path, "Bearer "+adminToken[:31]+"0"); code != http.StatusUnauthorized {
				t.Errorf("%s: POST %s with a wrong token: %d, want 401", stage, path, code)
			}
		}
		for _, auth := range []string{bearer, basic} {
			for _, path := range []string{"/api/v1/types/reset", "/-/reload"} {
				if code, _ := do(t, client, http.MethodPost, base+path, auth); code != http.StatusOK {
					t.Errorf("%s: POST %s with %s: %d, want 200", stage, path, strings.Fields(auth)[0], code)
				}
			}
		}
		// HTTPS only: plain HTTP gets Go's 400 for a client that speaks HTTP to HTTPS.
		if code, _ := do(t, http.DefaultClient, http.MethodGet, "http://"+aln.Addr().String()+"/healthz", ""); code != http.StatusBadRequest {
			t.Errorf("%s: plain HTTP: %d, want 400", stage, code)
		}
	}
	check("serving")
	if !strings.Contains(logged.String(), "admin request refused") || !strings.Contains(logged.String(), "reason=wrong") {
		t.Errorf("refusals not logged: %q", logged.String())
	}

	// A hand-over passes the listening socket itself; TLS is the new server's to apply.
	f, err := handover.Dup(aln)
	if err != nil {
		t.Fatalf("the admin listener cannot be handed over: %v", err)
	}
	taken, err := net.FileListener(f)
	_ = f.Close()
	if err != nil {
		t.Fatal(err)
	}
	stopAdmin(first)
	client.CloseIdleConnections()
	adminUnderTest(t, cfg, taken, log)
	check("after a hand-over")
}

// TestAdminWithoutAuthIsOpenAndWarns: without admin.auth the admin API behaves as before,
// and serve logs the warning check-config prints when it listens beyond loopback.
func TestAdminWithoutAuthIsOpenAndWarns(t *testing.T) {
	cfg := config.Default()
	cfg.Admin.Listen = "0.0.0.0:6080" // what the warning reads; the test serves on aln
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logged logBuffer
	adminUnderTest(t, cfg, aln, slog.New(slog.NewTextHandler(&logged, nil)))
	if code, challenge := do(t, http.DefaultClient, http.MethodPost, "http://"+aln.Addr().String()+"/api/v1/types/reset", ""); code != http.StatusOK || challenge != nil {
		t.Errorf("POST /api/v1/types/reset without admin.auth: %d %q, want 200", code, challenge)
	}
	if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), "admin.auth sets no credentials") {
		t.Errorf("no warning logged: %q", logged.String())
	}
}

// TestReloadOfAdminAuthNeedsARestart: admin.auth and admin.tls are read at start; a reload
// that changes them says so rather than leaving the operator to believe in new
// credentials.
func TestReloadOfAdminAuthNeedsARestart(t *testing.T) {
	token, _, _, _ := adminSecrets(t)
	cur := config.Default()
	srv, costs := reloadable(t, cur)
	next := cur
	next.Admin.Auth = config.AdminAuth{BearerTokenFile: token}
	var logged logBuffer
	r := &reloader{load: func() (config.Config, error) { return next, nil }, cur: cur, srv: srv, costs: costs,
		log: slog.New(slog.NewTextHandler(&logged, nil))}
	if err := r.reload(); err != nil {
		t.Fatal(err)
	}
	if got := logged.String(); !strings.Contains(got, "configuration changes that need a restart were not applied") || !strings.Contains(got, "sections=[admin]") {
		t.Errorf("log = %q", got)
	}
}
