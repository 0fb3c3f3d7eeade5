package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// The load of the binlog follower checks, and their bounds.
const (
	// Writers: each owns a row. Those straight to the primary write what only the follower
	// can learn of; those through the proxy what the proxy acknowledges itself.
	directWriters, proxyWriters = 3, 1
	// strongReaders read the rows through the proxy, strong consistency.
	strongReaders = 16
	// writePause paces each writer; errorPause a client after an error, so that one whose
	// backend is gone does not spin.
	writePause = 20 * time.Millisecond
	errorPause = 10 * time.Millisecond
	// hangBound: a statement through the proxy not answered within it is a hang.
	hangBound = 10 * time.Second
	// statementLimit ends a statement that hung, so that the check ends; far above
	// hangBound, it never fires in a passing run.
	statementLimit = 30 * time.Second
	// steadyRun is how long the load runs before the fault, and once strong reads are on
	// the replicas again after it.
	steadyRun = 2 * time.Second

	// The follower's timers (internal/binlog), from which the bounds on its return follow:
	// its longest pause between attempts to connect (they double from 100 ms), its pause
	// after a refusal for want of a grant, the read timeout that notices a primary gone
	// silent (three of its 1 s heartbeats), and go-mysql's bound on one attempt to connect.
	// A follower whose stream failed says so (gatekeeper_binlog_follower_up 0) at once; the
	// library's close of its old connection, which dials the primary to KILL it and across
	// a cut waits out the connect timeout, goes on beside it.
	followerMaxRetry       = 5 * time.Second
	followerDeniedRetry    = 10 * time.Second
	followerReadTimeout    = 3 * time.Second
	followerConnectTimeout = 10 * time.Second
	// followerMargin is the margin on each of those bounds: a login, the log's first event,
	// a scrape of the metrics.
	followerMargin = 2 * time.Second
	// replicasBackBound: once the follower is back, a strong read reaches a replica within
	// it (the replicas catch up with what was written meanwhile, and a read waits
	// routing.causal_wait for them).
	replicasBackBound = 5 * time.Second

	// cutDeadAfter is backends.dead_after under the network cut: the proxy gives up a
	// connection to the primary that answers nothing within it, well inside hangBound.
	cutDeadAfter = 3 * time.Second
	// cutHold is how long the cut lasts once the follower has said it stopped, so that its
	// attempts to connect again meet the cut too.
	cutHold = 2 * time.Second
)

// TestBinlogFollowerPrimaryRestart kills the primary under a strong read load and starts it
// again on its datadir: the follower follows again from its position, by itself.
func TestBinlogFollowerPrimaryRestart(t *testing.T) {
	const check = "binlog follower, kill -9 and restart of the primary"
	ensurePrimary(t)
	mon := openMonitor(t)
	table := followerTable(t, mon, "chaos_follower_restart")
	g := startFollowerProxy(t, env.Primary, nil)
	waitFollowerUp(t, g)
	load := startStrongLoad(t, g, table, directWriters, proxyWriters, beforeFault)
	start := mustView(t, g)
	time.Sleep(steadyRun)

	before := mustView(t, g)
	load.enter(duringFault)
	killPrimary(t)
	killed := time.Now()
	lost, lostOK := waitUntil(followerMargin, func() bool { v := g.view(); return v.known && !v.up })
	back := restartPrimary(t)
	bound := followerMaxRetry + followerMargin
	upAfter, upOK := waitUntil(bound, func() bool {
		v := g.view()
		return v.up && v.reconnects > before.reconnects
	})
	rec := load.recovered(t, g, start, before)
	missing, merr := load.missing(mon.db)

	report(check, "%s; gatekeeper_binlog_follower_up 0 %s after kill -9, the primary back in %s, the follower %s "+
		"(gatekeeper_binlog_reconnects_total +%.0f); %s; %s",
		load.text(), lostText(lost, lostOK, killed), secs(back), backText(upAfter, upOK, bound, "its return"),
		rec.end.reconnects-before.reconnects, rec.text(), missingText(missing, merr))

	load.assert(t)
	if !lostOK {
		t.Errorf("gatekeeper_binlog_follower_up still 1 %v after the primary died", followerMargin)
	}
	if !upOK {
		t.Errorf("the follower not up again, with gatekeeper_binlog_reconnects_total raised, within %v of the primary's return "+
			"(its longest backoff, %v, and %v)", bound, followerMaxRetry, followerMargin)
	}
	rec.assert(t)
}

