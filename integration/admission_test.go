package integration

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
)

// Statements of two request types, told apart by their tag.
const (
	longQuery  = "SELECT /* gk:type=long */ SLEEP(0.4)"
	shortQuery = "SELECT /* gk:type=short */ SLEEP(0.01)"
)

// admissionProxy starts a proxy with admission on, units typed by their tag, the estimate
// being the last measurement, and the long and short types learned.
func admissionProxy(t *testing.T, edit func(a *config.Admission)) *testProxy {
	t.Helper()
	p := startProxy(t, func(c *config.Config) {
		c.Classify.TypeKey = "tag"
		c.Admission.Enabled = true
		c.Admission.Capacity = config.Capacity(400 * time.Millisecond)
		if edit != nil {
			edit(&c.Admission)
		}
	})
	require.NoError(t, p.Costs.Reconfigure(estimator.Config{Weight: 1}))
	db := openDB(t, p.Addr, "")
	mustExec(t, db, longQuery)
	mustExec(t, db, shortQuery)
	typeWith(t, p, "long", 1)
	typeWith(t, p, "short", 1)
	return p
}

// waitQueued waits until n units wait for admission.
func waitQueued(t *testing.T, p *testProxy, n int) {
	t.Helper()
	waitFor(t, 5*time.Second, "units queued", func() bool { return p.Admission().Snapshot().Queued == n })
}

// finishes runs statements through the proxy, each on its own connection, and records the
// order in which they end.
type finishes struct {
	t     *testing.T
	db    *sql.DB
	mu    sync.Mutex
	order []string
	wg    sync.WaitGroup
}

func newFinishes(t *testing.T, p *testProxy) *finishes {
	db := openDB(t, p.Addr, "")
	db.SetMaxOpenConns(10)
	return &finishes{t: t, db: db}
}

// run starts q, named name.
func (f *finishes) run(name, q string) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		if _, err := f.db.Exec(q); err != nil {
			f.t.Errorf("%s: %v", name, err)
		}
		f.mu.Lock()
		f.order = append(f.order, name)
		f.mu.Unlock()
	}()
}

// wait waits for every statement started and returns the names in the order they ended.
func (f *finishes) wait() []string {
	f.wg.Wait()
	return f.order
}

// finishOrder runs a long unit holding the capacity, then queues a second long unit and
// then a short one behind it, and returns the order in which the second long and the
// short unit finished.
func finishOrder(t *testing.T, p *testProxy, gap time.Duration) []string {
	t.Helper()
	f := newFinishes(t, p)
	f.run("blocker", longQuery)
	waitFor(t, 5*time.Second, "the blocker to run", func() bool { return p.Admission().Snapshot().Running == 1 })
	f.run("long", longQuery)
	waitQueued(t, p, 1)
	if gap > 0 {
		waitFor(t, gap+5*time.Second, "the long unit to have waited the gap", func() bool {
			w := p.Admission().Waiting(1)
			return len(w) == 1 && w[0].Waited >= gap
		})
	}
	f.run("short", shortQuery)
	waitQueued(t, p, 2)
	order := f.wait()
	require.Equal(t, "blocker", order[0])
	return order[1:]
}

// Under SJF a short unit that arrived after a long one is admitted first; under FIFO it
// waits for the long one to finish.
func TestAdmissionShortOvertakesLongUnderSJFOnly(t *testing.T) {
	sjf := admissionProxy(t, func(a *config.Admission) { a.Discipline = "sjf" })
	assert.Equal(t, []string{"short", "long"}, finishOrder(t, sjf, 0))
	fifo := admissionProxy(t, func(a *config.Admission) { a.Discipline = "fifo" })
	assert.Equal(t, []string{"long", "short"}, finishOrder(t, fifo, 0))
}

// With aging X a unit is passed only by units that end before it has waited X times its
// expected service time (here its cost: busy time), or whose own bound comes first: the long unit (bound 0.25 x 400ms = 100ms after it
// arrives) is not passed by a short one arriving 150ms after it (bound 152.5ms), which
// pure SJF lets pass.
func TestAdmissionAgingBound(t *testing.T) {
	aging := admissionProxy(t, func(a *config.Admission) { a.Discipline = "sjf"; a.Aging = 0.25 })
	assert.Equal(t, []string{"long", "short"}, finishOrder(t, aging, 150*time.Millisecond))
	sjf := admissionProxy(t, func(a *config.Admission) { a.Discipline = "sjf" })
	assert.Equal(t, []string{"short", "long"}, finishOrder(t, sjf, 150*time.Millisecond))
}

