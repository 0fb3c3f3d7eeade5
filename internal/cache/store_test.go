package cache

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// t0 is the tests' fixed now.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// entry returns an entry of a size-byte response reading tables.
func entry(size int, cost time.Duration, tables ...string) *Entry {
	return &Entry{Response: make([]byte, size), Tables: tables, Cost: cost, Filled: t0}
}

func TestPutGet(t *testing.T) {
	s := New(Config{MaxBytes: 1 << 20})
	e := entry(100, time.Millisecond, "db.t")
	key := []byte("SELECT 1")
	if !s.Put(key, e) {
		t.Fatal("Put refused a small entry")
	}
	key[0] = 'X' // the store holds its own copy
	if got := s.Get([]byte("SELECT 1"), t0); got != e {
		t.Errorf("Get = %p, want the entry put, %p", got, e)
	}
	if got := s.Get([]byte("SELECT 2"), t0); got != nil {
		t.Errorf("Get of another key = %v, want nil", got)
	}
	st := s.Stats()
	if st.Entries != 1 || st.Hits != 1 || st.Misses != 1 || st.Puts != 1 {
		t.Errorf("Stats = %+v, want 1 entry, 1 hit, 1 miss, 1 put", st)
	}
	if want := chargeOf("SELECT 1", e) + tableBytes("db.t"); st.Bytes != want {
		t.Errorf("Bytes = %d, want %d", st.Bytes, want)
	}
	checkStore(t, s, 1<<20)
}

func TestPutReplaces(t *testing.T) {
	s := New(Config{MaxBytes: 1 << 20})
	key := []byte("k")
	s.Put(key, entry(1000, time.Millisecond, "db.a"))
	second := entry(10, time.Millisecond, "db.b")
	s.Put(key, second)
	if got := s.Get(key, t0); got != second {
		t.Errorf("Get = %p, want the second entry %p", got, second)
	}
	st := s.Stats()
	if want := chargeOf("k", second) + tableBytes("db.b"); st.Entries != 1 || st.Bytes != want {
		t.Errorf("Stats = %d entries, %d bytes; want 1, %d", st.Entries, st.Bytes, want)
	}
	if n := s.InvalidateTable("db.a"); n != 0 {
		t.Errorf("InvalidateTable of the replaced entry's table removed %d, want 0", n)
	}
	checkStore(t, s, 1<<20)
}

func TestPutRefuses(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		size int
		want bool
	}{
		{"at MaxEntryBytes", Config{MaxBytes: 1 << 20, MaxEntryBytes: 1000}, 1000, true},
		{"over MaxEntryBytes", Config{MaxBytes: 1 << 20, MaxEntryBytes: 1000}, 1001, false},
		{"default MaxEntryBytes", Config{MaxBytes: 1 << 20}, 1<<20/128 + 1, false},
		{"larger than MaxBytes", Config{MaxBytes: 4096, MaxEntryBytes: 8192}, 4096, false},
		{"MaxBytes zero", Config{MaxEntryBytes: 10}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.cfg)
			key := []byte("k")
			s.Put(key, entry(1, 0))
			if got := s.Put(key, entry(tt.size, time.Second)); got != tt.want {
				t.Fatalf("Put of %d bytes = %v, want %v", tt.size, got, tt.want)
			}
			st := s.Stats()
			if !tt.want {
				if st.Refused == 0 {
					t.Error("refusal not counted")
				}
				if s.Get(key, t0) != nil || st.Entries != 0 {
					t.Error("a refused Put left the entry it replaces")
				}
			}
			checkStore(t, s, max(tt.cfg.MaxBytes, 0))
		})
	}
}

