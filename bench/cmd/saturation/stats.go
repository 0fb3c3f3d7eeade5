package main

import (
	"math"
	"slices"
	"time"
)

// summary describes a set of response times. A run keeps every one (a few clients for some
// seconds: tens of thousands), so that the quantiles are exact.
type summary struct {
	Count          int
	Mean, P50, P95 time.Duration
}

// summarize sorts a copy of ds and reads its summary; zero for none.
func summarize(ds []time.Duration) summary {
	if len(ds) == 0 {
		return summary{}
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	return summary{
		Count: len(sorted),
		Mean:  sum / time.Duration(len(sorted)),
		P50:   quantile(sorted, 0.50),
		P95:   quantile(sorted, 0.95),
	}
}

// quantile is the value of rank ⌈q·n⌉ (the nearest rank) of the n sorted values.
func quantile(sorted []time.Duration, q float64) time.Duration {
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}
