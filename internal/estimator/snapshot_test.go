package estimator

import (
	"math"
	"testing"
	"time"
)

func TestSnapshotRatesSharesAndOrder(t *testing.T) {
	tab, clock := newTable(t, Config{}) // horizon 60s in buckets of 5s
	start := clock.Now()
	// Two minutes of: type 1 ten times a second at 2ms, type 2 once a second at 50ms.
	for i := range 1200 {
		tab.Record(1, []byte("SELECT quick"), 2*time.Millisecond)
		if i%10 == 0 {
			tab.Record(2, []byte("SELECT slow"), 50*time.Millisecond)
		}
		clock.Advance(100 * time.Millisecond)
	}
	snap := tab.Snapshot()
	if len(snap) != 2 {
		t.Fatalf("snapshot of %d types, want 2 (no other bucket while it is empty)", len(snap))
	}
	tests := []struct {
		got  TypeStats
		want TypeStats
	}{
		{snap[0], TypeStats{Key: 2, Name: "0000000000000002", Sample: "SELECT slow", Count: 120, Rate: 1,
			Mean: 50 * time.Millisecond, Share: 50.0 / 70, Total: 120 * 50 * time.Millisecond,
			LastUpdate: start.Add(119 * time.Second)}},
		{snap[1], TypeStats{Key: 1, Name: "0000000000000001", Sample: "SELECT quick", Count: 1200, Rate: 10,
			Mean: 2 * time.Millisecond, Share: 20.0 / 70, Total: 1200 * 2 * time.Millisecond,
			LastUpdate: start.Add(119*time.Second + 900*time.Millisecond)}},
	}
	for _, tt := range tests {
		got, want := tt.got, tt.want
		if got.Key != want.Key || got.Name != want.Name || got.Sample != want.Sample || got.Count != want.Count ||
			got.Mean != want.Mean || got.Total != want.Total || !got.LastUpdate.Equal(want.LastUpdate) {
			t.Errorf("got %+v\nwant %+v", got, want)
		}
		if math.Abs(got.Rate-want.Rate) > 1e-9 || math.Abs(got.Share-want.Share) > 1e-9 {
			t.Errorf("type %s: rate %v share %v, want %v and %v", got.Name, got.Rate, got.Share, want.Rate, want.Share)
		}
		if !near(got.P50, want.Mean) || !near(got.P99, want.Mean) {
			t.Errorf("type %s: p50 %v p99 %v, want about %v", got.Name, got.P50, got.P99, want.Mean)
		}
	}
}

func TestSnapshotRateEarlyInTheHorizon(t *testing.T) {
	tab, clock := newTable(t, Config{})
	for range 20 {
		tab.Record(1, nil, time.Millisecond)
		clock.Advance(500 * time.Millisecond)
	}
	// Ten seconds since the table began: the rate is over those, not the whole horizon.
	if got := statsOf(t, tab, nameOf(1)).Rate; math.Abs(got-2) > 1e-9 {
		t.Errorf("rate after 10s at 2/s = %v, want 2", got)
	}
}

func TestSnapshotOfIdleTypes(t *testing.T) {
	tab, clock := newTable(t, Config{MaxTypes: 1})
	tab.Record(1, nil, time.Millisecond)
	tab.Record(2, nil, 3*time.Millisecond) // first sight in a full table: other
	clock.Advance(5 * time.Minute)
	snap := tab.Snapshot()
	if len(snap) != 2 {
		t.Fatalf("snapshot of %d types, want 2", len(snap))
	}
	for _, ts := range snap {
		if ts.Rate != 0 || ts.Share != 0 || ts.P99 != 0 {
			t.Errorf("%s idle past the horizon: rate %v share %v p99 %v, want zero", ts.Name, ts.Rate, ts.Share, ts.P99)
		}
	}
	// Equal shares: ordered by count, the other bucket after the types it ties with.
	if snap[0].Name != nameOf(1) || snap[1].Name != OtherName {
		t.Errorf("order %s, %s; want %s, %s", snap[0].Name, snap[1].Name, nameOf(1), OtherName)
	}
	if snap[1].Mean != 3*time.Millisecond {
		t.Errorf("other Mean with no recent sample = %v, want the mean of all its samples, 3ms", snap[1].Mean)
	}
}
