package fleet

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
	"github.com/gatekeeperdb/gatekeeper/internal/fleet/etcdtest"
)

// testMember is a member with one backend of a fixed capacity, running until stop.
type testMember struct {
	*Member
	ctl  *admission.Controller
	stop context.CancelFunc
	done chan struct{}
}

func startMember(t *testing.T, endpoint, name string, capacity time.Duration, auto bool) *testMember {
	t.Helper()
	cfg := admission.Config{Capacity: capacity, QueueTimeout: time.Second, MaxQueue: 100}
	fixed := capacity
	if auto {
		cfg.Auto = admission.AutoConfig{Enabled: true, Min: time.Millisecond, Max: time.Second}
		fixed = 0
	}
	ctl := admission.New(cfg, nil)
	mb, err := New(Config{Endpoints: []string{endpoint}, Prefix: "/test/", Name: name, Interval: 100 * time.Millisecond,
		LeaseTTL: 2 * time.Second, DialTimeout: 500 * time.Millisecond},
		func() []Backend { return []Backend{{Key: "primary", Ctl: ctl, Fixed: fixed}} },
		slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	m := &testMember{Member: mb, ctl: ctl, stop: cancel, done: make(chan struct{})}
	go func() { mb.Run(ctx); close(m.done) }()
	t.Cleanup(func() { m.leave(); mb.Close() })
	return m
}

// leave stops the member as a shutdown does: its keys go at once.
func (m *testMember) leave() {
	m.stop()
	<-m.done
}

// crash stops the member as kill -9 would: nothing is deleted; its lease runs out.
func (m *testMember) crash() {
	m.Close()
	m.leave()
}

// waitCapacity waits until every member's capacity is want.
func waitCapacity(t *testing.T, within time.Duration, want time.Duration, ms ...*testMember) time.Duration {
	t.Helper()
	start := time.Now()
	require.Eventually(t, func() bool {
		for _, m := range ms {
			if m.ctl.Capacity() != want {
				return false
			}
		}
		return true
	}, within, 20*time.Millisecond, "capacities did not reach %v", want)
	return time.Since(start)
}

// TestFleetSplitsACapacity: three members of a fixed 90ms capacity admit 30ms each; one
// killed frees its share within its lease; with etcd stopped they keep their shares, and
// once it is back a new member gets its share.
func TestFleetSplitsACapacity(t *testing.T) {
	etcd := etcdtest.Start(t)
	a := startMember(t, etcd.Endpoint, "a", 90*time.Millisecond, false)
	b := startMember(t, etcd.Endpoint, "b", 90*time.Millisecond, false)
	c := startMember(t, etcd.Endpoint, "c", 90*time.Millisecond, false)
	waitCapacity(t, 5*time.Second, 30*time.Millisecond, a, b, c)
	require.Len(t, a.Status().Members, 3)

	c.crash()
	took := waitCapacity(t, 2*time.Second+time.Second+time.Second, 45*time.Millisecond, a, b)
	t.Logf("a killed member's share went to the others in %v (lease 2s)", took)

	etcd.Stop()
	require.Eventually(t, func() bool { return !a.Status().Connected && !b.Status().Connected }, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, 45*time.Millisecond, a.ctl.Capacity(), "without etcd the last share stays")
	require.NotEmpty(t, a.Status().LastError)

	etcd.Restart()
	d := startMember(t, etcd.Endpoint, "d", 90*time.Millisecond, false)
	waitCapacity(t, 10*time.Second, 30*time.Millisecond, a, b, d)
	require.True(t, a.Status().Connected)

	// A member that leaves in order frees its share at the next interval.
	d.leave()
	waitCapacity(t, time.Second, 45*time.Millisecond, a, b)
}

// TestFleetOneAdjuster: with an adaptive capacity one member adapts, the others follow its
// fleet capacity; when it dies another takes over.
func TestFleetOneAdjuster(t *testing.T) {
	etcd := etcdtest.Start(t)
	a := startMember(t, etcd.Endpoint, "a", 60*time.Millisecond, true)
	require.Eventually(t, func() bool { return a.Status().Leader }, 5*time.Second, 20*time.Millisecond)
	b := startMember(t, etcd.Endpoint, "b", 10*time.Millisecond, true)
	// b follows: half of a's 60ms, a keeps half of it.
	waitCapacity(t, 5*time.Second, 30*time.Millisecond, a, b)
	require.True(t, b.ctl.Following())
	require.False(t, a.ctl.Following())
	require.Equal(t, "a", b.Status().Adjuster)

	a.crash()
	require.Eventually(t, func() bool { return b.Status().Leader }, 5*time.Second, 20*time.Millisecond)
	waitCapacity(t, 5*time.Second, 60*time.Millisecond, b)
	require.False(t, b.ctl.Following(), "the new adjuster adapts")
}

// TestFleetSignals: between syncs a follower starts nothing new while the adjuster times
// its units alone, and takes its share of a move of the fleet's capacity at once.
func TestFleetSignals(t *testing.T) {
	etcd := etcdtest.Start(t)
	a := startMember(t, etcd.Endpoint, "a", 60*time.Millisecond, true)
	require.Eventually(t, func() bool { return a.Status().Leader }, 5*time.Second, 20*time.Millisecond)
	b := startMember(t, etcd.Endpoint, "b", 10*time.Millisecond, true)
	waitCapacity(t, 5*time.Second, 30*time.Millisecond, a, b)

	etcd.Put("/test/probe/primary", `{"by":"a","for_ns":5000000000}`)
	require.Eventually(t, func() bool { return !b.ctl.Room(time.Millisecond) }, time.Second, 5*time.Millisecond,
		"the follower still admits during the adjuster's solo check")
	cli := etcd.Client()
	defer cli.Close()
	_, err := cli.Delete(context.Background(), "/test/probe/primary")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return b.ctl.Room(time.Millisecond) }, time.Second, 5*time.Millisecond,
		"the follower holds after the solo check ended")

	etcd.Put("/test/capacity/primary", `{"by":"a","fleet_ns":200000000}`)
	took := waitCapacity(t, 2*time.Second, 100*time.Millisecond, b)
	require.Less(t, took, 100*time.Millisecond, "the follower took the move at its next interval, not at once")
}
