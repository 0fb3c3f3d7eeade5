package main

import (
	"maps"
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// The latency histogram is log-linear, as HdrHistogram's: below 2·subCount nanoseconds a
// bucket holds one value; above, each power of two is split into subCount buckets of equal
// width, so that a bucket is never wider than 1/subCount of the values it holds (under 0.8%
// with subCount = 128) and a quantile read from it is as close.
const (
	subBits     = 7
	subCount    = 1 << subBits
	maxBits     = 40 // values up to 2^40 ns (about 18 minutes); longer ones share the last bucket
	bucketCount = (maxBits - subBits + 1) * subCount
)

// bucketOf is the bucket of a value in nanoseconds.
func bucketOf(ns uint64) int {
	if ns < 2*subCount {
		return int(ns)
	}
	e := bits.Len64(ns) - subBits - 1 // ns>>e is in [subCount, 2·subCount)
	i := (e+1)*subCount + int(ns>>e) - subCount
	return min(i, bucketCount-1)
}

// bucketValue is the value that stands for bucket i: its middle.
func bucketValue(i int) uint64 {
	if i < 2*subCount {
		return uint64(i)
	}
	e := i/subCount - 1
	lower := uint64(i%subCount+subCount) << e
	return lower + (uint64(1)<<e)/2
}

// histogram counts durations; record may be called from any goroutine.
type histogram struct {
	counts [bucketCount]atomic.Uint64
	sumNS  atomic.Uint64
}

func (h *histogram) record(d time.Duration) {
	ns := uint64(max(d, 0))
	h.counts[bucketOf(ns)].Add(1)
	h.sumNS.Add(ns)
}

// load copies the counts as they stand.
func (h *histogram) load() counts {
	c := counts{buckets: make([]uint64, bucketCount), sumNS: h.sumNS.Load()}
	for i := range h.counts {
		c.buckets[i] = h.counts[i].Load()
	}
	return c
}

// counts is a copy of a histogram, or the difference of two copies: what was recorded in
// between.
type counts struct {
	buckets []uint64
	sumNS   uint64
}

// since is what was recorded after prev, an earlier copy of the same histogram.
func (c counts) since(prev counts) counts {
	d := counts{buckets: make([]uint64, len(c.buckets)), sumNS: c.sumNS - prev.sumNS}
	for i, n := range c.buckets {
		d.buckets[i] = n - prev.buckets[i]
	}
	return d
}

func (c counts) total() uint64 {
	var n uint64
	for _, b := range c.buckets {
		n += b
	}
	return n
}

// quantile is the value at rank ⌈q·n⌉ of the n recorded, within a bucket's width; zero when
// nothing was recorded.
func (c counts) quantile(q float64) time.Duration {
	n := c.total()
	if n == 0 {
		return 0
	}
	rank := max(uint64(math.Ceil(q*float64(n))), 1)
	var seen uint64
	for i, b := range c.buckets {
		seen += b
		if seen >= rank {
			return time.Duration(bucketValue(i))
		}
	}
	return time.Duration(bucketValue(len(c.buckets) - 1))
}

func (c counts) mean() time.Duration {
	n := c.total()
	if n == 0 {
		return 0
	}
	return time.Duration(c.sumNS / n)
}

// thinkTime draws a think time from the exponential distribution of the given mean.
func thinkTime(r *rand.Rand, mean time.Duration) time.Duration {
	return time.Duration(r.ExpFloat64() * float64(mean))
}

// tally is what the clients did: units completed and their latency, errors, connections.
// Its methods may be called from any goroutine.
type tally struct {
	latency histogram
	// maxNS is the longest unit since the last resetMax, in nanoseconds: exact, where the
	// histogram's is within a bucket.
	maxNS           atomic.Int64
	connectFailures atomic.Int64
	reconnects      atomic.Int64
	connected       atomic.Int64 // clients holding a connection now

	mu sync.Mutex
	// errs counts the failed units by MySQL error number, or "other".
	errs map[string]int64
	// firstMessage is the first message seen of each key of errs, and of "connect".
	firstMessage map[string]string
}

func newTally() *tally {
	return &tally{errs: map[string]int64{}, firstMessage: map[string]string{}}
}

// done records a completed unit.
func (t *tally) done(d time.Duration) {
	t.latency.record(d)
	for {
		m := t.maxNS.Load()
		if int64(d) <= m || t.maxNS.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// failed records a unit that ended in an error.
func (t *tally) failed(key, message string) {
	t.mu.Lock()
	t.errs[key]++
	if _, ok := t.firstMessage[key]; !ok {
		t.firstMessage[key] = message
	}
	t.mu.Unlock()
}

// connectFailed records a connection attempt that failed.
func (t *tally) connectFailed(message string) {
	t.connectFailures.Add(1)
	t.mu.Lock()
	if _, ok := t.firstMessage["connect"]; !ok {
		t.firstMessage["connect"] = message
	}
	t.mu.Unlock()
}

// snapshot is a tally at one moment.
type snapshot struct {
	at              time.Time
	latency         counts
	errs            map[string]int64
	connectFailures int64
	reconnects      int64
	connected       int64
}

func (t *tally) snapshot() snapshot {
	s := snapshot{
		at:              time.Now(),
		latency:         t.latency.load(),
		connectFailures: t.connectFailures.Load(),
		reconnects:      t.reconnects.Load(),
		connected:       t.connected.Load(),
	}
	t.mu.Lock()
	s.errs = maps.Clone(t.errs)
	t.mu.Unlock()
	return s
}

// messages copies the first message of each error key.
func (t *tally) messages() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.firstMessage)
}

// period is what happened between two snapshots.
type period struct {
	elapsed         time.Duration
	latency         counts
	errs            map[string]int64
	connectFailures int64
	reconnects      int64
}

func between(a, b snapshot) period {
	p := period{
		elapsed:         b.at.Sub(a.at),
		latency:         b.latency.since(a.latency),
		errs:            map[string]int64{},
		connectFailures: b.connectFailures - a.connectFailures,
		reconnects:      b.reconnects - a.reconnects,
	}
	for k, n := range b.errs {
		if d := n - a.errs[k]; d > 0 {
			p.errs[k] = d
		}
	}
	return p
}

func (p period) units() int64 { return int64(p.latency.total()) }

func (p period) rate() float64 {
	if p.elapsed <= 0 {
		return 0
	}
	return float64(p.units()) / p.elapsed.Seconds()
}

func (p period) errors() int64 {
	var n int64
	for _, c := range p.errs {
		n += c
	}
	return n
}
