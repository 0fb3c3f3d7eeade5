package cache

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Config bounds a Store and picks its eviction policy.
type Config struct {
	// MaxBytes bounds every byte the store holds: keys, responses, table names, the
	// entries and the store's per-entry structures. Zero or less stores nothing.
	MaxBytes int64
	// MaxEntryBytes refuses longer responses. Zero or less means MaxBytes/128.
	MaxEntryBytes int
	// Policy picks what to evict; the zero value is CostAware.
	Policy Policy
}

// Entry is one stored result. It is immutable once Put: readers use it without a lock,
// and the caller must not change it, nor its Response or Tables, afterwards.
type Entry struct {
	// Response is the response's packets as sent, headers included.
	Response []byte
	// Tables are the schema.table keys the result read, for InvalidateTable.
	Tables []string
	// Stamp is the caller's consistency stamp, such as the positions the result reflects.
	// The store neither reads it nor charges what it points to.
	Stamp any
	// Cost is what the statement costs the database, the caller's estimate: the value of
	// a hit, and CostAware's reason to keep the entry.
	Cost time.Duration
	// Type is the caller's request-type key, for its per-type statistics.
	Type uint64
	// Filled is when the result was read.
	Filled time.Time
	// Expires is when Get stops returning the entry; zero means never.
	Expires time.Time
}

// Stats are the store's size and counters since New.
type Stats struct {
	Entries int   // entries held
	Bytes   int64 // bytes charged, at most Config.MaxBytes
	Hits    uint64
	Misses  uint64 // Get found nothing, or found it expired
	Puts    uint64 // entries stored
	// Refused counts Puts of an entry too large: a response over MaxEntryBytes, or an
	// entry that would not fit the store empty.
	Refused       uint64
	Evictions     uint64 // entries evicted to make room
	Expirations   uint64 // entries Get found past Expires and removed
	Invalidations uint64 // entries InvalidateTable removed
	Removals      uint64 // entries Remove removed
	Coalesced     uint64 // Fill calls that joined a fill in flight instead of leading
}

// Store is a memory-bounded, concurrency-safe store of query results. Build it with New.
type Store struct {
	seed maphash.Seed
	// set is the current shards; Reconfigure replaces it when the shard count changes.
	set atomic.Pointer[shardSet]

	// reshape keeps the operations that visit every shard (read) apart from Reconfigure
	// (write), so that they never see a shard set being replaced.
	reshape sync.RWMutex
	// retired are the counters of the shards Reconfigure replaced.
	retired counters

	// flightMu guards the fills in flight, by key, and the count of callers that joined one.
	flightMu  sync.Mutex
	flights   map[string]*Fill
	coalesced uint64
}

// New returns an empty store bounded by cfg.
func New(cfg Config) *Store {
	n, l := plan(cfg)
	return newStore(n, l)
}

// newStore returns an empty store of n shards (a power of two).
func newStore(n int, l limits) *Store {
	s := &Store{seed: maphash.MakeSeed(), flights: make(map[string]*Fill)}
	s.set.Store(newShardSet(n, l))
	return s
}

// Get returns the entry stored under key, or nil when there is none or it has expired by
// now (an expired entry is removed). A hit counts toward the entry's frequency and
// recency. It allocates nothing.
func (s *Store) Get(key []byte, now time.Time) *Entry {
	h := maphash.Bytes(s.seed, key)
	sh := s.lock(h)
	defer sh.mu.Unlock()
	return sh.getLocked(h, key, now)
}

// Put stores e under a copy of key, replacing any entry there, and evicts by the policy
// until it fits. It returns false, and counts a refusal, when e's response is over
// MaxEntryBytes or the entry would not fit the store empty; an entry the key held before
// is removed then too, since the caller is replacing it.
func (s *Store) Put(key []byte, e *Entry) bool {
	if e == nil {
		return false
	}
	n := newNode(string(key), maphash.Bytes(s.seed, key), e)
	sh := s.lock(n.hash)
	defer sh.mu.Unlock()
	return sh.putLocked(n)
}

// Remove removes the entry under key, if any, for a caller that found it stale.
func (s *Store) Remove(key []byte) {
	h := maphash.Bytes(s.seed, key)
	sh := s.lock(h)
	defer sh.mu.Unlock()
	if n := sh.findLocked(h, key); n != nil {
		sh.removeLocked(n)
		sh.removals++
	}
}

// InvalidateTable removes every entry that read table and returns how many it removed.
// Fills in flight are not affected: a result read before the write that invalidated
// table is stored when its Fill is done, and the caller's Stamp must tell it apart.
func (s *Store) InvalidateTable(table string) int {
	s.reshape.RLock()
	defer s.reshape.RUnlock()
	removed := 0
	for _, sh := range s.set.Load().shards {
		sh.mu.Lock()
		removed += sh.invalidateLocked(table)
		sh.mu.Unlock()
	}
	return removed
}

