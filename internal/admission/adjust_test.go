package admission

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// psDatabase drives a controller with closed-loop clients in front of a database that
// shares cores processors among the units it runs: with n running, each unit progresses at
// min(1, cores/n) of full speed. Every unit needs demand of service and is charged cost.
// It steps a manual clock by dt and returns the units completed per step.
type psDatabase struct {
	t      *testing.T
	clock  *ManualClock
	ctl    *Controller
	cores  float64
	demand time.Duration
	cost   time.Duration
	typ    uint64 // of the units that arrive
	// oneShot: a client that completed a unit sends no other (a burst, not a closed loop).
	oneShot bool
	// learn: units are charged a moving average of the busy times of those completed, as
	// the estimator does without estimator.backend_cpus, instead of cost: past the knee
	// the charge grows with the units running.
	learn bool
	// slow: outside solo checks every unit runs this many times slower (0: not), as with
	// a processor quota that throttles the database whenever it is busy: units take longer
	// than alone however few run.
	slow float64
	// heavy: one unit in heavyOne (at random) needs heavy instead of demand, of the same
	// type and charged the same (an interaction's scan among its index lookups); shapes
	// gives the two kinds shapes of their own.
	heavy    time.Duration
	heavyOne uint64
	shapes   bool
	seed     uint64
	tickets  []Ticket
	need     []time.Duration // the service each client's unit needs
	left     []float64       // service still needed by running units, in seconds; <0: not running
	started  []time.Time
}

func newPSDatabase(t *testing.T, cfg Config, clients int, cores float64) *psDatabase {
	return newPSDatabaseOf(t, cfg, clients, cores, 10*time.Millisecond)
}

// newPSDatabaseOf is newPSDatabase with units of the given demand, charged as much.
func newPSDatabaseOf(t *testing.T, cfg Config, clients int, cores float64, demand time.Duration) *psDatabase {
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	db := &psDatabase{t: t, clock: clock, ctl: New(cfg, clock), cores: cores,
		demand: demand, cost: demand, typ: 1,
		tickets: make([]Ticket, clients), need: make([]time.Duration, clients), left: make([]float64, clients), started: make([]time.Time, clients)}
	for i := range db.tickets {
		db.arrive(i)
	}
	return db
}

func (db *psDatabase) arrive(i int) {
	req := Request{Type: db.typ, Cost: db.cost, Service: db.demand}
	db.need[i] = db.demand
	if db.heavyOne > 0 {
		db.seed = db.seed*6364136223846793005 + 1442695040888963407
		heavy := (db.seed>>33)%db.heavyOne == 0
		if heavy {
			db.need[i] = db.heavy
		}
		if db.shapes {
			req.Shape = 100
			if heavy {
				req.Shape++
			}
		}
	}
	st, err := db.ctl.Arrive(&db.tickets[i], req)
	require.NoError(db.t, err)
	db.left[i] = -1
	if st == Admitted {
		db.start(i)
	}
}

func (db *psDatabase) start(i int) {
	db.left[i] = db.need[i].Seconds()
	db.started[i] = db.clock.Now()
}

// step runs the database for dt and returns how many units completed.
func (db *psDatabase) step(dt time.Duration) int {
	n := 0
	for i := range db.left {
		if db.left[i] < 0 && db.tickets[i].State() == Admitted {
			db.start(i) // admitted by a release or a tick
		}
		if db.left[i] >= 0 {
			n++
		}
	}
	rate := 1.0
	if float64(n) > db.cores {
		rate = db.cores / float64(n)
	}
	if db.slow > 0 && !db.ctl.adjuster.checking {
		rate /= db.slow
	}
	db.clock.Advance(dt)
	done := 0
	for i := range db.left {
		if db.left[i] < 0 {
			continue
		}
		db.left[i] -= rate * dt.Seconds()
		if db.left[i] <= 1e-12 {
			busy := db.clock.Now().Sub(db.started[i])
			db.ctl.Release(&db.tickets[i], busy)
			if db.learn {
				db.cost += (busy - db.cost) / 10
			}
			done++
			if db.oneShot {
				db.left[i] = -1
				continue
			}
			db.arrive(i)
		}
	}
	db.ctl.Tick(db.clock.Now())
	return done
}

// run steps for d and returns completions a second.
func (db *psDatabase) run(d time.Duration) float64 {
	done := 0
	for range int(d / time.Millisecond) {
		done += db.step(time.Millisecond)
	}
	return float64(done) / d.Seconds()
}

// sleepBurst has every client send one statement of a new type that takes 50 ms without
// processor (SLEEP), steps until all are served, checks that none timed out, and returns
// how long they took.
func (db *psDatabase) sleepBurst() time.Duration {
	db.demand, db.cost, db.typ = 50*time.Millisecond, 50*time.Millisecond, db.typ+1
	for i := range db.tickets {
		db.arrive(i)
	}
	done, took := 0, time.Duration(0)
	for done < len(db.tickets) {
		done += db.step(time.Millisecond)
		took += time.Millisecond
		require.Less(db.t, took, 10*time.Second, "the burst is served")
	}
	require.Zero(db.t, db.ctl.Snapshot().TimedOut)
	return took
}

func autoConfig(start time.Duration) Config {
	return Config{Capacity: start, Discipline: SJF, QueueTimeout: time.Hour, MaxQueue: 1 << 20,
		Auto: AutoConfig{Enabled: true, Min: 5 * time.Millisecond, Max: 10 * time.Second}}
}

// rulesConfig is autoConfig under the rules of earlier releases (LawRules).
func rulesConfig(start time.Duration) Config {
	cfg := autoConfig(start)
	cfg.Auto.Law = LawRules
	return cfg
}

// forEachLaw runs a test of what every law must do under each, with its autoConfig.
func forEachLaw(t *testing.T, test func(t *testing.T, autoConfig func(time.Duration) Config)) {
	for _, law := range []Law{LawGradient, LawRules} {
		t.Run(law.String(), func(t *testing.T) {
			test(t, func(start time.Duration) Config {
				cfg := autoConfig(start)
				cfg.Auto.Law = law
				return cfg
			})
		})
	}
}

// TestAutoCapacityFindsTheKnee starts below and above the knee of a 4-core database (10 ms
// units: the knee is 4 units, 40 ms of cost; the 64 clients hold 640 ms) and checks that
// the capacity settles where units run 2.5 times as long as alone (the default target): 10
// units, 100 ms, with the database's throughput close to its peak.
func TestAutoCapacityFindsTheKnee(t *testing.T) {
	forEachLaw(t, func(t *testing.T, autoConfig func(time.Duration) Config) {
		for _, start := range []time.Duration{5 * time.Millisecond, 400 * time.Millisecond} {
			db := newPSDatabase(t, autoConfig(start), 64, 4)
			db.run(60 * time.Second)
			var caps []float64
			rate := 0.0
			for range 20 {
				rate += db.run(time.Second) / 20
				caps = append(caps, db.ctl.Snapshot().Capacity.Seconds())
			}
			mean := 0.0
			for _, c := range caps {
				mean += c / float64(len(caps))
			}
			// Peak: 4 cores / 10 ms = 400 units a second.
			require.Greater(t, rate, 0.9*400, "start %s: throughput", start)
			require.InDelta(t, 0.1, mean, 0.025, "start %s: capacity %v", start, caps)
			require.InDelta(t, 2.5, db.ctl.Snapshot().Auto.Stretch, 0.4, "start %s: stretch", start)
			s := db.ctl.Snapshot().Auto
			require.True(t, s.Enabled)
			require.NotZero(t, s.Moved)
			require.NotZero(t, s.Solo, "solo checks")
			require.NotZero(t, s.SoloUnits, "units timed alone")
			require.InDelta(t, 10*time.Millisecond, s.Alone, float64(1500*time.Microsecond), "start %s: time alone", start)
		}
	})
}

