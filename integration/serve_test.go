package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildBinary builds cmd/gatekeeper once for the tests that run it as a process.
var buildBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "gk-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "gatekeeper")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/gatekeeper")
	cmd.Dir = repoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

func gatekeeperBinary(t *testing.T) string {
	t.Helper()
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestServeProcess runs the binary as systemd would: it must report READY once it accepts
// connections, serve clients and the admin endpoints, and on SIGTERM report STOPPING, drain
// and exit 0.
func TestServeProcess(t *testing.T) {
	bin := gatekeeperBinary(t)
	sock := filepath.Join(t.TempDir(), "notify.sock")
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close()
	states := make(chan string, 8)
	go func() { // ends when notify is closed
		buf := make([]byte, 256)
		for {
			n, err := notify.Read(buf)
			if err != nil {
				return
			}
			states <- string(buf[:n])
		}
	}()

	listen, admin := freeAddr(t), freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "gatekeeper.yaml")
	if err := os.WriteFile(cfg, []byte("client:\n  idle_timeout: 1h\nlog:\n  level: debug\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--config", cfg, "--listen", listen,
		"--admin-listen", admin, "--primary", env.Primary)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock, "GATEKEEPER_SHUTDOWN_DRAIN_TIMEOUT=5s")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("gatekeeper stderr:\n%s", stderr.String())
		}
	}()

	select {
	case s := <-states:
		if s != "READY=1" {
			t.Fatalf("first notification %q, want READY=1", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no READY=1 from the daemon")
	}
	// Ready means accepting: a client connects at once.
	out := runTool(t, "mariadb", cliArgs(t, listen, "--batch", "--skip-column-names", "-e", "SELECT 40 + 2")...)
	if out != "42\n" {
		t.Errorf("query through the daemon: %q", out)
	}
	if code, body := httpGet(t, "http://"+admin+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if code, body := httpGet(t, "http://"+admin+"/readyz"); code != 200 {
		t.Errorf("/readyz = %d %q", code, body)
	}
	code, body := httpGet(t, "http://"+admin+"/metrics")
	for _, want := range []string{"gatekeeper_client_connections_total 1", `gatekeeper_client_commands_total{command="query"}`, "gatekeeper_build_info{", "go_goroutines"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-states:
		if s != "STOPPING=1" {
			t.Errorf("notification on SIGTERM %q, want STOPPING=1", s)
		}
	case <-time.After(10 * time.Second):
		t.Error("no STOPPING=1 on SIGTERM")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if !strings.Contains(stderr.String(), `msg=stopped`) {
		t.Errorf("no clean stop in the log:\n%s", stderr.String())
	}
}

func TestServeReadyzWithoutPrimary(t *testing.T) {
	bin := gatekeeperBinary(t)
	listen, admin, dead := freeAddr(t), freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--listen", listen, "--admin-listen", admin, "--primary", dead)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	waitFor(t, 10*time.Second, "the admin listener", func() bool {
		c, err := net.Dial("tcp", admin)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	code, body := httpGet(t, "http://"+admin+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, dead) {
		t.Errorf("/readyz with the primary down = %d %q, want 503 naming %s", code, body, dead)
	}
}

func TestCheckConfig(t *testing.T) {
	bin := gatekeeperBinary(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("backends:\n  primary: db1:3306\nadmission:\n  discipline: fifo\n"), 0o600)
	os.WriteFile(bad, []byte("backends:\n  primary: db1:3306\nadmission:\n  dicipline: fifo\n  queue_timeout: soon\n"), 0o600)

	out, err := exec.Command(bin, "check-config", good).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "configuration is valid") {
		t.Errorf("check-config good: %v %s", err, out)
	}
	out, err = exec.Command(bin, "check-config", bad).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("check-config bad: exit %v, want non-zero", err)
	}
	for _, want := range []string{`line 4: unknown key "admission.dicipline" (did you mean "admission.discipline"?)`, `line 5: admission.queue_timeout: invalid duration "soon"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check-config output lacks %q:\n%s", want, out)
		}
	}
	out, _ = exec.Command(bin, "version").CombinedOutput()
	if !strings.HasPrefix(string(out), "gatekeeper ") {
		t.Errorf("version: %q", out)
	}
}
