package integration

import (
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/rules"
	"github.com/gatekeeperdb/gatekeeper/internal/wiring"
)

// cachedProxy starts a pooled proxy with the result cache on (cache.mode auto), which
// learns every write from the primary's binary log; replicas, when given, take reads. A
// lookup may wait up to 5 s for the primary's position and the follower: on a loaded
// machine under -race the default bound can pass, and a hit the test counts on becomes
// an unvouched miss.
func cachedProxy(t *testing.T, replicas []string, edit func(*config.Config)) *testProxy {
	t.Helper()
	p := routedProxy(t, replicas, func(c *config.Config) {
		c.Cache.Mode = config.CacheAuto
		c.Cache.Wait = 5 * time.Second
		if edit != nil {
			edit(c)
		}
	})
	waitFor(t, 10*time.Second, "the binlog follower live and the closure read", func() bool {
		policy := p.Routing()
		if _, f := policy.Writes(); f != nil {
			if l, ok := f.(interface{ Live() bool }); ok && !l.Live() {
				return false
			}
		}
		return p.Router().Versions().ClosureLoaded()
	})
	return p
}

// cacheHits returns the proxy's count of reads answered from the cache.
func cacheHits(t *testing.T, p *testProxy) float64 {
	t.Helper()
	return metricValue(t, p, "gatekeeper_cache_hits_total", nil)
}

// TestCacheHitIsTheServersAnswer runs reads of every result shape the cache keeps (text and
// binary protocol, EOF- and OK-terminated, every column type, empty results) directly and
// twice through the proxy with the cache on: the second run is a hit, and the client gets
// what the server sends directly.
func TestCacheHitIsTheServersAnswer(t *testing.T) {
	setupShapes(t)
	p := cachedProxy(t, nil, nil)
	reads := []shape{
		{name: "every column type", steps: []shapeStep{shapeQuery("SELECT * FROM shapes_types ORDER BY id")}, sets: 1},
		{name: "two columns", steps: []shapeStep{shapeQuery("SELECT id, data FROM shapes_t1")}, sets: 1},
		{name: "no rows", steps: []shapeStep{shapeQuery("SELECT * FROM shapes_t2 WHERE 1 = 0")}, sets: 1},
		{name: "binary protocol", steps: []shapeStep{
			{prepare: "s", query: "SELECT * FROM shapes_types WHERE id = ?"},
			{execute: "s", params: []any{"1"}},
			{execute: "s", params: []any{"2"}},
		}, sets: 2},
		{name: "binary protocol, no parameters", steps: []shapeStep{
			{prepare: "s", query: "SELECT s, i, d FROM shapes_t2"},
			{execute: "s"},
		}, sets: 1},
	}
	for _, sc := range shapeClients {
		t.Run(sc.name, func(t *testing.T) {
			for _, sh := range reads {
				t.Run(sh.name, func(t *testing.T) {
					want := runShape(t, env.Primary, sc, sh)
					compareTranscripts(t, runShape(t, p.Addr, sc, sh), want)
					before := cacheHits(t, p)
					compareTranscripts(t, runShape(t, p.Addr, sc, sh), want)
					if hits := cacheHits(t, p) - before; hits != float64(sh.sets) {
						t.Errorf("the second run had %v hits, want %d (one per result); refusals %s", hits, sh.sets, refusals(t, p))
					}
				})
			}
		})
	}
}

// TestCacheShapes runs the whole result-shape suite twice through a proxy with the cache
// on: what may be cached is answered from memory the second time, the rest is refused, and
// the client gets the server's own answer both times.
func TestCacheShapes(t *testing.T) {
	setupShapes(t)
	p := cachedProxy(t, nil, nil)
	for _, sc := range shapeClients {
		t.Run(sc.name, func(t *testing.T) {
			for _, sh := range shapes() {
				t.Run(sh.name, func(t *testing.T) {
					want := runShape(t, env.Primary, sc, sh)
					compareTranscripts(t, runShape(t, p.Addr, sc, sh), want)
					compareTranscripts(t, runShape(t, p.Addr, sc, sh), want)
				})
			}
		})
	}
	require.Positive(t, cacheHits(t, p), "no shape was answered from the cache")
	require.Positive(t, metricValue(t, p, "gatekeeper_cache_refusals_total", map[string]string{"reason": "warnings"}),
		"a result with warnings was not refused")
}

