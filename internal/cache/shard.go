package cache

import (
	"container/heap"
	"sync"
	"time"
)

// limits are what a shard takes from the Config.
type limits struct {
	budget   int64 // the shard's share of MaxBytes
	maxEntry int64 // the longest response it stores
	policy   Policy
}

// counters are a shard's tallies, as Stats reports them.
type counters struct {
	hits, misses, puts, refused                     uint64
	evictions, expirations, invalidations, removals uint64
}

// add adds o's tallies to c's.
func (c *counters) add(o counters) {
	c.hits += o.hits
	c.misses += o.misses
	c.puts += o.puts
	c.refused += o.refused
	c.evictions += o.evictions
	c.expirations += o.expirations
	c.invalidations += o.invalidations
	c.removals += o.removals
}

// node is the store's record of one entry.
type node struct {
	key    string
	hash   uint64
	entry  *Entry
	next   *node       // the next node whose key has the same hash
	links  []tableLink // one per entry.Tables, in its order
	charge int64       // chargeOf(key, entry)
	freq   uint64      // the Puts and hits of the key
	// rank is the entry's place under the policy as of its last Put or hit. A hit only
	// raises it, and leaves the heap alone: the heap orders nodes by heapRank, the rank
	// at the last heap fix, and eviction brings a stale heapRank up to date when it
	// reaches the top.
	rank, heapRank rank
	pos            int // index in the shard's heap
}

// rank orders entries for eviction: the lowest priority first, then the least recently
// used.
type rank struct {
	prio float64 // the policy's priority
	used uint64  // the shard's tick at the last Put or hit
}

// below reports whether r is evicted before o.
func (r rank) below(o rank) bool {
	if r.prio != o.prio {
		return r.prio < o.prio
	}
	return r.used < o.used
}

// newNode returns the record of e under key, whose hash is h.
func newNode(key string, h uint64, e *Entry) *node {
	return &node{
		key:    key,
		hash:   h,
		entry:  e,
		links:  make([]tableLink, len(e.Tables)),
		charge: chargeOf(key, e),
		freq:   1,
	}
}

// tableLink is a node's place in the list of entries that read one table.
type tableLink struct {
	n          *node
	prev, next *tableLink
}

// shard is one part of a store: the entries whose key hashes to it, ranked in a heap,
// with their table index, under one mutex.
type shard struct {
	mu sync.Mutex
	// nodes are the entries by key hash; entries whose keys share a hash chain through
	// node.next.
	nodes map[uint64]*node
	// nodesPeak is the most hashes nodes has held since it was made.
	nodesPeak int
	// order is a min-heap of the entries by heapRank.
	order nodeHeap
	// tables are the heads of each table's list of entries that read it.
	tables map[string]*tableLink
	// tablesPeak is the most tables has held since it was made.
	tablesPeak int
	limits
	// bytes are the charges of the entries and the index, at most budget.
	bytes int64
	// inflation is GreedyDual's L: the priority of the last entry evicted.
	inflation float64
	// tick counts Puts and hits; it orders entries by recency.
	tick uint64
	// retired is set when Reconfigure has moved the entries to new shards.
	retired bool
	counters
}

// newShard returns an empty shard bounded by l.
func newShard(l limits) *shard {
	return &shard{nodes: make(map[uint64]*node), tables: make(map[string]*tableLink), limits: l}
}

// findLocked returns the node under key, whose hash is h, or nil.
func (sh *shard) findLocked(h uint64, key []byte) *node {
	for n := sh.nodes[h]; n != nil; n = n.next {
		if n.key == string(key) {
			return n
		}
	}
	return nil
}

// sameKeyLocked returns the node under n's key, other than n, or nil.
func (sh *shard) sameKeyLocked(n *node) *node {
	for o := sh.nodes[n.hash]; o != nil; o = o.next {
		if o.key == n.key {
			return o
		}
	}
	return nil
}

// getLocked is Get within the shard.
func (sh *shard) getLocked(h uint64, key []byte, now time.Time) *Entry {
	n := sh.findLocked(h, key)
	if n == nil {
		sh.misses++
		return nil
	}
	if e := n.entry; !e.Expires.IsZero() && !now.Before(e.Expires) {
		sh.removeLocked(n)
		sh.expirations++
		sh.misses++
		return nil
	}
	sh.hits++
	n.freq++
	sh.touchLocked(n)
	return n.entry
}

// putLocked stores n, replacing the node under its key, after evicting what it takes to
// make room. It returns false when n is too large for the shard.
func (sh *shard) putLocked(n *node) bool {
	if old := sh.sameKeyLocked(n); old != nil {
		n.freq += old.freq
		sh.removeLocked(old)
	}
	need := n.charge + indexBound(n.entry)
	if int64(len(n.entry.Response)) > sh.maxEntry || need > sh.budget {
		sh.refused++
		return false
	}
	for sh.bytes+need > sh.budget && len(sh.order) > 0 {
		sh.evictLocked()
	}
	sh.touchLocked(n)
	n.heapRank = n.rank
	sh.insertLocked(n)
	sh.puts++
	return true
}

// touchLocked marks n used now and ranks it under the shard's policy.
func (sh *shard) touchLocked(n *node) {
	sh.tick++
	n.rank.used = sh.tick
	sh.rankLocked(n)
}

// rankLocked sets n's priority under the shard's policy: for CostAware, GreedyDual's
// L + frequency × cost / size, in seconds per byte; for LRU, its recency.
func (sh *shard) rankLocked(n *node) {
	if sh.policy == LRU {
		n.rank.prio = float64(n.rank.used)
		return
	}
	n.rank.prio = sh.inflation + float64(n.freq)*n.entry.Cost.Seconds()/float64(n.charge)
}