// longAmidShorts runs a long unit while clients keep short units queued, and returns how
// long it took and its error.
func longAmidShorts(t *testing.T, p *testProxy) (time.Duration, error) {
	t.Helper()
	db := openDB(t, p.Addr, "")
	db.SetMaxOpenConns(30)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, _ = db.ExecContext(ctx, shortQuery)
			}
		})
	}
	defer func() { stop(); wg.Wait() }()
	waitFor(t, 5*time.Second, "short units queued", func() bool { return p.Admission().Snapshot().Queued >= 5 })
	start := time.Now()
	_, err := db.Exec(longQuery)
	return time.Since(start), err
}

// Under sjf a long unit never finds the room while cheaper units keep arriving: it waits
// until its queue timeout. With a last call it goes first once it has waited queue_timeout
// minus last_call, and is served; until then the short units pass it.
func TestAdmissionLastCall(t *testing.T) {
	edit := func(lastCall time.Duration) func(a *config.Admission) {
		return func(a *config.Admission) {
			a.Discipline = "sjf"
			a.Capacity = config.Capacity(50 * time.Millisecond) // five short units, and a long one only alone
			a.QueueTimeout = 2 * time.Second
			a.LastCall = config.LastCall(lastCall)
		}
	}
	took, err := longAmidShorts(t, admissionProxy(t, edit(0)))
	var me *mysql.MySQLError
	require.ErrorAs(t, err, &me, "without a last call the long unit times out")
	assert.Equal(t, uint16(1205), me.Number)
	assert.GreaterOrEqual(t, took, 2*time.Second)

	p := admissionProxy(t, edit(1500*time.Millisecond))
	took, err = longAmidShorts(t, p)
	require.NoError(t, err, "the long unit is served at its last call")
	assert.GreaterOrEqual(t, took, 850*time.Millisecond, "short units passed it for 500 ms, then it ran for 400")
	assert.Less(t, took, 2*time.Second)
	assert.Zero(t, p.Admission().Snapshot().TimedOut)
}

// With costs as processor shares (estimator.backend_cpus) the aging bound stays a multiple
// of how long a unit keeps the backend busy, not of its share. The long type, learned four
// at a time on one processor, costs about a quarter of its 400 ms: with aging 0.5 a long
// unit's bound is 200 ms after it arrives, later than that of a short unit arriving 120 ms
// after it (125 ms), so the short one goes first when both are overdue. Were the bound a
// multiple of the cost (50 ms), the long one would.
func TestAdmissionAgingBoundIsInServiceTime(t *testing.T) {
	p := startProxy(t, func(c *config.Config) {
		c.Classify.TypeKey = "tag"
		c.Estimator.BackendCPUs = 1
		c.Admission.Enabled = true
		c.Admission.Capacity = config.Capacity(time.Hour) // nothing waits while the types are learned
	})
	require.NoError(t, p.Costs.Reconfigure(estimator.Config{Weight: 1}))
	db := openDB(t, p.Addr, "")
	db.SetMaxOpenConns(10)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { mustExec(t, db, longQuery) })
	}
	wg.Wait()
	mustExec(t, db, shortQuery)
	long := typeWith(t, p, "long", 4)
	typeWith(t, p, "short", 1)
	// The four overlap for all but their starts: a share of about a quarter. Under the cost
	// (up to 250 ms), the long unit's bound would come before the short one's.
	require.Less(t, 2*long.Mean, long.Busy, "the long type's share of the processor against its busy time")
	require.GreaterOrEqual(t, long.Busy, 390*time.Millisecond)

	a := p.cfg.Admission
	a.Discipline, a.Aging = "sjf", 0.5
	a.Capacity = config.Capacity(long.Mean) // one long unit fills it
	require.NoError(t, p.ReloadAdmission(a))
	assert.Equal(t, []string{"short", "long"}, finishOrder(t, p, 120*time.Millisecond))
}

