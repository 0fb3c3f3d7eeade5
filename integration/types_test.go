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

// typeWith returns the tracked type whose sample is sample, or fails the test.
func typeWith(t *testing.T, p *testProxy, sample string) estimator.TypeStats {
	t.Helper()
	var samples []string
	for _, ts := range p.Costs.Snapshot() {
		if ts.Sample == sample {
			return ts
		}
		samples = append(samples, ts.Sample)
	}
	t.Fatalf("no type %q among %q", sample, samples)
	return estimator.TypeStats{}
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

	slow := typeWith(t, p, "SELECT SLEEP(?)")
	assert.EqualValues(t, 10, slow.Count, "text and binary executions are one type")
	assertCost(t, slow, 20*time.Millisecond, 60*time.Millisecond)
	fast := typeWith(t, p, "SELECT ? + ?")
	assert.EqualValues(t, 20, fast.Count)
	assertCost(t, fast, 0, 5*time.Millisecond)

	// Statements inside a transaction are charged one by one too.
	tx, err := text.Begin()
	require.NoError(t, err)
	mustExec(t, tx, "SELECT SLEEP(0.02)")
	require.NoError(t, tx.Commit())
	assert.EqualValues(t, 11, typeWith(t, p, "SELECT SLEEP(?)").Count)
	assert.EqualValues(t, 1, typeWith(t, p, "COMMIT").Count)

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

	txn := typeWith(t, p, "TRANSACTION SELECT SLEEP(?)")
	assert.EqualValues(t, 4, txn.Count)
	assertCost(t, txn, 30*time.Millisecond, 90*time.Millisecond)
	single := typeWith(t, p, "SELECT SLEEP(?)")
	assert.EqualValues(t, 3, single.Count)
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

	checkout := typeWith(t, p, "checkout")
	assert.EqualValues(t, 4, checkout.Count)
	assertCost(t, checkout, 20*time.Millisecond, 70*time.Millisecond)
	assert.EqualValues(t, 2, typeWith(t, p, "SELECT ?").Count)
}

// Identity keys type every unit by who runs it.
func TestTypesByUser(t *testing.T) {
	p := startProxy(t, func(c *config.Config) { c.Classify.TypeKey = "user" })
	db := openDB(t, p.Addr, "interpolateParams=true")
	sleepN(t, db, 6, "SELECT 1")
	ts := typeWith(t, p, "user "+env.User)
	assert.GreaterOrEqual(t, ts.Count, uint64(6), "the driver's own statements count too")
	for _, other := range p.Costs.Snapshot() {
		assert.False(t, strings.HasPrefix(other.Sample, "SELECT"), "no digest types: %q", other.Sample)
	}
}
