package estimator

import (
	"math"
	"sync/atomic"
)

// The recent horizon is cut into numBuckets time buckets of horizon/numBuckets each. A
// bucket is addressed by its tick, the number of bucket widths since a fixed origin; the
// bucket of tick i lives in slot i%numBuckets of a type's ring, and the window at tick cur
// is the buckets of ticks cur-numBuckets+1 through cur.
const (
	numBuckets = 12
	// genTicks is the length of a histogram generation: half the horizon.
	genTicks = numBuckets / 2
	// decayTicks is the half-life, in ticks, of the use count that eviction compares.
	decayTicks = numBuckets / 3
)

// A tagged word holds a bucket's tick in its top tagBits bits and a count or a sum in the
// rest, so that a writer that finds another tick there restarts the bucket and adds its sample
// in the same compare-and-swap. The count and the sum of a bucket are two words: a reader
// racing with a sample of the same type may see it in one and not yet in the other, an error
// of the samples in flight that the next read no longer has. Tags are only compared for
// equality, never ordered (modulo 2^tagBits, "older" is ambiguous after a long idle spell):
// a writer whose tick is behind the word's, which takes reading the clock before a
// Reconfigure moved the ticks on, restarts the bucket too and loses what it held. A slot left
// untouched for a multiple of 3*2^20 ticks (three days of the shortest buckets) and then
// written in exactly the matching tick would add to its stale value.
const (
	tagBits = 20
	valBits = 64 - tagBits
	valMax  = 1<<valBits - 1
	tagMask = 1<<tagBits - 1
)

// bucket is one time bucket of a type: how many samples it holds and their summed cost in
// microseconds (2^44 µs is half a year, far more busy time than one bucket can hold).
type bucket struct {
	n   atomic.Uint64
	sum atomic.Uint64
}

// addTagged adds delta to w for tick, restarting w at delta if it holds another tick. The
// value saturates instead of overflowing into the tag.
func addTagged(w *atomic.Uint64, tick, delta uint64) {
	tag := tick & tagMask
	delta = min(delta, valMax)
	for {
		old := w.Load()
		v := delta
		if old>>valBits == tag {
			v = min(old&valMax+delta, valMax)
		}
		if w.CompareAndSwap(old, tag<<valBits|v) {
			return
		}
	}
}

// valueAt returns the value of w if it holds tick, and zero otherwise.
func valueAt(w *atomic.Uint64, tick uint64) uint64 {
	x := w.Load()
	if x>>valBits != tick&tagMask {
		return 0
	}
	return x & valMax
}

// windowSums is what a type's buckets say about the window ending at a tick.
type windowSums struct {
	n      uint64 // samples
	micros uint64 // summed cost, µs
}

// window reads the buckets of the window that ends at tick cur.
func window(ring *[numBuckets]bucket, cur uint64) windowSums {
	var w windowSums
	for age := uint64(0); age < numBuckets; age++ {
		i := cur - age
		b := &ring[i%numBuckets]
		n := valueAt(&b.n, i)
		if n == 0 {
			continue
		}
		w.n += n
		w.micros += valueAt(&b.sum, i)
	}
	return w
}

// decay holds the weight 2^(-age/decayTicks) of a sample age ticks old in a use count.
var decay = func() (w [numBuckets]float64) {
	for age := range w {
		w[age] = math.Exp2(-float64(age) / decayTicks)
	}
	return w
}()

// useBelow returns the decayed use count of a type at tick cur, the number of its samples
// in the window each weighted by the decay of its age, if it is at most bound; it reports
// false, having stopped early, if it is more.
func useBelow(ring *[numBuckets]bucket, cur uint64, bound float64) (float64, bool) {
	var u float64
	for age := uint64(0); age < numBuckets; age++ {
		i := cur - age
		if n := valueAt(&ring[i%numBuckets].n, i); n != 0 {
			if u += float64(n) * decay[age]; u > bound {
				return u, false
			}
		}
	}
	return u, true
}

// micros converts a cost in nanoseconds to whole microseconds, rounding to nearest.
func micros(ns uint64) uint64 {
	return (ns + 500) / 1000
}
