// Package integration tests the proxy end to end: real MariaDB servers started by
// scripts/test-backends.sh, the proxy in-process on a loopback port, and real clients
// (go-sql-driver/mysql, go-mysql, the mariadb command-line tools, sysbench) in front.
//
// When GK_PRIMARY is set (eval "$(scripts/test-backends.sh up)"), the tests use those
// backends; otherwise TestMain starts its own in a temporary directory and stops them at
// the end.
package integration

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
	"github.com/gatekeeperdb/gatekeeper/internal/proxy"
	"github.com/gatekeeperdb/gatekeeper/internal/wiring"
)

// env is what scripts/test-backends.sh env prints.
var env struct {
	Primary, Replica1, Replica2 string
	User, Password, Database    string
	EdUser, EdPassword          string
	TLSCA, TLSCert, TLSKey      string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var stop func()
	if os.Getenv("GK_PRIMARY") == "" {
		var err error
		if stop, err = startBackends(); err != nil {
			fmt.Fprintln(os.Stderr, "integration: cannot start the test backends:", err)
			return 1
		}
	}
	env.Primary = os.Getenv("GK_PRIMARY")
	env.Replica1 = os.Getenv("GK_REPLICA1")
	env.Replica2 = os.Getenv("GK_REPLICA2")
	env.User, env.Password = os.Getenv("GK_USER"), os.Getenv("GK_PASSWORD")
	env.Database = os.Getenv("GK_DATABASE")
	env.EdUser, env.EdPassword = os.Getenv("GK_ED25519_USER"), os.Getenv("GK_ED25519_PASSWORD")
	env.TLSCA, env.TLSCert, env.TLSKey = os.Getenv("GK_TLS_CA"), os.Getenv("GK_TLS_CERT"), os.Getenv("GK_TLS_KEY")
	code := m.Run()
	if stop != nil {
		stop()
	}
	return code
}

// repoRoot returns the repository's top directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// startBackends runs scripts/test-backends.sh up in a fresh directory on ports of its own,
// exports what it prints, and returns the function that stops them.
func startBackends() (func(), error) {
	dir, err := os.MkdirTemp("", "gk-integration-")
	if err != nil {
		return nil, err
	}
	script := filepath.Join(repoRoot(), "scripts", "test-backends.sh")
	scriptEnv := append(os.Environ(), "GK_BACKENDS_DIR="+filepath.Join(dir, "backends"), "GK_BACKENDS_PORT=23306")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "up")
	cmd.Env = scriptEnv
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s up: %w", script, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		if k, v, ok := strings.Cut(line, "="); ok {
			os.Setenv(k, strings.Trim(v, `"'`))
		}
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		down := exec.CommandContext(ctx, script, "down")
		down.Env = scriptEnv
		down.Stderr = os.Stderr
		if err := down.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "integration: stopping the test backends:", err)
		}
		os.RemoveAll(dir)
	}, nil
}

// testProxy is a proxy running in-process for one test.
type testProxy struct {
	*proxy.Server
	Addr     string
	Registry *prometheus.Registry
	// Costs is the proxy's table of request types.
	Costs *estimator.Table
	cfg   config.Config
}

// ReloadAdmission applies admission settings a, as a reload of the daemon does.
func (p *testProxy) ReloadAdmission(a config.Admission) error {
	adm, err := wiring.Admission(a)
	if err != nil {
		return err
	}
	return p.Server.ReloadAdmission(adm)
}

// modes are the proxy's modes every client-facing test runs in.
var modes = []string{config.ModePassthrough, config.ModePooled}

// eachMode runs f as a subtest in each mode.
func eachMode(t *testing.T, f func(t *testing.T, mode string)) {
	t.Helper()
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) { f(t, mode) })
	}
}

// inMode returns an edit of the configuration that sets mode, then applies edit.
func inMode(mode string, edit func(*config.Config)) func(*config.Config) {
	return func(c *config.Config) {
		c.Mode = mode
		if edit != nil {
			edit(c)
		}
	}
}

// writeUsersFile writes the users file of pooled mode with the test accounts.
func writeUsersFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.yaml")
	data := fmt.Sprintf("users:\n  - user: %s\n    password: %q\n  - user: %s\n    password: %q\n",
		env.User, env.Password, env.EdUser, env.EdPassword)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startProxy starts a proxy in front of the test primary, with cfg adjusted by edit, and
// shuts it down when the test ends. In pooled mode without a users file of its own, it
// gets one with the test accounts.
func startProxy(t *testing.T, edit func(*config.Config)) *testProxy {
	t.Helper()
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Admin.Listen = ""
	cfg.Backends.Primary = env.Primary
	if edit != nil {
		edit(&cfg)
	}
	if cfg.Mode == config.ModePooled && cfg.Auth.UsersFile == "" && !cfg.Auth.FromBackend {
		cfg.Auth.UsersFile = writeUsersFile(t)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	reg := prometheus.NewRegistry()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	costs, err := estimator.New(estimator.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := wiring.Proxy(cfg, costs, log, reg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Auth.UsersFile != "" {
		users, err := auth.LoadFile(cfg.Auth.UsersFile)
		if err != nil {
			t.Fatal(err)
		}
		srv.Accounts(nil).Swap(users)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { // ends when Shutdown closes ln
		defer close(served)
		_ = srv.Serve(ln)
	}()
	if policy := srv.Routing(); policy != nil {
		ctx, stop := context.WithCancel(context.Background())
		routed := make(chan struct{})
		go func() { // ends with the test
			defer close(routed)
			_ = policy.Run(ctx)
		}()
		t.Cleanup(func() {
			stop()
			<-routed
		})
	}
	if top := srv.Topology(); top != nil {
		ctx, stop := context.WithCancel(context.Background())
		read := make(chan struct{})
		go func() { // ends with the test
			defer close(read)
			top.Run(ctx)
		}()
		t.Cleanup(func() {
			stop()
			<-read
		})
	}
	p := &testProxy{Server: srv, Addr: ln.Addr().String(), Registry: reg, Costs: costs, cfg: cfg}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-served
	})
	return p
}

// testWriter sends log lines to the test log while the test runs.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// waitFor polls cond until it holds or the deadline passes, and fails the test then.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", within, what)
		case <-tick.C:
		}
	}
}

// waitForRunning waits until the server behind monitor is executing stmt, which is the
// only sure sign that a statement sent through the proxy has reached the backend: the
// proxy counts a command when it reads it, before it has a backend connection for it.
func waitForRunning(t *testing.T, monitor *sql.DB, stmt string) {
	t.Helper()
	waitFor(t, 5*time.Second, stmt+" to run on the backend", func() bool {
		var n int
		return monitor.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = ?", stmt).Scan(&n) == nil && n > 0
	})
}

// hostPort splits an address for command-line tools.
func hostPort(t *testing.T, addr string) (string, string) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}

// needTool fails the test when a command-line tool the suite relies on is missing.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: the integration suite needs it (apt-get install %s)", name, debianPackage(name))
	}
	return path
}

func debianPackage(tool string) string {
	switch tool {
	case "mariadb", "mariadb-admin":
		return "mariadb-client"
	}
	return tool
}

// metricValue returns the value of the counter or gauge name with the given labels from
// the proxy's registry, or 0 when it has no such series.
func metricValue(t *testing.T, p *testProxy, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}