// TestBinlogFollowerNetworkCut blackholes the link between the proxy and the primary under a
// strong read load, while writers straight to the primary go on, then restores it.
func TestBinlogFollowerNetworkCut(t *testing.T) {
	const check = "binlog follower, network cut to the primary"
	lk, why := newLink(t)
	if why != "" {
		notAvailable(t, check, "cannot build a network namespace: "+why)
	}
	how, err := lk.means(faultBlackhole)
	if err != nil {
		notAvailable(t, check, err.Error())
	}
	// The proxy reaches the primary through a relay listening in the namespace: its
	// connections to the primary, and only they, cross the veth pair.
	ln, err := listenInNS(nsIP + ":" + nsPort)
	if err != nil {
		t.Fatalf("listening in the namespace: %v", err)
	}
	r := relayFrom(t, ln, env.Primary)
	t.Cleanup(func() {
		if err := lk.clear(); err != nil {
			t.Errorf("removing the fault: %v", err)
		}
	})
	mon := openMonitor(t)
	table := followerTable(t, mon, "chaos_follower_cut")
	g := startFollowerProxy(t, r.Addr(), map[string]string{"backends.dead_after": cutDeadAfter.String()})
	waitFollowerUp(t, g)
	load := startStrongLoad(t, g, table, directWriters, proxyWriters, beforeFault)
	start := mustView(t, g)
	time.Sleep(steadyRun)

	before := mustView(t, g)
	load.enter(duringFault)
	if err := lk.apply(faultBlackhole); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	noticeBound := followerReadTimeout + followerMargin
	noticed, noticedOK := waitUntil(noticeBound, func() bool { v := g.view(); return v.known && !v.up })
	time.Sleep(cutHold)
	if err := lk.clear(); err != nil {
		t.Fatal(err)
	}
	restored := time.Now()
	bound := followerConnectTimeout + followerMaxRetry + followerMargin
	upAfter, upOK := waitUntil(bound, func() bool {
		v := g.view()
		return v.up && v.reconnects > before.reconnects
	})
	rec := load.recovered(t, g, start, before)

	report(check, "%s between proxy and relay to the primary for %s; %s; gatekeeper_binlog_follower_up 0 %s after the cut, "+
		"and %s (gatekeeper_binlog_reconnects_total +%.0f); %s",
		how, secs(restored.Sub(cut)), load.text(), lostText(noticed, noticedOK, cut), backText(upAfter, upOK, bound, "the restore"),
		rec.end.reconnects-before.reconnects, rec.text())

	load.assert(t)
	if !noticedOK {
		t.Errorf("gatekeeper_binlog_follower_up still 1 %v after the cut: the follower did not notice it within its read timeout (%v)",
			noticeBound, followerReadTimeout)
	}
	if !upOK {
		t.Errorf("the follower not up again, with gatekeeper_binlog_reconnects_total raised, within %v of the restore "+
			"(an attempt begun during the cut ends within %v, the next within %v, and %v)",
			bound, followerConnectTimeout, followerMaxRetry, followerMargin)
	}
	rec.assert(t)
}

