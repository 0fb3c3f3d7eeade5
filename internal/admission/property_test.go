package admission

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// simUnit is a unit in the adversarial runs: its ticket and how long it really runs.
type simUnit struct {
	t      Ticket
	actual time.Duration
	end    time.Time
}

// runAdversarial drives a controller with random arrivals (costs spread over three orders
// of magnitude, actual run times off the estimate by up to 2x either way, bursts) and
// calls check for every unit the step admitted, with the units still waiting.
func runAdversarial(t *testing.T, cfg Config, seed uint64, check func(c *Controller, now time.Time, s *simUnit, waiting []*simUnit)) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	clock := NewManualClock(time.Unix(0, 0))
	c := New(cfg, clock)
	var units, running, started []*simUnit
	waiting := map[*simUnit]bool{}
	var still []*simUnit
	deepest := 0
	// step finds the units the last operation admitted or refused.
	step := func(arrived *simUnit) {
		now := clock.Now()
		if arrived != nil {
			waiting[arrived] = true
		}
		var admitted []*simUnit
		still = still[:0]
		for u := range waiting {
			switch u.t.State() {
			case Admitted:
				admitted = append(admitted, u)
				delete(waiting, u)
			case Idle:
				delete(waiting, u)
			default:
				still = append(still, u)
			}
		}
		deepest = max(deepest, len(still))
		for _, u := range admitted {
			u.end = now.Add(u.actual)
			started = append(started, u)
			check(c, now, u, still)
		}
	}
	for i := 0; i < 2000; i++ {
		// Arrivals: sometimes a burst.
		n := 1
		if rng.IntN(10) == 0 {
			n = 1 + rng.IntN(30)
		}
		for j := 0; j < n; j++ {
			cost := time.Duration(math.Pow(10, 3*rng.Float64())) * time.Millisecond // 1ms..1s
			req := Request{Cost: cost}
			if rng.IntN(2) == 0 {
				// A processor-share cost: the unit runs up to 50 times longer than it costs.
				req.Service = time.Duration(float64(cost) * (1 + 49*rng.Float64()))
			}
			u := &simUnit{actual: time.Duration(float64(req.service()) * (0.5 + 1.5*rng.Float64()))}
			units = append(units, u)
			_, _ = c.Arrive(&u.t, req)
			step(u)
		}
		clock.Advance(time.Duration(rng.IntN(120)) * time.Millisecond)
		cur := append(running, started...)
		started = nil
		running = finish(c, clock.Now(), cur, step)
	}
	// Drain: everything ends, nothing is left charged.
	for len(running) > 0 || len(started) > 0 {
		clock.Advance(50 * time.Millisecond)
		cur := append(running, started...)
		started = nil
		running = finish(c, clock.Now(), cur, step)
	}
	require.Greater(t, deepest, 50, "the run must build a queue")
	s := c.Snapshot()
	require.Zero(t, s.Load)
	require.Zero(t, s.Running)
	require.Zero(t, s.Queued)
	require.Equal(t, uint64(len(units)), s.Admitted+s.TimedOut+s.QueueFull, "every unit is admitted or refused once")
}

// finish releases the units that have ended by now, ticks, and returns those still running.
func finish(c *Controller, now time.Time, running []*simUnit, step func(*simUnit)) []*simUnit {
	var kept []*simUnit
	for _, u := range running {
		if !u.end.After(now) {
			c.Release(&u.t, u.actual)
			step(nil)
		} else {
			kept = append(kept, u)
		}
	}
	c.Tick(now)
	step(nil)
	return kept
}

// passes says whether s, admitted at now, broke the bound of the waiting unit w: it is
// expected to end after w's bound and its own bound is later. A backfilled unit may, but
// only if it is expected to end before every other running unit has ended, since the unit
// it passes would wait for them anyway.
func passes(c *Controller, now time.Time, s, w *simUnit) bool {
	end := now.Add(s.t.req.service())
	if !end.After(w.t.bound) || !s.t.bound.After(w.t.bound) {
		return false
	}
	var last time.Time
	for _, r := range c.granter.active.items {
		if r != &s.t && r.end.After(last) {
			last = r.end
		}
	}
	return end.After(last)
}