func TestExpiry(t *testing.T) {
	tests := []struct {
		name    string
		expires time.Time
		now     time.Time
		hit     bool
	}{
		{"no TTL", time.Time{}, t0.Add(1000 * time.Hour), true},
		{"before", t0.Add(time.Second), t0.Add(time.Second - 1), true},
		{"at", t0.Add(time.Second), t0.Add(time.Second), false},
		{"after", t0.Add(time.Second), t0.Add(time.Minute), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Config{MaxBytes: 1 << 20})
			e := entry(10, time.Millisecond, "db.t")
			e.Expires = tt.expires
			key := []byte("k")
			s.Put(key, e)
			got := s.Get(key, tt.now)
			if (got != nil) != tt.hit {
				t.Fatalf("Get at %v = %v, want hit %v", tt.now.Sub(t0), got, tt.hit)
			}
			st := s.Stats()
			if !tt.hit && (st.Entries != 0 || st.Bytes != 0 || st.Expirations != 1 || st.Misses != 1) {
				t.Errorf("after an expired Get, Stats = %+v; want it removed and counted", st)
			}
			if !tt.hit && s.Get(key, t0) != nil {
				t.Error("the expired entry is still there at an earlier time")
			}
			checkStore(t, s, 1<<20)
		})
	}
}

func TestRemove(t *testing.T) {
	s := New(Config{MaxBytes: 1 << 20})
	s.Put([]byte("a"), entry(10, 0, "db.t"))
	s.Put([]byte("b"), entry(10, 0, "db.t"))
	s.Remove([]byte("a"))
	s.Remove([]byte("missing"))
	if s.Get([]byte("a"), t0) != nil || s.Get([]byte("b"), t0) == nil {
		t.Error("Remove took the wrong entry")
	}
	if st := s.Stats(); st.Removals != 1 || st.Entries != 1 {
		t.Errorf("Stats = %+v, want 1 removal and 1 entry", st)
	}
	checkStore(t, s, 1<<20)
}

func TestInvalidateTable(t *testing.T) {
	s := New(Config{MaxBytes: 1 << 24})
	tables := map[string][]string{
		"a":    {"db.a"},
		"b":    {"db.b"},
		"ab":   {"db.a", "db.b"},
		"aa":   {"db.a", "db.a"}, // a self-join names its table twice
		"none": nil,
	}
	for i := range 100 { // enough keys to reach every shard
		for name, ts := range tables {
			s.Put(fmt.Appendf(nil, "%s-%d", name, i), entry(10, time.Millisecond, ts...))
		}
	}
	if n := s.InvalidateTable("db.a"); n != 300 {
		t.Errorf("InvalidateTable(db.a) removed %d, want 300", n)
	}
	checkStore(t, s, 1<<24)
	for i := range 100 {
		for name := range tables {
			gone := name == "a" || name == "ab" || name == "aa"
			if got := s.Get(fmt.Appendf(nil, "%s-%d", name, i), t0); (got == nil) != gone {
				t.Fatalf("%s-%d: present %v after invalidating db.a", name, i, got != nil)
			}
		}
	}
	if n := s.InvalidateTable("db.a"); n != 0 {
		t.Errorf("second InvalidateTable(db.a) removed %d, want 0", n)
	}
	if n := s.InvalidateTable("db.b"); n != 100 {
		t.Errorf("InvalidateTable(db.b) removed %d, want 100", n)
	}
	if st := s.Stats(); st.Invalidations != 400 || st.Entries != 100 {
		t.Errorf("Stats = %+v, want 400 invalidations and 100 entries", st)
	}
	checkStore(t, s, 1<<24)
}

// indexSize returns how many tables the store's index holds and the capacity its
// structures were last sized for.
func indexSize(s *Store) (tables, peak int) {
	for _, sh := range s.set.Load().shards {
		sh.mu.Lock()
		tables += len(sh.tables)
		peak += sh.tablesPeak
		sh.mu.Unlock()
	}
	return tables, peak
}

