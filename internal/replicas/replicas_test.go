package replicas

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func pos(t *testing.T, s string) Pos {
	t.Helper()
	p, err := ParsePos(s)
	require.NoError(t, err)
	return p
}

func gtid(t *testing.T, s string) GTID {
	t.Helper()
	g, err := ParseGTID(s)
	require.NoError(t, err)
	return g
}

func TestPositions(t *testing.T) {
	p := pos(t, "1-2-7,0-1-15")
	assert.Equal(t, "0-1-15,1-2-7", p.String(), "domains in order")
	assert.True(t, p.Has(gtid(t, "0-3-15")), "the server does not matter within a domain")
	assert.False(t, p.Has(gtid(t, "0-1-16")))
	assert.False(t, p.Has(gtid(t, "2-1-1")), "a domain not seen is at 0")
	assert.True(t, p.Covers(pos(t, "0-1-10,1-2-7")))
	assert.False(t, p.Covers(pos(t, "0-1-10,1-2-8")))
	assert.True(t, p.Covers(nil))
	assert.Equal(t, uint64(3+1), p.Behind(pos(t, "0-1-18,1-2-8")))

	q := p.With(gtid(t, "0-1-20"))
	assert.Equal(t, "0-1-15,1-2-7", p.String(), "With leaves p alone")
	assert.Equal(t, "0-1-20,1-2-7", q.String())
	assert.Equal(t, "0-1-15,1-2-7", p.With(gtid(t, "0-1-3")).String(), "an older GTID changes nothing")
	assert.Equal(t, "0-1-15,1-2-7,5-1-1", p.Merge(pos(t, "5-1-1")).String())

	empty, err := ParsePos("")
	require.NoError(t, err)
	assert.Empty(t, empty)
	for _, bad := range []string{"0-1", "a-b-c", "0-1-2-3", "0-1-x"} {
		_, err := ParsePos(bad)
		assert.Error(t, err, bad)
	}
}

func keys(ss ...string) [][]byte {
	var out [][]byte
	for _, s := range ss {
		out = append(out, []byte(s))
	}
	return out
}

func TestVersionsPerTable(t *testing.T) {
	v := NewVersions()
	// Before the closure is read every write raises the floor.
	v.Wrote(keys("db.a"), false, gtid(t, "0-1-5"))
	need, ok := v.Need(nil, keys("db.b"), false)
	require.True(t, ok)
	assert.Equal(t, "0-1-5", need.String())

	c := NewClosure()
	c.AddWrite("db.parent", "db.child") // a cascade
	c.AddWrite("db.child", "db.audit")  // a trigger on the child
	c.AddUnknownWrite("db.opaque")      // BEGIN ... END
	c.AddView("db.v", "db.a")
	c.AddView("db.vv", "db.v")
	c.Close()
	require.True(t, v.SetClosure(v.Generation(), c))

	v.Wrote(keys("db.a"), false, gtid(t, "0-1-9"))
	v.Wrote(keys("db.parent"), false, gtid(t, "0-1-10"))
	cases := []struct {
		tables []string
		want   string
	}{
		{[]string{"db.b"}, "0-1-5"}, // the floor only
		{[]string{"db.a"}, "0-1-9"},
		{[]string{"db.vv"}, "0-1-9"},     // a view of a view of db.a
		{[]string{"db.audit"}, "0-1-10"}, // cascade, then trigger
		{[]string{"db.b", "db.child"}, "0-1-10"},
	}
	for _, tc := range cases {
		need, ok := v.Need(nil, keys(tc.tables...), false)
		require.True(t, ok)
		assert.Equal(t, tc.want, need.String(), "%v", tc.tables)
	}
	need, _ = v.Need(nil, nil, true)
	assert.Equal(t, "0-1-10", need.String(), "tables not known need every write")

	v.Wrote(keys("db.opaque"), false, gtid(t, "0-1-11"))
	need, _ = v.Need(nil, keys("db.b"), false)
	assert.Equal(t, "0-1-11", need.String(), "a trigger that cannot be read raises the floor")
	v.Wrote(keys("db.a"), true, gtid(t, "0-1-12"))
	need, _ = v.Need(nil, keys("db.b"), false)
	assert.Equal(t, "0-1-12", need.String(), "a write of unknown tables raises the floor")

	// DDL drops the closure; one read before the drop is refused.
	gen := v.Generation()
	v.DropClosure()
	assert.False(t, v.SetClosure(gen, c))
	assert.False(t, v.ClosureLoaded())
	v.Wrote(keys("db.a"), false, gtid(t, "0-1-13"))
	need, _ = v.Need(nil, keys("db.b"), false)
	assert.Equal(t, "0-1-13", need.String())
}