// TestCacheNeverStale writes to a table directly on the primary (the proxy sees only the
// binary log) and reads it through the proxy at once, over and over: each read sees the
// write, though the same read was cached just before.
func TestCacheNeverStale(t *testing.T) {
	primary := openDB(t, env.Primary, "")
	_, err := primary.Exec("CREATE TABLE IF NOT EXISTS cache_counter (id INT PRIMARY KEY, n INT NOT NULL)")
	require.NoError(t, err)
	_, err = primary.Exec("REPLACE INTO cache_counter VALUES (1, 0)")
	require.NoError(t, err)
	for _, name := range []string{"primary only", "with replicas"} {
		t.Run(name, func(t *testing.T) {
			var replicas []string
			if name == "with replicas" {
				replicas = []string{env.Replica1, env.Replica2}
			}
			p := cachedProxy(t, replicas, nil)
			db := oneConn(t, p.Addr)
			for i := 1; i <= 200; i++ {
				var n int
				require.NoError(t, db.QueryRow("SELECT n FROM cache_counter WHERE id = 1").Scan(&n))
				require.NoError(t, db.QueryRow("SELECT n FROM cache_counter WHERE id = 1").Scan(&n))
				if i%2 == 0 {
					_, err := primary.Exec("UPDATE cache_counter SET n = n + 1 WHERE id = 1")
					require.NoError(t, err)
					var want int
					require.NoError(t, primary.QueryRow("SELECT n FROM cache_counter WHERE id = 1").Scan(&want))
					require.NoError(t, db.QueryRow("SELECT n FROM cache_counter WHERE id = 1").Scan(&n))
					require.Equal(t, want, n, "read %d through the cache missed a write made directly on the primary", i)
				}
			}
			require.Positive(t, cacheHits(t, p), "the repeated read was never a hit")
			require.Positive(t, metricValue(t, p, "gatekeeper_cache_invalidations_total", nil), "no cached result was found stale")
		})
	}
}

