// Package stats holds the summaries the benchmark commands share.
package stats

import (
	"math"
	"slices"
)

// Median is the middle of xs, or the mean of the two middle ones for an even count; NaN
// for none. xs is left as it was.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