// TestBinlogFollowerPurgedPosition disconnects the follower, purges the logs it has not read
// while writers straight to the primary go on, and lets it connect again: the primary has
// lost its position (error 1236), and it starts over from the primary's present one.
func TestBinlogFollowerPurgedPosition(t *testing.T) {
	const check = "binlog follower, its position purged from the primary's log"
	mon := openMonitor(t)
	table := followerTable(t, mon, "chaos_follower_purge")
	r := startRelay(t, env.Primary)
	g := startFollowerProxy(t, r.Addr(), nil)
	waitFollowerUp(t, g)
	load := startStrongLoad(t, g, table, directWriters, proxyWriters, beforeFault)
	start := mustView(t, g)
	time.Sleep(steadyRun)

	before := mustView(t, g)
	load.enter(duringFault)
	r.cutAll()
	cut := time.Now()
	noticed, noticedOK := waitUntil(followerMargin, func() bool { v := g.view(); return v.known && !v.up })
	// A write past everything the follower can have read: the primary's position once the
	// follower stopped, moved on by the writers straight to it.
	atCut := binlogPos(t, mon.db)
	waitFor(t, 5*time.Second, "a write on the primary after the cut", func() bool { return binlogPos(t, mon.db) != atCut })
	if _, err := mon.db.Exec("FLUSH BINARY LOGS"); err != nil {
		t.Fatal(err)
	}
	logs := binaryLogs(t, mon.db)
	newest := logs[len(logs)-1]
	// The replicas stream the log: once they have all of it before the new file, purging
	// it cannot strand them; a file a replica's dump thread still reads is not purged, and
	// PURGE is tried again until it is.
	waitReplicasCaughtUp(t, mon.db)
	waitFor(t, 10*time.Second, "the logs before "+newest+" purged", func() bool {
		_, err := mon.db.Exec("PURGE BINARY LOGS TO '" + newest + "'")
		return err == nil && binaryLogs(t, mon.db)[0] == newest
	})
	r.restore()
	restored := time.Now()
	bound := 2*followerMaxRetry + followerMargin
	upAfter, upOK := waitUntil(bound, func() bool {
		v := g.view()
		return v.up && v.resyncs > before.resyncs
	})
	rec := load.recovered(t, g, start, before)
	purgedLine := countLines(g.logPath, "binlog follower", "purged")

	report(check, "a relay between proxy and primary reset every connection for %s, while %d binary logs the follower had not "+
		"finished were purged; %s; gatekeeper_binlog_follower_up 0 %s after the cut, and %s "+
		"(gatekeeper_binlog_resyncs_total +%.0f, reconnects +%.0f, %d log lines on the purge); %s",
		secs(restored.Sub(cut)), len(logs)-1, load.text(), lostText(noticed, noticedOK, cut), backText(upAfter, upOK, bound, "the restore"),
		rec.end.resyncs-before.resyncs, rec.end.reconnects-before.reconnects, purgedLine, rec.text())

	load.assert(t)
	if !noticedOK {
		t.Errorf("gatekeeper_binlog_follower_up still 1 %v after its connection was reset", followerMargin)
	}
	if !upOK {
		t.Errorf("the follower not up again, with gatekeeper_binlog_resyncs_total raised, within %v of the restore "+
			"(the backoff under way, at most %v, the refusal of the purged position, a second backoff, and %v)",
			bound, followerMaxRetry, followerMargin)
	}
	rec.assert(t)
}

// TestBinlogFollowerMissingGrant starts the proxy with a monitor.user the primary refuses
// its binary log, under a strong read load whose writes all pass through the proxy, then
// grants REPLICATION SLAVE: the follower comes up at its next try.
func TestBinlogFollowerMissingGrant(t *testing.T) {
	const check = "binlog follower, monitor.user without REPLICATION SLAVE"
	const user, password = "gk_chaos_nobinlog", "nobinlog"
	mon := openMonitor(t)
	for _, q := range []string{
		"DROP USER IF EXISTS '" + user + "'@'%'",
		"CREATE USER '" + user + "'@'%' IDENTIFIED BY '" + password + "'",
		// What the monitors need to read positions; not REPLICATION SLAVE.
		"GRANT SELECT, PROCESS, BINLOG MONITOR, SLAVE MONITOR ON *.* TO '" + user + "'@'%'",
	} {
		if _, err := mon.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { _, _ = mon.db.Exec("DROP USER IF EXISTS '" + user + "'@'%'") })
	table := followerTable(t, mon, "chaos_follower_grant") // and the account on the replicas
	g := startFollowerProxy(t, env.Primary, map[string]string{"monitor.user": user, "monitor.password": password})
	waitFor(t, 5*time.Second, "the follower refused", func() bool { return g.view().denied >= 1 })
	saysSo := countLines(g.logPath, "binlog follower", "GRANT REPLICATION SLAVE")
	load := startStrongLoad(t, g, table, 0, directWriters+proxyWriters, "while refused")
	start := mustView(t, g)
	time.Sleep(steadyRun)

	before := mustView(t, g)
	load.enter("from the grant to the follower's return")
	if _, err := mon.db.Exec("GRANT REPLICATION SLAVE ON *.* TO '" + user + "'@'%'"); err != nil {
		t.Fatal(err)
	}
	granted := time.Now()
	bound := followerDeniedRetry + followerMargin
	upAfter, upOK := waitUntil(bound, func() bool { return g.view().up })
	rec := load.recovered(t, g, start, before)
	accepted := countLines(g.logPath, "binlog follower", "accepts it now")

	report(check, "refused at start (gatekeeper_binlog_denied_total %.0f; %d error lines naming the grant); %s; the follower %s, "+
		"granted %s after the load began (%d log lines on its return); %s",
		before.denied, saysSo, load.text(), backText(upAfter, upOK, bound, "the grant"), secs(granted.Sub(load.began)),
		accepted, rec.text())

	load.assert(t)
	if before.up {
		t.Errorf("the follower was up before REPLICATION SLAVE was granted")
	}
	if saysSo == 0 {
		t.Errorf("the proxy's log has no error line naming the grant (GRANT REPLICATION SLAVE)")
	}
	if n := load.errors(); n > 0 {
		t.Errorf("%d statements failed: a refused follower must not stop the proxy serving (%s)", n, load.errorsText())
	}
	if !upOK {
		t.Errorf("the follower not up within %v of the grant (it tries again every %v after a refusal, and %v)",
			bound, followerDeniedRetry, followerMargin)
	}
	rec.assert(t)
}

