// Package cache is a memory-bounded store of query results for a transparent result cache.
// The proxy builds a key for each cacheable statement, stores the response's packets as
// they were sent, and on a later hit relays them without asking the database. The store
// knows nothing of SQL or of the protocol: a key is bytes, a result is an Entry.
//
// Every byte the store keeps alive is charged against one bound, Config.MaxBytes: the key,
// the response, the table names, the Entry itself, and the store's own per-entry
// structures (its node, map and heap slots, the links of the table index), each rounded up
// to the allocator's size class. Stats().Bytes never exceeds the bound, so a flood of
// distinct statements costs the process at most MaxBytes.
//
// What to evict is a Policy. The default, CostAware, is GreedyDual-Size-Frequency
// (Cherkasova, "Improving WWW Proxies Performance with Greedy-Dual-Size-Frequency Caching
// Policy", HP Labs 1998): an entry's priority is L + frequency × cost / size, the entry of
// lowest priority goes first, and L, the inflation value, rises to the priority of each
// entry evicted, so that entries not hit for a while age out. A result cache exists to
// save database time; cost-aware eviction keeps the results that save the most of it per
// byte held, where LRU keeps what was used last even when it is a cheap point lookup that
// crowds out an expensive report. LRU is kept for comparison.
//
// The store is split into shards by a hash of the key (hash/maphash), each under its own
// mutex with its own map, heap and table index, so that sessions reading different keys do
// not queue on one lock. Each shard runs its own GreedyDual over its share of the bytes;
// keys hash evenly, so the shards see the same mix.
//
// A hit only raises an entry's priority, under either policy, so a hit does not touch the
// heap: it records the entry's new rank, and the heap keeps ordering the entry by the rank
// it had at the last heap fix, which is never above its true one. Eviction looks at the
// top: a top whose heap rank is current is the lowest entry and goes; a stale one is moved
// down to its rank first. A hit is then one hash, one map lookup and a few stores under
// the shard's lock, and allocates nothing; the heap work is done once per entry that
// reaches the top, however many hits it had.
//
// Invalidation is by table: each entry names the tables it read, each shard keeps an
// intrusive list per table, and InvalidateTable removes every entry on the list. Whether a
// stored result may serve a given session (its Stamp against what the session has
// written) is the caller's decision; so is the key.
//
// Concurrent misses of one key run one query (Fill), as Vitess's query consolidator does:
// the first caller leads and stores its result, the others wait for it.
package cache
