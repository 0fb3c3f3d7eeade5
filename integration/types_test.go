package integration

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
)

// typeWith waits until the tracked type whose sample is sample has at least count units,
// and returns it. A unit is recorded just after its last packet reaches the client, so a test that has
// its answer may look a moment too early.
func typeWith(t *testing.T, p *testProxy, sample string, count uint64) estimator.TypeStats {
	t.Helper()
	var found estimator.TypeStats
	var samples []string
	ok := assert.Eventually(t, func() bool {
		samples = samples[:0]
		for _, ts := range p.Costs.Snapshot() {
			if ts.Sample == sample {
				found = ts
				return ts.Count >= count
			}
			samples = append(samples, ts.Sample)
		}
		return false
	}, 5*time.Second, 5*time.Millisecond)
	if !ok {
		t.Fatalf("no type %q with %d units: found %d; types %q", sample, count, found.Count, samples)
	}
	return found
}

// assertUnits checks that the type with sample has exactly count units.
func assertUnits(t *testing.T, p *testProxy, sample string, count uint64) estimator.TypeStats {
	t.Helper()
	ts := typeWith(t, p, sample, count)
	assert.Equal(t, count, ts.Count, "units of type %q", sample)
	return ts
}

// assertCost checks a learned cost against what the statements were made to take.
func assertCost(t *testing.T, ts estimator.TypeStats, least, most time.Duration) {
	t.Helper()
	assert.GreaterOrEqual(t, ts.Mean, least, "type %q", ts.Sample)
	assert.LessOrEqual(t, ts.Mean, most, "type %q", ts.Sample)
}

func sleepN(t *testing.T, db interface {
	Exec(string, ...any) (sql.Result, error)
}, n int, query string, args ...any) {
	t.Helper()
	for range n {
		mustExec(t, db, query, args...)
	}
}

// Under the default type key each statement is a type of its own digest, whatever the
// protocol: a text query with literals and a prepared statement with parameters are one
// type, and its cost is what the backend took.
func TestTypesByDigest(t *testing.T) {
	p := startProxy(t, nil)
	text := openDB(t, p.Addr, "interpolateParams=true")
	binary := openDB(t, p.Addr, "")

	sleepN(t, text, 5, "SELECT SLEEP(?)", 0.02)   // sent as SELECT SLEEP(0.02)
	sleepN(t, binary, 5, "SELECT SLEEP(?)", 0.02) // COM_STMT_PREPARE and EXECUTE
	sleepN(t, text, 20, "SELECT 1 + 2")

	slow := assertUnits(t, p, "SELECT SLEEP(?)", 10) // text and binary executions are one type
	assertCost(t, slow, 20*time.Millisecond, 60*time.Millisecond)
	fast := assertUnits(t, p, "SELECT ? + ?", 20)
	assertCost(t, fast, 0, 5*time.Millisecond)

	// Statements inside a transaction are charged one by one too.
	tx, err := text.Begin()
	require.NoError(t, err)
	mustExec(t, tx, "SELECT SLEEP(0.02)")
	require.NoError(t, tx.Commit())
	assertUnits(t, p, "SELECT SLEEP(?)", 11)
	assertUnits(t, p, "COMMIT", 1)

	assert.GreaterOrEqual(t, metricValue(t, p, "gatekeeper_statements_classified_total",
		map[string]string{"kind": "read"}), 30.0)
}

// Under type_key transaction a transaction is one unit, typed by its first statement after
// BEGIN and costed whole; an autocommit statement with the same text is another type.
func TestTypesByTransaction(t *testing.T) {
	p := startProxy(t, func(c *config.Config) { c.Classify.TypeKey = "transaction" })
	db := openDB(t, p.Addr, "interpolateParams=true")

	for range 4 {
		tx, err := db.Begin()
		require.NoError(t, err)
		mustExec(t, tx, "SELECT SLEEP(0.01)")
		mustExec(t, tx, "SELECT SLEEP(0.02)")
		require.NoError(t, tx.Commit())
	}
	sleepN(t, db, 3, "SELECT SLEEP(0.01)")

	txn := assertUnits(t, p, "TRANSACTION SELECT SLEEP(?)", 4)
	assertCost(t, txn, 30*time.Millisecond, 90*time.Millisecond)
	single := assertUnits(t, p, "SELECT SLEEP(?)", 3)
	assertCost(t, single, 10*time.Millisecond, 40*time.Millisecond)
}

// A tag names the type of the unit it opens, whatever the statements.
func TestTypesByTag(t *testing.T) {
	p := startProxy(t, func(c *config.Config) { c.Classify.TypeKey = "tag" })
	db := openDB(t, p.Addr, "interpolateParams=true")

	sleepN(t, db, 3, "/* gk:type=checkout */ SELECT SLEEP(0.02)")
	tx, err := db.Begin()
	require.NoError(t, err)
	mustExec(t, tx, "/* gk:type=checkout */ SELECT 1")
	mustExec(t, tx, "SELECT SLEEP(0.02)")
	require.NoError(t, tx.Commit())
	sleepN(t, db, 2, "SELECT 5") // untagged: typed by digest

	checkout := assertUnits(t, p, "checkout", 4)
	assertCost(t, checkout, 20*time.Millisecond, 70*time.Millisecond)
	assertUnits(t, p, "SELECT ?", 2)
}

