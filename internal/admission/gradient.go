package admission

import (
	"math"
	"time"
)

// The gradient law (the default). It is the gradient controllers' design (Envoy's adaptive
// concurrency filter, Netflix's concurrency-limits) on gatekeeper's own signal: the stretch,
// each unit's busy time over its shape's time alone, is their sampleRTT over minRTT, taken
// per shape so that it does not move with the mix of types. It has three phases:
//
//   - start: while units wait for capacity and the stretch is under the target, every short
//     window (Interval/gradStartDiv) multiplies the capacity, by 2 while the stretch is
//     under half the target and by the square root of the error nearer it, as TCP's slow
//     start does, until the stretch passes the target in gradConfirm windows in a row;
//   - settle: every window (Interval/gradSettleDiv) moves the capacity by the error to the
//     power gradGain, up to the step: a proportional controller in logs, whose loop is
//     stable for a gain under 1 with the one window of delay that the median of three
//     windows adds (gradGain 0.5 damps a disturbance to a third within 2 windows);
//   - probe: a solo check, which holds the database to one unit at a time for at most
//     Interval/gradProbeDiv and times units alone, as Envoy's minRTT window does. It runs
//     on a schedule with jitter (gradProbeEvery windows of Interval, ±gradJitter), when
//     the capacity sat at its floor for gradFloorWindows windows, when the stretch reads
//     far from the target (the database may have lost or gained processors), and when
//     units ran faster than alone.
//
// docs/admission.md compares it with LawRules in the simulator.

const (
	// gradStartDiv and gradSettleDiv divide the interval into the start's and the settled
	// windows: 250 ms and 1 s at the default 2 s.
	gradStartDiv  = 8
	gradSettleDiv = 2
	// gradGain is the share (in logs) of the error a settled window corrects.
	gradGain = 0.5
	// gradDeadBand: within this ratio of the target the stretch holds the capacity.
	gradDeadBand = 1.1
	// gradProbeDiv divides the interval into the longest probe: 250 ms at the default.
	gradProbeDiv = 8
	// Probes come every gradProbeEvery intervals (30 s at the default), give or take
	// gradJitter of that, so that proxies started together do not probe together.
	gradProbeEvery = 15
	gradJitter     = 0.25
	// gradFloorWindows windows in a row at the floor with units waiting call a probe: the
	// times alone may be too low, read on a faster database.
	gradFloorWindows = 3
	// gradFarEvery: a stretch far off the target calls a probe at most every so many
	// windows.
	gradFarEvery = 2
	// gradMoved: the capacity moved this many times up or down since the last probe calls
	// another.
	gradMoved = 1.5
	// gradConfirm starting windows in a row must read the target passed to end the start.
	gradConfirm = 2
)

// Phase is where the adaptive capacity stands.
type Phase uint8

const (
	PhaseOff Phase = iota
	// PhaseStart: the knee is not found yet; the capacity grows multiplicatively while
	// units wait and the stretch is under the target.
	PhaseStart
	// PhaseSettle: moves in proportion to the error.
	PhaseSettle
	// PhaseProbe: a solo check runs, timing units alone.
	PhaseProbe
)

// Phases lists the phases, for metrics.
var Phases = []Phase{PhaseStart, PhaseSettle, PhaseProbe}

func (p Phase) String() string {
	return [...]string{"off", "start", "settle", "probe"}[p]
}

// gradient is the gradient law's state, beside the adjuster's measurements.
type gradient struct {
	settled bool
	// probeAt is when the next scheduled probe is due (zero: none scheduled yet); since
	// counts the windows since the last probe, floor those in a row at the floor.
	probeAt      time.Time
	since, floor int
	// probedAt is the capacity the window after the last probe began at.
	probedAt time.Duration
	// over counts the start's windows in a row whose stretch passed the target.
	over int
	// unsure: the last probe moved the times alone past soloAgree; the capacity does not
	// grow, and another probe is due at once, until one finds them where they were.
	unsure bool
	rng    uint64 // the jitter's state (xorshift)
}

// probeDue says whether a probe is due at now: the adjuster asks for one (stale), most units
// have no time alone yet (blind), or the schedule says so.
func (g *gradient) probeDue(now time.Time, stale, blind bool) bool {
	return stale || g.unsure && g.since >= 1 || blind && g.since >= gradFarEvery ||
		g.settled && !g.probeAt.IsZero() && !now.Before(g.probeAt)
}

// probed schedules the next probe after one that ended at now; moved says it found the
// times alone moved.
func (g *gradient) probed(now time.Time, interval time.Duration, moved bool) {
	g.since, g.unsure = 0, moved
	g.schedule(now, interval)
}

// schedule sets the next probe gradProbeEvery intervals after now, with jitter.
func (g *gradient) schedule(now time.Time, interval time.Duration) {
	g.rng ^= g.rng << 13
	g.rng ^= g.rng >> 7
	g.rng ^= g.rng << 17
	f := 1 + gradJitter*(2*float64(g.rng>>11)/(1<<53)-1)
	g.probeAt = now.Add(time.Duration(f * gradProbeEvery * float64(interval)))
}