func TestIndexBoundedUnderChurn(t *testing.T) {
	const maxBytes = 64 << 10
	s := New(Config{MaxBytes: maxBytes, MaxEntryBytes: 512})
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 100_000 {
		// Every entry names a table never seen before, and one shared table.
		own := fmt.Sprintf("db.t%d", i)
		s.Put(fmt.Appendf(nil, "k%d", i), entry(r.IntN(512), time.Duration(r.IntN(1000))*time.Microsecond, own, "db.shared"))
	}
	st := s.Stats()
	tables, peak := indexSize(s)
	if st.Evictions < 90_000 {
		t.Fatalf("only %d evictions; the test needs churn", st.Evictions)
	}
	// Each entry holds its own table; each shard also holds db.shared.
	if shards := len(s.set.Load().shards); tables != st.Entries+shards {
		t.Errorf("index holds %d tables for %d entries in %d shards", tables, st.Entries, shards)
	}
	if peak > 2*st.Entries+compactMin*len(s.set.Load().shards) {
		t.Errorf("index sized for %d tables, holding %d", peak, tables)
	}
	checkStore(t, s, maxBytes)
	if n := s.InvalidateTable("db.shared"); n != st.Entries {
		t.Errorf("InvalidateTable(db.shared) removed %d of %d entries", n, st.Entries)
	}
	if tables, _ := indexSize(s); tables != 0 || s.Stats().Bytes != 0 {
		t.Errorf("empty store holds %d tables, %d bytes; want none", tables, s.Stats().Bytes)
	}
}

func TestGetAllocatesNothing(t *testing.T) {
	s := New(Config{MaxBytes: 1 << 20})
	key := []byte("SELECT c FROM sbtest1 WHERE id BETWEEN 4973 AND 5072 ORDER BY c")
	s.Put(key, entry(100, time.Millisecond, "sbtest.sbtest1"))
	for _, k := range [][]byte{key, []byte("a miss")} {
		if n := testing.AllocsPerRun(1000, func() { s.Get(k, t0) }); n != 0 {
			t.Errorf("Get(%q): %.1f allocations, want 0", k, n)
		}
	}
}

func TestPlan(t *testing.T) {
	tests := []struct {
		cfg        Config
		wantShards int
		wantEntry  int64
	}{
		{Config{MaxBytes: 256 << 20}, 16, 2 << 20},
		{Config{MaxBytes: 256 << 20, MaxEntryBytes: 4 << 20}, 8, 4 << 20},
		{Config{MaxBytes: 1 << 20, MaxEntryBytes: 1 << 20}, 1, 1 << 20},
		{Config{MaxBytes: -1}, 16, 0},
	}
	for _, tt := range tests {
		n, l := plan(tt.cfg)
		if n != tt.wantShards || l.maxEntry != tt.wantEntry || int64(n)*l.budget > max(tt.cfg.MaxBytes, 0) {
			t.Errorf("plan(%+v) = %d shards, %+v; want %d shards, max entry %d", tt.cfg, n, l, tt.wantShards, tt.wantEntry)
		}
	}
}