// TestCacheConcurrentMisses sends many clients after one slow uncached result at once: one
// query runs, the others get its answer.
func TestCacheConcurrentMisses(t *testing.T) {
	p := cachedProxy(t, nil, nil)
	const clients = 20
	var wg sync.WaitGroup
	var failed atomic.Int32
	start := make(chan struct{})
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db := oneConn(t, p.Addr)
			<-start
			var v int
			if err := db.QueryRow("SELECT SLEEP(0) + COUNT(*) * 0 + 7 FROM shapes_t1 WHERE SLEEP(0.3) = 0").Scan(&v); err != nil || v != 7 {
				failed.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	require.Zero(t, failed.Load())
	// SLEEP is volatile: none of that may be cached.
	require.Zero(t, cacheHits(t, p))

	setupShapes(t)
	db := openDB(t, env.Primary, "")
	_, err := db.Exec("CREATE OR REPLACE VIEW cache_slow AS SELECT id, data FROM shapes_t1 WHERE (SELECT COUNT(*) FROM information_schema.COLUMNS) > 0")
	require.NoError(t, err)
	start = make(chan struct{})
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := oneConn(t, p.Addr)
			<-start
			var id string
			var data int
			if err := c.QueryRow("SELECT id, data FROM shapes_t1 WHERE data = 1 AND id = 'x'").Scan(&id, &data); err != nil {
				failed.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	require.Zero(t, failed.Load())
	joined := metricValue(t, p, "gatekeeper_cache_joined_total", nil)
	t.Logf("%d clients at once: %v answered by another's fill", clients, joined)
}

// TestCacheRefusesVolatileAndTransactions keeps out of the cache what may differ between
// two runs over the same data, and reads inside transactions.
func TestCacheRefusesVolatileAndTransactions(t *testing.T) {
	setupShapes(t)
	p := cachedProxy(t, nil, nil)
	db := oneConn(t, p.Addr)
	for _, q := range []string{"SELECT NOW(6), data FROM shapes_t1", "SELECT RAND(), data FROM shapes_t1",
		"SELECT CONNECTION_ID(), data FROM shapes_t1", "SELECT @@sql_mode, data FROM shapes_t1"} {
		var a, b string
		require.NoError(t, db.QueryRow(q).Scan(&a, new(int)))
		require.NoError(t, db.QueryRow(q).Scan(&b, new(int)))
	}
	require.Zero(t, cacheHits(t, p))
	require.Positive(t, metricValue(t, p, "gatekeeper_cache_refusals_total", map[string]string{"reason": "volatile"}))
	tx, err := db.Begin()
	require.NoError(t, err)
	for range 2 {
		var data int
		require.NoError(t, tx.QueryRow("SELECT data FROM shapes_t1").Scan(&data))
	}
	require.NoError(t, tx.Commit())
	require.Zero(t, cacheHits(t, p))
}

// TestCacheKeyedBySessionState gives two sessions that differ in a variable that changes
// the result their own answers.
func TestCacheKeyedBySessionState(t *testing.T) {
	setupShapes(t)
	p := cachedProxy(t, nil, nil)
	read := func(setup string) string {
		db := oneConn(t, p.Addr)
		if setup != "" {
			_, err := db.Exec(setup)
			require.NoError(t, err)
		}
		var v string
		require.NoError(t, db.QueryRow("SELECT CAST(dt AS CHAR) FROM shapes_types WHERE id = 1").Scan(&v))
		require.NoError(t, db.QueryRow("SELECT CONCAT(d / 7) FROM shapes_types WHERE id = 1").Scan(&v))
		return v
	}
	plain := read("")
	require.Equal(t, plain, read(""))
	require.Positive(t, cacheHits(t, p))
	other := read("SET SESSION div_precision_increment = 9")
	require.NotEqual(t, plain, other, "a session with another div_precision_increment got the cached result")
}

// TestCacheRules: a deny answers its error, a route to the primary is obeyed, cache: off
// keeps a statement out, and a reload swaps the rules between statements without a failed
// one.
func TestCacheRules(t *testing.T) {
	setupShapes(t)
	p := cachedProxy(t, []string{env.Replica1, env.Replica2}, func(c *config.Config) {
		c.Rules = []config.Rule{
			{Name: "no-blobs", Match: config.RuleMatch{Table: "shapes_blob"}, Deny: "blobs are read by the batch account"},
			{Name: "t2-on-primary", Match: config.RuleMatch{Table: "shapes_t2"}, Route: "primary", Cache: "off"},
		}
	})
	waitRoutable(t, p)
	db := oneConn(t, p.Addr)
	var v string
	err := db.QueryRow("SELECT id FROM shapes_blob WHERE id = 2").Scan(&v)
	require.ErrorContains(t, err, `refused by query rule "no-blobs": blobs are read by the batch account`)
	require.ErrorContains(t, err, "1148")
	for range 3 {
		var server string
		require.NoError(t, db.QueryRow("SELECT @@server_id FROM shapes_t2 LIMIT 1").Scan(&server))
	}
	hits := cacheHits(t, p)
	for range 3 {
		var s string
		require.NoError(t, db.QueryRow("SELECT s FROM shapes_t2").Scan(&s))
	}
	require.Equal(t, hits, cacheHits(t, p), "cache: off was cached")
	require.Positive(t, metricValue(t, p, "gatekeeper_cache_refusals_total", map[string]string{"reason": "rule"}))
	primaryID := serverID(t, env.Primary)
	var got string
	require.NoError(t, db.QueryRow("SELECT @@server_id, s FROM shapes_t2").Scan(&got, new(string)))
	require.Equal(t, primaryID, got, "route: primary was not obeyed")

	// A reload swaps the rules while clients read.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failures atomic.Int32
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := oneConn(t, p.Addr)
			for {
				select {
				case <-stop:
					return
				default:
				}
				var s string
				if err := c.QueryRow("SELECT s FROM shapes_t2").Scan(&s); err != nil {
					failures.Add(1)
				}
			}
		}()
	}
	for i := range 20 {
		set, _, err := wiringRules(p, []config.Rule{{Name: fmt.Sprintf("r%d", i), Match: config.RuleMatch{Table: "shapes_t2"}, Cache: "on"}})
		require.NoError(t, err)
		p.SetRules(set)
		name := fmt.Sprintf("r%d", i)
		waitFor(t, 5*time.Second, "the readers to go through rule "+name, func() bool {
			st := p.Rules().Snapshot()
			return len(st) == 1 && st[0].Name == name && st[0].Matches > 0
		})
	}
	close(stop)
	wg.Wait()
	require.Zero(t, failures.Load(), "statements failed while the rules were swapped")
	err = db.QueryRow("SELECT id FROM shapes_blob WHERE id = 2").Scan(&v)
	require.NoError(t, err, "the reloaded rules still deny")
}

