package admission

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The gradient law's own cases: its cold start, the absence of a limit cycle where the
// rules law ran one, and its probes of the time alone.

// TestGradientColdStart: 200 clients of 10 ms units on a 4-core database, from a cold start
// at 5 ms. The target (2.5) is 10 units running, 100 ms of charges; the capacity is within
// 1.5x of it within 5 s of the first unit and stays there, settled, with the database at its
// peak.
func TestGradientColdStart(t *testing.T) {
	db := newPSDatabase(t, autoConfig(5*time.Millisecond), 200, 4)
	var phases []Phase
	for range 5 {
		db.run(time.Second)
		phases = append(phases, db.ctl.Snapshot().Auto.Phase)
	}
	require.Contains(t, phases, PhaseSettle, "settled within 5 s")
	rate := 0.0
	for i := range 25 {
		rate += db.run(time.Second) / 25
		c := db.ctl.Snapshot().Capacity
		require.InDelta(t, 0, math.Log(c.Seconds()/0.1), math.Log(1.5), "second %d: capacity %s", 6+i, c)
	}
	require.Greater(t, rate, 0.95*400, "throughput")
}

// swingOver is the largest ratio of the highest capacity to the lowest within any span of
// the samples (a second apart).
func swingOver(caps []time.Duration, span int) float64 {
	worst := 1.0
	for i := range caps {
		lo, hi := caps[i], caps[i]
		for _, c := range caps[i:min(i+span, len(caps))] {
			lo, hi = min(lo, c), max(hi, c)
		}
		worst = max(worst, hi.Seconds()/lo.Seconds())
	}
	return worst
}

// TestGradientNoLimitCycle is the case that ran the rules law in a cycle at 800 bookstore
// clients: heavy units (one in 20 needs 200 ms, the others 2 ms, of shapes of their own)
// charged their moving busy times, which grow with the units running, so that the stretch
// answers a move late, and the throughput of a second swings by 5x with the heavy units in
// it. Once settled, the rules law's capacity swings by 3x within 30 s; the gradient law's
// wanders with the noise by less than 2x, and the database stays at its peak.
func TestGradientNoLimitCycle(t *testing.T) {
	forEachLaw(t, func(t *testing.T, autoConfig func(time.Duration) Config) {
		db := newPSDatabaseOf(t, autoConfig(5*time.Millisecond), 800, 4, 2*time.Millisecond)
		db.learn, db.shapes, db.heavy, db.heavyOne = true, true, 200*time.Millisecond, 20
		db.run(30 * time.Second)
		var caps []time.Duration
		rate := 0.0
		for range 90 {
			rate += db.run(time.Second) / 90
			caps = append(caps, db.ctl.Snapshot().Capacity)
		}
		sw := swingOver(caps, 30)
		t.Logf("%s: swing within 30 s %.2f, %.0f units/s, capacity %s to %s", db.ctl.Snapshot().Auto.Law, sw, rate, min(caps[0], caps[len(caps)-1]), max(caps[0], caps[len(caps)-1]))
		if db.ctl.Snapshot().Auto.Law == LawGradient {
			require.Less(t, sw, 2.0, "swing within 30 s")
		} else {
			require.Greater(t, sw, 2.5, "the rules law's cycle")
		}
		// Peak: 4 cores at a mean demand of 0.95*2+0.05*200 = 11.9 ms: 336 units a second
		// with four units running at every moment; both laws reach about 0.9 of it.
		require.Greater(t, rate, 0.85*336, "throughput")
	})
}

// TestGradientProbesOnSchedule: settled, the law probes the time alone every 30 s give or
// take a quarter (four or five times in two minutes, not the rules law's every few
// windows), each probe costs a few milliseconds of one unit at a time, and the schedule is
// jittered.
func TestGradientProbesOnSchedule(t *testing.T) {
	db := newPSDatabase(t, autoConfig(5*time.Millisecond), 64, 4)
	db.run(30 * time.Second)
	before := db.ctl.Snapshot().Auto
	db.run(120 * time.Second)
	after := db.ctl.Snapshot().Auto
	probes := after.Solo - before.Solo
	require.GreaterOrEqual(t, probes, uint64(3), "probes in two minutes")
	require.LessOrEqual(t, probes, uint64(6), "probes in two minutes")
	cost := after.Probing - before.Probing
	require.Positive(t, cost)
	require.Less(t, cost, 120*time.Second/100, "probing takes under 1%% of the time")

	var g gradient
	g.rng = 1
	seen := map[time.Duration]bool{}
	now := time.Unix(0, 0)
	for range 100 {
		g.schedule(now, 2*time.Second)
		d := g.probeAt.Sub(now)
		require.GreaterOrEqual(t, d, 22500*time.Millisecond)
		require.LessOrEqual(t, d, 37500*time.Millisecond)
		seen[d.Round(time.Second)] = true
	}
	require.Greater(t, len(seen), 5, "jittered")
}

// TestGradientProbesAtTheFloor: times alone ten times too low (timed on a faster database)
// make every stretch read ten times the target, and the capacity falls to its floor. Three
// windows there call a probe, which puts the times alone right, and the capacity comes back
// to the knee within 15 s.
func TestGradientProbesAtTheFloor(t *testing.T) {
	db := newPSDatabase(t, autoConfig(5*time.Millisecond), 64, 4)
	db.run(30 * time.Second)
	for shape, st := range db.ctl.adjuster.solo {
		st.log -= math.Log(10)
		db.ctl.adjuster.solo[shape] = st
	}
	low := time.Hour
	for range 15 {
		db.run(time.Second)
		low = min(low, db.ctl.Snapshot().Capacity)
	}
	s := db.ctl.Snapshot()
	require.InDelta(t, 0, math.Log(s.Capacity.Seconds()/0.1), math.Log(1.5), "capacity %s after the probes (lowest %s)", s.Capacity, low)
	require.InDelta(t, 10*time.Millisecond, s.Auto.Alone, float64(3*time.Millisecond), "times alone put right")
}

// TestGradientFollowsASlowerDatabase: every unit needs twice the service, alone too (the
// database lost half its speed). The stretch first reads twice what it is; the capacity's
// move calls a probe, whose drift moves every shape's time alone, and the capacity is back
// within 1.5x of where the same work needs it within 15 s, with the database at its new peak.
func TestGradientFollowsASlowerDatabase(t *testing.T) {
	db := newPSDatabase(t, autoConfig(5*time.Millisecond), 64, 4)
	db.run(30 * time.Second)
	before := db.ctl.Snapshot().Capacity
	db.demand *= 2
	db.run(15 * time.Second)
	after := db.ctl.Snapshot().Capacity
	// The same units of cost (10 ms charged), twice as long alone and under load: the
	// same number running reads the target, at the same capacity.
	require.InDelta(t, 0, math.Log(after.Seconds()/before.Seconds()), math.Log(1.5), "capacity %s, before %s", after, before)
	require.Greater(t, db.run(10*time.Second), 0.9*200, "throughput at half the speed")
}
