package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/procstat"
)

// gatekeeper is `gatekeeper serve` running as a subprocess for one test, configured with
// GATEKEEPER_* variables. It can be stopped with a signal and started again on the same
// addresses; whatever is still running when the test ends is killed by its PID.
type gatekeeper struct {
	t *testing.T
	// bin is the binary the process runs.
	bin string
	// Addr is where clients connect; AdminAddr the metrics and API listener.
	Addr, AdminAddr string
	// settings are the configuration keys and values the process gets.
	settings map[string]string
	logPath  string
	notify   *net.UnixConn

	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// startGatekeeper runs the proxy in mode in front of the suite's primary with settings on
// top of its defaults (listen and admin.listen on free loopback ports), and waits until it
// reports that it accepts connections. Pooled mode gets a users file with the test account.
func startGatekeeper(t *testing.T, mode string, settings map[string]string) *gatekeeper {
	t.Helper()
	return startGatekeeperFrom(t, env.Gatekeeper, mode, settings)
}

// startGatekeeperFrom is startGatekeeper running the binary at bin.
func startGatekeeperFrom(t *testing.T, bin, mode string, settings map[string]string) *gatekeeper {
	t.Helper()
	dir, err := os.MkdirTemp("", "gk-") // short: a socket path must fit in 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	g := &gatekeeper{t: t, bin: bin, logPath: filepath.Join(dir, "gatekeeper.log")}
	g.settings = map[string]string{
		"listen":                   "127.0.0.1:" + freePort(t),
		"admin.listen":             "127.0.0.1:" + freePort(t),
		"backends.primary":         env.Primary,
		"mode":                     mode,
		"backends.connect_timeout": "2s",
	}
	if mode == config.ModePooled {
		users := filepath.Join(dir, "users.yaml")
		data := fmt.Sprintf("users:\n  - user: %s\n    password: %q\n", env.User, env.Password)
		if err := os.WriteFile(users, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		g.settings["auth.users_file"] = users
	}
	for k, v := range settings {
		g.settings[k] = v
	}
	for k := range g.settings {
		if !hasKey(k) {
			t.Fatalf("gatekeeper has no configuration key %s", k)
		}
	}
	g.Addr, g.AdminAddr = g.settings["listen"], g.settings["admin.listen"]

	sock := filepath.Join(dir, "notify.sock")
	g.notify, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.notify.Close() })
	t.Cleanup(func() {
		g.kill()
		if t.Failed() {
			t.Logf("the proxy's log, last lines:\n%s", tail(g.logPath, 40))
		}
	})
	g.start()
	return g
}

// hasKey reports whether the proxy has the configuration key.
func hasKey(key string) bool { return slices.Contains(config.Keys(), key) }

// start runs the process and waits for its READY=1 (sd_notify), at most 20 s.
func (g *gatekeeper) start() {
	g.t.Helper()
	logFile, err := os.OpenFile(g.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		g.t.Fatal(err)
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(g.bin, "serve")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, config.EnvPrefix+"_") && !strings.HasPrefix(kv, "NOTIFY_SOCKET=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range g.settings {
		cmd.Env = append(cmd.Env, config.EnvName(k)+"="+v)
	}
	cmd.Env = append(cmd.Env, "NOTIFY_SOCKET="+g.notify.LocalAddr().String())
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	g.cmd = cmd
	exited := make(chan struct{})
	g.exited = exited
	go func() { _ = cmd.Wait(); close(exited) }() // ends when the process does

	ready := make(chan error, 1)
	go func() { // ends at READY=1, or at the deadline set below
		buf := make([]byte, 512)
		for {
			n, err := g.notify.Read(buf)
			if err != nil {
				ready <- err
				return
			}
			if strings.Contains(string(buf[:n]), "READY=1") {
				ready <- nil
				return
			}
		}
	}()
	_ = g.notify.SetReadDeadline(time.Now().Add(20 * time.Second))
	select {
	case err := <-ready:
		if err != nil {
			g.t.Fatalf("gatekeeper did not report ready within 20 s: %v\n%s", err, tail(g.logPath, 20))
		}
	case <-exited:
		g.t.Fatalf("gatekeeper exited at start: %v\n%s", cmd.ProcessState, tail(g.logPath, 20))
	}
}

// PID returns the process id of the running proxy.
func (g *gatekeeper) PID() int { return g.cmd.Process.Pid }

// stop sends sig and waits for the process to exit, at most within; it returns how long
// the process took.
func (g *gatekeeper) stop(sig syscall.Signal, within time.Duration) (time.Duration, error) {
	start := time.Now()
	if err := g.cmd.Process.Signal(sig); err != nil {
		return 0, err
	}
	select {
	case <-g.exited:
		return time.Since(start), nil
	case <-time.After(within):
		return time.Since(start), fmt.Errorf("gatekeeper (pid %d) still runs %v after %v", g.PID(), within, sig)
	}
}

// kill ends the process with SIGKILL if it still runs.
func (g *gatekeeper) kill() {
	if g.cmd == nil {
		return
	}
	select {
	case <-g.exited:
		return
	default:
	}
	_ = g.cmd.Process.Kill()
	<-g.exited
}

// queue returns the admission queue as GET /api/v1/queue shows it.
func (g *gatekeeper) queue() (admin.QueueResponse, error) {
	var q admin.QueueResponse
	return q, g.getJSON("/api/v1/queue", &q)
}

// backends returns the proxy's view of its backends, as GET /api/v1/backends shows it.
func (g *gatekeeper) backends() (admin.BackendsResponse, error) {
	var b admin.BackendsResponse
	return b, g.getJSON("/api/v1/backends", &b)
}

// getJSON decodes the answer of the admin API at path into v.
func (g *gatekeeper) getJSON(path string, v any) error {
	resp, err := http.Get("http://" + g.AdminAddr + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// metrics returns the proxy's metrics as GET /metrics shows them: the value of each series,
// keyed by the series as written, its name and labels.
func (g *gatekeeper) metrics() (map[string]float64, error) {
	resp, err := scrapeClient.Get("http://" + g.AdminAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		i := strings.LastIndexByte(line, ' ')
		if line == "" || line[0] == '#' || i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, nil
}

// scrapeClient bounds a scrape, so that a check polling the metrics keeps to its bounds.
var scrapeClient = &http.Client{Timeout: 5 * time.Second}

// rss returns the resident memory of the running proxy.
func (g *gatekeeper) rss() (int64, error) { return procstat.RSS(g.PID()) }

// settledRSS reads the process's resident memory once it has stopped falling (the runtime
// giving back what a burst of work left), read every 100 ms, or after within.
func (g *gatekeeper) settledRSS(within time.Duration) (int64, error) {
	last, err := g.rss()
	for end := time.Now().Add(within); err == nil && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
		var now int64
		if now, err = g.rss(); err == nil && now >= last {
			return now, nil
		}
		last = now
	}
	return last, err
}

// freePort returns a loopback TCP port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