// adaptGradient ends the window if it is over at now, r, and returns the capacity the
// gradient law decides on, set when it does not move it.
func (u *adjuster) adaptGradient(now time.Time, set time.Duration, r reading) time.Duration {
	a, g := u.cfg, &u.grad
	length := a.Interval / gradSettleDiv
	if !g.settled {
		length = a.Interval / gradStartDiv
	}
	w, ok := u.window(now, r, length, g.settled)
	if !ok || w.n < minTuneSamples && !w.alone && w.dt < a.Interval {
		return set // too few units to tell yet: the window goes on, up to the interval
	}
	u.note(w)
	if g.since == 0 {
		g.probedAt = set
	}
	capacity := u.movesFrom(set, w) // what held the units: the window's move goes from it
	next, d := u.gradientMove(capacity, w)
	next = min(max(next, a.Min, u.sizeFloor), a.Max)
	switch {
	case next == capacity && (d == DecisionUp || d == DecisionDown):
		d = DecisionHold // at a bound
	case next < set && d == DecisionHold:
		d = DecisionDown // to what held the units
	}
	u.askProbe(next, w)
	u.record(capacity, set, next, d, false, w)
	u.endWindow(now, d, w)
	g.since++
	if g.settled && g.probeAt.IsZero() {
		g.schedule(now, a.Interval)
	}
	u.state.Phase = u.phase()
	return next
}

// gradientMove is where the window moves the capacity from capacity, and why.
func (u *adjuster) gradientMove(capacity time.Duration, w windowStats) (time.Duration, Decision) {
	a, g := u.cfg, &u.grad
	switch {
	case !w.queued:
		return capacity, DecisionIdle // the clients bound the units, not the capacity
	case w.n >= minTuneSamples && w.level*gradDeadBand < 1:
		// Faster than alone, which units cannot be: the times alone are stale.
		u.stale = true
		return capacity, DecisionHold
	case w.n < minTuneSamples:
		if !w.alone || w.n > 0 && w.stretch >= a.Stretch {
			// Few units, or heavy ones alone in a database past its knee: no sign of room.
			return capacity, DecisionSparse
		}
		// Units ran one at a time while others waited, with too few timed to tell: the
		// knee is further up, whatever it is. Room for two of the units that ran, at least.
		next := grow(capacity, 1)
		if u.completed > 0 {
			next = max(next, 2*u.costs/time.Duration(u.completed))
		}
		return next, DecisionUp
	}
	e := a.Stretch / w.level // the error: over 1, room for more units
	if g.settled && w.stretch < gradDeadBand && (w.bound || w.alone) {
		// As fast as alone while units waited: the knee moved far up (larger units, or a
		// faster database). The start resumes, with its short windows.
		g.settled = false
	}
	if !g.settled {
		switch {
		case e >= 2:
			g.over = 0
			return grow(capacity, 1), DecisionUp
		case e > gradDeadBand:
			g.over = 0
			return grow(capacity, math.Sqrt(e)-1), DecisionUp
		}
		// The stretch passed the target. Once is no proof: the first units of a cold
		// start run while the clients connect, many times slower than later, and one
		// window's reading on a shared host may be a burst of other work. It holds, and
		// settles from here when the next window reads the same.
		if g.over++; g.over < gradConfirm {
			return capacity, DecisionHold
		}
		g.settled = true
	}
	m := math.Pow(e, gradGain)
	switch {
	case e > gradDeadBand && (w.bound || w.alone) && !g.unsure:
		return grow(capacity, min(m-1, a.Step)), DecisionUp
	case e < 1/gradDeadBand:
		return shrink(capacity, min(1/m-1, a.Step)), DecisionDown
	}
	return capacity, DecisionHold
}

// askProbe calls a probe after a window that ended at capacity next: the capacity sat at its
// floor while units waited, or the stretch read far from the target once settled.
func (u *adjuster) askProbe(next time.Duration, w windowStats) {
	a, g := u.cfg, &u.grad
	if next <= a.Min && w.queued {
		if g.floor++; g.floor >= gradFloorWindows {
			u.stale, g.floor = true, 0
		}
	} else {
		g.floor = 0
	}
	far := w.stretch > soloOff*a.Stretch || w.bound && w.stretch*soloOff < a.Stretch
	// Moved far since the last probe: the times alone may have moved with the database
	// (half its processors make units slower alone too, and the stretch would read the
	// queue twice as long as it is).
	moved := g.probedAt > 0 && (float64(next) > gradMoved*float64(g.probedAt) || gradMoved*float64(next) < float64(g.probedAt))
	if g.settled && w.n >= minTuneSamples && (far || moved) && g.since >= gradFarEvery {
		u.stale = true
	}
}

// phase is where the adjuster stands.
func (u *adjuster) phase() Phase {
	switch {
	case !u.cfg.Enabled:
		return PhaseOff
	case u.checking:
		return PhaseProbe
	case u.cfg.Law == LawGradient && u.grad.settled, u.cfg.Law == LawRules && u.warm:
		return PhaseSettle
	}
	return PhaseStart
}
