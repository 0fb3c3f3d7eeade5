package chaos

import (
	"compress/gzip"
	"database/sql"
	"errors"
	"fmt"
	"io"
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

	"golang.org/x/sys/unix"

	"github.com/gatekeeperdb/gatekeeper/internal/procstat"
)

// The network of TestNetworkFaults: a namespace holding a MariaDB server, joined to the
// test's namespace by a veth pair. What the proxy sends to the server crosses the pair, and
// there packets are delayed or dropped. The names and the /30 subnet are the test process's
// own (gkc<pid>), so that two runs on one machine do not meet.
var (
	netnsName    = "gkc" + strconv.Itoa(os.Getpid())
	vethHost     = netnsName + "h" // in the test's namespace
	vethNS       = netnsName + "n" // in netnsName
	hostIP, nsIP = subnetOf(os.Getpid())
)

const nsPort = "3306"

// subnetOf returns the two addresses of a /30 in 10.231.0.0/16 picked by pid.
func subnetOf(pid int) (host, ns string) {
	i := pid % (1 << 14)
	prefix := fmt.Sprintf("10.231.%d.", i>>6)
	base := (i & 63) * 4
	return prefix + strconv.Itoa(base+1), prefix + strconv.Itoa(base+2)
}

// removeLeftovers deletes the namespaces, and their veth pairs, of earlier runs whose
// process is gone: a run killed before its cleanup leaves them behind.
func removeLeftovers() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for l := range strings.SplitSeq(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(l), " ")
		pid, err := strconv.Atoi(strings.TrimPrefix(name, "gkc"))
		if !strings.HasPrefix(name, "gkc") || err != nil || procstat.Running(pid) {
			continue
		}
		_ = sh("ip", "link", "del", name+"h")
		_ = sh("ip", "netns", "del", name)
	}
}

// link is the veth pair and what can break it.
type link struct {
	t *testing.T
	// netem says whether tc netem works here; netemMissing why not.
	netem        bool
	netemMissing string
	// nft says whether nftables works in the namespace; nftMissing why not.
	nft        bool
	nftMissing string
}

// sh runs a command and returns its error with what it printed.
func sh(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// inNS runs a command inside the namespace.
func inNS(name string, args ...string) error {
	return sh("ip", append([]string{"netns", "exec", netnsName, name}, args...)...)
}

// newLink creates the namespace and the veth pair, removed when the test ends, and finds out
// which fault tools work. It returns why the network cannot be built, if it cannot.
func newLink(t *testing.T) (*link, string) {
	if os.Geteuid() != 0 {
		return nil, "network namespaces need root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, "the ip command (iproute2) is not installed"
	}
	removeLeftovers()
	if err := sh("ip", "netns", "add", netnsName); err != nil {
		return nil, err.Error()
	}
	t.Cleanup(func() {
		_ = sh("ip", "link", "del", vethHost)
		_ = sh("ip", "netns", "del", netnsName)
	})
	for _, c := range [][]string{
		{"link", "add", vethHost, "type", "veth", "peer", "name", vethNS},
		{"link", "set", vethNS, "netns", netnsName},
		{"addr", "add", hostIP + "/30", "dev", vethHost},
		{"link", "set", vethHost, "up"},
		{"-n", netnsName, "addr", "add", nsIP + "/30", "dev", vethNS},
		{"-n", netnsName, "link", "set", vethNS, "up"},
		{"-n", netnsName, "link", "set", "lo", "up"},
	} {
		if err := sh("ip", c...); err != nil {
			return nil, err.Error()
		}
	}
	l := &link{t: t}
	switch out, err := exec.Command("tc", "qdisc", "add", "dev", vethHost, "root", "netem", "delay", "1ms").CombinedOutput(); {
	case err == nil:
		l.netem = true
		_ = sh("tc", "qdisc", "del", "dev", vethHost, "root")
	default:
		l.netemMissing = fmt.Sprintf("tc qdisc add ... netem fails (%s)", firstLine(out, err))
		if kernelOption("CONFIG_NET_SCH_NETEM") == "n" {
			l.netemMissing = "the kernel is built without sch_netem (CONFIG_NET_SCH_NETEM is not set; " + l.netemMissing + ")"
		}
	}
	if _, err := exec.LookPath("nft"); err != nil {
		l.nftMissing = "the nft command (nftables) is not installed"
	} else if err := inNS("nft", "add table inet gkchaos; "+
		"add chain inet gkchaos in { type filter hook input priority 0; policy accept; }; "+
		"add chain inet gkchaos out { type filter hook output priority 0; policy accept; }"); err != nil {
		l.nftMissing = err.Error()
	} else {
		l.nft = true
	}
	return l, ""
}

// firstLine returns the first line a failed command printed, or its error.
func firstLine(out []byte, err error) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if line == "" {
		return err.Error()
	}
	return line
}

// kernelOption returns "y", "m" or "n" for a kernel build option as /proc/config.gz has it,
// or "" when that file cannot be read.
func kernelOption(name string) string {
	f, err := os.Open("/proc/config.gz")
	if err != nil {
		return ""
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return ""
	}
	b, err := io.ReadAll(z)
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+"="); ok {
			return v
		}
		if line == "# "+name+" is not set" {
			return "n"
		}
	}
	return ""
}

// fault is a way to break the link: netem arguments, applied on both ends of the pair, or an
// nftables statement applied to what enters and leaves the namespace through the pair.
type fault struct {
	name  string
	netem []string
	nft   string // empty: nftables cannot do it
}

var (
	faultDelay     = fault{name: "delay 200ms", netem: []string{"delay", "200ms"}}
	faultLoss      = fault{name: "loss 30%", netem: []string{"loss", "30%"}, nft: "numgen random mod 100 < 30 drop"}
	faultBlackhole = fault{name: "blackhole", netem: []string{"loss", "100%"}, nft: "drop"}
)