// TestAutoCapacityFollowsAStepChange halves the database's processors and gives them back:
// the capacity follows within 30 s each time, and throughput stays near the new peak.
func TestAutoCapacityFollowsAStepChange(t *testing.T) {
	forEachLaw(t, func(t *testing.T, autoConfig func(time.Duration) Config) {
		db := newPSDatabase(t, autoConfig(5*time.Millisecond), 64, 8)
		db.run(40 * time.Second)
		before := db.ctl.Snapshot().Capacity
		db.cores = 4
		db.run(30 * time.Second)
		rate := db.run(10 * time.Second)
		half := db.ctl.Snapshot().Capacity
		require.Greater(t, rate, 0.9*400, "throughput on 4 cores")
		require.Less(t, half.Seconds(), 0.8*before.Seconds(), "capacity on 4 cores %s, on 8 %s", half, before)
		db.cores = 8
		db.run(30 * time.Second)
		rate = db.run(10 * time.Second)
		require.Greater(t, rate, 0.9*800, "throughput on 8 cores again")
		require.Greater(t, db.ctl.Snapshot().Capacity.Seconds(), 1.3*half.Seconds())
	})
}

// TestAutoCapacityShapesOfAType: one unit in ten of the type needs 40 ms, the others 1 ms,
// all charged the mean, 4.9 ms. Given shapes of their own, the two keep solo times of their
// own, and the time alone the stretch divides by holds at their geometric mean (1.45 ms)
// instead of swinging with which of them ran alone last, as one solo time for both did (a
// heavy unit timed alone moves it 2.5 times up).
func TestAutoCapacityShapesOfAType(t *testing.T) {
	forEachLaw(t, func(t *testing.T, autoConfig func(time.Duration) Config) {
		db := newPSDatabaseOf(t, autoConfig(5*time.Millisecond), 64, 4, time.Millisecond)
		db.heavy, db.heavyOne, db.shapes = 40*time.Millisecond, 10, true
		db.cost = 4900 * time.Microsecond
		db.run(60 * time.Second)
		rate := 0.0
		var alone []time.Duration
		for range 30 {
			rate += db.run(time.Second) / 30
			alone = append(alone, db.ctl.Snapshot().Auto.Alone)
		}
		// Peak: 4 cores / 4.9 ms, some 816 units a second.
		require.Greater(t, rate, 0.9*816, "throughput")
		for _, a := range alone {
			require.InDelta(t, 1.45, a.Seconds()*1000, 0.3, "time alone (ms) each second: %v", alone)
		}
	})
}

// TestAutoCapacityWithBusyTimeCosts: charged busy times (no estimator.backend_cpus), a
// unit's charge grows with the units running past the knee, so a capacity past it is
// always full however few more units it lets in. The capacity must still settle near the
// knee (4 units of 10 ms: 40 ms of charges there, 64 clients would hold 10 s; at the target,
// 10 units charged about 25 ms each, 250 ms, give or take the dead band), not take every
// rise in charges for room to grow into.
func TestAutoCapacityWithBusyTimeCosts(t *testing.T) {
	forEachLaw(t, func(t *testing.T, autoConfig func(time.Duration) Config) {
		for _, start := range []time.Duration{5 * time.Millisecond, 400 * time.Millisecond} {
			db := newPSDatabase(t, autoConfig(start), 64, 4)
			db.learn = true
			db.run(60 * time.Second)
			rate, top := 0.0, time.Duration(0)
			for range 20 {
				rate += db.run(time.Second) / 20
				top = max(top, db.ctl.Snapshot().Capacity)
			}
			require.Greater(t, rate, 0.9*400, "start %s: throughput", start)
			require.Less(t, top, 300*time.Millisecond, "start %s: the capacity ran past the knee", start)
		}
	})
}

// TestAutoCapacityHoldsWhenIdle: with fewer clients than the knee nothing waits, and the
// capacity does not move.
func TestAutoCapacityHoldsWhenIdle(t *testing.T) {
	forEachLaw(t, func(t *testing.T, autoConfig func(time.Duration) Config) {
		db := newPSDatabase(t, autoConfig(100*time.Millisecond), 3, 4)
		db.run(20 * time.Second)
		s := db.ctl.Snapshot()
		require.Equal(t, 100*time.Millisecond, s.Capacity)
		require.Equal(t, DecisionIdle, s.Auto.Last)
		require.Zero(t, s.Auto.Moved)
	})
}

// TestAutoCapacityWaitsOutAStall: the database stops for 3 s (a checkpoint); the capacity
// does not collapse, and throughput is back at its peak right after.
func TestAutoCapacityWaitsOutAStall(t *testing.T) {
	forEachLaw(t, func(t *testing.T, autoConfig func(time.Duration) Config) {
		db := newPSDatabase(t, autoConfig(5*time.Millisecond), 64, 4)
		db.run(40 * time.Second)
		before := db.ctl.Snapshot().Capacity
		db.cores = 0.01
		db.run(3 * time.Second)
		after := db.ctl.Snapshot()
		require.GreaterOrEqual(t, after.Capacity.Seconds(), 0.7*before.Seconds(), "capacity %s after the stall, %s before", after.Capacity, before)
		db.cores = 4
		db.run(time.Second) // the units caught in the stall end
		require.Greater(t, db.run(5*time.Second), 0.9*400, "throughput after the stall")
	})
}

// TestAutoCapacityColdStartBurst: 500 clients send 50 ms statements that take no
// processor (SLEEP) at once to a cold proxy starting at 10 ms. The capacity doubles while
// units run about one at a time, and none waits out a 5 s queue timeout.
func TestAutoCapacityColdStartBurst(t *testing.T) {
	forEachLaw(t, func(t *testing.T, autoConfig func(time.Duration) Config) {
		cfg := autoConfig(10 * time.Millisecond)
		cfg.QueueTimeout = 5 * time.Second
		db := newPSDatabaseOf(t, cfg, 500, 1e6, 50*time.Millisecond)
		db.run(10 * time.Second)
		s := db.ctl.Snapshot()
		require.Zero(t, s.TimedOut, "units refused at the queue timeout")
		require.Greater(t, s.Capacity, 5*time.Second)
	})
}