// A transaction admitted at its first statement runs to its end without waiting, however
// long the queue behind it.
func TestAdmissionNeverBlocksATransaction(t *testing.T) {
	p := admissionProxy(t, func(a *config.Admission) { a.Capacity = config.Capacity(500 * time.Millisecond) })
	tbl := tableName(t)
	admin := openDB(t, env.Primary, "")
	mustExec(t, admin, "DROP TABLE IF EXISTS "+tbl)
	mustExec(t, admin, "CREATE TABLE "+tbl+" (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	mustExec(t, admin, "INSERT INTO "+tbl+" VALUES (1, 0)")

	db := openDB(t, p.Addr, "")
	db.SetMaxOpenConns(20)
	ctx := context.Background()
	txConn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer txConn.Close()
	tx, err := txConn.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.Exec("UPDATE /* gk:type=short */ " + tbl + " SET v = v + 1 WHERE id = 1")
	require.NoError(t, err)

	// Others fill the capacity and queue up.
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = db.Exec(longQuery)
		}()
	}
	waitFor(t, 5*time.Second, "a queue", func() bool { return p.Admission().Snapshot().Queued >= 3 })
	start := time.Now()
	for range 5 {
		_, err = tx.Exec("UPDATE " + tbl + " SET v = v + 1 WHERE id = 1")
		require.NoError(t, err)
	}
	require.NoError(t, tx.Commit())
	took := time.Since(start)
	assert.GreaterOrEqual(t, p.Admission().Snapshot().Queued, 1, "the queue was still there")
	assert.Less(t, took, 300*time.Millisecond, "the transaction's statements and commit did not queue")
	wg.Wait()
	var v int
	require.NoError(t, admin.QueryRow("SELECT v FROM "+tbl+" WHERE id = 1").Scan(&v))
	assert.Equal(t, 6, v)
	s := p.Admission().Snapshot()
	assert.Zero(t, s.Load)
	assert.Zero(t, s.OpenTxns)
}

// A client that goes away while its unit waits leaves the queue at once; the unit is never
// run.
func TestAdmissionClientGoneWhileQueued(t *testing.T) {
	p := admissionProxy(t, nil)
	db := openDB(t, p.Addr, "")
	done := make(chan error, 1)
	go func() {
		_, err := db.Exec(longQuery)
		done <- err
	}()
	waitFor(t, 5*time.Second, "the blocker to run", func() bool { return p.Admission().Snapshot().Running == 1 })

	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		// go-sql-driver closes the connection when the context ends mid-query.
		_, err := db.ExecContext(ctx, "SELECT /* gk:type=long */ SLEEP(0.4), 'never'")
		gone <- err
	}()
	waitQueued(t, p, 1)
	cancel()
	require.Error(t, <-gone)
	waitFor(t, 300*time.Millisecond, "the queue to empty while the blocker runs", func() bool {
		s := p.Admission().Snapshot()
		return s.Queued == 0 && s.Running == 1
	})
	assert.Equal(t, uint64(1), p.Admission().Snapshot().Canceled)
	require.NoError(t, <-done)
	s := p.Admission().Snapshot()
	assert.Zero(t, s.Load)
	assert.Zero(t, s.Running)
}

// mysqlError returns the server error of err, failing the test if it is not one.
func mysqlError(t *testing.T, err error) *mysql.MySQLError {
	t.Helper()
	var me *mysql.MySQLError
	require.True(t, errors.As(err, &me), "want a MySQL error, got %v", err)
	return me
}

// A unit that waits past admission.queue_timeout gets an error that says so, with an
// error code drivers retry; the connection stays usable.
func TestAdmissionQueueTimeout(t *testing.T) {
	p := admissionProxy(t, func(a *config.Admission) { a.QueueTimeout = 150 * time.Millisecond })
	db := openDB(t, p.Addr, "")
	go func() { _, _ = db.Exec(longQuery) }()
	waitFor(t, 5*time.Second, "the blocker to run", func() bool { return p.Admission().Snapshot().Running == 1 })

	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	start := time.Now()
	_, err = conn.ExecContext(context.Background(), longQuery)
	me := mysqlError(t, err)
	assert.Equal(t, uint16(1205), me.Number)
	assert.True(t, strings.HasPrefix(me.Message, "gatekeeper: queue timeout: waited "), me.Message)
	assert.Contains(t, me.Message, "admission.queue_timeout")
	assert.GreaterOrEqual(t, time.Since(start), 140*time.Millisecond)
	// The same connection works once there is room.
	waitFor(t, 5*time.Second, "the blocker to end", func() bool { return p.Admission().Snapshot().Running == 0 })
	var one int
	require.NoError(t, conn.QueryRowContext(context.Background(), "SELECT 1").Scan(&one))
}

