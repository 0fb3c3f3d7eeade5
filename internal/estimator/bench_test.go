package estimator

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// benchGoroutines is the number of goroutines of the parallel benchmarks: as many as the
// connections of a busy proxy that run on the processors at once.
const benchGoroutines = 64

// workload picks request types: hot of them take 90% of the units, a tail of rare ones the
// rest; with fresh set, each rare pick is a type never seen before.
type workload struct {
	hot, tail int
	fresh     bool
}

func (w workload) key(x uint64, seq *uint64) Key {
	if x%10 != 0 {
		return Key(1 + x>>8%uint64(w.hot))
	}
	if w.fresh {
		*seq++
		return Key(1<<40 + *seq)
	}
	return Key(1<<20 + x>>8%uint64(w.tail))
}

func BenchmarkRecordEstimateParallel(b *testing.B) {
	tests := []struct {
		name string
		cfg  Config
		w    workload
	}{
		{"ewma/hot20+tail500", Config{}, workload{hot: 20, tail: 500}},
		{"window/hot20+tail500", Config{Window: time.Minute}, workload{hot: 20, tail: 500}},
		{"ewma/hot20+fresh", Config{}, workload{hot: 20, fresh: true}},
	}
	sample := []byte("SELECT c FROM sbtest1 WHERE id = ?")
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			tab, err := New(tt.cfg)
			if err != nil {
				b.Fatal(err)
			}
			for k := range tt.w.hot {
				tab.Record(Key(1+k), sample, time.Millisecond)
			}
			for k := range tt.w.tail {
				tab.Record(Key(1<<20+k), sample, time.Millisecond)
			}
			var seed, seqBase atomic.Uint64
			b.SetParallelism((benchGoroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				x := seed.Add(1) * 0x9e3779b97f4a7c15
				seq := seqBase.Add(1) << 32
				var sink time.Duration
				for pb.Next() {
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
					k := tt.w.key(x, &seq)
					tab.Record(k, sample, time.Duration(x%4096)*time.Microsecond)
					sink += tab.Estimate(k)
				}
				_ = sink
			})
		})
	}
}

func BenchmarkRecord(b *testing.B) {
	for _, cfg := range []struct {
		name string
		cfg  Config
	}{{"ewma", Config{}}, {"window", Config{Window: time.Minute}}} {
		b.Run(cfg.name, func(b *testing.B) {
			tab, err := New(cfg.cfg)
			if err != nil {
				b.Fatal(err)
			}
			sample := []byte("SELECT 1")
			tab.Record(1, sample, time.Millisecond)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				tab.Record(1, sample, time.Duration(i&1023)*time.Microsecond)
			}
		})
	}
}

func BenchmarkEstimate(b *testing.B) {
	for _, cfg := range []struct {
		name string
		cfg  Config
	}{{"ewma", Config{}}, {"window", Config{Window: time.Minute}}} {
		b.Run(cfg.name, func(b *testing.B) {
			tab, err := New(cfg.cfg)
			if err != nil {
				b.Fatal(err)
			}
			tab.Record(1, nil, time.Millisecond)
			b.ReportAllocs()
			var sink time.Duration
			for b.Loop() {
				sink += tab.Estimate(1)
			}
			_ = sink
		})
	}
}

func BenchmarkSnapshot(b *testing.B) {
	tab, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	for k := range DefaultMaxTypes {
		for i := range 20 {
			tab.Record(Key(k), []byte("SELECT ?"), time.Duration(k+i)*time.Microsecond)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = tab.Snapshot()
	}
}