// TestAutoCapacityColdStartBursts: a cold proxy gets a burst of 500 quick statements of one
// type (each client sends one and waits), then a second later a burst of 500 statements of
// another type that take 50 ms without processor (SLEEP). The first burst ends with the
// clients, not the capacity, bounding the units; the capacity must still be in its slow
// start for the second, which must not wait seconds (a relay serves it in 50 ms).
func TestAutoCapacityColdStartBursts(t *testing.T) {
	forEachLaw(t, func(t *testing.T, autoConfig func(time.Duration) Config) {
		cfg := autoConfig(10 * time.Millisecond)
		cfg.QueueTimeout = 5 * time.Second
		db := newPSDatabaseOf(t, cfg, 500, 1e6, time.Millisecond)
		db.oneShot = true
		db.run(time.Second)
		require.Zero(t, db.ctl.Snapshot().Running+db.ctl.Snapshot().Queued, "the first burst is served")
		took := db.sleepBurst()
		require.Less(t, took, 3*time.Second, "the second burst is served in time")
		t.Logf("the second burst took %s", took)
	})
}

// TestAutoCapacityLargerUnitsAfterSettling: the capacity settles for 500 clients of 1 ms
// units on 16 processors; then the same clients each send one statement of another type
// that takes 50 ms without processor (SLEEP). The units run as fast as alone while most
// wait, so the knee is far up: the slow start resumes, and none waits out a 5 s queue
// timeout (with the settled windows of 2 s and moves of half the way, many did).
func TestAutoCapacityLargerUnitsAfterSettling(t *testing.T) {
	forEachLaw(t, func(t *testing.T, autoConfig func(time.Duration) Config) {
		cfg := autoConfig(10 * time.Millisecond)
		cfg.QueueTimeout = 5 * time.Second
		db := newPSDatabaseOf(t, cfg, 500, 16, time.Millisecond)
		db.run(20 * time.Second)
		require.Equal(t, PhaseSettle, db.ctl.adjuster.phase(), "settled")
		require.Less(t, db.ctl.Snapshot().Capacity, 200*time.Millisecond)
		db.oneShot = true
		for s := db.ctl.Snapshot(); s.Running+s.Queued > 0; s = db.ctl.Snapshot() {
			db.step(time.Millisecond)
		}
		db.cores = 1e6
		took := db.sleepBurst()
		// The first window of the burst ends where the settled window's phase puts it (here
		// 1.25 s in, with units of both types); the slow start begins at the next (under
		// the gradient law, after two windows as fast as alone).
		require.Less(t, took, 4500*time.Millisecond, "the burst is served in time")
		t.Logf("the burst took %s", took)
	})
}

// TestAutoCapacityRetriesAStarvedCapacity: a capacity past the knee by the last telling
// move (an unlucky window) that lets one 20 ms unit run at a time on two processors while
// 64 clients wait grows again, instead of running them one at a time for good.
func TestAutoCapacityRetriesAStarvedCapacity(t *testing.T) {
	forEachLaw(t, func(t *testing.T, autoConfig func(time.Duration) Config) {
		db := newPSDatabaseOf(t, autoConfig(20*time.Millisecond), 64, 2, 20*time.Millisecond)
		db.ctl.adjuster.warm = true
		db.run(30 * time.Second)
		rate := db.run(10 * time.Second)
		require.Greater(t, rate, 0.9*100, "two processors, 20 ms units")
	})
}

// TestAutoCapacityStopsAtTheClients: six clients on eight cores never reach the knee. From
// a cold start the capacity grows until it holds them all, and stops near there instead of
// running on to its maximum, which would leave it far past the knee when more clients come.
func TestAutoCapacityStopsAtTheClients(t *testing.T) {
	forEachLaw(t, func(t *testing.T, autoConfig func(time.Duration) Config) {
		db := newPSDatabase(t, autoConfig(5*time.Millisecond), 6, 8)
		rate := 0.0
		for range 60 {
			rate = db.run(time.Second)
		}
		require.Greater(t, rate, 0.95*600, "six clients of 10 ms units")
		require.Less(t, db.ctl.Snapshot().Capacity, 240*time.Millisecond, "the clients hold 60 ms")
	})
}

func TestAutoConfigValidate(t *testing.T) {
	c := autoConfig(time.Millisecond)
	require.ErrorContains(t, c.Validate(), "between capacity_min")
	c = autoConfig(10 * time.Millisecond)
	c.Reserve = ReserveConfig{Floor: 8 * time.Millisecond, QuickCutoff: time.Millisecond}
	require.ErrorContains(t, c.Validate(), "at most capacity_min")
	c.Auto.Max = time.Millisecond
	require.ErrorContains(t, c.Validate(), "capacity_max")
	require.NoError(t, autoConfig(10*time.Millisecond).Validate())
}

// TestAutoCapacityHeavyUnitsAloneDoNotGrowIt: a window in which about one unit ran at a
// time while others waited, its few units many times slower than alone (heavy units in a
// database past its knee, or held to a processor quota), is no sign of room: the capacity
// holds. The same window with units as fast as alone doubles it.
func TestAutoCapacityHeavyUnitsAloneDoNotGrowIt(t *testing.T) {
	for _, c := range []struct {
		busy time.Duration
		want time.Duration
		d    Decision
	}{{300 * time.Millisecond, 100 * time.Millisecond, DecisionSparse}, {12 * time.Millisecond, 400 * time.Millisecond, DecisionUp}} {
		clock := NewManualClock(time.Unix(1_700_000_000, 0))
		ctl := New(rulesConfig(100*time.Millisecond), clock)
		u := &ctl.adjuster
		u.solo[1] = soloTime{log: math.Log(0.01), n: soloSeed} // 10 ms alone
		u.warm, u.windows, u.queued = true, 0, true
		u.running(clock.Now(), 1, 0, 0)
		clock.Advance(time.Second)
		u.running(clock.Now(), 1, 0, 0) // one unit ran through the window
		for range 4 {
			u.complete(1, 200*time.Millisecond, c.busy, false)
		}
		ctl.mu.Lock()
		ctl.adapt(clock.Now())
		ctl.mu.Unlock()
		s := ctl.Snapshot()
		require.Equal(t, c.want, s.Capacity, "units of %s", c.busy)
		require.Equal(t, c.d, s.Auto.Last, "units of %s", c.busy)
	}
}

// TestAutoCapacitySoloChecksBackOff: once settled, solo checks that find the solo times
// unchanged come at longer intervals (each holds the database to one unit at a time); when
// the database gets slower at everything, they come back often enough for the capacity to
// follow within 30 s.
func TestAutoCapacitySoloChecksBackOff(t *testing.T) {
	db := newPSDatabase(t, rulesConfig(5*time.Millisecond), 64, 4)
	db.run(60 * time.Second)
	checks := db.ctl.Snapshot().Auto.Solo
	db.run(60 * time.Second)
	checks = db.ctl.Snapshot().Auto.Solo - checks
	// At soloEvery windows of 2 s apart, 60 s would hold 7 or 8.
	require.LessOrEqual(t, checks, uint64(4), "solo checks in a settled minute")
	require.Equal(t, soloEveryMax, db.ctl.adjuster.every)
	before := db.ctl.Snapshot().Capacity
	db.demand *= 2 // every unit needs twice the service, alone too
	db.run(30 * time.Second)
	rate := db.run(10 * time.Second)
	require.Greater(t, rate, 0.9*200, "throughput at half the speed")
	// The same units of cost, twice as long alone: the capacity stays where the work is
	// done, over the knee (4 units, 40 ms of cost) and not past where it was by more than
	// a climb's judged step (see climbGain).
	after := db.ctl.Snapshot().Capacity
	require.Greater(t, after, 40*time.Millisecond)
	require.Less(t, after.Seconds(), descentStep*before.Seconds(), "capacity %s, before %s", after, before)
}