func TestReconfigure(t *testing.T) {
	fill := func(s *Store) {
		for i := range 2000 {
			s.Put(fmt.Appendf(nil, "k%d", i), entry(200+i%300, time.Duration(i)*time.Microsecond, "db.t"))
		}
	}
	tests := []struct {
		name       string
		from, to   Config
		wantShards int
	}{
		{"shrink in place", Config{MaxBytes: 1 << 20}, Config{MaxBytes: 256 << 10}, 16},
		{"grow in place", Config{MaxBytes: 256 << 10}, Config{MaxBytes: 1 << 20}, 16},
		{"fewer shards", Config{MaxBytes: 1 << 20}, Config{MaxBytes: 256 << 10, MaxEntryBytes: 16 << 10}, 2},
		{"more shards", Config{MaxBytes: 256 << 10, MaxEntryBytes: 32 << 10}, Config{MaxBytes: 1 << 20}, 16},
		{"to LRU", Config{MaxBytes: 512 << 10}, Config{MaxBytes: 256 << 10, Policy: LRU}, 16},
		{"to cost aware", Config{MaxBytes: 512 << 10, Policy: LRU}, Config{MaxBytes: 256 << 10}, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.from)
			fill(s)
			before := s.Stats()
			s.Reconfigure(tt.to)
			checkStore(t, s, tt.to.MaxBytes)
			after := s.Stats()
			if got := len(s.set.Load().shards); got != tt.wantShards {
				t.Errorf("%d shards, want %d", got, tt.wantShards)
			}
			if after.Puts != before.Puts || after.Hits != before.Hits {
				t.Errorf("counters lost: before %+v, after %+v", before, after)
			}
			if evicted := after.Evictions - before.Evictions; uint64(before.Entries-after.Entries) != evicted {
				t.Errorf("%d entries fewer, %d evictions counted", before.Entries-after.Entries, evicted)
			}
			if after.Entries == 0 {
				t.Fatal("no entries left")
			}
			// What is left is still found, and the index still reaches it.
			found := 0
			for i := range 2000 {
				if s.Get(fmt.Appendf(nil, "k%d", i), t0) != nil {
					found++
				}
			}
			if found != after.Entries {
				t.Errorf("Get finds %d of %d entries", found, after.Entries)
			}
			if n := s.InvalidateTable("db.t"); n != after.Entries {
				t.Errorf("InvalidateTable removed %d of %d entries", n, after.Entries)
			}
			fill(s)
			checkStore(t, s, tt.to.MaxBytes)
		})
	}
}

// TestReconfigureRanks checks that a policy change re-ranks what is held: under LRU the
// costly entry put first goes first; under CostAware the cheap ones go.
func TestReconfigureRanks(t *testing.T) {
	s := newStore(1, limits{budget: 1 << 20, maxEntry: 1 << 20, policy: LRU})
	s.Put([]byte("costly"), entry(1000, time.Second))
	for i := range 20 {
		s.Put(fmt.Appendf(nil, "cheap%d", i), entry(1000, time.Microsecond))
	}
	small := 10 * (chargeOf("cheap00", entry(1000, 0)))
	s.Reconfigure(Config{MaxBytes: small, MaxEntryBytes: 1000})
	if s.Get([]byte("costly"), t0) == nil {
		t.Error("CostAware evicted the costly entry on reconfiguration")
	}
	s.Reconfigure(Config{MaxBytes: small, MaxEntryBytes: 1000, Policy: LRU})
	s.Get([]byte("cheap19"), t0) // now the newest
	s.Reconfigure(Config{MaxBytes: small / 3, MaxEntryBytes: 1000, Policy: LRU})
	if s.Get([]byte("cheap19"), t0) == nil {
		t.Error("LRU evicted the entry hit last")
	}
	checkStore(t, s, small/3)
}

// TestRandomOperations runs a random mix of every operation against a model of what the
// store may hold, checking its structures as it goes.
func TestRandomOperations(t *testing.T) {
	const maxBytes = 48 << 10
	s := New(Config{MaxBytes: maxBytes, MaxEntryBytes: 1024})
	r := rand.New(rand.NewPCG(3, 4))
	model := map[string]*Entry{} // the last entry put under each key
	tableNames := []string{"db.a", "db.b", "db.c", "db.d"}
	for i := range 50_000 {
		key := fmt.Appendf(nil, "k%d", r.IntN(500))
		switch op := r.IntN(10); {
		case op < 4:
			e := entry(r.IntN(1200), time.Duration(r.IntN(1e6)), tableNames[:r.IntN(len(tableNames)+1)]...)
			if r.IntN(4) == 0 {
				e.Expires = t0.Add(time.Duration(r.IntN(100)) * time.Second)
			}
			if s.Put(key, e) {
				model[string(key)] = e
			} else {
				delete(model, string(key))
			}
		case op < 8:
			now := t0.Add(time.Duration(r.IntN(100)) * time.Second)
			got := s.Get(key, now)
			if got != nil && got != model[string(key)] {
				t.Fatalf("op %d: Get(%s) returned an entry not the last put", i, key)
			}
			if got != nil && !got.Expires.IsZero() && !now.Before(got.Expires) {
				t.Fatalf("op %d: Get(%s) returned an expired entry", i, key)
			}
		case op < 9:
			s.Remove(key)
			delete(model, string(key))
		default:
			s.InvalidateTable(tableNames[r.IntN(len(tableNames))])
		}
		if i%1000 == 0 {
			checkStore(t, s, maxBytes)
		}
	}
	checkStore(t, s, maxBytes)
}

