package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/procstat"
)

// report prints a check's result line: "chaos: <check>: <figure>".
func report(check, format string, args ...any) {
	fmt.Printf("chaos: %s: %s\n", check, fmt.Sprintf(format, args...))
}

// notAvailable reports that a check cannot run on this machine, and why, and skips it.
func notAvailable(t *testing.T, check, reason string) {
	t.Helper()
	report(check, "not available here: %s", reason)
	t.Skipf("%s: not available here: %s", check, reason)
}

// waitFor polls cond until it holds or within passes, and fails the test then.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if _, ok := waitUntil(within, cond); !ok {
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
}

// waitUntil polls cond every 20 ms until it holds, at most within, and returns how long
// that took and whether it held.
func waitUntil(within time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			return time.Since(start), false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start), true
}

// sourceNetworks are go-sql-driver network names that dial from a given loopback address,
// so that a test's clients can be told apart by their address.
var sourceNetworks sync.Map // IP string → network name

// fromAddr returns the go-sql-driver network that dials TCP from ip.
func fromAddr(ip string) string {
	name := "tcp-from-" + ip
	if _, loaded := sourceNetworks.LoadOrStore(ip, name); !loaded {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		mysql.RegisterDialContext(name, func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		})
	}
	return name
}

// dsn returns a go-sql-driver DSN for the test account at addr over network ("tcp" or a
// fromAddr network), with extra parameters. No client-side timeout is set: a hang must show
// as one, bounded by the check itself.
func dsn(network, addr, params string) string {
	d := fmt.Sprintf("%s:%s@%s(%s)/%s", env.User, env.Password, network, addr, env.Database)
	if params != "" {
		d += "?" + params
	}
	return d
}

// openDB opens a database handle on addr, closed when the test ends.
func openDB(t *testing.T, network, addr, params string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn(network, addr, params))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// selectOneVia logs in to addr over a go-sql-driver network, runs SELECT 1 and disconnects.
func selectOneVia(network, addr string) error {
	db, err := sql.Open("mysql", dsn(network, addr, ""))
	if err != nil {
		return err
	}
	defer db.Close()
	var one int
	return db.QueryRow("SELECT 1").Scan(&one)
}

// primaryMonitor is a direct connection to the primary, past the proxy.
type primaryMonitor struct{ db *sql.DB }

func openMonitor(t *testing.T) *primaryMonitor {
	t.Helper()
	db := openDB(t, "tcp", env.Primary, "timeout=5s&readTimeout=10s")
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return &primaryMonitor{db: db}
}

// threads returns the primary's Threads_connected, this connection included.
func (m *primaryMonitor) threads() (int, error) {
	var name string
	var n int
	err := m.db.QueryRow("SHOW GLOBAL STATUS LIKE 'Threads_connected'").Scan(&name, &n)
	return n, err
}

// peak reads Threads_connected every interval until stop is called, which returns the
// highest value read.
func (m *primaryMonitor) peak(every time.Duration) (stop func() int) {
	done := make(chan struct{})
	result := make(chan int, 1)
	go func() { // ends when stop is called
		highest := 0
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			if n, err := m.threads(); err == nil && n > highest {
				highest = n
			}
			select {
			case <-done:
				result <- highest
				return
			case <-tick.C:
			}
		}
	}()
	return func() int { close(done); return <-result }
}

// idCounts returns how many rows of table on the primary carry each id: a ledger's
// writes, each acknowledged id to be there once.
func (m *primaryMonitor) idCounts(t *testing.T, table string) map[int64]int {
	t.Helper()
	counts := map[int64]int{}
	rows, err := m.db.Query("SELECT id, COUNT(*) FROM " + table + " GROUP BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		counts[id] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return counts
}

// primaryPID returns the process id of the running primary.
func primaryPID() (int, error) {
	b, err := os.ReadFile(env.PrimaryPIDFile)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// killPrimary sends SIGKILL to the primary and waits until the process is gone.
func killPrimary(t *testing.T) {
	t.Helper()
	pid, err := primaryPID()
	if err != nil {
		t.Fatalf("the primary's pid: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
	waitFor(t, 10*time.Second, "the primary to die", func() bool { return !procstat.Running(pid) })
}

// restartPrimary starts the primary again on its datadir (test-backends.sh up starts what
// is not running) and returns how long that took.
func restartPrimary(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	if _, err := backendsScript("up"); err != nil {
		t.Fatalf("restarting the primary: %v", err)
	}
	return time.Since(start)
}

// durations summarises latencies.
type durations []time.Duration

func (d durations) sorted() durations {
	s := slices.Clone(d)
	slices.Sort(s)
	return s
}

func (d durations) median() time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d.sorted()[len(d)/2]
}

// quantile returns the q-quantile (0 to 1) of d.
func (d durations) quantile(q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := d.sorted()
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func (d durations) max() time.Duration {
	if len(d) == 0 {
		return 0
	}
	return slices.Max(d)
}

// ms formats a duration in milliseconds with one decimal.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + " ms"
}

// secs formats a duration in seconds with two decimals.
func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s" }

// errText shortens an error for a result line.
func errText(err error) string {
	if err == nil {
		return "no error"
	}
	s := err.Error()
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}