// TestAutoCapacityStaleSoloTimes: solo times ten times too high (timed while the database
// was slower) make the units look faster than alone. That is no room: the capacity holds,
// and a solo check, at once, puts the solo times right, so the capacity stays near the knee
// (4 cores, 10 ms units: 100 ms at the target) instead of running off to seconds.
func TestAutoCapacityStaleSoloTimes(t *testing.T) {
	forEachLaw(t, func(t *testing.T, autoConfig func(time.Duration) Config) {
		db := newPSDatabase(t, autoConfig(5*time.Millisecond), 64, 4)
		db.run(40 * time.Second)
		checks := db.ctl.Snapshot().Auto.Solo
		for typ := range db.ctl.adjuster.solo {
			st := db.ctl.adjuster.solo[typ]
			st.log += math.Log(10)
			db.ctl.adjuster.solo[typ] = st
		}
		top := time.Duration(0)
		for range 30 {
			db.run(time.Second)
			top = max(top, db.ctl.Snapshot().Capacity)
		}
		require.Greater(t, db.ctl.Snapshot().Auto.Solo, checks, "a solo check")
		require.Less(t, top, 250*time.Millisecond, "the capacity ran off")
		require.InDelta(t, 2.5, db.ctl.Snapshot().Auto.Stretch, 0.6)
	})
}

// TestAutoCapacityKeepsTheWorkOfADescent: outside solo checks units run 3 times as long as
// alone however few run (a database throttled by its quota), so the stretch reads over the
// target at every capacity. Moves down that leave it there are undone: the capacity does
// not fall to its minimum, where one unit at a time would run, and the database keeps most
// of its peak (4 cores at a third of their speed: 133 units of 10 ms a second).
func TestAutoCapacityKeepsTheWorkOfADescent(t *testing.T) {
	db := newPSDatabase(t, rulesConfig(200*time.Millisecond), 64, 4)
	db.slow = 3
	db.run(30 * time.Second)
	rate, low := 0.0, time.Hour
	for range 60 {
		rate += db.run(time.Second) / 60
		low = min(low, db.ctl.Snapshot().Capacity)
	}
	s := db.ctl.Snapshot()
	require.Greater(t, rate, 0.85*400/3, "throughput")
	require.GreaterOrEqual(t, low, 20*time.Millisecond, "lowest capacity")
	require.NotZero(t, s.Auto.Decided[DecisionRestore], "restores")
}

// TestAutoCapacityRestoresHoldLonger: each descent undone with none kept since holds the
// capacity where it was back twice as long as the one before, up to eight times; a kept
// descent starts over.
func TestAutoCapacityRestoresHoldLonger(t *testing.T) {
	a := AutoConfig{Stretch: 2.5}
	u := &adjuster{}
	ms := time.Millisecond
	// descend runs a descent from 80 ms to 50 ms in which the stretch stays at 4 and a
	// fifth of the work is lost, or the stretch falls to 2 when kept, and returns the last
	// window's decision.
	descend := func(kept bool) Decision {
		u.judgeDescent(80*ms, 60*ms, DecisionDown, 100, 100, 4, 4, a) // the descent begins
		u.judgeDescent(80*ms, 60*ms, DecisionDown, 100, 100, 4, 4, a) // measured at 80 ms
		below, rate := 4.0, 80.0
		if kept {
			below, rate = 2, 100
		}
		u.judgeDescent(50*ms, 40*ms, DecisionDown, rate, rate, below, below, a)
		_, d := u.judgeDescent(50*ms, 40*ms, DecisionDown, rate, rate, below, below, a)
		u.descending = false // as a move up ends it
		return d
	}
	for _, want := range []int{15, 30, 60, 120, 120} {
		require.Equal(t, DecisionRestore, descend(false))
		require.Equal(t, want, u.floorLeft)
		u.floorLeft = 0
	}
	require.Equal(t, DecisionDown, descend(true))
	require.Equal(t, DecisionRestore, descend(false))
	require.Equal(t, 15, u.floorLeft, "a kept descent starts over")
}

// TestAutoCapacityFloorBarRises: after a restore the capacity holds at its floor unless
// the stretch reads over soloOff times the target. Where it reads near that bar at every
// capacity (a processor quota), a move past the floor that the next window undoes raises
// the bar, so that the capacity does not move by half and back every other window; a
// stretch over the raised bar still moves it. The floor lasts while the stretch reads over
// the target, and the bar lapses with it.
func TestAutoCapacityFloorBarRises(t *testing.T) {
	a := AutoConfig{Stretch: 2.5}
	u := &adjuster{}
	ms := time.Millisecond
	// A descent from 80 ms that loses a fifth of the work: restored, with a floor at 80 ms.
	u.judgeDescent(80*ms, 60*ms, DecisionDown, 100, 100, 4, 4, a)
	u.judgeDescent(80*ms, 60*ms, DecisionDown, 100, 100, 4, 4, a)
	u.judgeDescent(50*ms, 40*ms, DecisionDown, 80, 80, 4, 4, a)
	next, d := u.judgeDescent(50*ms, 40*ms, DecisionDown, 80, 80, 4, 4, a)
	require.Equal(t, DecisionRestore, d)
	require.Equal(t, 80*ms, next)
	u.descending = false

	window := func(capacity time.Duration, level float64) (time.Duration, Decision) {
		return u.judgeDescent(capacity, capacity*2/3, DecisionDown, 100, 100, level, level, a)
	}
	next, d = window(80*ms, 4.5)
	require.Equal(t, DecisionHold, d, "under the bar")
	require.Equal(t, 80*ms, next)
	next, d = window(80*ms, 5.5)
	require.Equal(t, DecisionDown, d, "over soloOff times the target")
	require.Equal(t, 53*ms, next.Round(ms))
	next, d = window(53*ms, 4.5)
	require.Equal(t, DecisionHold, d, "back under the bar: undone")
	require.Equal(t, 80*ms, next)
	next, d = window(80*ms, 5.5)
	require.Equal(t, DecisionHold, d, "the same stretch again does not move it")
	require.Equal(t, 80*ms, next)
	require.InDelta(t, deadBand*5.5, u.floorBar, 1e-9)
	_, d = window(80*ms, 7)
	require.Equal(t, DecisionDown, d, "over the raised bar")

	// The floor's windows do not run out while the stretch reads over the target, up to
	// floorMax windows in all.
	u.floorLeft = 1
	for range 10 {
		next, _ = window(80*ms, 4.5)
		require.Equal(t, 80*ms, next, "the stretch still over the target")
	}
	require.Equal(t, 1, u.floorLeft)
	// The bar lapses with the floor.
	window(80*ms, 2.5)
	require.Zero(t, u.floorLeft, "run out at the target")
	require.Zero(t, u.floorBar)
	_, d = window(80*ms, 5.5)
	require.Equal(t, DecisionDown, d, "no floor left")
	u.floorCap, u.floorLeft, u.floorAge = 80*ms, 1, floorMax
	next, _ = window(80*ms, 4.5)
	require.Equal(t, 53*ms, next.Round(ms), "past floorMax windows the floor runs out whatever the stretch")

	// A descent kept lifts the floor: the database got slower (a stretch of 8 at the
	// floor), and fewer units brought the stretch down with the work kept.
	u = &adjuster{floorCap: 80 * ms, floorLeft: 30}
	window(80*ms, 8) // past the bar: the descent begins
	window(53*ms, 8) // measured at 53 ms
	window(35*ms, 6)
	_, d = window(35*ms, 6)
	require.Equal(t, DecisionDown, d, "kept")
	require.Zero(t, u.floorLeft)
	next, d = u.judgeDescent(23*ms, 23*ms, DecisionHold, 100, 100, 2.5, 2.5, a)
	require.Equal(t, DecisionHold, d, "at the target")
	require.Equal(t, 23*ms, next, "no floor to go back to")
}

