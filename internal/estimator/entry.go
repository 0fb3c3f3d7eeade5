package estimator

import (
	"math"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// maxSampleLen bounds the display text kept per type; digests are arbitrary SQL.
const maxSampleLen = 1024

// noMean marks a moving average that has no sample yet (a NaN no update ever produces).
const noMean = 0x7ff8_dead_0000_0001

// entry is the state of one request type. Every field a sample changes is an atomic word, so
// samples of the same type from many goroutines never take a lock (the sketch's mutex is
// taken only to restart a generation, twice per horizon).
type entry struct {
	key    Key
	sample string

	// mean is the moving average in nanoseconds, as float64 bits; noMean before the first
	// sample.
	mean atomic.Uint64
	// count is the number of samples since the type was added (or loaded).
	count atomic.Uint64
	// total is the summed cost of those samples, in nanoseconds.
	total atomic.Uint64
	// last is the time of the latest sample, in Unix nanoseconds; zero means never.
	last atomic.Int64
	// busy is the moving average of the samples' busy time (how long each kept the backend
	// busy: its service time), as float64 bits; noMean before the first sample. It differs
	// from mean only when the cost is a processor share.
	busy atomic.Uint64

	ring   [numBuckets]bucket
	sketch sketch
}

func newEntry(key Key, sample []byte) *entry {
	e := &entry{key: key, sample: clip(sample)}
	e.mean.Store(noMean)
	e.busy.Store(noMean)
	return e
}

// clip copies at most maxSampleLen bytes of b, cut at a rune boundary.
func clip(b []byte) string {
	if len(b) <= maxSampleLen {
		return string(b)
	}
	n := maxSampleLen
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n])
}

// record adds one sample of ns nanoseconds of cost and busyNS of busy time, taken at tick
// (Unix time nowNS).
func (e *entry) record(weight float64, tick uint64, nowNS int64, ns, busyNS uint64) {
	e.count.Add(1)
	e.total.Add(ns)
	average(&e.mean, weight, float64(ns))
	average(&e.busy, weight, float64(busyNS))
	b := &e.ring[tick%numBuckets]
	addTagged(&b.n, tick, 1)
	addTagged(&b.sum, tick, micros(ns))
	e.sketch.add(tick/genTicks, binOf(ns), 1)
	e.last.Store(nowNS)
}

// average moves the moving average held in m (float64 bits, noMean before the first
// sample) towards x by weight.
func average(m *atomic.Uint64, weight, x float64) {
	for {
		old := m.Load()
		v := x
		if old != noMean {
			v0 := math.Float64frombits(old)
			v = v0 + weight*(x-v0)
		}
		if m.CompareAndSwap(old, math.Float64bits(v)) {
			return
		}
	}
}

// movingAverage returns the moving average, and false before the first sample.
func (e *entry) movingAverage() (float64, bool) {
	return averageOf(&e.mean)
}

// busyAverage returns the moving average of the busy time, and false before the first
// sample (or for a type loaded from a state that did not carry it).
func (e *entry) busyAverage() (float64, bool) {
	return averageOf(&e.busy)
}

func averageOf(m *atomic.Uint64) (float64, bool) {
	b := m.Load()
	if b == noMean {
		return 0, false
	}
	return math.Float64frombits(b), true
}

// estimate is the type's current estimate under s at tick: the window mean when s has a
// window holding samples of the type, else the moving average.
func (e *entry) estimate(s *settings, tick uint64) (time.Duration, bool) {
	if s.window > 0 {
		// A window whose count has a sample in flight but not yet its sum (record adds
		// them one after the other), or whose samples are all under a microsecond, gives
		// no mean: the moving average, set before either, stands in.
		if w := window(&e.ring, tick); w.n > 0 && w.micros > 0 {
			return windowMean(w), true
		}
	}
	m, ok := e.movingAverage()
	return duration(m), ok
}

func windowMean(w windowSums) time.Duration {
	return duration(float64(w.micros) * 1e3 / float64(w.n))
}

// duration rounds ns nanoseconds to a Duration, saturating at the largest.
func duration(ns float64) time.Duration {
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(math.Round(ns))
}

// absorb folds the statistics of v, evicted or cut on load, into e (the "other" bucket) at
// tick: counts, sums, the buckets and the histogram of the recent horizon add up. Concurrent
// absorbs and records into e need no lock; a sample recorded into v while it is absorbed may
// be lost.
func (e *entry) absorb(v *entry, tick uint64) {
	e.count.Add(v.count.Load())
	e.total.Add(v.total.Load())
	for vl := v.last.Load(); ; {
		el := e.last.Load()
		if vl <= el || e.last.CompareAndSwap(el, vl) {
			break
		}
	}
	for age := uint64(0); age < numBuckets; age++ {
		i := tick - age
		src, dst := &v.ring[i%numBuckets], &e.ring[i%numBuckets]
		if k := valueAt(&src.n, i); k > 0 {
			addTagged(&dst.n, i, k)
			addTagged(&dst.sum, i, valueAt(&src.sum, i))
		}
	}
	v.sketch.live(tick/genTicks, func(gen uint64, h *histGen) {
		h.each(func(bin int, n uint32) { e.sketch.add(gen, bin, n) })
	})
}

// aggregateMean is the Mean of the other bucket: the mean of its samples in the recent
// horizon, or of all its samples when none is recent.
func (e *entry) aggregateMean(tick uint64) (time.Duration, bool) {
	if w := window(&e.ring, tick); w.n > 0 {
		return windowMean(w), true
	}
	n := e.count.Load()
	if n == 0 {
		return 0, false
	}
	return duration(float64(e.total.Load()) / float64(n)), true
}
