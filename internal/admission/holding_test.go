package admission

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A unit whose session holds a backend connection is admitted at once, past a full
// capacity and a queue, and charged.
func TestHoldingUnitIsAdmittedAtOnce(t *testing.T) {
	ctl := New(Config{Capacity: 10 * time.Millisecond, Discipline: SJF, QueueTimeout: time.Second, MaxQueue: 10},
		NewManualClock(time.Unix(1_700_000_000, 0)))
	var a, b, h Ticket
	st, err := ctl.Arrive(&a, Request{Cost: 10 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, Admitted, st)
	st, _ = ctl.Arrive(&b, Request{Cost: 5 * time.Millisecond})
	require.Equal(t, Queued, st)
	st, err = ctl.Arrive(&h, Request{Cost: 5 * time.Millisecond, Holding: true})
	require.NoError(t, err)
	require.Equal(t, Admitted, st)
	s := ctl.Snapshot()
	require.Equal(t, 15*time.Millisecond, s.Load)
	require.Equal(t, 1, s.Queued)
	ctl.Release(&a, time.Millisecond)
	ctl.Release(&h, time.Millisecond)
	require.Equal(t, Admitted, b.State())
}