// TestAutoCapacityDescentThatKeepsTheWork: units that run as much longer than alone at a
// lower capacity, but do the same work there, say that what slows them is not their
// number: the descent goes on. Each step is compared with the descent's best rate, so that
// losses within the noise do not add up. A step whose stretch falls must keep the units too.
func TestAutoCapacityDescentThatKeepsTheWork(t *testing.T) {
	a := AutoConfig{Stretch: 2.5}
	u := &adjuster{}
	ms := time.Millisecond
	u.judgeDescent(80*ms, 60*ms, DecisionDown, 100, 100, 4, 4, a) // the descent begins
	u.judgeDescent(80*ms, 60*ms, DecisionDown, 100, 100, 4, 4, a) // measured at 80 ms
	u.judgeDescent(50*ms, 40*ms, DecisionDown, 97, 97, 4, 4, a)
	next, d := u.judgeDescent(50*ms, 40*ms, DecisionDown, 97, 97, 4, 4, a)
	require.Equal(t, DecisionDown, d, "3% less work at the same stretch")
	require.Equal(t, 40*ms, next)
	require.Equal(t, 50*ms, u.anchorCap)
	require.Equal(t, 100.0, u.anchorRate, "the descent's best rate")
	u.judgeDescent(33*ms, 25*ms, DecisionDown, 93, 93, 4, 4, a)
	next, d = u.judgeDescent(33*ms, 25*ms, DecisionDown, 93, 93, 4, 4, a)
	require.Equal(t, DecisionRestore, d, "7% less than the best")
	require.Equal(t, 50*ms, next)

	// A stretch lower by a third keeps the step with 96% of the units, not with 90%.
	for _, c := range []struct {
		rate float64
		want Decision
	}{{96, DecisionDown}, {90, DecisionRestore}} {
		u := &adjuster{}
		u.judgeDescent(80*ms, 60*ms, DecisionDown, 100, 100, 4, 4, a)
		u.judgeDescent(80*ms, 60*ms, DecisionDown, 100, 100, 4, 4, a)
		u.judgeDescent(50*ms, 40*ms, DecisionDown, c.rate, 70, 3, 3, a)
		_, d := u.judgeDescent(50*ms, 40*ms, DecisionDown, c.rate, 70, 3, 3, a)
		require.Equal(t, c.want, d, "%g%% of the units, the stretch down by a third", c.rate)
	}
}

// TestAutoCapacityOneOutlierDoesNotMoveIt: once settled, one window whose units ran eight
// times as long as alone (a burst of other work on the database's host, or solo times that
// one check put off) does not move the capacity; two in a row do.
func TestAutoCapacityOneOutlierDoesNotMoveIt(t *testing.T) {
	clock, ctl := settledAt(100 * time.Millisecond)
	// Four units ran through each window; 40 completed, 8 times as long as alone.
	window := func() Decision {
		return endWindow(clock, ctl, 2*time.Second, 4, 40, 10*time.Millisecond, 80*time.Millisecond, false)
	}
	require.Equal(t, DecisionHold, window(), "one window at 8")
	require.Equal(t, 100*time.Millisecond, ctl.Snapshot().Capacity)
	require.Equal(t, DecisionDown, window(), "the second in a row")
	require.Less(t, ctl.Snapshot().Capacity, 100*time.Millisecond)
}

// settledAt is a controller at capacity whose adaptive capacity has settled with the
// stretch at the target, and type 1 timed at 10 ms alone.
func settledAt(capacity time.Duration) (*ManualClock, *Controller) {
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	ctl := New(rulesConfig(capacity), clock)
	u := &ctl.adjuster
	u.solo[1] = soloTime{log: math.Log(0.01), n: soloSeed}
	u.warm, u.windows, u.recent = true, 0, [2]float64{2.5, 2.5}
	return clock, ctl
}

// soloCheck runs a solo check at once in which units of type 1, charged 10 ms each, ran
// alone for busy each.
func soloCheck(clock *ManualClock, ctl *Controller, busy ...time.Duration) {
	u := &ctl.adjuster
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	u.checking, u.stale, u.drift, u.driftN = true, false, 0, 0
	for _, b := range busy {
		u.complete(1, 10*time.Millisecond, b, true)
	}
	ctl.endCheck(clock.Now())
}

// endWindow runs a window of d through which running units ran while others waited, and
// in which units units of type 1 completed, charged cost and busy for busy each; bound:
// they waited for capacity through the window. It returns the decision at its end.
func endWindow(clock *ManualClock, ctl *Controller, d time.Duration, running, units int, cost, busy time.Duration, bound bool) Decision {
	u := &ctl.adjuster
	u.queued = true
	u.running(clock.Now(), running, 0, 0)
	clock.Advance(d)
	u.running(clock.Now(), running, 0, 0)
	if bound {
		u.waitArea = float64(d)
	}
	for range units {
		u.complete(1, cost, busy, false)
	}
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	ctl.adapt(clock.Now())
	return u.state.Last
}

// TestAutoCapacityProbesDown: where the units run about as much longer than alone at any
// capacity (a database that shares its host's processors with its clients), windows that
// hold near the target while the capacity binds bring a probe a third of the way down. It
// is kept while the same units and the same work complete, and undone when the units hold
// but their estimated costs do not (heavy units held back for quick ones); each probe
// undone makes the next wait twice as long.
func TestAutoCapacityProbesDown(t *testing.T) {
	clock, ctl := settledAt(90 * time.Millisecond)
	u := &ctl.adjuster
	// windowOf runs a window of d through which units waited for capacity and running
	// units ran, with 100 units that ran 2.5 times as long as alone, charged cost each;
	// window is one of 2 s with four running.
	windowOf := func(cost time.Duration, running int, d time.Duration) Decision {
		return endWindow(clock, ctl, d, running, 100, cost, 25*time.Millisecond, true)
	}
	window := func(cost time.Duration) Decision { return windowOf(cost, 4, 2*time.Second) }
	ms := time.Millisecond
	for range probeHolds - 1 {
		require.Equal(t, DecisionHold, window(10*ms))
	}
	require.Equal(t, DecisionProbe, window(10*ms))
	require.Equal(t, 60*ms, ctl.Snapshot().Capacity)
	window(10 * ms)
	require.Equal(t, DecisionHold, window(10*ms), "the same work at 60 ms: kept")
	require.Equal(t, 60*ms, ctl.Snapshot().Capacity)
	require.False(t, u.probing)

	probeAt := func() int {
		for i := 1; i <= 40; i++ {
			if window(10*ms) == DecisionProbe {
				return i
			}
		}
		t.Fatal("no probe in 40 windows")
		return 0
	}
	require.Equal(t, descentHolds-2+probeHolds, probeAt(), "windows to the next probe: the descent's holds, then the probe's")
	require.Equal(t, 40*ms, ctl.Snapshot().Capacity)
	window(7 * ms)
	require.Equal(t, DecisionRestore, window(7*ms), "the same units, 30% less work")
	require.Equal(t, 60*ms, ctl.Snapshot().Capacity)
	require.Equal(t, 1, u.probeFails)
	require.Equal(t, 2*probeHolds, probeAt(), "an undone probe doubles the wait")

	// One unit at a time ran at the probed capacity while others waited: undone at once,
	// not taken for room to double into.
	require.Equal(t, DecisionRestore, windowOf(10*ms, 1, 500*time.Millisecond))
	require.Equal(t, 60*ms, ctl.Snapshot().Capacity)
	require.Equal(t, 2, u.probeFails)
}

