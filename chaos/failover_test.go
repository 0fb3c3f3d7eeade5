package chaos

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// The load and the bounds of the failover checks.
const (
	// failoverWriters write through the proxy, every fourth in explicit transactions;
	// failoverReaders read what they wrote, strong consistency.
	failoverWriters, failoverReaders = 16, 32
	// promoteAfter is how long after the kill the test promotes a replica, as an
	// orchestrator would.
	promoteAfter = 2 * time.Second
	// resumeBound: writes go on within it of the promotion.
	resumeBound = time.Second
	// failoverSteady is how long the load runs before the fault and after the recovery.
	failoverSteady = 3 * time.Second
)

// durableCost keeps the write latencies of the variant without durable acks, for the
// variant with them to report what they add, measured in the same run.
var durableCost struct {
	mu  sync.Mutex
	off durations
}

// TestFailover kills the primary under load and promotes a replica, with and without
// failover.durable_acks; runs a planned switchover with pause-writes; and makes two servers
// writable at once. Each variant starts from fresh backends and leaves fresh ones.
func TestFailover(t *testing.T) {
	for _, durable := range []string{config.DurableAcksOff, config.DurableAcksReplica} {
		t.Run("kill -9, durable_acks "+durable, func(t *testing.T) {
			t.Cleanup(func() { resetBackends(t) })
			failoverKilled(t, durable)
		})
	}
	t.Run("switchover", func(t *testing.T) {
		t.Cleanup(func() { resetBackends(t) })
		switchover(t)
	})
	t.Run("split brain", splitBrain)
}

// resetBackends replaces the backends with fresh ones in the standard topology: the primary
// on its port, both replicas replicating from it.
func resetBackends(t *testing.T) {
	t.Helper()
	if _, err := backendsScript("down"); err != nil {
		t.Fatalf("stopping the backends: %v", err)
	}
	if _, err := backendsScript("up"); err != nil {
		t.Fatalf("starting fresh backends: %v", err)
	}
}

// startFailoverProxy starts the proxy in pooled mode over the primary and both replicas,
// reading roles and routing strong reads, and waits until both replicas are up in it.
func startFailoverProxy(t *testing.T, durable string) *gatekeeper {
	t.Helper()
	g := startFollowerProxy(t, env.Primary, map[string]string{
		"failover.durable_acks":   durable,
		"failover.buffer_timeout": "10s",
		"backends.role_interval":  "1s",
		"pools.max_open":          "64",
	})
	waitFollowerUp(t, g)
	return g
}

