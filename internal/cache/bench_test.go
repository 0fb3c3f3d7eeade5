package cache

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// benchShards are the shard counts the benchmarks compare: one lock, and the default.
var benchShards = []int{1, maxShards}

// BenchmarkGet measures hits from parallel sessions on keys spread over the store.
func BenchmarkGet(b *testing.B) {
	const keys = 4096
	for _, policy := range []Policy{CostAware, LRU} {
		for _, n := range benchShards {
			b.Run(fmt.Sprintf("%v/shards=%d", policy, n), func(b *testing.B) {
				s := newStore(n, limits{budget: (64 << 20) / int64(n), maxEntry: 1 << 20, policy: policy})
				ks := make([][]byte, keys)
				for i := range ks {
					ks[i] = fmt.Appendf(nil, "SELECT c FROM sbtest1 WHERE id BETWEEN %d AND %d ORDER BY c", i, i+99)
					s.Put(ks[i], entry(512, time.Millisecond, "sbtest.sbtest1"))
				}
				var seed atomic.Uint64
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					i := seed.Add(7919)
					for pb.Next() {
						if s.Get(ks[i%keys], t0) == nil {
							b.Error("miss")
						}
						i++
					}
				})
			})
		}
	}
}

// BenchmarkPut measures stores of distinct keys from parallel sessions into a full
// store, each evicting.
func BenchmarkPut(b *testing.B) {
	for _, n := range benchShards {
		b.Run(fmt.Sprintf("shards=%d", n), func(b *testing.B) {
			s := newStore(n, limits{budget: (4 << 20) / int64(n), maxEntry: 1 << 20})
			e := entry(512, time.Millisecond, "sbtest.sbtest1")
			var seed atomic.Uint64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				key := strconv.AppendUint(nil, seed.Add(1)<<40, 10)
				base := len(key)
				for i := 0; pb.Next(); i++ {
					key = strconv.AppendInt(append(key[:base], '-'), int64(i), 10)
					s.Put(key, e)
				}
			})
		})
	}
}

// BenchmarkReplay replays a Zipf-like trace through a store a tenth of its working set
// and reports the share of database time the hits saved.
func BenchmarkReplay(b *testing.B) {
	trace := zipfTrace(100_000, 10_000, 2)
	ws := workingSet(trace)
	for _, policy := range []Policy{CostAware, LRU} {
		b.Run(policy.String(), func(b *testing.B) {
			var saved, total time.Duration
			for b.Loop() {
				s := New(Config{MaxBytes: ws / 10, MaxEntryBytes: 16 << 10, Policy: policy})
				sv, tt := replay(s, trace)
				saved, total = saved+sv, total+tt
			}
			b.ReportMetric(100*saved.Seconds()/total.Seconds(), "%saved")
		})
	}
}
