package bookstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countArrivals draws n arrivals and returns the time of the last, the number that
// arrived in the high state, and the counts per window of width w.
func countArrivals(t *testing.T, a *arrivals, n int, w time.Duration) (last time.Duration, high int, windows []int) {
	t.Helper()
	var prev time.Duration
	for range n {
		at := a.next()
		if at < prev {
			t.Fatalf("arrival at %v after one at %v", at, prev)
		}
		prev = at
		if a.high {
			high++
		}
		k := int(at / w)
		for len(windows) <= k {
			windows = append(windows, 0)
		}
		windows[k]++
	}
	return prev, high, windows[:len(windows)-1] // the last window is incomplete
}

// dispersion is the variance over the mean of the counts: 1 for a Poisson process.
func dispersion(counts []int) float64 {
	var sum, sq float64
	for _, c := range counts {
		sum += float64(c)
	}
	mean := sum / float64(len(counts))
	for _, c := range counts {
		d := float64(c) - mean
		sq += d * d
	}
	return sq / float64(len(counts)) / mean
}

func TestPoissonArrivals(t *testing.T) {
	a, err := newArrivals(1000, nil, newRand(3, 1))
	require.NoError(t, err)
	const n = 1_000_000
	last, _, windows := countArrivals(t, a, n, time.Second)
	assert.InDelta(t, 1000, n/last.Seconds(), 10, "mean rate")
	assert.InDelta(t, 1, dispersion(windows), 0.15, "index of dispersion")
}

// The MMPP's long-run mean rate is the configured rate, its high state runs at the
// factor times it, and its counts are far more dispersed than Poisson's.
func TestBurstArrivals(t *testing.T) {
	b := &Burst{HighFactor: 4, MeanHigh: 20 * time.Millisecond, MeanLow: 80 * time.Millisecond}
	a, err := newArrivals(1000, b, newRand(4, 1))
	require.NoError(t, err)
	assert.InDelta(t, 250, a.rate[0], 1e-9)
	assert.InDelta(t, 4000, a.rate[1], 1e-9)
	const n = 2_000_000
	last, high, windows := countArrivals(t, a, n, time.Second)
	assert.InDelta(t, 1000, n/last.Seconds(), 20, "long-run mean rate")
	// The high state holds 20% of the time at 4 times the rate: 80% of the arrivals.
	assert.InDelta(t, 0.8, float64(high)/n, 0.01, "share of arrivals in the high state")
	assert.Greater(t, dispersion(windows), 20.0, "index of dispersion")
}

// At the largest factor the low state is silent, and the mean still holds.
func TestOnOffArrivals(t *testing.T) {
	b := &Burst{HighFactor: 5, MeanHigh: 20 * time.Millisecond, MeanLow: 80 * time.Millisecond}
	a, err := newArrivals(500, b, newRand(5, 1))
	require.NoError(t, err)
	assert.Equal(t, 0.0, a.rate[0])
	const n = 1_000_000
	last, high, _ := countArrivals(t, a, n, time.Second)
	assert.InDelta(t, 500, n/last.Seconds(), 10)
	assert.Equal(t, n, high)
}

func TestBurstRates(t *testing.T) {
	tests := []struct {
		name      string
		b         Burst
		high, low float64
		err       string
	}{
		{"paper-like", Burst{HighFactor: 3, MeanHigh: 2 * time.Second, MeanLow: 8 * time.Second}, 300, 50, ""},
		{"flat", Burst{HighFactor: 1, MeanHigh: time.Second, MeanLow: time.Second}, 100, 100, ""},
		{"on-off", Burst{HighFactor: 2, MeanHigh: time.Second, MeanLow: time.Second}, 200, 0, ""},
		{"factor below 1", Burst{HighFactor: 0.5, MeanHigh: time.Second, MeanLow: time.Second}, 0, 0, "use 1 or more"},
		{"no high state", Burst{HighFactor: 2, MeanLow: time.Second}, 0, 0, "above zero"},
		{"too high", Burst{HighFactor: 6, MeanHigh: 2 * time.Second, MeanLow: 8 * time.Second}, 0, 0, "at most 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			high, low, err := tt.b.rates(100)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, tt.high, high, 1e-9)
			assert.InDelta(t, tt.low, low, 1e-9)
			pHigh := float64(tt.b.MeanHigh) / float64(tt.b.MeanHigh+tt.b.MeanLow)
			assert.InDelta(t, 100, pHigh*high+(1-pHigh)*low, 1e-9, "long-run mean")
		})
	}
	_, err := newArrivals(0, nil, newRand(1, 1))
	assert.ErrorContains(t, err, "above zero")
}