// insertLocked adds n, ranked, to the map, the heap and the table index, and charges it.
func (sh *shard) insertLocked(n *node) {
	n.next = sh.nodes[n.hash]
	sh.nodes[n.hash] = n
	sh.nodesPeak = max(sh.nodesPeak, len(sh.nodes))
	heap.Push(&sh.order, n)
	sh.linkLocked(n)
	sh.bytes += n.charge
}

// removeLocked takes n out of the map, the heap and the table index, and uncharges it.
func (sh *shard) removeLocked(n *node) {
	heap.Remove(&sh.order, n.pos)
	sh.unchainLocked(n)
	sh.unlinkLocked(n)
	sh.bytes -= n.charge
	sh.compactLocked()
}

// evictLocked removes the entry of lowest rank; under CostAware, L rises to its
// priority. A node at the top whose heapRank is stale is moved down to its rank first:
// heap ranks are never above ranks, so a top whose heapRank is current is the lowest.
func (sh *shard) evictLocked() {
	n := sh.order[0]
	for n.heapRank != n.rank {
		n.heapRank = n.rank
		heap.Fix(&sh.order, 0)
		n = sh.order[0]
	}
	if sh.policy == CostAware {
		sh.inflation = n.rank.prio
	}
	sh.removeLocked(n)
	sh.evictions++
}

// unchainLocked takes n out of its hash's chain.
func (sh *shard) unchainLocked(n *node) {
	head := sh.nodes[n.hash]
	switch {
	case head == n && n.next == nil:
		delete(sh.nodes, n.hash)
	case head == n:
		sh.nodes[n.hash] = n.next
	default:
		p := head
		for p.next != n {
			p = p.next
		}
		p.next = n.next
	}
	n.next = nil
}

// linkLocked puts n at the head of the list of each table it read, charging a table new
// to the index.
func (sh *shard) linkLocked(n *node) {
	for i, t := range n.entry.Tables {
		l := &n.links[i]
		head := sh.tables[t]
		if head == nil {
			sh.bytes += tableBytes(t)
		} else {
			head.prev = l
		}
		*l = tableLink{n: n, next: head}
		sh.tables[t] = l
	}
	sh.tablesPeak = max(sh.tablesPeak, len(sh.tables))
}

// unlinkLocked takes n out of the list of each table it read, uncharging a table left
// with no entries.
func (sh *shard) unlinkLocked(n *node) {
	for i, t := range n.entry.Tables {
		l := &n.links[i]
		switch {
		case l.prev != nil:
			l.prev.next = l.next
		case l.next != nil:
			sh.tables[t] = l.next
		default:
			delete(sh.tables, t)
			sh.bytes -= tableBytes(t)
		}
		if l.next != nil {
			l.next.prev = l.prev
		}
		*l = tableLink{}
	}
}

// invalidateLocked removes every entry that read table and returns how many.
func (sh *shard) invalidateLocked(table string) int {
	removed := 0
	for l := sh.tables[table]; l != nil; l = sh.tables[table] {
		sh.removeLocked(l.n)
		removed++
	}
	sh.invalidations += uint64(removed)
	return removed
}

// configureLocked applies new limits: it re-ranks the entries when the policy changes
// and evicts down to the new budget.
func (sh *shard) configureLocked(l limits) {
	rerank := l.policy != sh.policy
	sh.limits = l
	if rerank {
		for _, n := range sh.order {
			sh.rankLocked(n)
			n.heapRank = n.rank
		}
		heap.Init(&sh.order)
	}
	for sh.bytes > sh.budget && len(sh.order) > 0 {
		sh.evictLocked()
	}
}

// compactMin is the size under which the shard's map and heap are never rebuilt.
const compactMin = 256

// compactLocked rebuilds the map, the heap or the index once it holds under half of its
// peak, since Go's maps and slices keep their memory when they empty. The charges of
// nodeSlotBytes, heapSlotBytes and tableSlotBytes assume so. Each rebuild follows at least
// as many removals as it copies entries.
func (sh *shard) compactLocked() {
	if n := len(sh.nodes); sh.nodesPeak > compactMin && n < sh.nodesPeak/2 {
		nodes := make(map[uint64]*node, n)
		for h, nd := range sh.nodes {
			nodes[h] = nd
		}
		sh.nodes, sh.nodesPeak = nodes, n
	}
	if n := len(sh.order); cap(sh.order) > compactMin && n < cap(sh.order)/2 {
		sh.order = append(make(nodeHeap, 0, n+n/4), sh.order...)
	}
	if n := len(sh.tables); sh.tablesPeak > compactMin && n < sh.tablesPeak/2 {
		tables := make(map[string]*tableLink, n)
		for t, l := range sh.tables {
			tables[t] = l
		}
		sh.tables, sh.tablesPeak = tables, n
	}
}

// nodeHeap is a min-heap of nodes by heapRank; each node knows its index.
type nodeHeap []*node

func (h nodeHeap) Len() int { return len(h) }

func (h nodeHeap) Less(i, j int) bool { return h[i].heapRank.below(h[j].heapRank) }

func (h nodeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos = i
	h[j].pos = j
}

// Push appends x, a *node.
func (h *nodeHeap) Push(x any) {
	n := x.(*node)
	n.pos = len(*h)
	*h = append(*h, n)
}

// Pop removes the last node.
func (h *nodeHeap) Pop() any {
	old := *h
	n := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	n.pos = -1
	return n
}
