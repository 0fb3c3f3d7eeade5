package main

import (
	"testing"
	"time"
)

func TestBucketsCoverEveryDurationInOrder(t *testing.T) {
	prevHi := int64(-1)
	for b := range numBuckets {
		lo, hi := bucketBounds(b)
		if lo != prevHi+1 || hi < lo {
			t.Fatalf("bucket %d holds [%d, %d] after one ending at %d: want no gap, no overlap", b, lo, hi, prevHi)
		}
		if got := bucketOf(lo); got != b {
			t.Fatalf("bucketOf(%d) = %d, want %d, the bucket whose least it is", lo, got, b)
		}
		if got := bucketOf(hi); got != b {
			t.Fatalf("bucketOf(%d) = %d, want %d, the bucket whose greatest it is", hi, got, b)
		}
		if lo >= subBuckets && float64(hi-lo+1) > float64(lo)/subBuckets {
			t.Fatalf("bucket %d is %d ns wide at %d ns: wider than 1/%d of it", b, hi-lo+1, lo, subBuckets)
		}
		prevHi = hi
	}
	if prevHi != 1<<63-1 {
		t.Errorf("the last bucket ends at %d, want the greatest int64", prevHi)
	}
	if got := bucketOf(-5); got != 0 {
		t.Errorf("bucketOf(-5) = %d, want 0", got)
	}
}

func TestQuantiles(t *testing.T) {
	var h histogram
	if got := h.snapshot().quantile(0.5); got != 0 {
		t.Errorf("the median of nothing = %v, want 0", got)
	}
	// 1..1000 µs, once each: the median is 500 µs, the 95th percentile 950 µs.
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	l := h.snapshot()
	tests := []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.95, 950 * time.Microsecond}, {0.99, 990 * time.Microsecond},
		{1, 1000 * time.Microsecond}, {0, time.Microsecond}}
	for _, tt := range tests {
		got := l.quantile(tt.q)
		if d := got - tt.want; d < -tt.want/subBuckets || d > tt.want/subBuckets {
			t.Errorf("quantile(%v) = %v, want %v within 1/%d", tt.q, got, tt.want, subBuckets)
		}
	}
	if s := l.summary(); s.N != 1000 || s.P50ms < 0.49 || s.P50ms > 0.51 {
		t.Errorf("summary = %+v, want n 1000 and p50 about 0.5 ms", s)
	}
}

func TestLatenciesAdd(t *testing.T) {
	var fast, slow histogram
	for range 90 {
		fast.record(time.Millisecond)
	}
	for range 10 {
		slow.record(100 * time.Millisecond)
	}
	all := fast.snapshot()
	all.add(slow.snapshot())
	if all.total != 100 {
		t.Fatalf("total = %d, want 100", all.total)
	}
	if got := all.quantile(0.9); got > 1010*time.Microsecond {
		t.Errorf("the 90th percentile = %v, want about 1 ms: 90 of 100 took 1 ms", got)
	}
	if got := all.quantile(0.91); got < 99*time.Millisecond {
		t.Errorf("the 91st percentile = %v, want about 100 ms", got)
	}
}
