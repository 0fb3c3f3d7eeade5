package admission

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdaptiveBGrowsAfterOverload: the p95s that move B are those of recent units, so once
// a long overload that drove B down has passed, a light load in which accepted sessions
// are refused grows B again, within the window.
func TestAdaptiveBGrowsAfterOverload(t *testing.T) {
	const slo, every = 100 * time.Millisecond, 10
	cfg := Config{Capacity: time.Second, QueueTimeout: time.Minute, MaxQueue: 100,
		Sessions: SessionConfig{ActiveLimit: 1, BlockingQueue: 10, SLO: slo, AdaptEvery: every}}
	require.NoError(t, cfg.Validate())
	c := New(cfg, NewManualClock(time.Unix(0, 0)))
	accepted := Request{Cost: time.Millisecond, Accepted: true}

	// Overload: 10,000 units respond in ten times the SLO.
	var a, b, r Ticket
	for range 10_000 {
		st, err := c.Arrive(&a, accepted)
		require.NoError(t, err)
		require.Equal(t, Admitted, st)
		c.Release(&a, 10*slo)
	}
	require.Equal(t, 1, c.Snapshot().BlockingQueue, "the overload drives B down")

	// Light load: one unit runs, one waits in the blocking queue, the next is refused for
	// want of room in it; all respond in a tenth of the SLO. Each round completes two units.
	rounds := 0
	for ; c.Snapshot().BlockingQueue == 1; rounds++ {
		require.Less(t, rounds, adaptWindow*every/2, "B grows once the overload has left the window")
		st, _ := c.Arrive(&a, accepted)
		require.Equal(t, Admitted, st)
		st, _ = c.Arrive(&b, accepted)
		require.Equal(t, Blocked, st)
		_, err := c.Arrive(&r, accepted)
		require.ErrorIs(t, err, ErrBlockingQueueFull)
		c.Release(&a, slo/10)
		require.Equal(t, Admitted, b.State())
		c.Release(&b, slo/10)
	}
	require.Equal(t, 6, c.Snapshot().BlockingQueue)
	require.Equal(t, adaptWindow*every/2, rounds, "B grows when the window holds the light load alone")
}

// TestAdaptiveBWindow: the p95s are those of the last adaptWindow periods, the current B's
// those of its periods among them.
func TestAdaptiveBWindow(t *testing.T) {
	const slo = 100 * time.Millisecond
	cfg := SessionConfig{ActiveLimit: 1, BlockingQueue: 10, SLO: slo, AdaptEvery: 10}
	tests := []struct {
		name string
		// periods are the response times of the units of successive periods, one each.
		periods       []time.Duration
		wantB         int
		wantAll, want time.Duration // upper bounds of the buckets of the p95s
	}{
		{name: "slow periods shrink B", periods: []time.Duration{time.Second, time.Second, time.Second},
			wantB: 1, wantAll: time.Second, want: time.Second},
		{name: "an old slow period ages out", periods: []time.Duration{time.Second, 10 * time.Millisecond,
			10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond},
			wantB: 5, wantAll: 10 * time.Millisecond, want: 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g gate
			g.init(cfg)
			for _, d := range tt.periods {
				for range cfg.AdaptEvery {
					g.complete(&cfg, d)
				}
			}
			require.Equal(t, tt.wantB, g.b)
			all, cur := g.p95s()
			require.Equal(t, histUpper(histBucket(tt.wantAll)), all)
			require.Equal(t, histUpper(histBucket(tt.want)), cur)
		})
	}
}

// TestGateCompleteAllocs: recording a completion, and adapting B, allocate nothing.
func TestGateCompleteAllocs(t *testing.T) {
	cfg := SessionConfig{ActiveLimit: 1, BlockingQueue: 10, SLO: 100 * time.Millisecond, AdaptEvery: 3}
	var g gate
	g.init(cfg)
	d := time.Millisecond
	allocs := testing.AllocsPerRun(1000, func() {
		d = d*7/5 + time.Microsecond
		if d > time.Minute {
			d = time.Millisecond
		}
		g.complete(&cfg, d)
	})
	require.Zero(t, allocs)
}