// means says how f would be applied here, or why it cannot be.
func (l *link) means(f fault) (string, error) {
	switch {
	case l.netem:
		return "tc netem " + strings.Join(f.netem, " ") + " on both ends of the veth pair", nil
	case f.nft != "" && l.nft:
		return fmt.Sprintf("nftables in the server's namespace (%s, both ways)", f.nft), nil
	case f.nft != "":
		return "", fmt.Errorf("no tc netem (%s) and no nftables (%s)", l.netemMissing, l.nftMissing)
	}
	return "", fmt.Errorf("needs tc netem, and %s", l.netemMissing)
}

// apply breaks the link with f until clear.
func (l *link) apply(f fault) error {
	if l.netem {
		args := append([]string{"qdisc", "replace", "dev", vethHost, "root", "netem"}, f.netem...)
		if err := sh("tc", args...); err != nil {
			return err
		}
		args = append([]string{"qdisc", "replace", "dev", vethNS, "root", "netem"}, f.netem...)
		return inNS("tc", args...)
	}
	if err := inNS("nft", "add rule inet gkchaos in iifname "+vethNS+" "+f.nft); err != nil {
		return err
	}
	return inNS("nft", "add rule inet gkchaos out oifname "+vethNS+" "+f.nft)
}

// clear removes every fault.
func (l *link) clear() error {
	if l.netem {
		_ = sh("tc", "qdisc", "del", "dev", vethHost, "root")
		_ = inNS("tc", "qdisc", "del", "dev", vethNS, "root")
		return nil
	}
	if l.nft {
		return inNS("nft", "flush chain inet gkchaos in; flush chain inet gkchaos out")
	}
	return nil
}

// listenInNS opens a TCP listener on addr inside the namespace: what it accepts crosses the
// veth pair, while the process's other sockets stay in its own namespace. A socket belongs to
// the namespace of the thread that made it, so a goroutine moves its thread into the
// namespace, listens, and ends with the thread still locked, which ends the thread too.
func listenInNS(addr string) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() { // ends once the listener is made
		runtime.LockOSThread() // never unlocked: the thread, moved into the namespace, ends with this goroutine
		f, err := os.Open("/var/run/netns/" + netnsName)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{err: fmt.Errorf("setns %s: %w", netnsName, err)}
			return
		}
		ln, err := net.Listen("tcp", addr)
		done <- result{ln, err}
	}()
	r := <-done
	return r.ln, r.err
}

// nsServer is a MariaDB server inside the namespace, listening on nsIP, with the test
// account; the test reaches it through its Unix socket, which no network fault touches.
type nsServer struct {
	Addr   string
	socket string
	cmd    *exec.Cmd
	exited chan struct{}
}

// startNSServer initialises a datadir, starts mariadbd in the namespace and creates the
// test account; the server is stopped by its PID when the test ends.
func startNSServer(t *testing.T) *nsServer {
	t.Helper()
	mariadbd, err := findTool("mariadbd", "mysqld")
	if err != nil {
		t.Fatal(err)
	}
	installDB, err := findTool("mariadb-install-db", "mysql_install_db")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "gkns-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	asRoot := []string{}
	if os.Geteuid() == 0 {
		asRoot = []string{"--user=root"}
	}
	install := exec.Command(installDB, append([]string{"--no-defaults", "--datadir=" + data,
		"--auth-root-authentication-method=normal", "--skip-test-db"}, asRoot...)...)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", installDB, err, out)
	}
	s := &nsServer{Addr: nsIP + ":" + nsPort, socket: filepath.Join(dir, "ns.sock"), exited: make(chan struct{})}
	args := append([]string{"netns", "exec", netnsName, mariadbd, "--no-defaults", "--datadir=" + data,
		"--socket=" + s.socket, "--pid-file=" + filepath.Join(dir, "ns.pid"), "--log-error=" + filepath.Join(dir, "ns.err"),
		"--port=" + nsPort, "--bind-address=" + nsIP, "--skip-name-resolve", "--performance-schema=OFF",
		"--innodb-buffer-pool-size=32M", "--max-connections=500"}, asRoot...)
	s.cmd = exec.Command("ip", args...) // ip execs mariadbd in the namespace: the PID is the server's
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }() // ends when the server does
	t.Cleanup(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})

	root, err := sql.Open("mysql", "root@unix("+s.socket+")/?timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	deadline := time.Now().Add(60 * time.Second)
	for root.Ping() != nil {
		select {
		case <-s.exited:
			t.Fatalf("mariadbd in the namespace exited at start:\n%s", tail(filepath.Join(dir, "ns.err"), 20))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("mariadbd in the namespace did not start within 60 s:\n%s", tail(filepath.Join(dir, "ns.err"), 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, q := range []string{
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", env.User, env.Password),
		fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO '%s'@'%%'", env.User),
		"CREATE DATABASE " + env.Database,
	} {
		if _, err := root.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return s
}

// findTool returns the path of the first of names installed, in PATH or /usr/sbin.
func findTool(names ...string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
		if p := "/usr/sbin/" + n; isExecutable(p) {
			return p, nil
		}
	}
	return "", errors.New(strings.Join(names, " or ") + " is not installed (apt-get install mariadb-server)")
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode()&0o111 != 0
}

// reachable reports whether the server can be reached through the pair at all, for a clear failure when the
// veth pair is miswired rather than a timeout in every check.
func (s *nsServer) reachable() error {
	db, err := sql.Open("mysql", dsn("tcp", s.Addr, "timeout=3s"))
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Ping()
}
