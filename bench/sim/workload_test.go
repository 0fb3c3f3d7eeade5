package sim

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMixTable1(t *testing.T) {
	mix, err := NewMix(TPCW, false, 0.5)
	require.NoError(t, err)
	require.Len(t, mix.Classes(), 14)
	total := 0.0
	for _, c := range TPCW {
		total += c.Frequency
	}
	require.InDelta(t, 100, total, 1e-9, "the shopping mix adds up to 100%")
	// sum of frequency * No Load time over Table 1.
	require.InDelta(t, 76.54, mix.MeanDemand().Seconds()*1000, 0.01)
	high, err := NewMix(TPCW, true, 0)
	require.NoError(t, err)
	require.Equal(t, 2441860*time.Microsecond, high.Mean(high.Index("Best Seller")))
	require.Equal(t, -1, mix.Index("no such class"))
}

func TestMixDraw(t *testing.T) {
	mix, err := NewMix(TPCW, false, 0.5)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 2))
	const n = 400000
	counts := make([]int, len(TPCW))
	sums := make([]float64, len(TPCW))
	for range n {
		c, d := mix.Draw(r)
		counts[c]++
		sums[c] += d
	}
	for i, c := range TPCW {
		share := float64(counts[i]) / n * 100
		require.InDelta(t, c.Frequency, share, 0.15+0.05*c.Frequency, "%s share", c.Name)
		if c.NoLoad == 0 {
			require.Zero(t, sums[i], "%s does not reach the database", c.Name)
			continue
		}
		if counts[i] > 10000 {
			mean := sums[i] / float64(counts[i])
			require.InEpsilon(t, c.NoLoad.Seconds(), mean, 0.02, "%s mean demand", c.Name)
		}
	}
}

func TestMixExact(t *testing.T) {
	mix, err := NewMix([]Class{{Name: "a", NoLoad: 5 * time.Millisecond, Frequency: 1}}, false, 0)
	require.NoError(t, err)
	c, d := mix.Draw(rand.New(rand.NewPCG(1, 1)))
	require.Equal(t, 0, c)
	require.Equal(t, 0.005, d)
}

func TestMixRefuses(t *testing.T) {
	for name, classes := range map[string][]Class{
		"none":     nil,
		"negative": {{Name: "a", Frequency: -1}},
		"zero":     {{Name: "a"}},
	} {
		_, err := NewMix(classes, false, 0)
		require.Error(t, err, name)
	}
	_, err := NewMix(TPCW, false, -1)
	require.Error(t, err)
}

func TestArrivals(t *testing.T) {
	tests := []struct {
		name string
		a    Arrivals
	}{
		{"poisson", Poisson(3)},
		{"bursty", Bursty(3, 5, 0.5, 2*time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.a.Validate())
			require.InDelta(t, 3, tt.a.Mean(), 1e-9)
			r := rand.New(rand.NewPCG(7, 7))
			g := newArrivalGen(tt.a, r)
			const n = 300000
			total := 0.0
			for range n {
				total += g.next(r)
			}
			require.InEpsilon(t, 3, n/total, 0.03, "mean rate")
		})
	}
	require.Equal(t, 1.0, Poisson(3).Dispersion())
	b := Bursty(1, 5, 0.5, 10*time.Second)
	require.InDelta(t, 0.1, b.share()[1], 1e-9, "share/factor of the time in bursts")
	require.InDelta(t, 5, b.Rate[1], 1e-9)
	// Longer bursts, same rates: burstier.
	require.Greater(t, Bursty(1, 5, 0.5, 100*time.Second).Dispersion(), b.Dispersion())
	require.Greater(t, b.Dispersion(), 1.0)
	require.Error(t, Arrivals{}.Validate())
	require.Error(t, Arrivals{Rate: [2]float64{1, 1}, Stay: [2]time.Duration{time.Second, 0}}.Validate())
}

func TestArrivalsDispersion(t *testing.T) {
	// The counts in long windows have the variance the formula gives.
	a := Bursty(2, 4, 0.5, time.Second)
	r := rand.New(rand.NewPCG(3, 3))
	g := newArrivalGen(a, r)
	const window, windows = 200.0, 2000
	counts := make([]float64, windows)
	at := g.next(r)
	for w := range counts {
		end := float64(w+1) * window
		for at < end {
			counts[w]++
			at += g.next(r)
		}
	}
	mean, sq := 0.0, 0.0
	for _, c := range counts {
		mean += c
	}
	mean /= windows
	for _, c := range counts {
		sq += (c - mean) * (c - mean)
	}
	idc := sq / (windows - 1) / mean
	require.InEpsilon(t, a.Dispersion(), idc, 0.15)
	require.False(t, math.IsNaN(idc))
}