// followerTable creates on the primary a table of one row per writer, (id, v) with v 0,
// and waits until both replicas have it.
func followerTable(t *testing.T, mon *primaryMonitor, table string) string {
	t.Helper()
	for _, q := range []string{
		"DROP TABLE IF EXISTS " + table,
		"CREATE TABLE " + table + " (id INT PRIMARY KEY, v BIGINT NOT NULL)",
		fmt.Sprintf("INSERT INTO %s SELECT seq, 0 FROM seq_1_to_%d", table, directWriters+proxyWriters),
	} {
		if _, err := mon.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	waitReplicasCaughtUp(t, mon.db)
	return table
}

// binlogPos returns the primary's @@gtid_binlog_pos.
func binlogPos(t *testing.T, primary *sql.DB) string {
	t.Helper()
	var pos string
	if err := primary.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		t.Fatalf("the primary's position: %v", err)
	}
	return pos
}

// waitReplicasCaughtUp waits until both replicas have applied everything the primary had
// when it was called (MASTER_GTID_WAIT), at most 10 s.
func waitReplicasCaughtUp(t *testing.T, primary *sql.DB) {
	t.Helper()
	pos := binlogPos(t, primary)
	for _, r := range env.Replicas {
		db := openDB(t, "tcp", r, "")
		var got int
		if err := db.QueryRow("SELECT MASTER_GTID_WAIT(?, 10)", pos).Scan(&got); err != nil || got != 0 {
			t.Fatalf("replica %s did not reach the primary's position %s within 10 s (%d, %v)", r, pos, got, err)
		}
	}
}