func TestVersionsWriteWithoutPosition(t *testing.T) {
	v := NewVersions()
	t0 := time.Now()
	v.WroteUnknown(t0)
	_, ok := v.Need(nil, keys("db.a"), false)
	assert.False(t, ok, "unknown until the primary is read after the write")
	v.Resolve(t0.Add(-time.Millisecond), pos(t, "0-1-7"))
	_, ok = v.Need(nil, keys("db.a"), false)
	assert.False(t, ok, "a read sent before the write does not resolve it")
	v.Resolve(t0.Add(time.Millisecond), pos(t, "0-1-8"))
	need, ok := v.Need(nil, keys("db.a"), false)
	assert.True(t, ok)
	assert.Equal(t, "0-1-8", need.String())
}

func TestNeedAllocatesNothing(t *testing.T) {
	v := NewVersions()
	v.SetClosure(v.Generation(), NewClosure())
	v.Wrote(keys("db.a"), false, GTID{Seq: 3})
	tables := keys("db.a", "db.b")
	buf := make(Pos, 0, 4)
	allocs := testing.AllocsPerRun(100, func() { buf, _ = v.Need(buf, tables, false) })
	assert.Zero(t, allocs)
}

func testRouter(balance Balance, primaryReads bool) *Router {
	r := NewRouter(Config{Primary: "p", Replicas: []string{"r1", "r2"}, Balance: balance,
		PrimaryReads: primaryReads, MaxLag: time.Second, PollInterval: time.Millisecond},
		NewVersions(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	return r
}

func TestPickOnlyCaughtUpReplicas(t *testing.T) {
	r := testRouter(SELF, false)
	now := time.Now()
	r.sawPrimary(now, now, Pos{{Seq: 10}})
	r1, r2 := r.Replicas()[0], r.Replicas()[1]
	assert.Nil(t, r.Pick(nil, true, time.Millisecond, 0), "nothing before the first poll")
	r.sawReplica(r1, Pos{{Seq: 10}}, true, nil, now)
	r.sawReplica(r2, Pos{{Seq: 8}}, true, nil, now)
	for range 10 {
		assert.Equal(t, r1, r.Pick(Pos{{Seq: 9}}, false, time.Millisecond, 0))
	}
	assert.Nil(t, r.Pick(Pos{{Seq: 11}}, false, time.Millisecond, 0), "no replica has it")
	assert.True(t, r.Waitable())

	// A replica that catches up wakes the waiting reads.
	ch := r.Advanced()
	r.sawReplica(r2, Pos{{Seq: 12}}, true, nil, now)
	select {
	case <-ch:
	default:
		t.Fatal("no signal when a replica advanced")
	}
	assert.Equal(t, r2, r.Pick(Pos{{Seq: 11}}, false, time.Millisecond, 0))

	r.MarkDown(r2, assert.AnError)
	assert.Nil(t, r.Pick(Pos{{Seq: 11}}, false, time.Millisecond, 0), "down")
	r.MarkDown(r1, assert.AnError)
	assert.False(t, r.Waitable(), "no replica to wait for")
}

func TestShunAndRejoin(t *testing.T) {
	r := testRouter(RR, false)
	r1 := r.Replicas()[0]
	t0 := time.Now()
	r.sawPrimary(t0, t0, Pos{{Seq: 1}})
	r.sawReplica(r1, Pos{{Seq: 1}}, true, nil, t0)
	r.sawPrimary(t0, t0.Add(100*time.Millisecond), Pos{{Seq: 2}})
	r.sawReplica(r1, Pos{{Seq: 1}}, true, nil, t0.Add(900*time.Millisecond))
	st := r1.Status()
	assert.False(t, st.Shunned)
	assert.InDelta(t, 0.8, st.LagSeconds, 1e-9)
	assert.Equal(t, uint64(1), st.LagTxns)
	r.sawReplica(r1, Pos{{Seq: 1}}, false, nil, t0.Add(1200*time.Millisecond))
	assert.True(t, r1.Status().Shunned, "past max_lag")
	assert.Nil(t, r.Pick(nil, true, 0, 0), "eventual reads avoid it too")
	// Catching up part of the way is not enough: it rejoins at half the bound.
	r.sawPrimary(t0, t0.Add(1000*time.Millisecond), Pos{{Seq: 3}})
	r.sawReplica(r1, Pos{{Seq: 2}}, true, nil, t0.Add(1700*time.Millisecond))
	assert.True(t, r1.Status().Shunned, "0.7 s behind, over half of 1 s")
	r.sawReplica(r1, Pos{{Seq: 3}}, true, nil, t0.Add(1800*time.Millisecond))
	assert.False(t, r1.Status().Shunned)
	assert.Equal(t, r1, r.Pick(nil, true, 0, 0))
}

func TestNoReadsBeforeThePrimaryIsKnown(t *testing.T) {
	r := testRouter(RR, false)
	r1 := r.Replicas()[0]
	t0 := time.Now()
	// The replica answers first: with nothing to compare its position with, it could be
	// any way behind, so it takes no reads, eventual ones included.
	r.sawReplica(r1, Pos{{Seq: 1}}, true, nil, t0)
	assert.False(t, r1.Status().Up)
	assert.Nil(t, r.Pick(nil, true, 0, 0))
	assert.False(t, r.Waitable())
	r.sawPrimary(t0, t0, Pos{{Seq: 5}})
	r.sawPrimary(t0, t0.Add(2*time.Second), Pos{{Seq: 6}})
	r.sawReplica(r1, Pos{{Seq: 1}}, true, nil, t0.Add(2*time.Second))
	assert.True(t, r1.Status().Shunned, "2 s behind the primary, past max_lag")
	r.sawReplica(r1, Pos{{Seq: 6}}, true, nil, t0.Add(2*time.Second))
	assert.Equal(t, r1, r.Pick(nil, true, 0, 0))

	// A primary that was polled and does not answer leaves the replicas to the reads.
	r = testRouter(RR, false)
	r1 = r.Replicas()[0]
	r.Primary().setPrimary(assert.AnError, t0)
	r.sawReplica(r1, Pos{{Seq: 1}}, true, nil, t0)
	assert.Equal(t, r1, r.Pick(nil, true, 0, 0))
}

func upRouter(t *testing.T, b Balance, primaryReads bool) *Router {
	r := testRouter(b, primaryReads)
	now := time.Now()
	r.sawPrimary(now, now, Pos{{Seq: 1}})
	for _, rp := range r.Replicas() {
		r.sawReplica(rp, Pos{{Seq: 1}}, true, nil, now)
	}
	return r
}

func TestBalancePolicies(t *testing.T) {
	t.Run("self picks the least outstanding work", func(t *testing.T) {
		r := upRouter(t, SELF, false)
		r1, r2 := r.Replicas()[0], r.Replicas()[1]
		r1.Start(50 * time.Millisecond)
		r2.Start(time.Millisecond)
		r2.Start(time.Millisecond)
		for range 5 {
			assert.Equal(t, r2, r.Pick(nil, true, time.Millisecond, 0), "fewer ms, though more reads")
		}
	})
	t.Run("sqf picks the fewest outstanding reads", func(t *testing.T) {
		r := upRouter(t, SQF, false)
		r1, r2 := r.Replicas()[0], r.Replicas()[1]
		r1.Start(50 * time.Millisecond)
		r2.Start(time.Millisecond)
		r2.Start(time.Millisecond)
		assert.Equal(t, r1, r.Pick(nil, true, time.Millisecond, 0))
	})
	t.Run("backends with room come first", func(t *testing.T) {
		for _, b := range []Balance{SELF, SQF, RR, LARD} {
			r := upRouter(t, b, false)
			r1, r2 := r.Replicas()[0], r.Replicas()[1]
			r2.Start(50 * time.Millisecond) // busier by every measure
			full := map[*Backend]bool{r1: true}
			r.SetRoom(func(b *Backend, _ time.Duration) bool { return !full[b] })
			for range 4 {
				assert.Equal(t, r2, r.Pick(nil, true, time.Millisecond, 42), "%s: r1 has no room", b)
			}
			full[r2] = true
			got := r.Pick(nil, true, time.Millisecond, 42)
			assert.NotNil(t, got, "%s: with room nowhere, the policy alone decides", b)
			if b == SELF || b == SQF {
				assert.Equal(t, r1, got, "%s", b)
			}
		}
	})
	t.Run("rr takes turns", func(t *testing.T) {
		r := upRouter(t, RR, false)
		a, b := r.Pick(nil, true, 0, 0), r.Pick(nil, true, 0, 0)
		assert.NotEqual(t, a, b)
		assert.Equal(t, a, r.Pick(nil, true, 0, 0))
	})
	t.Run("lard keeps tables on their replica until it is much busier", func(t *testing.T) {
		r := upRouter(t, LARD, false)
		home := r.Pick(nil, true, time.Millisecond, 42)
		for range 5 {
			assert.Equal(t, home, r.Pick(nil, true, time.Millisecond, 42))
		}
		home.Start(10 * time.Millisecond)
		other := r.Pick(nil, true, time.Millisecond, 42)
		assert.NotEqual(t, home, other, "moved off a busy replica")
		assert.Equal(t, other, r.Pick(nil, true, time.Millisecond, 42))
	})
	t.Run("the primary takes reads only when allowed", func(t *testing.T) {
		r := upRouter(t, SELF, false)
		for _, rp := range r.Replicas() {
			rp.Start(time.Second)
		}
		assert.False(t, r.Pick(nil, true, 0, 0).Primary)
		r = upRouter(t, SELF, true)
		for _, rp := range r.Replicas() {
			rp.Start(time.Second)
		}
		assert.True(t, r.Pick(nil, true, 0, 0).Primary)
	})
}

func TestSessionPositions(t *testing.T) {
	s := NewSessionPositions(2)
	s.Wrote([]byte("a"), GTID{Seq: 5})
	s.Wrote([]byte("b"), GTID{Seq: 7})
	assert.Equal(t, "0-0-5", s.Need(nil, []byte("a")).String())
	assert.Empty(t, s.Need(nil, []byte("c")))
	s.Wrote([]byte("c"), GTID{Seq: 9}) // past the bound: the others fold into the floor
	assert.Equal(t, 1, s.Len())
	assert.Equal(t, "0-0-7", s.Need(nil, []byte("a")).String(), "a's write is still seen, through the floor")
	assert.Equal(t, "0-0-9", s.Need(nil, []byte("c")).String())
}

func TestTableKey(t *testing.T) {
	assert.Equal(t, "shop.orders", string(TableKey(nil, []byte("Shop"), []byte("ORDERS"))))
}

// TestVersionsRecordMerges moves a version map through its record into another map that
// has writes of its own, as a hand-over to a new process does: every read needs what it
// needed in either.
func TestVersionsRecordMerges(t *testing.T) {
	old := NewVersions()
	c := NewClosure()
	c.Close()
	require.True(t, old.SetClosure(old.Generation(), c))
	old.Wrote(keys("db.a"), false, gtid(t, "0-1-9"))
	old.Wrote(keys("db.b"), false, gtid(t, "0-1-4"))
	old.Wrote(keys("db.x"), true, gtid(t, "0-1-3")) // unknown tables: the floor

	taker := NewVersions()
	require.True(t, taker.SetClosure(taker.Generation(), c))
	taker.Wrote(keys("db.b"), false, gtid(t, "0-1-7"))
	require.NoError(t, taker.Merge(old.Record()))
	for _, tc := range []struct{ table, want string }{
		{"db.a", "0-1-9"}, {"db.b", "0-1-7"}, {"db.c", "0-1-3"},
	} {
		need, ok := taker.Need(nil, keys(tc.table), false)
		require.True(t, ok)
		assert.Equal(t, tc.want, need.String(), tc.table)
	}
	need, _ := taker.Need(nil, nil, true)
	assert.Equal(t, "0-1-9", need.String(), "tables not known need every write of both")

	assert.Error(t, taker.Merge(VersionsRecord{All: "not a position"}))
}

func TestAwaitApplied(t *testing.T) {
	r := testRouter(SELF, false)
	now := time.Now()
	r.sawPrimary(now, now, Pos{{Seq: 10}})
	ctx := context.Background()
	assert.Equal(t, AppliedNoReplica, r.AwaitApplied(ctx, Pos{{Seq: 10}}, time.Second), "no replica seen yet")

	r1, r2 := r.Replicas()[0], r.Replicas()[1]
	r.sawReplica(r1, Pos{{Seq: 9}}, true, nil, now)
	r.sawReplica(r2, Pos{{Seq: 8}}, false, nil, now)
	done := make(chan string, 1)
	go func() { done <- r.AwaitApplied(ctx, Pos{{Seq: 10}}, 10*time.Second) }()
	r.sawReplica(r2, Pos{{Seq: 10}}, false, nil, time.Now())
	assert.Equal(t, AppliedOnReplica, <-done, "a replica that has the write counts, its threads running or not")

	r.SetPrimary("r2") // r2 was promoted: its position no longer says a replica has a write
	assert.Equal(t, AppliedTimeout, r.AwaitApplied(ctx, Pos{{Seq: 10}}, 20*time.Millisecond))
	start := time.Now()
	assert.Equal(t, AppliedNoReplica, r.AwaitApplied(ctx, Pos{{Seq: 10}}, time.Second), "after a timeout, no more waits")
	assert.Less(t, time.Since(start), 500*time.Millisecond)
	r.sawReplica(r1, Pos{{Seq: 10}}, true, nil, time.Now())
	assert.Equal(t, AppliedOnReplica, r.AwaitApplied(ctx, Pos{{Seq: 10}}, time.Second), "a replica caught up: waits are on again")
}
