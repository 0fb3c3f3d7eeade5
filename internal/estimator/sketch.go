package estimator

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// The quantile sketch is a histogram over logarithmic bins: each power of two from 2^minExp
// ns (about 1µs) to 2^(maxExp+1) ns (about 9 minutes) is split into subBins equal bins, so a
// bin is at most 1/8 of its lower bound wide and its midpoint is within 1/16 of any value in
// it. Everything below the first power falls in bin 0, everything above the last in the final
// bin.
const (
	minExp    = 10
	maxExp    = 38
	subBits   = 3
	subBins   = 1 << subBits
	numBins   = 1 + (maxExp-minExp+1)*subBins + 1
	usedWords = (numBins + 63) / 64
)

// binOf returns the histogram bin of a cost in nanoseconds.
func binOf(ns uint64) int {
	if ns < 1<<minExp {
		return 0
	}
	e := bits.Len64(ns) - 1
	if e > maxExp {
		return numBins - 1
	}
	sub := int(ns>>(e-subBits)) & (subBins - 1)
	return 1 + (e-minExp)*subBins + sub
}

// binBounds returns the half-open range [lo, hi) of nanoseconds that bin i holds; the final
// bin is unbounded and reports hi = lo.
func binBounds(i int) (lo, hi uint64) {
	switch {
	case i <= 0:
		return 0, 1 << minExp
	case i >= numBins-1:
		lo = 1 << (maxExp + 1)
		return lo, lo
	}
	e := minExp + (i-1)/subBins
	sub := uint64((i - 1) % subBins)
	step := uint64(1) << (e - subBits)
	lo = uint64(1)<<e + sub*step
	return lo, lo + step
}

// binValue is the value reported for a quantile that falls in bin i: the bin's midpoint, or
// the lower bound of the unbounded final bin.
func binValue(i int) time.Duration {
	lo, hi := binBounds(i)
	return time.Duration(lo + (hi-lo)/2)
}

// histGen is one generation of the histogram, valid for the generation number in gen (zero:
// never written). A generation spans half the horizon, at most half an hour, so 32-bit bins
// would need over two million samples a second of one type to wrap.
type histGen struct {
	gen atomic.Uint64
	// used has a bit set for each bin that may be non-zero, so that reading, merging and
	// clearing a generation visit only those.
	used [usedWords]atomic.Uint64
	bins [numBins]atomic.Uint32
}

// add counts n samples in bin.
func (h *histGen) add(bin int, n uint32) {
	w, bit := &h.used[bin/64], uint64(1)<<(bin%64)
	if w.Load()&bit == 0 {
		w.Or(bit)
	}
	h.bins[bin].Add(n)
}

// each calls f with every non-zero bin and its count.
func (h *histGen) each(f func(bin int, n uint32)) {
	for k := range h.used {
		for w := h.used[k].Load(); w != 0; w &= w - 1 {
			bin := k*64 + bits.TrailingZeros64(w)
			if n := h.bins[bin].Load(); n != 0 {
				f(bin, n)
			}
		}
	}
}

// sketch is a type's histogram: two generations, each covering half the horizon. The current
// generation is written; a reader merges it with the previous one.
type sketch struct {
	// mu serializes restarting a generation; samples are added without it.
	mu   sync.Mutex
	gens [2]histGen
}

// add counts n samples of bin in generation g.
func (s *sketch) add(g uint64, bin int, n uint32) {
	h := &s.gens[g%2]
	if h.gen.Load() != g && !s.restart(h, g) {
		return
	}
	h.add(bin, n)
}

// restart clears h for generation g unless it already holds g or a newer generation (the
// caller's clock reading is stale); it reports whether h now holds g. The generation number
// is published after the bins are cleared, so a reader never sees a half-cleared generation
// as valid.
func (s *sketch) restart(h *histGen, g uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := h.gen.Load()
	if cur >= g {
		return cur == g
	}
	h.gen.Store(0)
	for k := range h.used {
		for w := h.used[k].Swap(0); w != 0; w &= w - 1 {
			h.bins[k*64+bits.TrailingZeros64(w)].Store(0)
		}
	}
	h.gen.Store(g)
	return true
}

// live calls f with each generation that is g or g-1.
func (s *sketch) live(g uint64, f func(gen uint64, h *histGen)) {
	for k := range s.gens {
		h := &s.gens[k]
		if hg := h.gen.Load(); hg != 0 && (hg == g || hg+1 == g) {
			f(hg, h)
		}
	}
}

// counts adds to c the bins of the generations g and g-1, and returns the total.
func (s *sketch) counts(g uint64, c *[numBins]uint64) uint64 {
	var total uint64
	s.live(g, func(_ uint64, h *histGen) {
		h.each(func(bin int, n uint32) {
			c[bin] += uint64(n)
			total += uint64(n)
		})
	})
	return total
}

// quantiles returns the values at the given quantiles of the counts c holding total samples,
// in the order of qs; all zero when total is zero.
func quantiles(c *[numBins]uint64, total uint64, qs ...float64) []time.Duration {
	out := make([]time.Duration, len(qs))
	if total == 0 {
		return out
	}
	for k, q := range qs {
		rank := uint64(math.Ceil(q * float64(total)))
		rank = max(rank, 1)
		var seen uint64
		for i := range c {
			seen += c[i]
			if seen >= rank {
				out[k] = binValue(i)
				break
			}
		}
	}
	return out
}