// TestCacheRuleMaxConcurrent holds a rule's max_concurrent under 200 clients.
func TestCacheRuleMaxConcurrent(t *testing.T) {
	setupShapes(t)
	p := startProxy(t, func(c *config.Config) {
		c.Mode = config.ModePooled
		c.Pools.MaxOpen = 300
		c.Rules = []config.Rule{{Name: "slow-reports", Match: config.RuleMatch{Digest: "SLEEP"}, MaxConcurrent: 3}}
	})
	monitor := openDB(t, env.Primary, "")
	const clients = 200
	var wg sync.WaitGroup
	var failed atomic.Int32
	stop := make(chan struct{})
	var peak atomic.Int64
	go func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			var n int64
			if err := monitor.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(0.05) /* rule */%'").Scan(&n); err == nil {
				for {
					cur := peak.Load()
					if n <= cur || peak.CompareAndSwap(cur, n) {
						break
					}
				}
			}
		}
	}()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := sql.Open("mysql", dsn(p.Addr, ""))
			if err != nil {
				failed.Add(1)
				return
			}
			defer db.Close()
			if _, err := db.Exec("SELECT SLEEP(0.05) /* rule */"); err != nil && !strings.Contains(err.Error(), "max_concurrent") {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stop)
	require.Zero(t, failed.Load())
	require.LessOrEqual(t, peak.Load(), int64(3), "more than max_concurrent ran at once")
	require.Positive(t, peak.Load(), "the monitor never saw the statement run")
}

// serverID returns the server_id of the server at addr.
func serverID(t *testing.T, addr string) string {
	t.Helper()
	db := openDB(t, addr, "")
	var id string
	require.NoError(t, db.QueryRow("SELECT @@server_id").Scan(&id))
	return id
}

// wiringRules compiles rules as a reload does, from the proxy's rules in force.
func wiringRules(p *testProxy, rs []config.Rule) (*rules.Set, []rules.Warning, error) {
	return wiring.Rules(p.Rules(), rs)
}

// refusals lists the cache's refusals by reason, for a failure's message.
func refusals(t *testing.T, p *testProxy) string {
	t.Helper()
	var b strings.Builder
	for _, m := range []string{"misses", "invalidations", "unvouched", "joined", "fills"} {
		fmt.Fprintf(&b, "%s=%v ", m, metricValue(t, p, "gatekeeper_cache_"+m+"_total", nil))
	}
	for _, r := range []string{"in_transaction", "volatile", "session_state", "unsure", "system_schema", "session_pinned",
		"statement", "rule", "mode", "unversioned", "error", "warnings", "too_large", "state_changed"} {
		if v := metricValue(t, p, "gatekeeper_cache_refusals_total", map[string]string{"reason": r}); v > 0 {
			fmt.Fprintf(&b, "%s=%v ", r, v)
		}
	}
	return b.String()
}

// TestCacheTTLRule: a rule that asks for TTL caching with eventual consistency serves the
// result it cached, writes or not, until its time to live runs out; strong reads of the
// same table still see every write.
func TestCacheTTLRule(t *testing.T) {
	primary := openDB(t, env.Primary, "")
	_, err := primary.Exec("CREATE TABLE IF NOT EXISTS cache_ttl (id INT PRIMARY KEY, n INT NOT NULL)")
	require.NoError(t, err)
	_, err = primary.Exec("REPLACE INTO cache_ttl VALUES (1, 0)")
	require.NoError(t, err)
	p := cachedProxy(t, nil, func(c *config.Config) {
		c.Rules = []config.Rule{{Name: "ttl", Match: config.RuleMatch{Digest: "^SELECT n AS ttl_n"}, Cache: "1s", Consistency: "eventual"}}
	})
	db := oneConn(t, p.Addr)
	read := func(q string) int {
		var n int
		require.NoError(t, db.QueryRow(q).Scan(&n))
		return n
	}
	const ttlRead, strongRead = "SELECT n AS ttl_n FROM cache_ttl WHERE id = 1", "SELECT n FROM cache_ttl WHERE id = 1"
	filled := time.Now() // the TTL entry is filled after this, and lives 1s from then
	require.Equal(t, 0, read(ttlRead))
	require.Equal(t, 0, read(strongRead))
	_, err = primary.Exec("UPDATE cache_ttl SET n = 1 WHERE id = 1")
	require.NoError(t, err)
	require.Equal(t, 0, read(ttlRead), "the TTL entry was not served within its time to live")
	require.Equal(t, 1, read(strongRead), "a strong read missed the write")
	waitFor(t, 2*time.Second, "the TTL entry to expire", func() bool { return read(ttlRead) == 1 })
	require.GreaterOrEqual(t, time.Since(filled), time.Second, "the TTL entry expired before its time to live")
}