// TestAgingBoundHolds: under SJF with aging, each waiting unit's bound is its arrival plus X
// times its expected service time, and a unit is admitted ahead of a waiting one only if it
// is expected to end before the waiting one reaches its bound, or the waiting one's bound is
// no earlier than its own (both overdue: the most overdue goes first), or it fills time the
// waiting one would wait anyway (see passes).
func TestAgingBoundHolds(t *testing.T) {
	for _, x := range []float64{0.5, 1, 2, 5, 20} {
		for seed := uint64(1); seed <= 3; seed++ {
			cfg := Config{Capacity: 3 * time.Second, Discipline: SJF, Aging: x,
				QueueTimeout: time.Hour, MaxQueue: 1 << 20}
			checked := 0
			runAdversarial(t, cfg, seed, func(c *Controller, now time.Time, s *simUnit, waiting []*simUnit) {
				// (A unit admitted on arrival never had a bound.)
				if want := s.t.arrived.Add(time.Duration(x * float64(s.t.req.service()))); !s.t.bound.IsZero() && !s.t.bound.Equal(want) {
					t.Fatalf("aging %g seed %d: bound %s, want arrival + X x service = %s", x, seed, s.t.bound, want)
				}
				for _, w := range waiting {
					if passes(c, now, s, w) {
						t.Fatalf("aging %g seed %d: unit of cost %s (service %s) admitted at %s past the bound %s of a unit of cost %s",
							x, seed, s.t.req.Cost, s.t.req.service(), now, w.t.bound, w.t.req.Cost)
					}
					checked++
				}
			})
			require.Positive(t, checked, "the run must build a queue")
		}
	}
}

// TestLastCallBoundHolds: under SJF with a last call, alone or with aging, each waiting
// unit's bound is the earlier of its aging bound and last_call before its deadline, and a
// unit is admitted ahead of a waiting one only as under aging.
func TestLastCallBoundHolds(t *testing.T) {
	const timeout, call = 2 * time.Second, 500 * time.Millisecond
	for _, x := range []float64{0, 5} {
		cfg := Config{Capacity: 3 * time.Second, Discipline: SJF, Aging: x, LastCall: call,
			QueueTimeout: timeout, MaxQueue: 1 << 20}
		checked := 0
		runAdversarial(t, cfg, 5, func(c *Controller, now time.Time, s *simUnit, waiting []*simUnit) {
			want := s.t.arrived.Add(timeout - call)
			if aged := s.t.arrived.Add(time.Duration(x * float64(s.t.req.service()))); x > 0 && aged.Before(want) {
				want = aged
			}
			if !s.t.bound.IsZero() && !s.t.bound.Equal(want) {
				t.Fatalf("aging %g: bound %s, want %s", x, s.t.bound, want)
			}
			for _, w := range waiting {
				if passes(c, now, s, w) {
					t.Fatalf("aging %g: unit of cost %s admitted at %s past the bound %s of a unit of cost %s",
						x, s.t.req.Cost, now, w.t.bound, w.t.req.Cost)
				}
				checked++
			}
		})
		require.Positive(t, checked, "the run must build a queue")
	}
}

// TestSJFAdmitsShortestFirst: without aging no waiting unit is cheaper than one admitted.
func TestSJFAdmitsShortestFirst(t *testing.T) {
	cfg := Config{Capacity: 3 * time.Second, Discipline: SJF, QueueTimeout: time.Hour, MaxQueue: 1 << 20}
	runAdversarial(t, cfg, 7, func(c *Controller, now time.Time, s *simUnit, waiting []*simUnit) {
		for _, w := range waiting {
			require.GreaterOrEqual(t, w.t.req.Cost, s.t.req.Cost)
		}
	})
}

// TestFIFOAdmitsInArrivalOrder: under FIFO no waiting unit arrived before one admitted,
// and timeouts and a full queue keep the books right.
func TestFIFOAdmitsInArrivalOrder(t *testing.T) {
	cfg := Config{Capacity: 3 * time.Second, Discipline: FIFO, QueueTimeout: 2 * time.Second, MaxQueue: 200}
	runAdversarial(t, cfg, 11, func(c *Controller, now time.Time, s *simUnit, waiting []*simUnit) {
		for _, w := range waiting {
			require.Greater(t, w.t.seq, s.t.seq)
		}
	})
}

// TestReserveFollowsTable2 replays the template servers paper's Table 2 (floor 20).
func TestReserveFollowsTable2(t *testing.T) {
	spare := []int{35, 24, 17, 21, 30, 36, 38, 37, 35, 39}
	want := []int{20, 20, 26, 31, 32, 30, 26, 21, 20, 20} // the reserve after each second
	var r reserve
	now := time.Unix(0, 0)
	for i, s := range spare {
		now = now.Add(time.Second)
		got := r.update(20*time.Millisecond, 100*time.Millisecond, time.Duration(s)*time.Millisecond, now)
		require.Equal(t, time.Duration(want[i])*time.Millisecond, got, "second %d, spare %d", i+1, s)
	}
}

