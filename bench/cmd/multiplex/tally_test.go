package main

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestBucketsHoldTheirValues(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 255, 256, 257, 1000, 1 << 20, 123456789, 1<<40 - 1} {
		i := bucketOf(v)
		got := bucketValue(i)
		if v < 2*subCount && got != v {
			t.Errorf("bucketValue(bucketOf(%d)) = %d, want it exact", v, got)
		}
		if diff := math.Abs(float64(got) - float64(v)); diff > float64(v)/subCount {
			t.Errorf("bucketValue(bucketOf(%d)) = %d, off by %.0f, more than 1/%d of it", v, got, diff, subCount)
		}
		if i > 0 && bucketOf(v) < bucketOf(v-1) {
			t.Errorf("bucketOf(%d) = %d < bucketOf(%d)", v, i, v-1)
		}
	}
	if got := bucketOf(math.MaxUint64); got != bucketCount-1 {
		t.Errorf("bucketOf(max) = %d, want the last bucket %d", got, bucketCount-1)
	}
}

func TestQuantiles(t *testing.T) {
	var h histogram
	for i := 1; i <= 100000; i++ { // 1µs .. 100ms, each once
		h.record(time.Duration(i) * time.Microsecond)
	}
	c := h.load()
	tests := []struct {
		q    float64
		want time.Duration
	}{
		{0.50, 50 * time.Millisecond},
		{0.90, 90 * time.Millisecond},
		{0.99, 99 * time.Millisecond},
		{1, 100 * time.Millisecond},
		{0, time.Microsecond},
	}
	for _, tt := range tests {
		got := c.quantile(tt.q)
		if rel := math.Abs(float64(got-tt.want)) / float64(tt.want); rel > 0.01 {
			t.Errorf("quantile(%g) = %s, want %s within 1%%", tt.q, got, tt.want)
		}
	}
	if got, want := c.mean(), 50000500*time.Nanosecond; got != want {
		t.Errorf("mean = %s, want %s", got, want)
	}
	if got := c.total(); got != 100000 {
		t.Errorf("total = %d, want 100000", got)
	}
}

func TestQuantilesOfAPeriod(t *testing.T) {
	var h histogram
	for range 1000 {
		h.record(time.Millisecond)
	}
	before := h.load()
	for range 10 {
		h.record(time.Second)
	}
	p := h.load().since(before)
	if got := p.total(); got != 10 {
		t.Fatalf("total since = %d, want 10", got)
	}
	if got := p.quantile(0.5); math.Abs(float64(got-time.Second)) > float64(time.Second)/subCount {
		t.Errorf("p50 since = %s, want 1s: the earlier values must not count", got)
	}
	if got := (counts{buckets: make([]uint64, bucketCount)}).quantile(0.99); got != 0 {
		t.Errorf("p99 of nothing = %s, want 0", got)
	}
}

func TestThinkTimeIsExponential(t *testing.T) {
	const n = 200000
	mean := time.Second
	r := rand.New(rand.NewPCG(1, 0))
	var sum time.Duration
	below := 0
	for range n {
		d := thinkTime(r, mean)
		if d < 0 {
			t.Fatalf("think time %s < 0", d)
		}
		sum += d
		if d < mean {
			below++
		}
	}
	if got := sum / n; math.Abs(float64(got-mean))/float64(mean) > 0.02 {
		t.Errorf("mean think time = %s, want %s within 2%%", got, mean)
	}
	// Exponential: P(X < mean) = 1 - 1/e.
	if got, want := float64(below)/n, 1-1/math.E; math.Abs(got-want) > 0.01 {
		t.Errorf("share below the mean = %.3f, want %.3f", got, want)
	}
	if got := thinkTime(r, 0); got != 0 {
		t.Errorf("think time of mean 0 = %s, want 0", got)
	}
}

func TestMedianInt(t *testing.T) {
	tests := []struct {
		in   []int
		want int
	}{
		{nil, 0},
		{[]int{7}, 7},
		{[]int{1, 2, 3}, 2},
		{[]int{1, 2, 3, 4}, 2},
	}
	for _, tt := range tests {
		if got := medianInt(tt.in); got != tt.want {
			t.Errorf("medianInt(%v) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestErrorKeysInOrder(t *testing.T) {
	got := errorKeys(map[string]int64{"other": 1, "1213": 2, "1040": 3, "1205": 4})
	want := []string{"1040", "1205", "1213", "other"}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("errorKeys = %v, want %v", got, want)
		}
	}
}
