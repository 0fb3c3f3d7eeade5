package estimator

import (
	"maps"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Shards hold about shardTypes types each, so that copying one to change it stays cheap;
// there are at least minShards and at most maxShards, a power of two, fixed when the table
// is made.
const (
	shardTypes = 16
	minShards  = 64
	maxShards  = 8192
)

// shardCount returns the number of shards for a table of maxTypes types.
func shardCount(maxTypes int) int {
	n := (maxTypes + shardTypes - 1) / shardTypes
	n = 1 << bits.Len(uint(max(n, 1)-1)) // the next power of two
	return min(max(n, minShards), maxShards)
}

// shard is one part of the table's map. Readers load the map without a lock; the map is never
// changed once published: a writer publishes a changed copy. Types are added and removed
// seldom (a full table takes a type only the second time it is seen), samples are recorded
// all the time, so lookups that touch no shared word are worth a copy per change.
type shard struct {
	// mu serializes writers.
	mu sync.Mutex
	// m is the published map.
	m atomic.Pointer[map[Key]*entry]
	// pad keeps neighbouring shards off one cache line pair.
	_ [128 - (unsafe.Sizeof(sync.Mutex{})+unsafe.Sizeof(atomic.Pointer[int]{}))%128]byte
}

// noTypes is the map of an empty shard; never written.
var noTypes = map[Key]*entry{}

func (sh *shard) load() map[Key]*entry {
	return *sh.m.Load()
}

// putLocked publishes a copy of the map with key mapped to e.
func (sh *shard) putLocked(key Key, e *entry) {
	m := make(map[Key]*entry, len(sh.load())+1)
	maps.Copy(m, sh.load())
	m[key] = e
	sh.m.Store(&m)
}

// deleteLocked publishes a copy of the map without key.
func (sh *shard) deleteLocked(key Key) {
	m := maps.Clone(sh.load())
	delete(m, key)
	sh.m.Store(&m)
}

// clearLocked publishes an empty map and returns how many types the old one held.
func (sh *shard) clearLocked() int {
	m := noTypes
	old := sh.m.Swap(&m)
	if old == nil { // not yet published
		return 0
	}
	return len(*old)
}