// binaryLogs returns the names of the primary's binary logs, oldest first.
func binaryLogs(t *testing.T, primary *sql.DB) []string {
	t.Helper()
	rows, err := primary.Query("SHOW BINARY LOGS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		vals := make([]any, len(cols))
		var name string
		vals[0] = &name
		for i := 1; i < len(vals); i++ {
			vals[i] = new(sql.RawBytes)
		}
		if err := rows.Scan(vals...); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if err := rows.Err(); err != nil || len(names) == 0 {
		t.Fatalf("SHOW BINARY LOGS: %d logs, %v", len(names), err)
	}
	return names
}

// startFollowerProxy starts the proxy in pooled mode in front of primary (the suite's, or a
// relay to it), routing reads to both replicas under strong consistency with the rule that
// counts every writer (routing.strong_rule per_table), with settings on top, and waits
// until it has both replicas up.
func startFollowerProxy(t *testing.T, primary string, settings map[string]string) *gatekeeper {
	t.Helper()
	s := map[string]string{
		"backends.primary":       primary,
		"backends.replicas":      strings.Join(env.Replicas, ","),
		"monitor.user":           env.User,
		"monitor.password":       env.Password,
		"replicas.poll_interval": "5ms",
		"routing.consistency":    "strong",
		"routing.strong_rule":    "per_table",
	}
	maps.Copy(s, settings)
	g := startGatekeeper(t, config.ModePooled, s)
	waitFor(t, 10*time.Second, "both replicas up in the proxy", func() bool {
		for _, r := range env.Replicas {
			if b := g.replica(r); b == nil || !b.Replica.Up {
				return false
			}
		}
		return true
	})
	return g
}

// waitFollowerUp waits until the proxy's follower streams the primary's log.
func waitFollowerUp(t *testing.T, g *gatekeeper) {
	t.Helper()
	waitFor(t, 10*time.Second, "the binlog follower up", func() bool { return g.view().up })
}

// followerView is what the proxy's metrics say of its binlog follower and of where reads
// went.
type followerView struct {
	// known: the metrics could be read; the rest is zero when not.
	known                                  bool
	up                                     bool
	reconnects, resyncs, denied, unvouched float64
	// reads counts the reads routed (gatekeeper_reads_total, but for writes), onReplicas
	// those that went to a replica.
	reads, onReplicas float64
}

// view reads the follower's view from the proxy's metrics; known is false when they cannot
// be read.
func (g *gatekeeper) view() followerView {
	m, err := g.metrics()
	if err != nil {
		return followerView{}
	}
	v := followerView{
		known:      true,
		up:         m["gatekeeper_binlog_follower_up"] == 1,
		reconnects: m["gatekeeper_binlog_reconnects_total"],
		resyncs:    m["gatekeeper_binlog_resyncs_total"],
		denied:     m["gatekeeper_binlog_denied_total"],
		unvouched:  m["gatekeeper_reads_unvouched_total"],
	}
	for series, n := range m {
		labels, ok := strings.CutPrefix(series, "gatekeeper_reads_total{")
		if !ok || strings.Contains(labels, `reason="write"`) {
			continue
		}
		v.reads += n
		for _, r := range env.Replicas {
			if strings.Contains(labels, `backend="`+r+`"`) {
				v.onReplicas += n
			}
		}
	}
	return v
}

// mustView is view, failing the test when the metrics cannot be read.
func mustView(t *testing.T, g *gatekeeper) followerView {
	t.Helper()
	v := g.view()
	if !v.known {
		_, err := g.metrics()
		t.Fatalf("the proxy's metrics: %v", err)
	}
	return v
}

// share is the part of the reads between a and b that went to a replica.
func share(a, b followerView) float64 {
	return (b.onReplicas - a.onReplicas) / max(1, b.reads-a.reads)
}

// recovery is what followed the follower's return: when strong reads reached a replica
// again, and the metrics at the end of the check.
type recovery struct {
	// phase names the load's phase before the fault.
	phase string
	// start, before, at and end are the metrics as the load started, as the fault began,
	// at the follower's return and at the end.
	start, before, at, end followerView
	replicas               time.Duration
	replicaOK              bool
}

// recovered waits for a strong read on a replica once the follower is back (or its wait
// is over), lets the load run steadyRun more, stops it, and reads the metrics; start and
// before are the metrics as the load started and as the fault began.
func (l *strongLoad) recovered(t *testing.T, g *gatekeeper, start, before followerView) recovery {
	t.Helper()
	l.enter("after its return")
	rec := recovery{phase: l.phases[0], start: start, before: before, at: mustView(t, g)}
	rec.replicas, rec.replicaOK = waitUntil(replicasBackBound, func() bool { return g.view().onReplicas > rec.at.onReplicas })
	time.Sleep(steadyRun)
	l.stop()
	rec.end = mustView(t, g)
	return rec
}

func (r recovery) text() string {
	again := "strong reads on a replica again " + secs(r.replicas) + " after the follower's return"
	if !r.replicaOK {
		again = fmt.Sprintf("NO strong read on a replica within %v of the follower's return", replicasBackBound)
	}
	return fmt.Sprintf("%.0f strong reads unvouched (sent to the primary) over the run; %s; of the reads the proxy sent to a backend, "+
		"%.0f%% went to replicas %s, %.0f%% after the return",
		r.end.unvouched-r.start.unvouched, again, 100*share(r.start, r.before), r.phase, 100*share(r.at, r.end))
}

func (r recovery) assert(t *testing.T) {
	t.Helper()
	if r.before.onReplicas <= r.start.onReplicas {
		t.Errorf("no strong read went to a replica before the fault: the check proves nothing of the follower")
	}
	if !r.replicaOK {
		t.Errorf("no strong read went to a replica within %v of the follower's return", replicasBackBound)
	}
}

// lostText says when the follower was seen down, counted from since.
func lostText(took time.Duration, ok bool, since time.Time) string {
	if !ok {
		return "NOT reached (still 1 " + secs(time.Since(since)) + ")"
	}
	return secs(took)
}

// backText says when the follower was seen up again after what.
func backText(took time.Duration, ok bool, bound time.Duration, what string) string {
	if !ok {
		return fmt.Sprintf("NOT up again within %v of %s", bound, what)
	}
	return fmt.Sprintf("up again %s after %s (bound %v)", secs(took), what, bound)
}

// missingText reads strongLoad.missing's result.
func missingText(n int, err error) string {
	if err != nil {
		return "acknowledged writes on the primary at the end: unknown (" + errText(err) + ")"
	}
	return fmt.Sprintf("%d acknowledged writes missing from the primary at the end", n)
}

// The phases of a check, which its errors are counted by: before its fault, and from the
// fault to the follower's return.
const (
	beforeFault = "before the fault"
	duringFault = "from the fault to the follower's return"
)

// strongLoad is the load of the follower checks. Each writer owns a row and raises its
// version by one a write, straight to the primary or through the proxy, and the highest
// version acknowledged for each row is kept. Readers read the rows through the proxy under
// strong consistency, and a read is held to the version acknowledged before it began, as
// the stale-read checker (bench/cmd/staleread) holds its reads: a value below it is stale.
type strongLoad struct {
	table  string
	began  time.Time
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// acked is, by row (id - 1), the highest version whose write was acknowledged.
	acked         []atomic.Int64
	reads, writes atomic.Int64
	direct, viaGK int
	stopOnce      sync.Once
	mu            sync.Mutex
	phase         string                    // what the check does now, errors are counted under
	errs          map[string]map[string]int // by phase, then by who and errKey
	phases        []string                  // in the order they began
	stale         int
	staleSeen     []string // the first few
	slowest       time.Duration
	slowestWhat   string
	hangs         int
	proxyStmts    int64
}

// startStrongLoad starts direct writers straight to the primary, proxied writers through
// the proxy and strongReaders readers, in the check's phase named; it runs until stop, or
// the end of the test.
func startStrongLoad(t *testing.T, g *gatekeeper, table string, direct, proxied int, phase string) *strongLoad {
	t.Helper()
	l := &strongLoad{table: table, began: time.Now(), acked: make([]atomic.Int64, direct+proxied),
		direct: direct, viaGK: proxied, errs: map[string]map[string]int{}}
	l.enter(phase)
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	for w := range direct + proxied {
		// Straight to the primary a dial fails fast while it is down; through the proxy
		// nothing is bounded on the client's side: a hang must show as one.
		addr, params := g.Addr, ""
		if w < direct {
			addr, params = env.Primary, "timeout=2s"
		}
		db := openDB(t, "tcp", addr, params)
		db.SetMaxOpenConns(1)
		l.wg.Go(func() { l.write(ctx, db, w, w >= direct) }) // ends with ctx
	}
	for r := range strongReaders {
		db := openDB(t, "tcp", g.Addr, "")
		db.SetMaxOpenConns(1)
		l.wg.Go(func() { l.read(ctx, db, r) }) // ends with ctx
	}
	t.Cleanup(l.stop)
	return l
}

// stop ends the load and waits for its clients.
func (l *strongLoad) stop() {
	l.stopOnce.Do(func() {
		l.cancel()
		l.wg.Wait()
	})
}

// enter starts a phase of the check: the errors from now on are counted under it.
func (l *strongLoad) enter(phase string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.phase = phase
	l.phases = append(l.phases, phase)
}

func (l *strongLoad) write(ctx context.Context, db *sql.DB, row int, viaProxy bool) {
	who := "writer straight to the primary"
	if viaProxy {
		who = "writer through the proxy"
	}
	for v := int64(1); ctx.Err() == nil; v++ {
		stmt := fmt.Sprintf("UPDATE %s SET v = %d WHERE id = %d", l.table, v, row+1)
		err := l.timed(viaProxy, "UPDATE", func(sctx context.Context) error {
			_, err := db.ExecContext(sctx, stmt)
			return err
		})
		if err != nil {
			l.failed(who, err)
		} else {
			l.acked[row].Store(v)
			l.writes.Add(1)
		}
		time.Sleep(writePause)
	}
}

func (l *strongLoad) read(ctx context.Context, db *sql.DB, reader int) {
	for i := 0; ctx.Err() == nil; i++ {
		row := (reader + i) % len(l.acked)
		floor := l.acked[row].Load()
		var got int64
		err := l.timed(true, "SELECT", func(sctx context.Context) error {
			return db.QueryRowContext(sctx, fmt.Sprintf("SELECT v FROM %s WHERE id = %d", l.table, row+1)).Scan(&got)
		})
		if err != nil {
			l.failed("reader", err)
			time.Sleep(errorPause)
			continue
		}
		l.reads.Add(1)
		if got < floor {
			l.mu.Lock()
			l.stale++
			if len(l.staleSeen) < 3 {
				l.staleSeen = append(l.staleSeen, fmt.Sprintf("row %d read %d, %d acknowledged before the read (%s)", row+1, got, floor, l.phase))
			}
			l.mu.Unlock()
		}
	}
}

// timed runs one statement, bounded by statementLimit; through the proxy, it counts its
// time.
func (l *strongLoad) timed(throughProxy bool, what string, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), statementLimit)
	defer cancel()
	start := time.Now()
	err := f(ctx)
	took := time.Since(start)
	if throughProxy {
		l.mu.Lock()
		l.proxyStmts++
		if took > l.slowest {
			l.slowest, l.slowestWhat = took, what+" ("+l.phase+")"
		}
		if took > hangBound {
			l.hangs++
		}
		l.mu.Unlock()
	}
	return err
}

