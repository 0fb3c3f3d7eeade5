package main

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// subBuckets is how many buckets each power of two of nanoseconds is cut into: a bucket is
// at most 1/subBuckets of its lower bound wide, so a quantile is within 0.8% of the
// duration it stands for (8 µs at 1 ms).
const (
	subBits    = 7
	subBuckets = 1 << subBits
	// numBuckets covers every non-negative int64 of nanoseconds.
	numBuckets = (64 - subBits) * subBuckets
)

// histogram counts durations in log-linear buckets, as HdrHistogram does. Safe for
// concurrent use; its zero value is empty.
type histogram struct {
	counts [numBuckets]atomic.Int64
}

// bucketOf is the bucket of ns nanoseconds (0 and below go to bucket 0): below subBuckets
// one bucket a nanosecond, above it subBuckets buckets per power of two.
func bucketOf(ns int64) int {
	if ns < subBuckets {
		return int(max(ns, 0))
	}
	shift := bits.Len64(uint64(ns)) - subBits - 1 // ns>>shift is in [subBuckets, 2*subBuckets)
	return (shift+1)*subBuckets + int(ns>>shift) - subBuckets
}

// bucketBounds is the least and the greatest nanoseconds bucket b holds.
func bucketBounds(b int) (lo, hi int64) {
	if b < subBuckets {
		return int64(b), int64(b)
	}
	shift := b/subBuckets - 1
	lo = int64(b%subBuckets+subBuckets) << shift
	return lo, lo + 1<<shift - 1
}

// record counts one duration.
func (h *histogram) record(d time.Duration) { h.counts[bucketOf(int64(d))].Add(1) }

// snapshot copies the counts, so that quantiles and merges read one consistent set.
func (h *histogram) snapshot() *latencies {
	l := &latencies{}
	for i := range h.counts {
		if n := h.counts[i].Load(); n > 0 {
			l.counts[i] = n
			l.total += n
		}
	}
	return l
}

// latencies is a histogram's counts at one moment, to read quantiles from and to add up.
type latencies struct {
	counts [numBuckets]int64
	total  int64
}

// add adds o's counts to l.
func (l *latencies) add(o *latencies) {
	for i, n := range o.counts {
		l.counts[i] += n
	}
	l.total += o.total
}

// quantile is the duration below which a share q (0 to 1) of the counted ones fall: the
// middle of the bucket that holds the rank ceil(q*total); 0 when nothing was counted.
func (l *latencies) quantile(q float64) time.Duration {
	if l.total == 0 {
		return 0
	}
	rank := max(int64(q*float64(l.total)+0.999999), 1)
	var seen int64
	for b, n := range l.counts {
		if seen += n; seen >= rank {
			lo, hi := bucketBounds(b)
			return time.Duration(lo + (hi-lo)/2)
		}
	}
	return 0 // not reached: the counts sum to total
}

// quantiles is what the report gives of a set of latencies, in milliseconds.
type quantiles struct {
	N     int64   `json:"n"`
	P50ms float64 `json:"p50_ms"`
	P95ms float64 `json:"p95_ms"`
	P99ms float64 `json:"p99_ms"`
}

// summary reads the report's quantiles off l.
func (l *latencies) summary() quantiles {
	ms := func(q float64) float64 { return float64(l.quantile(q)) / float64(time.Millisecond) }
	return quantiles{N: l.total, P50ms: ms(0.50), P95ms: ms(0.95), P99ms: ms(0.99)}
}