// Past the active limit, units of new sessions are refused at once with a "too many
// connections" error while those of sessions admitted before wait in the blocking queue.
func TestAdmissionSessionsNewRefusedAcceptedQueued(t *testing.T) {
	p := admissionProxy(t, func(a *config.Admission) {
		a.Capacity = config.Capacity(10 * time.Second)
		a.Sessions.ActiveLimit = 1
		a.Sessions.BlockingQueue = 1
	})
	db := openDB(t, p.Addr, "")
	ctx := context.Background()
	accepted, err := db.Conn(ctx)
	require.NoError(t, err)
	defer accepted.Close()
	_, err = accepted.ExecContext(ctx, shortQuery) // admitted once: accepted from now on
	require.NoError(t, err)

	blockerDone := make(chan error, 1)
	go func() {
		_, err := db.Exec(longQuery)
		blockerDone <- err
	}()
	waitFor(t, 5*time.Second, "the blocker to run", func() bool { return p.Admission().Snapshot().Running == 1 })

	acceptedDone := make(chan error, 1)
	go func() {
		_, err := accepted.ExecContext(ctx, shortQuery)
		acceptedDone <- err
	}()
	waitFor(t, 5*time.Second, "the accepted session to block", func() bool { return p.Admission().Snapshot().Blocked == 1 })

	fresh := openDB(t, p.Addr, "")
	_, err = fresh.Exec(shortQuery)
	me := mysqlError(t, err)
	assert.Equal(t, uint16(1040), me.Number)
	assert.True(t, strings.HasPrefix(me.Message, "gatekeeper: new session refused under overload"), me.Message)

	require.NoError(t, <-blockerDone)
	require.NoError(t, <-acceptedDone)
	// Now there is room: the new session gets in.
	_, err = fresh.Exec(shortQuery)
	require.NoError(t, err)
}

// A rate policer on a request type refuses what exceeds its rate with an error that names
// it; other types pass.
func TestAdmissionPolicerRefusesPastItsRate(t *testing.T) {
	p := admissionProxy(t, func(a *config.Admission) {
		a.Policers = []config.Policer{{Name: "shorts", Type: "short", Rate: 0.001, Burst: 1}}
	})
	db := openDB(t, p.Addr, "")
	_, err := db.Exec(shortQuery) // the warm-up took the burst
	me := mysqlError(t, err)
	assert.Equal(t, uint16(1205), me.Number)
	assert.True(t, strings.HasPrefix(me.Message, `gatekeeper: rate limit: policer "shorts"`), me.Message)
	_, err = db.Exec("SELECT /* gk:type=other */ 1")
	require.NoError(t, err)
}

// New connections past admission.accept.rate are refused before the handshake with a
// "too many connections" error.
func TestAdmissionAcceptRate(t *testing.T) {
	p := startProxy(t, func(c *config.Config) {
		c.Admission.Accept.Rate = 0.001
		c.Admission.Accept.Burst = 1
	})
	first := openDB(t, p.Addr, "")
	require.NoError(t, first.Ping())
	second := openDB(t, p.Addr, "")
	me := mysqlError(t, second.Ping())
	assert.Equal(t, uint16(1040), me.Number)
	assert.True(t, strings.HasPrefix(me.Message, "gatekeeper: too many new connections: admission.accept.rate"), me.Message)
	// The connection accepted first still works.
	var one int
	require.NoError(t, first.QueryRow("SELECT 1").Scan(&one))
}

// With the quick-request reserve, a lengthy unit that only the full lengthy lane keeps out
// waits aside, and a quick unit behind it in FIFO order runs at once: capacity 1000 ms with
// 700 ms kept for units under 100 ms, so the first long unit (400 ms) takes the one-unit
// lane and the second waits for it.
func TestAdmissionReserveLetsQuickUnitsPastTheLengthyLane(t *testing.T) {
	p := admissionProxy(t, func(a *config.Admission) {
		a.Discipline = "fifo"
		a.Capacity = config.Capacity(time.Second)
		a.Reserve = config.Reserve{Floor: 700 * time.Millisecond, QuickCutoff: 100 * time.Millisecond, LengthyLane: 1}
	})
	f := newFinishes(t, p)
	f.run("long1", longQuery)
	waitFor(t, 5*time.Second, "the first long unit to run in the lane", func() bool { return p.Admission().Snapshot().Lane == 1 })
	f.run("long2", longQuery)
	waitQueued(t, p, 1)
	s := p.Admission().Snapshot()
	assert.Equal(t, 1, s.Parked, "the second long unit waits for the lane")
	w := p.Admission().Waiting(10)
	require.Len(t, w, 1)
	assert.True(t, w[0].Parked)
	assert.Equal(t, 1.0, metricValue(t, p, "gatekeeper_admission_lengthy_parked", nil))
	assert.Equal(t, 1.0, metricValue(t, p, "gatekeeper_admission_lengthy_lane", nil))

	f.run("short", shortQuery)
	assert.Equal(t, []string{"short", "long1", "long2"}, f.wait())
	s = p.Admission().Snapshot()
	assert.Zero(t, s.Parked)
	assert.Zero(t, s.Lane)
	assert.Zero(t, s.Load)
}
