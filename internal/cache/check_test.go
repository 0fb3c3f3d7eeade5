package cache

import (
	"hash/maphash"
	"testing"
)

// checkStore fails t unless every shard's map, heap, table index and byte count agree,
// and the bytes are within the shard's budget and the store's bound.
func checkStore(t testing.TB, s *Store, maxBytes int64) {
	t.Helper()
	s.reshape.RLock()
	defer s.reshape.RUnlock()
	set := s.set.Load()
	var total int64
	for i, sh := range set.shards {
		sh.mu.Lock()
		if err := sh.checkLocked(set, i); err != "" {
			t.Errorf("shard %d: %s", i, err)
		}
		total += sh.bytes
		sh.mu.Unlock()
	}
	if total > maxBytes {
		t.Errorf("store holds %d bytes, bound %d", total, maxBytes)
	}
}

// checkLocked returns what is wrong with the shard, the i-th of set, or "".
func (sh *shard) checkLocked(set *shardSet, i int) string {
	if sh.bytes > sh.budget {
		return "bytes over budget"
	}
	want := int64(0)
	links := 0
	for j, n := range sh.order {
		if n.pos != j {
			return "heap position wrong"
		}
		if j > 0 && sh.order.Less(j, (j-1)/2) {
			return "heap order broken"
		}
		if n.rank.below(n.heapRank) {
			return "heap rank above the rank"
		}
		if int(n.hash>>set.shift) != i {
			return "node in the wrong shard"
		}
		found := false
		for o := sh.nodes[n.hash]; o != nil; o = o.next {
			found = found || o == n
		}
		if !found {
			return "node missing from the map"
		}
		want += n.charge
		links += len(n.entry.Tables)
	}
	chained := 0
	for h, n := range sh.nodes {
		for ; n != nil; n = n.next {
			if n.hash != h || n.pos < 0 || n.pos >= len(sh.order) || sh.order[n.pos] != n {
				return "map holds a node not in the heap"
			}
			chained++
		}
	}
	if chained != len(sh.order) {
		return "map and heap hold different counts"
	}
	listed := 0
	for table, head := range sh.tables {
		if head == nil || head.prev != nil {
			return "bad list head for " + table
		}
		want += tableBytes(table)
		for l := head; l != nil; l = l.next {
			if l.next != nil && l.next.prev != l {
				return "broken list for " + table
			}
			if !names(l.n, l, table) {
				return "link in the wrong list " + table
			}
			listed++
		}
	}
	if listed != links {
		return "index links differ from the entries' tables"
	}
	if want != sh.bytes {
		return "bytes differ from the sum of charges"
	}
	return ""
}

// names reports whether l is n's link for table.
func names(n *node, l *tableLink, table string) bool {
	for i := range n.links {
		if &n.links[i] == l {
			return n.entry.Tables[i] == table
		}
	}
	return false
}

// maphashOf returns key's hash in s.
func maphashOf(s *Store, key string) uint64 { return maphash.String(s.seed, key) }