// Reconfigure applies new bounds and a new policy, for a configuration reload: entries
// are re-ranked under the policy and evicted at once down to the bound. Entries stored
// under an older MaxEntryBytes stay until evicted.
func (s *Store) Reconfigure(cfg Config) {
	s.reshape.Lock()
	defer s.reshape.Unlock()
	n, l := plan(cfg)
	old := s.set.Load()
	if n == len(old.shards) {
		for _, sh := range old.shards {
			sh.mu.Lock()
			sh.configureLocked(l)
			sh.mu.Unlock()
		}
		return
	}
	s.reshardLocked(old, n, l)
}

// reshardLocked moves every entry of old into n new shards bounded by l, and retires
// old. It holds every old shard's lock until the new shards are in place, so that an
// operation waiting on an old shard finds it retired and goes to the new ones. The caller
// holds reshape for writing.
func (s *Store) reshardLocked(old *shardSet, n int, l limits) {
	for _, sh := range old.shards {
		sh.mu.Lock()
	}
	// The new shards start under the old limits, so that the entries keep their ranks,
	// and then take the new ones as a reconfigured shard would.
	next := newShardSet(n, old.shards[0].limits)
	for _, sh := range old.shards {
		next.adoptLocked(sh)
		s.retired.add(sh.counters)
	}
	for _, sh := range next.shards {
		sh.configureLocked(l)
	}
	s.set.Store(next)
	for _, sh := range old.shards {
		sh.mu.Unlock()
	}
}

// Stats returns the store's size and counters.
func (s *Store) Stats() Stats {
	s.reshape.RLock()
	defer s.reshape.RUnlock()
	c := s.retired
	var st Stats
	for _, sh := range s.set.Load().shards {
		sh.mu.Lock()
		c.add(sh.counters)
		st.Entries += len(sh.order)
		st.Bytes += sh.bytes
		sh.mu.Unlock()
	}
	st.Hits, st.Misses, st.Puts, st.Refused = c.hits, c.misses, c.puts, c.refused
	st.Evictions, st.Expirations = c.evictions, c.expirations
	st.Invalidations, st.Removals = c.invalidations, c.removals
	s.flightMu.Lock()
	st.Coalesced = s.coalesced
	s.flightMu.Unlock()
	return st
}

// lock returns the shard that holds hash h, locked.
func (s *Store) lock(h uint64) *shard {
	for {
		set := s.set.Load()
		sh := set.shards[h>>set.shift]
		sh.mu.Lock()
		if !sh.retired {
			return sh
		}
		sh.mu.Unlock()
	}
}

// The shape of the shards.
const (
	// maxShards is the most shards a store is split into.
	maxShards = 16
	// minShardEntries is how many responses of MaxEntryBytes each shard must hold; the
	// store has fewer shards when its bound is too small for that.
	minShardEntries = 8
)

// plan returns how many shards cfg calls for and each one's limits.
func plan(cfg Config) (int, limits) {
	maxBytes := max(cfg.MaxBytes, 0)
	maxEntry := int64(cfg.MaxEntryBytes)
	if maxEntry <= 0 {
		maxEntry = maxBytes / (maxShards * minShardEntries)
	}
	n := maxShards
	for n > 1 && maxBytes/int64(n) < minShardEntries*maxEntry {
		n /= 2
	}
	return n, limits{budget: maxBytes / int64(n), maxEntry: maxEntry, policy: cfg.Policy}
}

// shardSet is a store's shards; a key's shard is the top bits of its hash.
type shardSet struct {
	shards []*shard
	shift  uint // 64 - log2(len(shards))
}

// newShardSet returns n empty shards (a power of two), each bounded by l.
func newShardSet(n int, l limits) *shardSet {
	set := &shardSet{shards: make([]*shard, n), shift: 64}
	for i := range set.shards {
		set.shards[i] = newShard(l)
	}
	for ; n > 1; n /= 2 {
		set.shift--
	}
	return set
}

// adoptLocked moves every entry of old, locked, into the set's shards, and retires old. The
// entries keep their frequency, recency and priority; each shard's inflation value and
// clock take the largest of those it adopts, so that both only rise.
func (set *shardSet) adoptLocked(old *shard) {
	for _, n := range old.order {
		sh := set.shards[n.hash>>set.shift]
		sh.inflation = max(sh.inflation, old.inflation)
		sh.tick = max(sh.tick, old.tick)
		n.next = nil
		sh.insertLocked(n)
	}
	old.retired = true
	old.nodes, old.order, old.tables, old.bytes = nil, nil, nil, 0
}