// Under tag_digest the autocommit statements of one tag keep their own costs, and are
// admitted under them, while a tagged transaction is still one type named by its tag.
func TestTypesByTagAndDigest(t *testing.T) {
	p := startProxy(t, func(c *config.Config) {
		c.Classify.TypeKey = "tag_digest"
		c.Admission.Enabled = true
		c.Admission.Capacity = config.Capacity(100 * time.Millisecond)
	})
	db := openDB(t, p.Addr, "interpolateParams=true")

	sleepN(t, db, 3, "/* gk:type=best_sellers */ SELECT SLEEP(0.03)")
	sleepN(t, db, 4, "/* gk:type=best_sellers */ SELECT 7")
	tx, err := db.Begin()
	require.NoError(t, err)
	mustExec(t, tx, "/* gk:type=checkout */ SELECT SLEEP(0.02)")
	mustExec(t, tx, "/* gk:type=checkout */ SELECT 1")
	require.NoError(t, tx.Commit())

	slow := assertUnits(t, p, "best_sellers SELECT SLEEP(?)", 3)
	assertCost(t, slow, 30*time.Millisecond, 90*time.Millisecond)
	fast := assertUnits(t, p, "best_sellers SELECT ?", 4)
	assertCost(t, fast, 0, 5*time.Millisecond)
	checkout := assertUnits(t, p, "checkout", 1)
	assertCost(t, checkout, 20*time.Millisecond, 70*time.Millisecond)

	// A unit waiting for admission is expected under the type it will be recorded as.
	hold := openDB(t, p.Addr, "interpolateParams=true")
	mustExec(t, hold, "/* gk:type=hold */ SELECT SLEEP(0.5)") // learned: the whole capacity
	typeWith(t, p, "hold SELECT SLEEP(?)", 1)
	queuedUnder(t, p, hold, fast, func() error {
		_, err := db.Exec("/* gk:type=best_sellers */ SELECT 8")
		return err
	})

	// So is a transaction whose tag is on its BEGIN only.
	conn, err := db.Conn(t.Context())
	require.NoError(t, err)
	defer conn.Close()
	queuedUnder(t, p, hold, checkout, func() error {
		for _, q := range []string{"/* gk:type=checkout */ BEGIN", "SELECT 2", "COMMIT"} {
			if _, err := conn.ExecContext(t.Context(), q); err != nil {
				return err
			}
		}
		return nil
	})
}

// queuedUnder holds the whole capacity with a long unit on hold, runs unit while it does, and
// checks that unit waits for admission under the type want.
func queuedUnder(t *testing.T, p *testProxy, hold *sql.DB, want estimator.TypeStats, unit func() error) {
	t.Helper()
	held, queued := make(chan error, 1), make(chan error, 1)
	go func() { _, err := hold.Exec("/* gk:type=hold */ SELECT SLEEP(0.5)"); held <- err }()
	waitFor(t, 5*time.Second, "the holder to run", func() bool { return p.Admission().Snapshot().Running == 1 })
	go func() { queued <- unit() }()
	waitQueued(t, p, 1)
	w := p.Admission().Waiting(1)
	require.Len(t, w, 1)
	assert.Equal(t, uint64(want.Key), w[0].Type, "queued under %q", want.Sample)
	require.NoError(t, <-held)
	require.NoError(t, <-queued)
}

// Identity keys type every unit by who runs it.
func TestTypesByUser(t *testing.T) {
	p := startProxy(t, func(c *config.Config) { c.Classify.TypeKey = "user" })
	db := openDB(t, p.Addr, "interpolateParams=true")
	sleepN(t, db, 6, "SELECT 1")
	typeWith(t, p, "user "+env.User, 6) // the driver's own statements count too
	for _, other := range p.Costs.Snapshot() {
		assert.False(t, strings.HasPrefix(other.Sample, "SELECT"), "no digest types: %q", other.Sample)
	}
}

// Under estimator.backend_cpus a statement is charged its share of the backend's processors:
// four that sleep 200 ms together on a backend counted as one processor cost about 50 ms each,
// where alone each costs its 200 ms.
func TestTypesChargeTheShareOfBackendCPUs(t *testing.T) {
	p := startProxy(t, func(c *config.Config) {
		c.Estimator.BackendCPUs = 1
		c.Admission.Enabled = false // the four run together, as admission would not let a new type
	})
	db := openDB(t, p.Addr, "interpolateParams=true")
	db.SetMaxOpenConns(4)

	sleepN(t, db, 1, "SELECT SLEEP(0.2) AS alone")
	assertCost(t, assertUnits(t, p, "SELECT SLEEP(?) AS alone", 1), 190*time.Millisecond, 300*time.Millisecond)

	start := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			<-start
			_, err := db.Exec("SELECT SLEEP(0.2) AS together")
			errs <- err
		}()
	}
	close(start)
	for range 4 {
		require.NoError(t, <-errs)
	}
	// The statements overlap for all but their starts and ends, which may be a few ms apart.
	together := assertUnits(t, p, "SELECT SLEEP(?) AS together", 4)
	assertCost(t, together, 45*time.Millisecond, 100*time.Millisecond)
	// Their expected service time, what the aging bound is a multiple of, stays the time
	// each kept the backend busy.
	assert.GreaterOrEqual(t, together.Busy, 190*time.Millisecond)
	assert.LessOrEqual(t, together.Busy, 300*time.Millisecond)
	_, busy := p.Costs.Expect(together.Key)
	assert.Equal(t, together.Busy, busy)
}
