package fleet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSharesAddUpToOne(t *testing.T) {
	for _, demands := range [][]time.Duration{
		{0}, {0, 0, 0}, {time.Second, 0, 0}, {time.Second, 3 * time.Second}, {5, 5, 5, 5, 5, 5, 5, 5, 5, 5},
	} {
		var sum float64
		for _, s := range Shares(demands) {
			require.Positive(t, s, "every member keeps a part of the idle share")
			sum += s
		}
		require.InDelta(t, 1, sum, 1e-9, "demands %v", demands)
	}
	s := Shares([]time.Duration{3 * time.Second, time.Second})
	require.Greater(t, s[0], s[1], "more demand, more share")
	require.InDelta(t, IdleShare/2+(1-IdleShare)*0.75, s[0], 1e-9)
}

func TestNextFollowsTheAdjuster(t *testing.T) {
	recs := []Record{{Demand: time.Second}, {Demand: time.Second, Fleet: 120 * time.Millisecond}}
	// Member 0 follows member 1, the adjuster: half of its fleet capacity.
	s := Next(recs, 0, 1, Step{}, 80*time.Millisecond, 0)
	require.Equal(t, Step{Capacity: 60 * time.Millisecond, Fleet: 120 * time.Millisecond, Share: 0.5}, s)
	// The adjuster, alone until now, takes its capacity as the fleet's and keeps its share.
	a := Next(recs, 1, 1, Step{}, 100*time.Millisecond, 0)
	require.Equal(t, Step{Capacity: 50 * time.Millisecond, Fleet: 100 * time.Millisecond, Share: 0.5, Adapt: true}, a)
	// Its controller adapted to 70ms since: the fleet's capacity moves with it.
	a = Next(recs, 1, 1, a, 70*time.Millisecond, 0)
	require.Equal(t, 140*time.Millisecond, a.Fleet)
	require.Equal(t, 70*time.Millisecond, a.Capacity)
	// Without an adjuster a member holds what it has.
	h := Next(recs, 0, -1, s, 60*time.Millisecond, 0)
	require.Equal(t, 60*time.Millisecond, h.Capacity)
	require.False(t, h.Adapt)
	// A fixed capacity is the fleet's, split alike, adjuster or not.
	f := Next(recs, 0, -1, Step{}, 0, 90*time.Millisecond)
	require.Equal(t, 45*time.Millisecond, f.Capacity)
}

func TestNextAfterFollowing(t *testing.T) {
	// A follower elected adjuster goes on from the fleet capacity it followed.
	recs := []Record{{Demand: time.Second}, {Demand: 3 * time.Second}}
	prev := Step{Capacity: 30 * time.Millisecond, Fleet: 100 * time.Millisecond, Share: 0.3}
	s := Next(recs, 1, 1, prev, prev.Capacity, 0)
	require.Equal(t, 100*time.Millisecond, s.Fleet)
	require.True(t, s.Adapt)
}
