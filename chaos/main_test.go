package chaos

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The suite's own backends: a primary and two replicas on three free ports from
// firstBackendsPort on, with room for the 2,000 connections of TestIdleSockets on top of
// everything else.
const (
	firstBackendsPort      = 36306
	backendsMaxConnections = "2500"
)

// env is what the suite runs against.
var env struct {
	// Primary is the primary's host:port; PrimaryPIDFile the file holding its process id.
	Primary, PrimaryPIDFile string
	// Replicas are the replicas' host:port, in order.
	Replicas                 []string
	User, Password, Database string
	// Gatekeeper is the binary under test.
	Gatekeeper string
	// backendsDir, backendsPort and script are where scripts/test-backends.sh keeps its
	// servers and the primary's port.
	backendsDir, backendsPort, script string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("GK_CHAOS") != "1" {
		fmt.Println("chaos: the fault-injection suite runs with GK_CHAOS=1 (make chaos); not run")
		return 0
	}
	dir, err := os.MkdirTemp("", "gk-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	raiseFileLimit()
	// Broken connections are what the suite is about; the driver's log of each is noise.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))

	env.Gatekeeper = os.Getenv("GK_CHAOS_GATEKEEPER")
	if env.Gatekeeper == "" {
		env.Gatekeeper = filepath.Join(dir, "gatekeeper")
		build := exec.Command("go", "build", "-o", env.Gatekeeper, "./cmd/gatekeeper")
		build.Dir = repoRoot()
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "chaos: building gatekeeper:", err)
			return 1
		}
	} else if env.Gatekeeper, err = filepath.Abs(env.Gatekeeper); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}

	env.backendsDir = filepath.Join(dir, "backends")
	if env.backendsPort, err = freePorts(firstBackendsPort, 3); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	env.script = filepath.Join(repoRoot(), "scripts", "test-backends.sh")
	out, err := backendsScript("up")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos: cannot start the test backends:", err)
		_, _ = backendsScript("down") // the error above is the one to report
		return 1
	}
	vars := parseEnv(out)
	env.Primary = vars["GK_PRIMARY"]
	env.User, env.Password, env.Database = vars["GK_USER"], vars["GK_PASSWORD"], vars["GK_DATABASE"]
	env.PrimaryPIDFile = filepath.Join(env.backendsDir, "primary.pid")
	env.Replicas = []string{vars["GK_REPLICA1"], vars["GK_REPLICA2"]}

	code := m.Run()
	if _, err := backendsScript("down"); err != nil {
		fmt.Fprintln(os.Stderr, "chaos: stopping the test backends:", err)
	}
	return code
}

// repoRoot returns the repository's top directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// backendsScript runs scripts/test-backends.sh with a command for the suite's backends and
// returns what it prints on stdout. Up starts what is not running, so it also brings a
// killed primary back on its datadir.
func backendsScript(command string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.script, command)
	cmd.Env = append(os.Environ(), "GK_BACKENDS_DIR="+env.backendsDir, "GK_BACKENDS_PORT="+env.backendsPort,
		"GK_BACKENDS_MAX_CONNECTIONS="+backendsMaxConnections)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", env.script, command, err, stderr.String())
	}
	return string(out), nil
}

// freePorts returns the first port from first on, in steps of 10, where n consecutive
// loopback ports are free: other MariaDB servers may run on this machine.
func freePorts(first, n int) (string, error) {
	for base := first; base < first+1000; base += 10 {
		free := true
		for p := base; p < base+n && free; p++ {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				free = false
				continue
			}
			ln.Close()
		}
		if free {
			return strconv.Itoa(base), nil
		}
	}
	return "", fmt.Errorf("no %d free ports from %d to %d", n, first, first+1000)
}

// parseEnv reads the export lines test-backends.sh prints.
func parseEnv(out string) map[string]string {
	vars := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = strings.Trim(v, `"'`)
		}
	}
	return vars
}

// raiseFileLimit lifts the soft limit on open files to the hard one, for the suite and the
// processes it starts (the Go runtime raises its own, but children get the original back).
func raiseFileLimit() {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	lim.Cur = lim.Max
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}

// fileLimit returns the soft limit on open files.
func fileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return lim.Cur
}