// failoverTable makes the ledger the writers fill: id is not unique, so that a write
// applied twice shows.
func failoverTable(t *testing.T) {
	t.Helper()
	db := openDB(t, "tcp", env.Primary, "timeout=5s")
	for _, q := range []string{
		"DROP TABLE IF EXISTS chaos_failover",
		"CREATE TABLE chaos_failover (n BIGINT AUTO_INCREMENT PRIMARY KEY, id BIGINT NOT NULL, w INT NOT NULL, seq BIGINT NOT NULL, KEY (w, seq), KEY (id))",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	waitReplicasCaughtUp(t, db)
}

// failoverLoad is the load of the failover checks: writers that keep a ledger of what was
// acknowledged to them, readers that check they never read less than what was
// acknowledged before they asked.
type failoverLoad struct {
	g      *gatekeeper
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// acked is, per writer, the highest seq acknowledged.
	acked [failoverWriters]atomic.Int64

	mu sync.Mutex
	// ids are the ids acknowledged.
	ids []int64
	// writes are the acknowledged writes: when each began and how long it took.
	writes []timedOp
	// failures are the statements that failed, reads and writes.
	failures []failure
	reads    int
	// stale are the reads that saw less than was acknowledged before they asked.
	stale []staleRead
}

// staleRead is a read of writer w's rows that saw seq got where need was acknowledged.
type staleRead struct {
	w         int
	need, got int64
}

type timedOp struct {
	start time.Time
	took  time.Duration
}

type failure struct {
	start, end time.Time
	write      bool
	err        error
}

func startFailoverLoad(t *testing.T, g *gatekeeper) *failoverLoad {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &failoverLoad{g: g, cancel: cancel}
	for w := range failoverWriters {
		db := openDB(t, "tcp", g.Addr, "timeout=5s&readTimeout=30s")
		db.SetMaxOpenConns(1)
		l.wg.Add(1)
		go l.write(ctx, db, w) // ends when ctx does
	}
	for range failoverReaders {
		db := openDB(t, "tcp", g.Addr, "timeout=5s&readTimeout=30s")
		db.SetMaxOpenConns(1)
		l.wg.Add(1)
		go l.read(ctx, db) // ends when ctx does
	}
	return l
}

// stop ends the load and waits for its clients.
func (l *failoverLoad) stop() {
	l.cancel()
	l.wg.Wait()
}

func (l *failoverLoad) write(ctx context.Context, db *sql.DB, w int) {
	defer l.wg.Done()
	for seq := int64(1); ctx.Err() == nil; seq++ {
		id := int64(w)*10_000_000 + seq
		start := time.Now()
		err := insertLedger(ctx, db, w%4 == 0, id, w, seq)
		end := time.Now()
		if ctx.Err() != nil {
			return
		}
		l.mu.Lock()
		if err != nil {
			l.failures = append(l.failures, failure{start: start, end: end, write: true, err: err})
		} else {
			l.ids = append(l.ids, id)
			l.writes = append(l.writes, timedOp{start, end.Sub(start)})
			l.acked[w].Store(seq)
		}
		l.mu.Unlock()
		pause := writePause
		if err != nil {
			pause = errorPause
		}
		time.Sleep(pause)
	}
}

// insertLedger writes one row of the ledger, autocommit or in a transaction.
func insertLedger(ctx context.Context, db *sql.DB, txn bool, id int64, w int, seq int64) error {
	const q = "INSERT INTO chaos_failover (id, w, seq) VALUES (?, ?, ?)"
	if !txn {
		_, err := db.ExecContext(ctx, q, id, w, seq)
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, q, id, w, seq); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (l *failoverLoad) read(ctx context.Context, db *sql.DB) {
	defer l.wg.Done()
	for ctx.Err() == nil {
		w := rand.IntN(failoverWriters)
		need := l.acked[w].Load()
		start := time.Now()
		var got int64
		err := db.QueryRowContext(ctx, "SELECT COALESCE(MAX(seq), 0) FROM chaos_failover WHERE w = ?", w).Scan(&got)
		if ctx.Err() != nil {
			return
		}
		l.mu.Lock()
		if err != nil {
			l.failures = append(l.failures, failure{start: start, end: time.Now(), err: err})
		} else {
			l.reads++
			if got < need {
				l.stale = append(l.stale, staleRead{w, need, got})
			}
		}
		l.mu.Unlock()
		if err != nil {
			time.Sleep(errorPause)
		}
	}
}

// latencies returns the latencies of the writes begun in [from, to).
func (l *failoverLoad) latencies(from, to time.Time) durations {
	l.mu.Lock()
	defer l.mu.Unlock()
	var d durations
	for _, w := range l.writes {
		if !w.start.Before(from) && w.start.Before(to) {
			d = append(d, w.took)
		}
	}
	return d.sorted()
}

// firstAckAfter returns when the first write acknowledged after t ended.
func (l *failoverLoad) firstAckAfter(t time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first time.Time
	for _, w := range l.writes {
		if end := w.start.Add(w.took); end.After(t) && (first.IsZero() || end.Before(first)) {
			first = end
		}
	}
	return first, !first.IsZero()
}

// failuresOutside returns the failures of statements not in flight at the kill, from
// the signal (from) to the moment the process was seen gone (to): begun after it, or ended
// before it. With zero times, every failure.
func (l *failoverLoad) failuresOutside(from, to time.Time) (inFlight int, other []failure) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.failures {
		if !from.IsZero() && !f.start.After(to) && !f.end.Before(from) {
			inFlight++
			continue
		}
		other = append(other, f)
	}
	return inFlight, other
}

func describeFailures(fs []failure) string {
	var b strings.Builder
	for i, f := range fs {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(fs)-i)
			break
		}
		kind := "read"
		if f.write {
			kind = "write"
		}
		fmt.Fprintf(&b, "; %s at %s: %v", kind, f.start.Format("15:04:05.000"), errText(f.err))
	}
	return strings.TrimPrefix(b.String(), "; ")
}

