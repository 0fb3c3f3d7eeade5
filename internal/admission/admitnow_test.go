package admission

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdmitNowMovesAChargeHere: a unit another controller admitted, moved here, is
// admitted at once though the capacity is full and the session gate past its limit, is
// charged while it runs, and gives its charge back without touching the gate.
func TestAdmitNowMovesAChargeHere(t *testing.T) {
	cfg := Config{Capacity: 10 * time.Millisecond, QueueTimeout: time.Second, MaxQueue: 10,
		Sessions: SessionConfig{ActiveLimit: 1, BlockingQueue: 1}}
	require.NoError(t, cfg.Validate())
	clock := NewManualClock(time.Unix(0, 0))
	replica, primary := New(cfg, clock), New(cfg, clock)
	heavy := Request{Type: 1, Cost: 10 * time.Millisecond, Accepted: true}

	var running, moved, next Ticket
	st, err := primary.Arrive(&running, heavy)
	require.NoError(t, err)
	require.Equal(t, Admitted, st, "the primary is full")

	read := Request{Type: 2, Cost: 5 * time.Millisecond, Accepted: true}
	st, err = replica.Arrive(&moved, read)
	require.NoError(t, err)
	require.Equal(t, Admitted, st)
	replica.Release(&moved, 0)
	primary.AdmitNowAt(&moved, read, clock.Now())
	require.Equal(t, Admitted, moved.State())

	s := primary.Snapshot()
	require.Equal(t, 2, s.Running)
	require.Equal(t, 15*time.Millisecond, s.Load)
	require.Equal(t, 1, s.Active, "the moved unit did not pass the gate")
	require.Zero(t, replica.Snapshot().Running)

	primary.Release(&moved, time.Millisecond)
	s = primary.Snapshot()
	require.Equal(t, 1, s.Running)
	require.Equal(t, 10*time.Millisecond, s.Load)
	require.Equal(t, 1, s.Active)

	// The gate still counts the unit that passed it: the next waits in its blocking queue.
	st, err = primary.Arrive(&next, read)
	require.NoError(t, err)
	require.Equal(t, Blocked, st)
}
