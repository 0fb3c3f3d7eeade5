package estimator

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// OtherName is the Name of the bucket that aggregates the types evicted from the table and
// the samples of the types a full table did not let in.
const OtherName = "other"

// TypeStats describes one request type, or the other bucket, at the time of a snapshot.
type TypeStats struct {
	Key Key
	// Name is the key as 16 hexadecimal digits, or OtherName for the other bucket.
	Name string
	// Sample is the display text recorded with the type's first sample: its digest or tag.
	// Empty for the other bucket.
	Sample string
	// Count is the number of samples since the type was added or loaded.
	Count uint64
	// Rate is samples per second over the recent horizon.
	Rate float64
	// Mean is the estimate: the window mean, or the moving average. For the other bucket it
	// is the mean of its samples in the recent horizon, or of all of them if none is recent.
	Mean time.Duration
	// Busy is the moving average of the busy time, how long a unit of the type keeps the
	// backend busy: its expected service time. It equals Mean's moving average when costs
	// are busy times, and is longer when they are processor shares. Zero when unknown, and
	// for the other bucket.
	Busy time.Duration
	// P50, P95 and P99 are percentiles of the samples of the recent horizon (between half
	// of it and all of it), within 6.25%; zero without recent samples.
	P50, P95, P99 time.Duration
	// Share is the type's share, between 0 and 1, of the cost measured over the recent
	// horizon across all types.
	Share float64
	// LastUpdate is the time of the latest sample; zero if none.
	LastUpdate time.Time
	// Total is the summed cost of the Count samples (for a loaded type, Count times the
	// loaded estimate).
	Total time.Duration
}

// Snapshot returns the statistics of every tracked type, and of the other bucket when it has
// samples, sorted by share of load, then by count, both descending.
func (t *Table) Snapshot() []TypeStats {
	s := t.cfg.Load()
	now := t.clock.Now()
	tick := s.tick(now)

	var entries []*entry
	for i := range t.shards {
		for _, e := range t.shards[i].load() {
			entries = append(entries, e)
		}
	}
	other := t.other.Load()
	if other.count.Load() > 0 {
		entries = append(entries, other)
	}

	// Rates are over the part of the horizon the buckets cover: from the start of the
	// oldest bucket of the window, or the origin if later, until now; at least one bucket.
	covered := now.Sub(s.tickStart(tick + 1 - numBuckets))
	covered = max(covered, s.width)

	out := make([]TypeStats, len(entries))
	sums := make([]uint64, len(entries))
	var all uint64
	var bins [numBins]uint64
	for i, e := range entries {
		w := window(&e.ring, tick)
		sums[i] = w.micros
		all += w.micros
		st := TypeStats{
			Key:    e.key,
			Name:   fmt.Sprintf("%016x", uint64(e.key)),
			Sample: e.sample,
			Count:  e.count.Load(),
			Rate:   float64(w.n) / covered.Seconds(),
			Total:  time.Duration(e.total.Load()),
		}
		mean, ok := e.estimate(s, tick)
		if e == other {
			st.Name = OtherName
			mean, ok = e.aggregateMean(tick)
		}
		if ok {
			st.Mean = mean
		}
		if b, ok := e.busyAverage(); ok && e != other {
			st.Busy = duration(b)
		}
		bins = [numBins]uint64{}
		n := e.sketch.counts(tick/genTicks, &bins)
		q := quantiles(&bins, n, 0.5, 0.95, 0.99)
		st.P50, st.P95, st.P99 = q[0], q[1], q[2]
		if l := e.last.Load(); l != 0 {
			st.LastUpdate = time.Unix(0, l)
		}
		out[i] = st
	}
	if all > 0 {
		for i := range out {
			out[i].Share = float64(sums[i]) / float64(all)
		}
	}
	slices.SortFunc(out, func(a, b TypeStats) int {
		if c := cmp.Compare(b.Share, a.Share); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		// The other bucket goes after the types it ties with.
		if c := boolOrder(a.Name == OtherName, b.Name == OtherName); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return out
}

// boolOrder orders false before true.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	default:
		return -1
	}
}
