package admission

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAutoCapacityResumes: a controller that settled on a 4-core database hands its memory
// to a new one, as a restart does. The new one starts at the kept capacity, settled, with
// the kept times alone, and from its first second keeps the database at its peak with the
// capacity within 1.5x of where it was, where a cold one starts from the least.
func TestAutoCapacityResumes(t *testing.T) {
	forEachLaw(t, func(t *testing.T, autoConfig func(time.Duration) Config) {
		db := newPSDatabase(t, autoConfig(5*time.Millisecond), 64, 4)
		db.run(40 * time.Second)
		m, ok := db.ctl.Memory()
		require.True(t, ok)
		require.Equal(t, db.ctl.Snapshot().Capacity, m.Capacity)
		require.Contains(t, m.Alone, uint64(1))
		require.InDelta(t, float64(10*time.Millisecond), float64(m.Alone[1]), float64(2*time.Millisecond))

		again := newPSDatabase(t, autoConfig(5*time.Millisecond), 64, 4)
		again.ctl.Resume(m)
		s := again.ctl.Snapshot()
		require.Equal(t, m.Capacity, s.Capacity, "resumed at the kept capacity")
		require.Equal(t, PhaseSettle, s.Auto.Phase)
		for range 15 {
			rate := again.run(time.Second)
			require.Greater(t, rate, 0.9*400, "throughput from the first second")
			c := again.ctl.Snapshot().Capacity
			require.InDelta(t, 1, c.Seconds()/m.Capacity.Seconds(), 0.5, "capacity %s, kept %s", c, m.Capacity)
		}
	})
}

// TestAutoCapacityResumeBounds: a kept capacity outside the bounds resumes at the nearest;
// a static capacity keeps nothing and resumes nothing.
func TestAutoCapacityResumeBounds(t *testing.T) {
	ctl := New(autoConfig(10*time.Millisecond), NewManualClock(time.Unix(1_700_000_000, 0)))
	ctl.Resume(AutoMemory{Capacity: time.Hour})
	require.Equal(t, 10*time.Second, ctl.Snapshot().Capacity)
	static := autoConfig(10 * time.Millisecond)
	static.Auto = AutoConfig{}
	ctl = New(static, nil)
	_, ok := ctl.Memory()
	require.False(t, ok)
	ctl.Resume(AutoMemory{Capacity: time.Second})
	require.Equal(t, 10*time.Millisecond, ctl.Snapshot().Capacity)
}
