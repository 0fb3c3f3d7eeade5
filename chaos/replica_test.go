package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/procstat"
)

// replica returns what the proxy knows of the replica at addr, or nil.
func (g *gatekeeper) replica(addr string) *admin.BackendInfo {
	b, err := g.backends()
	if err != nil {
		return nil
	}
	for i := range b.Backends {
		if b.Backends[i].Addr == addr && b.Backends[i].Replica != nil {
			return &b.Backends[i]
		}
	}
	return nil
}

// readsBy sums gatekeeper_reads_total by backend, from the proxy's metrics.
func (g *gatekeeper) readsBy() (map[string]float64, error) {
	m, err := g.metrics()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for series, v := range m {
		labels, ok := strings.CutPrefix(series, "gatekeeper_reads_total{")
		i := strings.Index(labels, `backend="`)
		if !ok || i < 0 {
			continue
		}
		addr := labels[i+len(`backend="`):]
		out[addr[:strings.IndexByte(addr, '"')]] += v
	}
	return out, nil
}

func replicaPID(n int) (int, error) {
	b, err := os.ReadFile(filepath.Join(env.backendsDir, fmt.Sprintf("replica%d.pid", n)))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// TestReplicaKilled kills a replica under read load and lets another fall behind.
func TestReplicaKilled(t *testing.T) {
	const check = "replica killed"
	const clients = 64
	primary := openDB(t, "tcp", env.Primary, "")
	defer primary.Close()
	for _, q := range []string{
		"DROP TABLE IF EXISTS chaos_replica",
		"CREATE TABLE chaos_replica (id INT PRIMARY KEY, v INT NOT NULL)",
		"INSERT INTO chaos_replica SELECT seq, 0 FROM seq_1_to_1000",
	} {
		if _, err := primary.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	// The clients read from the replicas at once, and a replica less than routing.max_lag
	// behind takes reads: wait until both have the table, or a busy machine's replication,
	// still between the DROP and the INSERT, answers them that it does not exist.
	for _, r := range env.Replicas {
		replica := openDB(t, "tcp", r, "")
		waitFor(t, 10*time.Second, "the table on replica "+r, func() bool {
			var n int
			return replica.QueryRow("SELECT COUNT(*) FROM chaos_replica").Scan(&n) == nil && n == 1000
		})
	}
	g := startGatekeeper(t, config.ModePooled, map[string]string{
		"backends.replicas":      strings.Join(env.Replicas, ","),
		"monitor.user":           env.User,
		"monitor.password":       env.Password,
		"replicas.poll_interval": "5ms",
		"routing.max_lag":        "1s",
	})
	waitFor(t, 10*time.Second, "both replicas up in the proxy", func() bool {
		for _, r := range env.Replicas {
			if b := g.replica(r); b == nil || !b.Replica.Up {
				return false
			}
		}
		return true
	})

	var (
		stop      atomic.Bool
		wg        sync.WaitGroup
		mu        sync.Mutex
		errs      = map[string]int{}
		slowest   time.Duration
		reads     atomic.Int64
		writeErrs atomic.Int64
	)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db := openDB(t, "tcp", g.Addr, "")
			defer db.Close()
			db.SetMaxOpenConns(1)
			for i := 0; !stop.Load(); i++ {
				lo := (c*37 + i*13) % 900
				start := time.Now()
				var n int
				err := db.QueryRow("SELECT COUNT(*) FROM chaos_replica WHERE id BETWEEN ? AND ?", lo, lo+100).Scan(&n)
				took := time.Since(start)
				mu.Lock()
				slowest = max(slowest, took)
				if err != nil {
					errs[errText(err)]++
				}
				mu.Unlock()
				reads.Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() { // the writer: replicas have something to apply
		defer wg.Done()
		db := openDB(t, "tcp", g.Addr, "")
		defer db.Close()
		for i := 0; !stop.Load(); i++ {
			if _, err := db.Exec("UPDATE chaos_replica SET v = ? WHERE id = ?", i, 1+i%1000); err != nil {
				writeErrs.Add(1)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()

	time.Sleep(2 * time.Second)
	before, err := g.readsBy()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := replicaPID(1)
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
	waitFor(t, 10*time.Second, "the replica to die", func() bool { return !procstat.Running(pid) })
	waitFor(t, 5*time.Second, "the proxy to mark the replica down", func() bool {
		b := g.replica(env.Replicas[0])
		return b != nil && !b.Replica.Up
	})
	markedDown := time.Since(killed)
	time.Sleep(3 * time.Second)
	if _, err := backendsScript("up"); err != nil {
		t.Fatalf("restarting replica 1: %v", err)
	}
	restarted := time.Now()
	waitFor(t, 20*time.Second, "replica 1 taking reads again", func() bool {
		b := g.replica(env.Replicas[0])
		return b != nil && b.Replica.Up && !b.Replica.Shunned
	})
	rejoined := time.Since(restarted)

	// A lagging replica: its applier stopped while the writer goes on.
	direct := openDB(t, "tcp", env.Replicas[1], "")
	defer direct.Close()
	if _, err := direct.Exec("STOP SLAVE SQL_THREAD"); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	waitFor(t, 10*time.Second, "replica 2 shunned", func() bool {
		b := g.replica(env.Replicas[1])
		return b != nil && b.Replica.Shunned
	})
	shunnedAfter := time.Since(stopped)
	time.Sleep(3*time.Second - shunnedAfter)
	if _, err := direct.Exec("START SLAVE SQL_THREAD"); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	waitFor(t, 20*time.Second, "replica 2 taking reads again", func() bool {
		b := g.replica(env.Replicas[1])
		return b != nil && !b.Replica.Shunned
	})
	rejoined2 := time.Since(started)
	time.Sleep(time.Second)
	after, err := g.readsBy()
	if err != nil {
		t.Fatal(err)
	}
	stop.Store(true)
	wg.Wait()

	var kinds []string
	total := 0
	for k, n := range errs {
		kinds = append(kinds, fmt.Sprintf("%d× %s", n, k))
		total += n
	}
	sort.Strings(kinds)
	onReplicas := func(m map[string]float64) float64 { return m[env.Replicas[0]] + m[env.Replicas[1]] }
	share := (onReplicas(after) - onReplicas(before)) / max(1, sumValues(after)-sumValues(before))
	report(check, "%d reads by %d clients, %d errors%s; slowest statement %s; replica 1 marked down %s after kill -9, "+
		"reads again %s after its restart; replica 2 shunned %s after its applier stopped (bound 1 s + poll 5 ms), reads again %s "+
		"after it started; %.0f%% of reads on replicas over the run",
		reads.Load(), clients, total, listOrNone(kinds), ms(slowest), secs(markedDown), secs(rejoined),
		secs(shunnedAfter), secs(rejoined2), 100*share)
	if slowest > 10*time.Second {
		t.Errorf("a statement took %s: a client hung", slowest)
	}
	if total > clients {
		t.Errorf("%d errors: more than the statements in flight on the killed replica (%d clients)", total, clients)
	}
	if writeErrs.Load() > 0 {
		t.Errorf("%d writes failed; only reads ran on the replica", writeErrs.Load())
	}
	if shunnedAfter > time.Second+5*time.Millisecond+time.Second {
		t.Errorf("replica 2 shunned %s after its applier stopped; want within the 1 s bound + poll + 1 s", shunnedAfter)
	}
	if onReplicas(after) <= onReplicas(before) || share < 0.5 {
		t.Errorf("reads on replicas: %.0f before, %.0f after (%.0f%% over the run)", onReplicas(before), onReplicas(after), 100*share)
	}
}

func sumValues(m map[string]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}

func listOrNone(kinds []string) string {
	if len(kinds) == 0 {
		return ""
	}
	return " (" + strings.Join(kinds, "; ") + ")"
}
