package integration

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/bookstore"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// everyInteraction is the shopping mix with its rare interactions raised to 1%, so that
// every one of the 14 comes up in a few seconds: at the shopping mix's 0.09%, Admin
// Confirm would need some 5,000 interactions to come up with 99% certainty.
const everyInteraction = "home=16,new_products=5,best_sellers=5,product_detail=17,search_request=20," +
	"search_results=17,shopping_cart=11.6,customer_registration=3,buy_request=2.6,buy_confirm=1.2," +
	"order_inquiry=1,order_display=1,admin_request=1,admin_confirm=1"

// bookstoreDSN is the DSN of the bookstore's test database at addr.
func bookstoreDSN(addr, database string) string {
	return fmt.Sprintf("%s:%s@tcp(%s)/%s", env.User, env.Password, addr, database)
}

// loadBookstore loads the bookstore at scale into a fresh database on the primary, dropped
// when the test ends, and returns a pool on it.
func loadBookstore(ctx context.Context, t *testing.T, database string, scale bookstore.Scale) *sql.DB {
	t.Helper()
	admin := openDB(t, env.Primary, "")
	mustExec(t, admin, "DROP DATABASE IF EXISTS "+database)
	mustExec(t, admin, "CREATE DATABASE "+database)
	t.Cleanup(func() { mustExec(t, admin, "DROP DATABASE IF EXISTS "+database) })
	db, err := sql.Open("mysql", bookstoreDSN(env.Primary, database))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	start := time.Now()
	require.NoError(t, bookstore.Load(ctx, db, scale, testWriter{t}))
	t.Logf("loaded in %v", time.Since(start))
	return db
}

// The bookstore loads into a fresh database and runs its closed loop against MariaDB:
// every interaction runs without an error, and the heavy ones cost
// far more than the light ones. Through the proxy, every interaction's tag reaches the
// classifier.
func TestBookstore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const database = "bookstore_it"
	db := loadBookstore(ctx, t, database, bookstore.Scale{Items: 1000, Customers: 2000, Seed: 7})
	var orders, lines int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM orders), (SELECT COUNT(*) FROM order_line)").Scan(&orders, &lines))
	assert.Equal(t, 1800, orders)
	assert.Greater(t, lines, orders)

	res, err := bookstore.Run(ctx, bookstore.Config{
		DSN:      bookstoreDSN(env.Primary, database),
		Mix:      everyInteraction,
		Clients:  8,
		Duration: 5 * time.Second,
		Timeout:  20 * time.Second,
		Seed:     1,
	})
	require.NoError(t, err)
	var table strings.Builder
	require.NoError(t, res.WriteTable(&table))
	t.Log("\n" + table.String())

	assert.Equal(t, 5*time.Second, res.Elapsed)
	require.Len(t, res.Classes, 14)
	for _, c := range res.Classes {
		assert.Positive(t, c.Completed, "%s never completed", c.Name)
		assert.Zero(t, c.Failed, "%s failed", c.Name)
		assert.Zero(t, c.Refused, "%s was refused", c.Name)
		assert.Zero(t, c.TimedOut, "%s timed out", c.Name)
	}
	assert.Empty(t, res.Errors)
	home, best := res.Classes[bookstore.Home], res.Classes[bookstore.BestSellers]
	assert.GreaterOrEqual(t, best.Mean, 5*home.Mean, "Best Sellers (%v) should cost far more than Home (%v)", best.Mean, home.Mean)
	assert.Equal(t, res.Total.Completed, sumCompleted(res.Classes))

	// Through the proxy, classified by tag, every interaction is a type of its own.
	// A warm-up in the same run: the measured period is told when it begins, once.
	p := startProxy(t, func(c *config.Config) { c.Classify.TypeKey = "tag" })
	start := time.Now()
	var measuredFrom []time.Duration
	viaProxy, err := bookstore.Run(ctx, bookstore.Config{
		DSN:       bookstoreDSN(p.Addr, database),
		Mix:       "shopping",
		Clients:   4,
		Warmup:    time.Second,
		OnMeasure: func() { measuredFrom = append(measuredFrom, time.Since(start)) },
		Duration:  2 * time.Second,
		Timeout:   20 * time.Second,
		Seed:      2,
		PerSecond: true,
	})
	require.NoError(t, err)
	require.Len(t, measuredFrom, 1)
	// Every second of the run, the warm-up's included, counts what completed in it.
	require.GreaterOrEqual(t, len(viaProxy.Seconds), 3)
	perSecond := 0
	for i, s := range viaProxy.Seconds {
		assert.Equal(t, viaProxy.Seconds[0].Start.Add(time.Duration(i)*time.Second), s.Start)
		for _, n := range s.Completed {
			perSecond += n
		}
	}
	assert.Greater(t, perSecond, viaProxy.Total.Completed, "the warm-up's completions count too")
	assert.GreaterOrEqual(t, measuredFrom[0], time.Second)
	assert.Less(t, measuredFrom[0], 2*time.Second)
	assert.Equal(t, 2*time.Second, viaProxy.Elapsed)
	assert.Zero(t, viaProxy.Total.Failed+viaProxy.Total.Refused+viaProxy.Total.TimedOut, "errors: %v", viaProxy.Errors)
	for _, c := range viaProxy.Classes {
		if c.Completed == 0 {
			continue // a rare interaction that did not come up in 2s
		}
		waitFor(t, 5*time.Second, "type "+c.Name, func() bool {
			for _, ts := range p.Costs.Snapshot() {
				if ts.Sample == c.Name {
					return true
				}
			}
			return false
		})
	}
}

func sumCompleted(classes []bookstore.ClassResult) int {
	n := 0
	for _, c := range classes {
		n += c.Completed
	}
	return n
}