// lostAndDuplicated compares the acknowledged ids with the rows of the server at addr. Of
// the reads that saw less than was acknowledged, those whose write is on that server are
// stale; the others read a write the failover lost (unexplained: stale).
func (l *failoverLoad) lostAndDuplicated(t *testing.T, addr string) (lost, dup, stale, ofLost int) {
	t.Helper()
	counts := (&primaryMonitor{db: serverDB(t, addr)}).idCounts(t, "chaos_failover")
	for _, n := range counts {
		if n > 1 {
			dup++
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range l.ids {
		if counts[id] == 0 {
			lost++
		}
	}
	for _, r := range l.stale {
		if counts[int64(r.w)*10_000_000+r.need] == 0 {
			ofLost++
		} else {
			stale++
		}
	}
	return lost, dup, stale, ofLost
}

// serverDB opens a connection to one backend as the test account (it holds SUPER).
func serverDB(t *testing.T, addr string) *sql.DB {
	t.Helper()
	db := openDB(t, "tcp", addr, "timeout=5s&readTimeout=30s")
	db.SetMaxOpenConns(1)
	return db
}

// ioPos returns the position a replica has received (Gtid_IO_Pos).
func ioPos(t *testing.T, db *sql.DB) replicas.Pos {
	t.Helper()
	st, err := replicas.ReplicaStatus(context.Background(), db)
	if err != nil || st == nil {
		t.Fatalf("SHOW SLAVE STATUS: not a replica (%v)", err)
	}
	p, err := replicas.ParsePos(st["Gtid_IO_Pos"])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// promote makes the replica that received the most the primary, as an orchestrator does:
// it applies what it received, stops replicating and becomes writable; the other replica,
// and the old primary when it is given (a switchover), replicate from it. It returns the
// new primary's address.
func promote(t *testing.T, oldPrimary string) string {
	t.Helper()
	r1, r2 := serverDB(t, env.Replicas[0]), serverDB(t, env.Replicas[1])
	p1, p2 := ioPos(t, r1), ioPos(t, r2)
	newAddr, newDB, otherAddr, otherDB, pos := env.Replicas[0], r1, env.Replicas[1], r2, p1
	if !p1.Covers(p2) {
		newAddr, newDB, otherAddr, otherDB, pos = env.Replicas[1], r2, env.Replicas[0], r1, p2
	}
	var waited sql.NullInt64
	if err := newDB.QueryRow("SELECT MASTER_GTID_WAIT(?, 10)", pos.String()).Scan(&waited); err != nil || waited.Int64 != 0 {
		t.Fatalf("the new primary %s did not apply what it received (%s): %v, %v", newAddr, pos, waited, err)
	}
	for _, q := range []string{"STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = 0"} {
		if _, err := newDB.Exec(q); err != nil {
			t.Fatalf("%s on %s: %v", q, newAddr, err)
		}
	}
	follow := func(db *sql.DB, addr, use string) {
		host, port, _ := strings.Cut(newAddr, ":")
		for _, q := range []string{"STOP SLAVE",
			fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='%s', MASTER_PORT=%s, MASTER_USER='repl', MASTER_PASSWORD='repl-secret', MASTER_USE_GTID=%s", host, port, use),
			"START SLAVE"} {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s on %s: %v", q, addr, err)
			}
		}
	}
	follow(otherDB, otherAddr, "slave_pos")
	if oldPrimary != "" {
		follow(serverDB(t, oldPrimary), oldPrimary, "current_pos")
	}
	return newAddr
}

func failoverKilled(t *testing.T, durable string) {
	check := "failover: kill -9 of the primary, a replica promoted 2 s later, durable_acks " + durable
	failoverTable(t)
	g := startFailoverProxy(t, durable)
	l := startFailoverLoad(t, g)
	loadStart := time.Now()
	time.Sleep(failoverSteady)
	steady := l.latencies(loadStart.Add(time.Second), time.Now())

	killed := time.Now()
	killPrimary(t)
	// The process is gone once its sockets are: a connection to its port is refused.
	if _, ok := waitUntil(5*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", env.Primary, 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err != nil
	}); !ok {
		t.Fatal("the primary's port still takes connections 5 s after the kill")
	}
	dead := time.Now()
	time.Sleep(promoteAfter)
	newPrimary := promote(t, "")
	promoted := time.Now()
	resumed, ok := waitUntil(5*time.Second, func() bool { _, ok := l.firstAckAfter(promoted); return ok })
	if ok {
		first, _ := l.firstAckAfter(promoted)
		resumed = first.Sub(promoted)
	}
	time.Sleep(failoverSteady)
	l.stop()

	inFlight, others := l.failuresOutside(killed, dead)
	lost, dup, stale, ofLost := l.lostAndDuplicated(t, newPrimary)
	l.mu.Lock()
	acked, reads := len(l.ids), l.reads
	l.mu.Unlock()
	line := fmt.Sprintf("%d writes acknowledged, %d strong reads; writes resumed %s after the promotion (bound %s); "+
		"%d statements failed that were in flight at the kill, %d others; %d acknowledged writes lost, %d applied twice "+
		"(checked on the new primary %s); %d stale reads (and %d that missed only a lost write); write latency before the kill p50 %s p99 %s",
		acked, reads, ms(resumed), ms(resumeBound), inFlight, len(others), lost, dup, newPrimary, stale, ofLost,
		ms(steady.median()), ms(steady.quantile(0.99)))
	if durable == config.DurableAcksReplica {
		line += "; " + durableHold(t, g)
	}
	durableCost.mu.Lock()
	if durable == config.DurableAcksOff {
		durableCost.off = steady
	} else if off := durableCost.off; len(off) > 0 {
		line += fmt.Sprintf("; durable_acks added p50 %s, p99 %s to a write (against the run without them)",
			ms(steady.median()-off.median()), ms(steady.quantile(0.99)-off.quantile(0.99)))
	}
	durableCost.mu.Unlock()
	report(check, "%s", line)

	if !ok || resumed > resumeBound {
		t.Errorf("writes resumed %v after the promotion, want within %v", resumed, resumeBound)
	}
	if len(others) > 0 {
		t.Errorf("%d statements failed that were not in flight at the kill: %s", len(others), describeFailures(others))
	}
	if durable == config.DurableAcksReplica && (lost > 0 || dup > 0) {
		t.Errorf("with durable acks, %d acknowledged writes lost and %d applied twice on the new primary", lost, dup)
	}
	if dup > 0 {
		t.Errorf("%d writes applied twice", dup)
	}
	if stale > 0 {
		t.Errorf("%d stale strong reads", stale)
	}
	if reads == 0 || acked == 0 {
		t.Errorf("the load did nothing: %d writes, %d reads", acked, reads)
	}
	// The monitor of Threads_running (the rate policers' signal) follows the new primary.
	if _, ok := waitUntil(5*time.Second, func() bool {
		log, err := os.ReadFile(g.logPath)
		return err == nil && strings.Contains(string(log), "reading Threads_running from the primary again")
	}); !ok {
		t.Errorf("Threads_running not read from the new primary within 5 s of the end of the load")
	}
}

// adminPost posts to the proxy's admin API and returns the status and body.
func (g *gatekeeper) adminPost(path string) (int, string, error) {
	resp, err := http.Post("http://"+g.AdminAddr+path, "application/json", nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String(), nil
}

func switchover(t *testing.T) {
	check := "failover: planned switchover with pause-writes"
	failoverTable(t)
	g := startFailoverProxy(t, config.DurableAcksOff)
	l := startFailoverLoad(t, g)
	time.Sleep(failoverSteady)

	paused := time.Now()
	code, body, err := g.adminPost("/api/v1/backends/pause-writes?timeout=10s")
	if err != nil || code != http.StatusOK {
		t.Fatalf("pause-writes: %d %s %v", code, body, err)
	}
	drained := time.Since(paused)
	old := serverDB(t, env.Primary)
	if _, err := old.Exec("SET GLOBAL read_only = 1"); err != nil {
		t.Fatal(err)
	}
	newPrimary := promote(t, env.Primary)
	if code, body, err := g.adminPost("/api/v1/backends/resume-writes"); err != nil || code != http.StatusOK {
		t.Fatalf("resume-writes: %d %s %v", code, body, err)
	}
	resumedAt := time.Now()
	first, ok := time.Time{}, false
	waitUntil(5*time.Second, func() bool { first, ok = l.firstAckAfter(resumedAt); return ok })
	time.Sleep(failoverSteady)
	l.stop()

	_, failures := l.failuresOutside(time.Time{}, time.Time{})
	lost, dup, stale, ofLost := l.lostAndDuplicated(t, newPrimary)
	stale += ofLost // a switchover loses nothing: any read short of a write is stale
	longest := l.latencies(paused.Add(-time.Second), resumedAt).max()
	l.mu.Lock()
	acked, reads := len(l.ids), l.reads
	l.mu.Unlock()
	report(check, "%d writes acknowledged, %d strong reads; pause-writes answered in %s; writes paused %s in all "+
		"(pause to resume), the longest write took %s; first write after the resume %s later; %d client errors; "+
		"%d acknowledged writes lost, %d applied twice (on the new primary %s); %d stale reads",
		acked, reads, ms(drained), ms(resumedAt.Sub(paused)), ms(longest), ms(first.Sub(resumedAt)), len(failures),
		lost, dup, newPrimary, stale)
	if len(failures) > 0 {
		t.Errorf("%d client errors in a switchover: %s", len(failures), describeFailures(failures))
	}
	if lost > 0 || dup > 0 {
		t.Errorf("%d acknowledged writes lost and %d applied twice", lost, dup)
	}
	if stale > 0 {
		t.Errorf("%d stale strong reads", stale)
	}
	if !ok {
		t.Errorf("no write acknowledged within 5 s of the resume")
	}
}

func splitBrain(t *testing.T) {
	check := "failover: split brain (a replica made writable beside the primary)"
	failoverTable(t)
	g := startFailoverProxy(t, config.DurableAcksOff)
	proxied := openDB(t, "tcp", g.Addr, "timeout=5s&readTimeout=30s")
	r1 := serverDB(t, env.Replicas[0])
	for _, q := range []string{"STOP SLAVE", "SET GLOBAL read_only = 0"} {
		if _, err := r1.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		for _, q := range []string{"SET GLOBAL read_only = 1", "START SLAVE"} {
			if _, err := r1.Exec(q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	}
	t.Cleanup(restore)
	var splitErr error
	seen, ok := waitUntil(5*time.Second, func() bool {
		_, splitErr = proxied.Exec("INSERT INTO chaos_failover (id, w, seq) VALUES (-1, -1, -1)")
		return splitErr != nil && strings.Contains(splitErr.Error(), "split brain")
	})
	// Every write through the proxy from now on fails, and reaches neither server.
	var refused int
	for range 20 {
		if _, err := proxied.Exec("INSERT INTO chaos_failover (id, w, seq) VALUES (-2, -2, -2)"); err != nil {
			refused++
		}
	}
	countOn := func(addr string) int {
		var n int
		if err := serverDB(t, addr).QueryRow("SELECT COUNT(*) FROM chaos_failover WHERE id = -2").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	onPrimary, onReplica := countOn(env.Primary), countOn(env.Replicas[0])
	restore()
	back, backOK := waitUntil(5*time.Second, func() bool {
		_, err := proxied.Exec("INSERT INTO chaos_failover (id, w, seq) VALUES (-3, -3, -3)")
		return err == nil
	})
	report(check, "writes refused %s after the second server became writable, with: %q; %d of 20 writes refused, "+
		"%d reached the primary, %d the other server; writes went on %s after it was read-only again",
		ms(seen), errText(splitErr), refused, onPrimary, onReplica, ms(back))
	if !ok {
		t.Errorf("no split-brain error within 5 s: last %v", splitErr)
	}
	if refused != 20 || onPrimary+onReplica > 0 {
		t.Errorf("split brain: %d of 20 writes refused, %d reached the primary and %d the other server", refused, onPrimary, onReplica)
	}
	if !backOK {
		t.Errorf("writes did not go on within 5 s of the end of the split brain")
	}
	if splitErr != nil && (!strings.Contains(splitErr.Error(), env.Replicas[0]) || !strings.Contains(splitErr.Error(), env.Primary)) {
		t.Errorf("the split-brain error does not name both servers: %v", splitErr)
	}
}

// durableHold says how long the proxy held the OKs of writes for a replica, from its
// histogram (the upper bound of the bucket each quantile falls in), and how the holds
// ended.
func durableHold(t *testing.T, g *gatekeeper) string {
	t.Helper()
	m, err := g.metrics()
	if err != nil {
		t.Fatalf("the proxy's metrics: %v", err)
	}
	type bucket struct {
		le float64
		n  float64
	}
	var buckets []bucket
	for series, n := range m {
		le, ok := strings.CutPrefix(series, `gatekeeper_durable_ack_wait_seconds_bucket{le="`)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(le, `"}`), 64)
		if err == nil {
			buckets = append(buckets, bucket{v, n})
		}
	}
	slices.SortFunc(buckets, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
	quantile := func(q float64) string {
		if len(buckets) == 0 {
			return "?"
		}
		total := buckets[len(buckets)-1].n
		for _, b := range buckets {
			if b.n >= q*total {
				return fmt.Sprintf("%s ms", strconv.FormatFloat(b.le*1000, 'g', 3, 64))
			}
		}
		return "?"
	}
	return fmt.Sprintf("OKs held for a replica: p50 at most %s, p99 at most %s (gatekeeper_durable_ack_wait_seconds); "+
		"holds ended: %.0f applied on a replica, %.0f with no replica to wait for, %.0f timed out, %.0f given up by the session, "+
		"%.0f not acknowledged (the primary lost first)",
		quantile(0.5), quantile(0.99), m[`gatekeeper_durable_acks_total{outcome="replica"}`],
		m[`gatekeeper_durable_acks_total{outcome="no_replica"}`], m[`gatekeeper_durable_acks_total{outcome="timeout"}`],
		m[`gatekeeper_durable_acks_total{outcome="cancelled"}`], m[`gatekeeper_durable_acks_total{outcome="primary_lost"}`])
}