// TestAutoCapacityClimbMustBringWork: a stretch under the target moves the capacity up,
// but where half as much capacity again completes no more units nor costs, the climb is
// undone, and the stretch does not take it over where it began for a while. A climb that
// brings more work is kept.
func TestAutoCapacityClimbMustBringWork(t *testing.T) {
	ms := time.Millisecond
	for _, more := range []bool{false, true} {
		clock, ctl := settledAt(60 * ms)
		u := &ctl.adjuster
		// window runs a window of 2 s with four units running and units waiting
		// throughout, in which units units ran 1.8 times as long as alone.
		window := func(units int) Decision {
			return endWindow(clock, ctl, 2*time.Second, 4, units, 10*ms, 18*ms, true)
		}
		require.Equal(t, DecisionHold, window(100), "one window under the target: the median holds")
		for ctl.Snapshot().Capacity < 90*ms {
			require.Equal(t, DecisionUp, window(100))
		}
		// No solo check since the climb began: one is due at once, and the windows
		// before it ends are not judged.
		window(100)
		require.True(t, u.stale, "a check is due before the climb is judged")
		require.Zero(t, u.above.n)
		soloCheck(clock, ctl, slices.Repeat([]time.Duration{10 * ms}, soloUnits)...) // as alone as before
		units := 100
		if more {
			units = 130
		}
		window(units)
		d := window(units)
		if more {
			require.Equal(t, DecisionUp, d, "more work: the climb goes on")
			require.Greater(t, ctl.Snapshot().Capacity, 90*ms)
			require.Zero(t, u.ceilLeft)
			continue
		}
		require.Equal(t, DecisionRestore, d, "no more work half as high again")
		require.Equal(t, 60*ms, ctl.Snapshot().Capacity)
		require.Equal(t, restoreWindows, u.ceilLeft)
		require.Equal(t, DecisionHold, window(100), "under the ceiling")
		require.Equal(t, 60*ms, ctl.Snapshot().Capacity)
	}
}

// TestAutoCapacityRoomForUnitsAloneIsJudged: once settled, a window in which units ran one
// at a time while others waited, as fast as alone, makes room for two of them; but where
// the capacity made so completes no more work, the climb is undone as the stretch's are.
func TestAutoCapacityRoomForUnitsAloneIsJudged(t *testing.T) {
	ms := time.Millisecond
	clock, ctl := settledAt(100 * ms)
	u := &ctl.adjuster
	window := func() Decision { // 2 s, four running, 40 units 2.5 times as long as alone
		return endWindow(clock, ctl, 2*time.Second, 4, 40, 10*ms, 25*ms, true)
	}
	require.Equal(t, DecisionHold, window())
	// Half a second of one unit at a time, 20 units of 80 ms as fast as alone.
	require.Equal(t, DecisionUp, endWindow(clock, ctl, 500*ms, 1, 20, 80*ms, 12*ms, true))
	require.Equal(t, 200*ms, ctl.Snapshot().Capacity, "half as much again over where it was")
	require.Equal(t, 100*ms, u.climbCap, "judged as a climb")
	window()
	require.True(t, u.stale, "a solo check first")
	soloCheck(clock, ctl, slices.Repeat([]time.Duration{10 * ms}, soloUnits)...) // as alone as before
	window()
	require.Equal(t, DecisionRestore, window(), "the same work at twice the capacity")
	require.Equal(t, 100*ms, ctl.Snapshot().Capacity)
}

// TestAutoCapacitySoloChecksSpreadIsNoShift: a type's units spread widely around its solo
// time (one type may be all the statements of an interaction). A check whose units spread
// so, half shorter and half longer, finds the solo time where it was, and the checks back
// off; one whose units all ran twice as long finds it moved.
func TestAutoCapacitySoloChecksSpreadIsNoShift(t *testing.T) {
	clock, ctl := settledAt(90 * time.Millisecond)
	u := &ctl.adjuster
	ms := time.Millisecond
	check := func(busy ...time.Duration) int {
		soloCheck(clock, ctl, busy...)
		return u.every
	}
	require.Equal(t, 2*soloEvery, check(5*ms, 20*ms, 20*ms, 5*ms, 5*ms, 20*ms, 20*ms, 5*ms), "no shift: backs off")
	require.Equal(t, soloEvery, check(20*ms, 20*ms, 20*ms, 20*ms, 20*ms, 20*ms, 20*ms, 20*ms), "twice as long: moved")
}

// TestAutoCapacitySoloOutlierIsClipped: a unit alone that a processor quota stopped for
// the rest of its period (100 times its time) moves its shape's solo time no more than one
// twice as long would, and reads as no shift of them all.
func TestAutoCapacitySoloOutlierIsClipped(t *testing.T) {
	clock, ctl := settledAt(90 * time.Millisecond)
	u := &ctl.adjuster
	ms := time.Millisecond
	soloCheck(clock, ctl, 10*ms, 10*ms, 10*ms, 10*ms, 10*ms, 10*ms, 10*ms, 1000*ms)
	require.InDelta(t, 10*math.Pow(soloClip, soloWeight), math.Exp(u.solo[1].log)*1000, 1e-9, "solo time, ms")
	require.Equal(t, 2*soloEvery, u.every, "no shift: backs off")
}

// TestAutoCapacityOneAtATimeSlowerThanAlone: once settled, units that ran one at a time
// while others waited double the capacity only when they ran about as fast as alone: one
// at a time twice as long as alone (a processor quota that stops the database half of
// each period) is no sign of room.
func TestAutoCapacityOneAtATimeSlowerThanAlone(t *testing.T) {
	for _, c := range []struct {
		busy time.Duration
		grow bool
	}{{22 * time.Millisecond, false}, {12 * time.Millisecond, true}} {
		clock, ctl := settledAt(100 * time.Millisecond)
		endWindow(clock, ctl, 2*time.Second, 1, 40, 10*time.Millisecond, c.busy, true)
		grew := ctl.Snapshot().Capacity >= 200*time.Millisecond
		require.Equal(t, c.grow, grew, "units alone for %v, timed at 10 ms: capacity %v", c.busy, ctl.Snapshot().Capacity)
	}
}