// TestReserveStaysWithinCapacity drives controllers with the reserve on through random
// sequences of arrivals (costs from a tenth of a millisecond to a hundred times the
// capacity, some unmeasured), completions, cancellations, idle and busy seconds, changes of
// capacity, floor, discipline and lane, and reloads of the same settings. After every step
// the reserve lies between its floor and the capacity, the lengthy units' books agree with
// the units, and once everything has ended an idle database brings the reserve back to its
// floor within a few seconds.
func TestReserveStaysWithinCapacity(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { reserveWalk(t, seed) })
	}
}

func reserveWalk(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	clock := NewManualClock(time.Unix(0, 0))
	randomConfig := func() Config {
		capacity := []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second}[rng.IntN(4)]
		cfg := Config{
			Capacity:     capacity,
			Discipline:   Discipline(rng.IntN(2)),
			QueueTimeout: time.Duration(1+rng.IntN(5)) * time.Second,
			MaxQueue:     1 + rng.IntN(200),
			Reserve: ReserveConfig{
				Floor:       time.Duration(1 + rng.Int64N(int64(capacity))),
				QuickCutoff: time.Duration(1 + rng.Int64N(int64(capacity))),
				LengthyLane: rng.IntN(3),
			},
		}
		if rng.IntN(4) == 0 {
			cfg.MaxConcurrency = 1 + rng.IntN(20)
		}
		if rng.IntN(4) == 0 {
			cfg.Reserve.LaneRate = 0.5 + 5*rng.Float64()
		}
		require.NoError(t, cfg.Validate())
		return cfg
	}
	cfg := randomConfig()
	c := New(cfg, clock)

	type unit struct {
		t   Ticket
		end time.Time // when it ends, once admitted
	}
	var units []*unit
	check := func(step int, what string) {
		t.Helper()
		c.mu.Lock()
		defer c.mu.Unlock()
		r, capacity := c.granter.reserveValue(), c.granter.capacity
		if r < c.cfg.Reserve.Floor || r > capacity || c.granter.reserve.value < 0 || c.granter.reserve.value > capacity {
			t.Fatalf("step %d (%s): reserve %s (held %s) outside [floor %s, capacity %s]",
				step, what, r, c.granter.reserve.value, c.cfg.Reserve.Floor, capacity)
		}
		// Each unmeasured type has one probe at most, and a unit waits for a probe only
		// while its type has one.
		probes := map[uint64]int{}
		for _, u := range units {
			if u.t.probe {
				probes[u.t.req.Type]++
			}
		}
		for _, u := range units {
			if u.t.probing && probes[u.t.req.Type] != 1 {
				t.Fatalf("step %d (%s): a unit of type %d waits for a probe; the type has %d", step, what, u.t.req.Type, probes[u.t.req.Type])
			}
		}
		if !maps.Equal(probes, c.queue.probes) {
			t.Fatalf("step %d (%s): probes %v, the books say %v", step, what, probes, c.queue.probes)
		}
		var lengthyLoad time.Duration
		lengthyWaiting := 0
		for _, u := range units {
			switch {
			case u.t.state == Admitted && u.t.lengthy:
				lengthyLoad += u.t.req.Cost
			case u.t.state == Queued && u.t.lengthyWait:
				lengthyWaiting++
			}
		}
		if lengthyLoad != c.granter.lengthyLoad || lengthyWaiting != c.queue.lengthyWaiting || c.granter.lengthyLoad > c.granter.load {
			t.Fatalf("step %d (%s): lengthy load %s and %d waiting, the books say %s (of %s) and %d",
				step, what, lengthyLoad, lengthyWaiting, c.granter.lengthyLoad, c.granter.load, c.queue.lengthyWaiting)
		}
	}
	// started gives the units admitted since the last call an end.
	started := func() {
		now := clock.Now()
		for _, u := range units {
			if u.t.State() == Admitted && u.end.IsZero() {
				d := u.t.req.service()
				u.end = now.Add(time.Duration(float64(d) * (0.2 + 2*rng.Float64())))
			}
		}
	}
	for step := 0; step < 3000; step++ {
		var what string
		switch k := rng.IntN(100); {
		case k < 45:
			what = "arrive"
			cost := time.Duration(math.Pow(10, rng.Float64()*(3+math.Log10(100*float64(cfg.Capacity)/1e6)))) * time.Microsecond * 100
			u := &unit{}
			units = append(units, u)
			c.mu.Lock()
			waiting, lengthyWaiting := c.queue.waiting(), c.queue.lengthyWaiting
			c.mu.Unlock()
			_, err := c.Arrive(&u.t, Request{Cost: cost, Unmeasured: rng.IntN(10) == 0, Type: uint64(rng.IntN(4)), Txn: rng.IntN(10) == 0})
			// Lengthy units wait only within their share of the queue, and only a full queue
			// refuses a quick unit.
			lengthy := c.queue.lengthy(&u.t)
			if u.t.State() == Queued && lengthy && lengthyWaiting >= c.lengthyQueue() {
				t.Fatalf("step %d: a lengthy unit waits with %d lengthy units waiting, their share %d", step, lengthyWaiting, c.lengthyQueue())
			}
			if errors.Is(err, ErrQueueFull) && !lengthy && waiting < cfg.MaxQueue {
				t.Fatalf("step %d: a quick unit refused with %d of %d places taken", step, waiting, cfg.MaxQueue)
			}
		case k < 70:
			what = "complete"
			for _, u := range units {
				if u.t.State() == Admitted && !u.end.After(clock.Now()) {
					c.Release(&u.t, u.end.Sub(u.t.arrived))
				}
			}
			if rng.IntN(3) == 0 { // one that ends early
				for _, u := range units {
					if u.t.State() == Admitted {
						c.Release(&u.t, 0)
						break
					}
				}
			}
		case k < 75:
			what = "cancel"
			for _, u := range units {
				if s := u.t.State(); s == Queued || s == Blocked {
					c.Cancel(&u.t)
					break
				}
			}
		case k < 93:
			what = "tick"
			clock.Advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
			c.Tick(clock.Now())
		case k < 97:
			what = "configure"
			next := randomConfig()
			if rng.IntN(2) == 0 { // the capacity alone changes, the floor kept within it
				next = cfg
				next.Capacity = []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second}[rng.IntN(4)]
				next.Reserve.Floor = min(next.Reserve.Floor, next.Capacity)
			}
			cfg = next
			c.Configure(cfg)
		default:
			what = "reload"
			c.Configure(cfg)
		}
		started()
		check(step, what)
		// Drop the units that are done, so that the walk stays cheap.
		units = slices.DeleteFunc(units, func(u *unit) bool { return u.t.State() == Idle })
	}
	// Everything ends; nothing is charged after. A unit that waited for a probe is charged
	// what the probe measured, which in a walk can be an hour: the bound counts from the
	// last end.
	last := clock.Now()
	for len(units) > 0 {
		for _, u := range units {
			if u.end.After(last) {
				last = u.end
			}
		}
		require.True(t, clock.Now().Before(last.Add(1000*time.Second)), "the units must drain")
		clock.Advance(100 * time.Millisecond)
		for _, u := range units {
			if u.t.State() == Admitted && !u.end.After(clock.Now()) {
				c.Release(&u.t, 0)
			}
		}
		c.Tick(clock.Now())
		started()
		check(-1, "drain")
		units = slices.DeleteFunc(units, func(u *unit) bool { return u.t.State() == Idle })
	}
	s := c.Snapshot()
	require.Zero(t, s.Load)
	require.Zero(t, c.granter.lengthyLoad)
	require.Zero(t, c.queue.lengthyWaiting)
	// Idle: back to the floor within four seconds, however high the reserve was.
	for range 4 {
		clock.Advance(time.Second)
		c.Tick(clock.Now())
	}
	require.Equal(t, cfg.Reserve.Floor, c.Snapshot().Reserve, "an idle reserve comes back to its floor")
}

// TestReserveIdleDecay: from anywhere between the floor and the capacity, an idle reserve
// is back at its floor within four seconds, and never moves up while idle.
func TestReserveIdleDecay(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		capacity := time.Duration(1 + rng.Int64N(int64(10*time.Second)))
		floor := time.Duration(1 + rng.Int64N(int64(capacity)))
		r := reserve{value: floor + time.Duration(rng.Int64N(int64(capacity-floor)+1))}
		now := time.Unix(0, 0)
		prev := r.value
		for range 4 {
			now = now.Add(time.Second)
			got := r.update(floor, capacity, capacity, now)
			require.LessOrEqual(t, got, prev, "idle, the reserve does not rise")
			prev = got
		}
		require.Equal(t, floor, prev, "capacity %s floor %s", capacity, floor)
	}
}
