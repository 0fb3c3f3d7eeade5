package estimator

import "sync/atomic"

// Size of the doorkeeper's filter.
const (
	doorBits  = 1 << 16
	doorWords = doorBits / 64
	// doorLimit is the number of keys the filter takes before it is cleared; two probes in
	// 2^16 bits then give false positives for 5% of new keys.
	doorLimit = doorBits / 8
)

// doorkeeper remembers, approximately, the keys it was shown since it was last cleared: a
// Bloom filter with two probes. A full table does not let a type in the first time it is
// seen, only the second time, so that a flood of types that occur once costs one shared
// bucket instead of an eviction each, and cannot push out the types that recur. This is the
// doorkeeper of TinyLFU (Einziger, Friedman and Manes, "TinyLFU: A Highly Efficient Cache
// Admission Policy", ACM Transactions on Storage, 2017).
type doorkeeper struct {
	bits  [doorWords]atomic.Uint64
	added atomic.Uint64
}

// seen reports whether key was shown before, and remembers it. A concurrent clear may make it
// forget a key, which only delays the key's admission.
func (d *doorkeeper) seen(key Key) bool {
	h := uint64(key) * 0xff51afd7ed558ccd
	h ^= h >> 33
	a, b := h&(doorBits-1), (h>>32)&(doorBits-1)
	wa, ba := &d.bits[a/64], uint64(1)<<(a%64)
	wb, bb := &d.bits[b/64], uint64(1)<<(b%64)
	hasA, hasB := wa.Load()&ba != 0, wb.Load()&bb != 0
	if hasA && hasB {
		return true
	}
	if !hasA {
		wa.Or(ba)
	}
	if !hasB {
		wb.Or(bb)
	}
	if d.added.Add(1) == doorLimit {
		d.clear()
	}
	return false
}

func (d *doorkeeper) clear() {
	for i := range d.bits {
		d.bits[i].Store(0)
	}
	d.added.Store(0)
}