// TestAutoCapacityReversalsDampTheMoves: once settled, the stretch moves the capacity a
// quarter of the way (in logs) to where it would read the target; a move against the one
// before halves the moves that follow, and a run of moves one way doubles them back.
func TestAutoCapacityReversalsDampTheMoves(t *testing.T) {
	clock, ctl := settledAt(100 * time.Millisecond)
	capacity := func() float64 { return float64(ctl.Snapshot().Capacity) }
	window := func(busy time.Duration) (Decision, float64) {
		before := capacity()
		d := endWindow(clock, ctl, 2*time.Second, 4, 40, 10*time.Millisecond, busy, true)
		return d, capacity() / before
	}
	// The units run 8 times as long as alone: the second window in a row moves it down by
	// (2.5/8)^(1/4).
	window(80 * time.Millisecond)
	d, moved := window(80 * time.Millisecond)
	require.Equal(t, DecisionDown, d)
	require.InDelta(t, math.Pow(2.5/8, settledGain), moved, 1e-3, "a quarter of the way")
	window(20 * time.Millisecond) // the median still reads 8
	// 1.8 times as long as alone, under the target: the median reads 2, and the capacity
	// moves up, against the move before; the moves after it go half as far.
	d, moved = window(18 * time.Millisecond)
	require.Equal(t, DecisionUp, d)
	require.InDelta(t, math.Pow(2.5/2, settledGain), moved, 1e-3)
	require.Equal(t, 1, ctl.adjuster.damp)
	d, moved = window(18 * time.Millisecond)
	require.Equal(t, DecisionUp, d)
	require.InDelta(t, math.Pow(2.5/1.8, settledGain/2), moved, 1e-3, "a reversal halves the moves")
	for range dampRestore - 1 {
		window(18 * time.Millisecond)
	}
	require.Equal(t, 0, ctl.adjuster.damp)
	d, moved = window(18 * time.Millisecond)
	require.Equal(t, DecisionUp, d)
	require.InDelta(t, math.Pow(2.5/1.8, settledGain), moved, 1e-3, "moves one way restore them")
	require.Equal(t, 0, ctl.adjuster.damp)

	u := &adjuster{}
	for _, up := range []bool{true, false, true, false, true} {
		u.turn(up)
	}
	require.Equal(t, dampMax, u.damp, "reversals halve the moves at most dampMax times")

	// Units at 1.4 times as long as alone (under the square root of the target) move it
	// the whole way, up to the step, and settled still; not while the moves are damped
	// (not under its fourth root), which go part of the way. Units as fast as alone, within
	// the dead band, restart the slow start.
	for _, c := range []struct {
		damp  int
		busy  time.Duration
		moved float64
		warm  bool
	}{
		{0, 14 * time.Millisecond, 1 + defaultTuneStep, true},
		{1, 14 * time.Millisecond, math.Pow(2.5/1.4, settledGain/2), true},
		{1, 11 * time.Millisecond, 1 + defaultTuneStep, false},
	} {
		clock, ctl := settledAt(100 * time.Millisecond)
		stretch := float64(c.busy) / float64(10*time.Millisecond)
		ctl.adjuster.damp, ctl.adjuster.recent = c.damp, [2]float64{stretch, stretch}
		from := float64(ctl.Snapshot().Capacity)
		require.Equal(t, DecisionUp, endWindow(clock, ctl, 2*time.Second, 4, 40, 10*time.Millisecond, c.busy, true))
		require.InDelta(t, c.moved, float64(ctl.Snapshot().Capacity)/from, 1e-3, "damped %d times, %s", c.damp, c.busy)
		require.Equal(t, c.warm, ctl.adjuster.warm, "damped %d times, %s", c.damp, c.busy)
	}
}

// TestAutoCapacityDescentWaitsToBeJudged: once settled, the stretch moves a descent down
// no further than where it is judged (two thirds of where it was measured) until two
// windows there have judged it; an undone descent goes back from there, a kept one goes
// on down.
func TestAutoCapacityDescentWaitsToBeJudged(t *testing.T) {
	for _, kept := range []bool{false, true} {
		clock, ctl := settledAt(90 * time.Millisecond)
		u := &ctl.adjuster
		var anchor, judged time.Duration
		least := ctl.Snapshot().Capacity
		var at []time.Duration // the capacities the windows at the judge point ran at
		for i := 0; i < 30 && (anchor == 0 || len(at) < 2); i++ {
			capacity := ctl.Snapshot().Capacity
			units := 100
			if !kept && anchor > 0 && capacity <= judged {
				units = 80 // a fifth of the work lost
			}
			if anchor > 0 && capacity <= judged {
				at = append(at, capacity)
			}
			// The units run 4 times as long as alone at any capacity (a processor quota).
			endWindow(clock, ctl, 2*time.Second, 4, units, 10*time.Millisecond, 40*time.Millisecond, true)
			if anchor == 0 && u.anchorCap > 0 {
				anchor = u.anchorCap
				judged = stepDown(anchor)
			}
			least = min(least, ctl.Snapshot().Capacity)
		}
		require.NotZero(t, anchor, "a descent")
		require.Len(t, at, 2, "two windows judged it")
		require.Equal(t, at[0], at[1], "at one capacity")
		if !kept {
			require.Equal(t, judged, least, "not under the judge point")
			require.Equal(t, DecisionRestore, u.state.Last)
			require.Equal(t, anchor, ctl.Snapshot().Capacity, "back where it was measured")
			continue
		}
		require.Equal(t, DecisionDown, u.state.Last, "kept: on down")
		require.Less(t, ctl.Snapshot().Capacity, at[1])
	}
}

// TestAutoCapacityOverloadDescentDoesNotWait: a stretch past soloOff times the target moves
// a descent past the point where it is judged.
func TestAutoCapacityOverloadDescentDoesNotWait(t *testing.T) {
	clock, ctl := settledAt(180 * time.Millisecond)
	u := &ctl.adjuster
	var judged time.Duration
	// The second window moves it down, the third measures the descent there and moves
	// on, the fourth crosses the judge point.
	for range 4 {
		// The units run 10 times as long as alone.
		endWindow(clock, ctl, 2*time.Second, 4, 100, 10*time.Millisecond, 100*time.Millisecond, true)
		if judged == 0 && u.anchorCap > 0 {
			judged = stepDown(u.anchorCap)
		}
	}
	require.NotZero(t, judged, "a descent")
	require.Less(t, ctl.Snapshot().Capacity, judged)
}

