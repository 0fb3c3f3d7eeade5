package admission

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Room says whether a unit would be admitted at once: it fits the capacity and the
// concurrency bound, and nothing waits before it.
func TestRoom(t *testing.T) {
	ctl := New(Config{Capacity: 10 * time.Millisecond, Discipline: FIFO, QueueTimeout: time.Second, MaxQueue: 10,
		MaxConcurrency: 2}, NewManualClock(time.Unix(1_700_000_000, 0)))
	ms := time.Millisecond
	require.True(t, ctl.Room(20*ms), "alone, even a unit larger than the capacity runs")
	var a, b, c Ticket
	st, _ := ctl.Arrive(&a, Request{Cost: 8 * ms})
	require.Equal(t, Admitted, st)
	require.False(t, ctl.Room(5*ms), "8 + 5 ms is over the capacity")
	require.True(t, ctl.Room(2*ms))
	st, _ = ctl.Arrive(&b, Request{Cost: 2 * ms})
	require.Equal(t, Admitted, st)
	require.False(t, ctl.Room(0), "two run: the concurrency bound")
	st, _ = ctl.Arrive(&c, Request{Cost: 5 * ms})
	require.Equal(t, Queued, st)
	ctl.Release(&b, ms)
	require.False(t, ctl.Room(ms), "a unit waits: it goes first")
	ctl.Release(&a, ms)
	require.Equal(t, Admitted, c.State())
	require.True(t, ctl.Room(5*ms))
	require.Equal(t, Admitted, c.State(), "asking admits nothing")
	require.Equal(t, 1, ctl.Snapshot().Running)
}
