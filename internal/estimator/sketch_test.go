package estimator

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBinsCoverEveryValue(t *testing.T) {
	values := []uint64{0, 1, 1023, 1024, 1025, 1151, 1152, 2047, 2048, 1e6, 1<<38 - 1, 1 << 38,
		1<<39 - 1, 1 << 39, math.MaxInt64, math.MaxUint64}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		values = append(values, r.Uint64()>>r.IntN(64))
	}
	for _, v := range values {
		i := binOf(v)
		if i < 0 || i >= numBins {
			t.Fatalf("binOf(%d) = %d, outside [0, %d)", v, i, numBins)
		}
		lo, hi := binBounds(i)
		if v < lo || (i < numBins-1 && v >= hi) {
			t.Fatalf("binOf(%d) = %d, whose range [%d, %d) does not hold it", v, i, lo, hi)
		}
		if i == 0 || i == numBins-1 {
			continue
		}
		if err := math.Abs(float64(binValue(i))-float64(v)) / float64(v); err > 1.0/16 {
			t.Fatalf("value %d reported as %v: relative error %.4f, want at most 1/16", v, binValue(i), err)
		}
	}
	// Adjacent bins meet without gaps.
	for i := 1; i < numBins-1; i++ {
		_, hi := binBounds(i - 1)
		lo, _ := binBounds(i)
		if hi != lo {
			t.Fatalf("bin %d ends at %d, bin %d starts at %d", i-1, hi, i, lo)
		}
	}
}

func TestPercentilesAreWithinBinError(t *testing.T) {
	tests := []struct {
		name string
		gen  func(r *rand.Rand) time.Duration
	}{
		{"uniform 1ms-100ms", func(r *rand.Rand) time.Duration {
			return time.Millisecond + time.Duration(r.Int64N(int64(99*time.Millisecond)))
		}},
		{"log-normal around 5ms", func(r *rand.Rand) time.Duration {
			return time.Duration(5e6 * math.Exp(r.NormFloat64()))
		}},
		{"bimodal 200µs and 2s", func(r *rand.Rand) time.Duration {
			if r.IntN(20) == 0 {
				return 2 * time.Second
			}
			return 200 * time.Microsecond
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, _ := newTable(t, Config{})
			r := rand.New(rand.NewPCG(3, 4))
			var samples []time.Duration
			for range 20000 {
				d := tt.gen(r)
				samples = append(samples, d)
				tab.Record(1, nil, d)
			}
			slices.Sort(samples)
			ts := statsOf(t, tab, nameOf(1))
			for _, q := range []struct {
				p   float64
				got time.Duration
			}{{0.5, ts.P50}, {0.95, ts.P95}, {0.99, ts.P99}} {
				want := samples[int(math.Ceil(q.p*float64(len(samples))))-1]
				if err := math.Abs(float64(q.got-want)) / float64(want); err > 1.0/16 {
					t.Errorf("p%v = %v, exact %v: relative error %.3f, want at most 1/16", q.p*100, q.got, want, err)
				}
			}
		})
	}
}

func TestPercentilesForgetPastHorizon(t *testing.T) {
	tab, clock := newTable(t, Config{}) // horizon 60s: generations of 30s
	for range 1000 {
		tab.Record(1, nil, 10*time.Millisecond)
	}
	clock.Advance(20 * time.Second)
	for range 100 {
		tab.Record(1, nil, 500*time.Millisecond)
	}
	ts := statsOf(t, tab, nameOf(1))
	if !near(ts.P50, 10*time.Millisecond) || !near(ts.P99, 500*time.Millisecond) {
		t.Errorf("within the horizon: p50 %v, p99 %v; want about 10ms and 500ms", ts.P50, ts.P99)
	}
	clock.Advance(50 * time.Second)
	for range 100 {
		tab.Record(1, nil, 500*time.Millisecond)
	}
	ts = statsOf(t, tab, nameOf(1))
	if !near(ts.P50, 500*time.Millisecond) {
		t.Errorf("past the horizon of the 10ms samples: p50 %v, want about 500ms", ts.P50)
	}
	clock.Advance(2 * time.Minute)
	ts = statsOf(t, tab, nameOf(1))
	if ts.P50 != 0 || ts.P95 != 0 || ts.P99 != 0 {
		t.Errorf("with no recent sample: percentiles %v %v %v, want zero", ts.P50, ts.P95, ts.P99)
	}
}

// near reports whether got is within the bin error of want.
func near(got, want time.Duration) bool {
	return math.Abs(float64(got-want)) <= float64(want)/16
}

func TestSketchRestartKeepsNewerGeneration(t *testing.T) {
	var s sketch
	s.add(10, 5, 1)
	s.add(12, 6, 1) // same slot, newer generation: restarts it
	s.add(10, 7, 1) // stale writer: dropped
	var c [numBins]uint64
	if total := s.counts(12, &c); total != 1 || c[6] != 1 {
		t.Errorf("after a restart and a stale write: total %d, bin 6 %d; want 1 and 1", total, c[6])
	}
}