// TestAutoCapacityNotUnderTheUnitsSize: where heavy units do most of the work, the capacity
// stays at twice their size however long the units run (each would otherwise wait for the
// database to drain, and everything behind it too); once the work moves to light units the
// floor goes with it.
func TestAutoCapacityNotUnderTheUnitsSize(t *testing.T) {
	clock, ctl := settledAt(30 * time.Millisecond)
	u := &ctl.adjuster
	// window runs one of 2 s in which light units charged 1 ms and heavy ones charged
	// 40 ms completed, all running 4 times as long as alone, while others waited.
	window := func(light, heavy int) Decision {
		for range light {
			u.sized(2, time.Millisecond)
		}
		for range heavy {
			u.sized(2, 40*time.Millisecond)
			u.complete(1, 40*time.Millisecond, 40*time.Millisecond, false)
		}
		return endWindow(clock, ctl, 2*time.Second, 4, light, time.Millisecond, 40*time.Millisecond, true)
	}
	require.Equal(t, DecisionUp, window(100, 10), "under the floor: up to it")
	floor := ctl.Snapshot().Capacity
	require.InDelta(t, 80*time.Millisecond, floor, float64(10*time.Millisecond))
	require.Equal(t, floor, u.state.SizeFloor)
	for range 10 {
		window(100, 10) // the stretch, at 4, asks for less
		require.Equal(t, floor, ctl.Snapshot().Capacity)
	}
	// The heavy units now do a tenth of the work: the floor falls to the light ones' size
	// and the stretch takes the capacity down past where it held.
	for range 10 {
		window(3600, 10)
	}
	require.InDelta(t, 2*time.Millisecond, u.state.SizeFloor, float64(time.Millisecond))
	require.Less(t, ctl.Snapshot().Capacity, floor)
}

// TestAutoCapacityBoundsTheUnitsRunning: windows in which 8 units ran at once, 2.5 times as
// long as alone, tell a parallelism of 3.2, and the units running stay under twice the
// target times it (16) when the room the capacity leaves would take many more small units at
// once. Windows of one unit at a time tell nothing; a stretch held high by another cause
// does not bound the units under countFloor; max_concurrency, when lower, still holds.
func TestAutoCapacityBoundsTheUnitsRunning(t *testing.T) {
	forEachLaw(t, func(t *testing.T, autoConfig func(time.Duration) Config) {
		clock, ctl := settledAt(120 * time.Millisecond)
		u := &ctl.adjuster
		for range 3 {
			endWindow(clock, ctl, 2*time.Second, 8, 100, 10*time.Millisecond, 25*time.Millisecond, true)
		}
		require.InDelta(t, 3.2, u.state.Parallelism, 0.01)
		require.Equal(t, 16, u.state.MaxRunning)
		require.GreaterOrEqual(t, ctl.Snapshot().Capacity, 40*time.Millisecond, "room for 40 small units")

		tickets := make([]Ticket, 40)
		admitted := 0
		for i := range tickets {
			st, err := ctl.Arrive(&tickets[i], Request{Type: 1, Cost: time.Millisecond})
			require.NoError(t, err)
			if st == Admitted {
				admitted++
			}
		}
		require.Equal(t, 16, admitted, "room for 40, 16 units")
		ctl.Release(&tickets[0], time.Millisecond)
		require.Equal(t, Admitted, tickets[16].State(), "one ends, the next starts")
		require.Equal(t, Queued, tickets[17].State())
		for i := 1; i <= 16; i++ {
			ctl.Release(&tickets[i], time.Millisecond)
		}

		endWindow(clock, ctl, 2*time.Second, 1, 100, 10*time.Millisecond, 100*time.Millisecond, true)
		require.Equal(t, 16, u.state.MaxRunning, "one at a time tells nothing")
		for range 3 {
			endWindow(clock, ctl, 2*time.Second, 2, 100, 10*time.Millisecond, 200*time.Millisecond, true)
		}
		require.Equal(t, countFloor, u.state.MaxRunning, "a stretch of 20 with 2 running")

		cfg := ctl.cfg
		cfg.MaxConcurrency = 3
		ctl.Configure(cfg)
		require.Equal(t, 3, ctl.granter.maxRunning())
	})
}

// TestAutoCapacityMovesFromWhatTheBoundLetRun: when the bound on units running, not the
// capacity, held the units through a window, the capacity moves from the estimated costs
// that ran, where its moves take hold, and a floor left by a descent undone at the old
// capacity no longer holds it.
func TestAutoCapacityMovesFromWhatTheBoundLetRun(t *testing.T) {
	clock, ctl := settledAt(400 * time.Millisecond)
	u := &ctl.adjuster
	u.state.MaxRunning = 8
	u.floorCap, u.floorLeft = 400*time.Millisecond, restoreWindows
	// window runs 2 s with running units charged 100 ms in all, 8 of them (at the bound,
	// or not), while others waited; the units ran 5 times as long as alone.
	window := func(running int) Decision {
		u.queued, u.waitingNow, u.waitArea = true, true, float64(2*time.Second)
		u.running(clock.Now(), running, 100*time.Millisecond, 8)
		clock.Advance(2 * time.Second)
		u.running(clock.Now(), running, 100*time.Millisecond, 8)
		for range 100 {
			u.complete(1, 10*time.Millisecond, 50*time.Millisecond, false)
		}
		ctl.mu.Lock()
		defer ctl.mu.Unlock()
		ctl.adapt(clock.Now())
		return u.state.Last
	}
	require.Equal(t, DecisionHold, window(7), "under the bound: the floor holds")
	require.Equal(t, 400*time.Millisecond, ctl.Snapshot().Capacity)
	require.Equal(t, DecisionDown, window(8))
	got := ctl.Snapshot().Capacity
	require.Less(t, got, 100*time.Millisecond, "down from what ran")
	require.Greater(t, got, 50*time.Millisecond, "part of the way, once settled")
	require.Zero(t, u.floorLeft, "the floor was of another capacity")
}

// TestAutoCapacitySizeFloorAtTheTarget: heavy units of a shape timed alone count for the
// floor at most at their solo time times the target, however long they ran: a floor on
// their busy times grew with what it let run.
func TestAutoCapacitySizeFloorAtTheTarget(t *testing.T) {
	clock, ctl := settledAt(30 * time.Millisecond)
	u := &ctl.adjuster
	for range 10 {
		u.sized(1, 100*time.Millisecond) // 10 ms alone, 10 times as long
		u.complete(1, 100*time.Millisecond, 100*time.Millisecond, false)
	}
	for range 100 {
		u.sized(2, time.Millisecond)
	}
	endWindow(clock, ctl, 2*time.Second, 4, 20, 10*time.Millisecond, 25*time.Millisecond, true)
	// 2.5 × 10 ms, read at its bucket's middle, twice.
	require.InDelta(t, 50*time.Millisecond, u.state.SizeFloor, float64(5*time.Millisecond))
}

// TestAutoCapacityLiftsABoundOfOtherWork: a window in which the bound on units running held
// units back while they ran about as fast as alone lifts the bound: it was learnt of other
// work.
func TestAutoCapacityLiftsABoundOfOtherWork(t *testing.T) {
	clock, ctl := settledAt(400 * time.Millisecond)
	u := &ctl.adjuster
	u.par = [3]float64{1, 1, 1}
	u.state.Parallelism, u.state.MaxRunning = 1, 5
	u.queued, u.waitingNow = true, true
	u.running(clock.Now(), 5, 50*time.Millisecond, 5)
	clock.Advance(2 * time.Second)
	u.running(clock.Now(), 5, 50*time.Millisecond, 5)
	u.waitArea = float64(2 * time.Second)
	for range 100 {
		u.complete(1, 10*time.Millisecond, 11*time.Millisecond, false)
	}
	ctl.mu.Lock()
	ctl.adapt(clock.Now())
	ctl.mu.Unlock()
	require.Zero(t, u.state.MaxRunning)
	require.Zero(t, ctl.granter.maxRunning())
}