func (l *strongLoad) failed(who string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.errs[l.phase] == nil {
		l.errs[l.phase] = map[string]int{}
	}
	l.errs[l.phase][who+": "+errKey(err)]++
}

// errors counts the statements that failed.
func (l *strongLoad) errors() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, byKind := range l.errs {
		for _, c := range byKind {
			n += c
		}
	}
	return n
}

// errorsText lists the errors by phase.
func (l *strongLoad) errorsText() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for _, p := range l.phases {
		parts = append(parts, p+": "+countsText(l.errs[p]))
	}
	return strings.Join(parts, "; ")
}

// text is the load's figures.
func (l *strongLoad) text() string {
	l.mu.Lock()
	stale, seen, slowest, slowestWhat, hangs, stmts := l.stale, l.staleSeen, l.slowest, l.slowestWhat, l.hangs, l.proxyStmts
	l.mu.Unlock()
	staleText := fmt.Sprintf("%d stale", stale)
	if stale > 0 {
		staleText = fmt.Sprintf("%d STALE (%s)", stale, strings.Join(seen, "; "))
	}
	hangText := ""
	if hangs > 0 {
		hangText = fmt.Sprintf(", %d HUNG past %v", hangs, hangBound)
	}
	return fmt.Sprintf("%d writers (%d straight to the primary, %d through the proxy), %d writes acknowledged; "+
		"%d strong reads by %d readers, %s; errors by phase: %s; slowest of %d statements through the proxy %s, a %s%s",
		l.direct+l.viaGK, l.direct, l.viaGK, l.writes.Load(), l.reads.Load(), strongReaders, staleText, l.errorsText(),
		stmts, ms(slowest), slowestWhat, hangText)
}

// assert fails the test on a stale read or a hang.
func (l *strongLoad) assert(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stale > 0 {
		t.Errorf("%d strong reads missed a write acknowledged before they began: %s", l.stale, strings.Join(l.staleSeen, "; "))
	}
	if l.hangs > 0 {
		t.Errorf("%d statements through the proxy took longer than %v (the slowest %s, a %s): a client hung",
			l.hangs, hangBound, ms(l.slowest), l.slowestWhat)
	}
	if l.reads.Load() == 0 {
		t.Errorf("no strong read succeeded")
	}
}

// missing counts the rows whose value on the primary is below the version acknowledged for
// them: writes the primary lost, which would make a read look stale for no fault of the
// proxy.
func (l *strongLoad) missing(primary *sql.DB) (int, error) {
	rows, err := primary.Query("SELECT id, v FROM " + l.table)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id int
		var v int64
		if err := rows.Scan(&id, &v); err != nil {
			return 0, err
		}
		if id >= 1 && id <= len(l.acked) && v < l.acked[id-1].Load() {
			n++
		}
	}
	return n, rows.Err()
}