func TestConcurrentUse(t *testing.T) {
	const maxBytes = 64 << 10
	s := New(Config{MaxBytes: maxBytes, MaxEntryBytes: 1024})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 5))
			for range 5000 {
				key := fmt.Appendf(nil, "k%d", r.IntN(300))
				switch r.IntN(8) {
				case 0, 1, 2:
					s.Put(key, entry(r.IntN(1024), time.Duration(r.IntN(1e6)), "db.a"))
				case 3, 4, 5:
					if e := s.Get(key, t0); e != nil {
						_ = e.Response[len(e.Response)/2:]
					}
				case 6:
					s.InvalidateTable("db.a")
				default:
					if s.Stats().Bytes > maxBytes {
						t.Error("store over its bound")
					}
				}
			}
		})
	}
	// Reconfigure between one and two shards' worth of MaxEntryBytes while they run.
	wg.Go(func() {
		for i := range 50 {
			cfg := Config{MaxBytes: maxBytes, MaxEntryBytes: 1024 << (i % 3), Policy: Policy(i % 2)}
			s.Reconfigure(cfg)
		}
	})
	wg.Wait()
	checkStore(t, s, maxBytes)
}

// TestHashCollisions puts keys of one hash into a shard, as two keys whose 64-bit
// hashes collide would be.
func TestHashCollisions(t *testing.T) {
	sh := newShard(limits{budget: 1 << 20, maxEntry: 1 << 20})
	set := &shardSet{shards: []*shard{sh}, shift: 64}
	keys := []string{"a", "b", "c"}
	entries := map[string]*Entry{}
	for _, k := range keys {
		entries[k] = entry(10, time.Millisecond, "db.t")
		sh.putLocked(newNode(k, 42, entries[k]))
	}
	for _, k := range keys {
		if got := sh.getLocked(42, []byte(k), t0); got != entries[k] {
			t.Errorf("get %q = %p, want %p", k, got, entries[k])
		}
	}
	if sh.getLocked(42, []byte("d"), t0) != nil {
		t.Error("a key of the same hash, never put, was found")
	}
	sh.removeLocked(sh.findLocked(42, []byte("b"))) // from the middle of the chain
	replacement := entry(20, time.Millisecond)
	sh.putLocked(newNode("c", 42, replacement))
	if sh.findLocked(42, []byte("b")) != nil || sh.getLocked(42, []byte("a"), t0) != entries["a"] ||
		sh.getLocked(42, []byte("c"), t0) != replacement {
		t.Error("chain wrong after a removal and a replacement")
	}
	if err := sh.checkLocked(set, 0); err != "" {
		t.Error(err)
	}
}

func TestAllocBytes(t *testing.T) {
	tests := []struct{ n, want int64 }{
		{0, 0}, {1, 8}, {8, 8}, {9, 16}, {100, 112}, {1000, 1024}, {1025, 1152},
		{32768, 32768}, {32769, 40960}, {1 << 20, 1 << 20},
	}
	for _, tt := range tests {
		if got := allocBytes(tt.n); got != tt.want {
			t.Errorf("allocBytes(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
}
