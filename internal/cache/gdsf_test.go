package cache

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestCostAwareKeeps puts one big entry and then small ones into a store that cannot hold
// them all. CostAware keeps the big one exactly when it saves more per byte; LRU evicts it
// first whatever it cost.
func TestCostAwareKeeps(t *testing.T) {
	const bigSize, smallSize = 16 << 10, 1 << 10
	tests := []struct {
		name               string
		policy             Policy
		bigCost, smallCost time.Duration
		wantBig            bool
	}{
		{"costly big over cheap small", CostAware, time.Second, time.Millisecond, true},
		{"cheap big under costly small", CostAware, time.Millisecond, 100 * time.Millisecond, false},
		{"equal cost per byte: older goes", CostAware, 16 * time.Millisecond, time.Millisecond, false},
		{"LRU ignores cost", LRU, time.Second, time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			big := entry(bigSize, tt.bigCost)
			small := func() *Entry { return entry(smallSize, tt.smallCost) }
			budget := chargeOf("big", big) + 8*chargeOf("small00", small())
			s := newStore(1, limits{budget: budget, maxEntry: bigSize, policy: tt.policy})
			s.Put([]byte("big"), big)
			for i := range 20 {
				s.Put(fmt.Appendf(nil, "small%02d", i), small())
			}
			if got := s.Get([]byte("big"), t0) != nil; got != tt.wantBig {
				t.Errorf("big entry kept = %v, want %v", got, tt.wantBig)
			}
			// The newest small entries are always kept.
			if s.Get([]byte("small19"), t0) == nil {
				t.Error("the newest small entry was evicted")
			}
			checkStore(t, s, budget)
		})
	}
}

// TestHitsRaisePriority checks GreedyDual's frequency: of equal entries, the one hit most
// is kept.
func TestHitsRaisePriority(t *testing.T) {
	for _, policy := range []Policy{CostAware, LRU} {
		t.Run(policy.String(), func(t *testing.T) {
			e := func() *Entry { return entry(1000, time.Millisecond) }
			budget := 3 * chargeOf("k0", e())
			s := newStore(1, limits{budget: budget, maxEntry: 1000, policy: policy})
			for i := range 3 {
				s.Put(fmt.Appendf(nil, "k%d", i), e())
			}
			for range 3 {
				s.Get([]byte("k0"), t0) // the oldest, but hit
			}
			s.Put([]byte("k3"), e())
			if s.Get([]byte("k0"), t0) == nil {
				t.Error("the entry hit was evicted")
			}
			if s.Get([]byte("k1"), t0) != nil {
				t.Error("the oldest entry not hit was kept")
			}
		})
	}
}

// TestInflation checks that L rises to each evicted priority, so that an entry hit often
// long ago ages out against new ones instead of staying for ever.
func TestInflation(t *testing.T) {
	e := func() *Entry { return entry(1000, time.Millisecond) }
	budget := 4 * chargeOf("k00", e())
	s := newStore(1, limits{budget: budget, maxEntry: 1000, policy: CostAware})
	sh := s.set.Load().shards[0]
	old := []byte("old")
	s.Put(old, e())
	for range 5 {
		s.Get(old, t0)
	}
	puts := 0
	for ; sh.findLocked(maphashOf(s, "old"), old) != nil; puts++ {
		if puts == 100 {
			t.Fatal("a once-popular entry never aged out")
		}
		full := len(sh.order) == 4
		victim, before := lowest(sh).rank.prio, sh.inflation
		s.Put(fmt.Appendf(nil, "k%02d", puts), e())
		if full && sh.inflation != victim {
			t.Fatalf("put %d: L = %g after evicting priority %g", puts, sh.inflation, victim)
		}
		if sh.inflation < before {
			t.Fatalf("put %d: L fell from %g to %g", puts, before, sh.inflation)
		}
	}
	// Six uses against one: it outlives several generations of new entries.
	if puts < 8 {
		t.Errorf("the popular entry went after %d puts, as if never hit", puts)
	}
}

// lowest returns the shard's node of lowest rank, which eviction must take.
func lowest(sh *shard) *node {
	low := sh.order[0]
	for _, n := range sh.order {
		if n.rank.below(low.rank) {
			low = n
		}
	}
	return low
}

// request is one statement of a trace: its key, response size and cost.
type request struct {
	key  []byte
	size int
	cost time.Duration
}

// zipfTrace returns n requests over keys distinct keys, drawn with Zipf-like popularity
// (weight 1/rank^0.9). Each key has a size from 256 B to 16 KiB and a cost from 100 µs
// to 1 s, both log-uniform and independent, as statement results are.
func zipfTrace(n, keys int, seed uint64) []request {
	r := rand.New(rand.NewPCG(seed, 7))
	catalog := make([]request, keys)
	cum := make([]float64, keys)
	total := 0.0
	for i := range catalog {
		catalog[i] = request{
			key:  fmt.Appendf(nil, "SELECT * FROM t WHERE id = %d", i),
			size: int(256 * math.Pow(64, r.Float64())),
			cost: time.Duration(float64(100*time.Microsecond) * math.Pow(1e4, r.Float64())),
		}
		total += 1 / math.Pow(float64(i+1), 0.9)
		cum[i] = total
	}
	trace := make([]request, n)
	for i := range trace {
		u := r.Float64() * total
		lo, hi := 0, keys-1
		for lo < hi {
			mid := (lo + hi) / 2
			if cum[mid] < u {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		trace[i] = catalog[lo]
	}
	return trace
}

// replay runs trace against s as the proxy would, a Get and on a miss a Put, and returns
// the database time the hits saved and what all requests would have cost.
func replay(s *Store, trace []request) (saved, total time.Duration) {
	for _, req := range trace {
		total += req.cost
		if e := s.Get(req.key, t0); e != nil {
			saved += e.Cost
			continue
		}
		s.Put(req.key, &Entry{Response: make([]byte, req.size), Cost: req.cost})
	}
	return saved, total
}

// workingSet returns the bytes the trace's distinct keys would take in the store.
func workingSet(trace []request) int64 {
	seen := map[string]bool{}
	var bytes int64
	for _, req := range trace {
		if !seen[string(req.key)] {
			seen[string(req.key)] = true
			bytes += chargeOf(string(req.key), &Entry{Response: make([]byte, req.size)})
		}
	}
	return bytes
}

func TestCostAwareSavesMoreThanLRU(t *testing.T) {
	trace := zipfTrace(200_000, 20_000, 1)
	ws := workingSet(trace)
	for _, fraction := range []int64{20, 10} {
		maxBytes := ws / fraction
		savedBy := map[Policy]time.Duration{}
		for _, policy := range []Policy{CostAware, LRU} {
			s := New(Config{MaxBytes: maxBytes, MaxEntryBytes: 16 << 10, Policy: policy})
			saved, total := replay(s, trace)
			savedBy[policy] = saved
			t.Logf("cache 1/%d of the working set, %v: saved %.1f%% of database time",
				fraction, policy, 100*saved.Seconds()/total.Seconds())
			checkStore(t, s, maxBytes)
		}
		if savedBy[CostAware] < savedBy[LRU]*5/4 {
			t.Errorf("cache 1/%d: CostAware saved %v, LRU %v; want at least a quarter more",
				fraction, savedBy[CostAware], savedBy[LRU])
		}
	}
}
