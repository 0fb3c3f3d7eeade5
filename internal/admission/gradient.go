package admission

import (
	"math"
	"time"
)

// The gradient law (the default). It is the gradient controllers' design (Envoy's adaptive
// concurrency filter, Netflix's concurrency-limits) on gatekeeper's own signal: the stretch,
// each unit's busy time over its shape's time alone, is their sampleRTT over minRTT, taken
// per shape so that it does not move with the mix of types. The stretch a window moves by is
// the median of its own and the two before (the level). It has three phases:
//
//   - start: while units wait for capacity and the level is under the target, every short
//     window (Interval/gradStartDiv) multiplies the capacity by the error, the target over
//     the level, up to 2, as TCP's slow start does, until the level passes the target in
//     gradConfirm windows in a row;
//   - settle: every window (Interval/gradSettleDiv) moves the capacity by the error to the
//     power gradGain, up to the step: a proportional controller in logs, whose loop is
//     stable for a gain under 1 with the one window of delay that the median adds (gradGain
//     0.5 damps a disturbance to a third within 2 windows). Far under the target
//     (gradFarUnder) it moves the whole way up: there the stretch hardly moves with the
//     capacity, and the loop's gain is the move's times that slope. It holds within the dead
//     band, or within the level's own noise where that is wider (see band);
//   - probe: a solo check, which holds the database to one unit at a time for at most
//     Interval/gradProbeDiv and times units alone, as Envoy's minRTT window does. It runs
//     on a schedule with jitter (gradProbeEvery windows of Interval, ±gradJitter), when
//     the capacity sat at its floor for gradFloorWindows windows, when the stretch reads
//     far from the target or the capacity moved far since the last probe (the database may
//     have lost or gained processors), and when units ran faster than alone.
//
// docs/admission.md ("The control law") tells why, with the simulator's comparison.

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
	gradConfirm = 3
	// gradFarUnder: a settled window whose error is at least this, and twice the band of
	// noise, moves the whole way up.
	gradFarUnder = 1.25
	// The settled windows' band of noise: gradNoiseBand standard deviations of the level,
	// from an average of gradSpreadWeight of each window's difference (see gradient.band).
	gradNoiseBand    = 0.67
	gradSpreadWeight = 0.25
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
	// floors are the size floors of the last three windows, the last first.
	floors [3]time.Duration
	// last is the last telling window's stretch, spread the average square of the
	// differences of successive ones, in logs (see band).
	last, spread float64
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
	// A settled window lasts gradSettleDiv of the interval, a starting one gradStartDiv,
	// and so does one in which units ran one at a time while others waited: units as
	// large as the capacity came, and it doubles without waiting.
	w, ok := u.window(now, r, a.Interval/gradStartDiv, true)
	if !ok || g.settled && !w.alone && w.dt < a.Interval/gradSettleDiv ||
		w.n < minTuneSamples && !w.alone && w.dt < a.Interval {
		return set // too few units to tell yet: the window goes on, up to the interval
	}
	u.note(w)
	if g.since == 0 {
		g.probedAt = set
	}
	// The bound on running units held them through the window: more capacity would not
	// let more run, and the stretch says nothing of it.
	w.bound = w.bound && u.cappedArea < bindingUse*float64(w.measured)
	next, d := u.gradientMove(set, w)
	if w.n >= minTuneSamples && w.queued {
		g.noted(w.stretch)
	}
	// The size floor of one window swings with the few heavy units that ended in it: the
	// median of the last three windows' holds it.
	copy(g.floors[1:], g.floors[:])
	g.floors[0] = u.sizeFloor
	floor := median3(float64(g.floors[0]), float64(g.floors[1]), float64(g.floors[2]))
	next = min(max(next, u.ofShare(max(a.Min, time.Duration(floor)))), u.ofShare(a.Max))
	if next == set && (d == DecisionUp || d == DecisionDown) {
		d = DecisionHold // at a bound
	}
	u.askProbe(next, w)
	u.record(set, set, next, d, false, w)
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
		// Units ran one at a time while others waited, with too few timed to tell: in the
		// start, the knee is further up, whatever it is. Room for two of the units that ran,
		// at least. Once settled such a window is as likely a heavy unit that ran alone by
		// chance (doubling on it ran the capacity in a cycle): the size floor makes room
		// for units larger than the capacity, and two windows as fast as alone resume the
		// start.
		if g.settled {
			return capacity, DecisionSparse
		}
		next := grow(capacity, 1)
		if u.completed > 0 {
			next = max(next, 2*u.costs/time.Duration(u.completed))
		}
		return next, DecisionUp
	}
	e := a.Stretch / w.level // the error: over 1, room for more units
	if g.settled && w.stretch < gradDeadBand && g.last < gradDeadBand && (w.bound || w.alone) {
		// As fast as alone while units waited, two windows in a row: the knee moved far up
		// (larger units, or a faster database). The start resumes, with its short windows.
		g.settled = false
	}
	if !g.settled {
		if e > 1 {
			// Under the target: the whole way to it (the stretch answers late, so this
			// overshoots by a window's growth at most), at most doubling.
			g.over = 0
			return grow(capacity, min(e, 2)-1), DecisionUp
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
	m, band := math.Pow(e, gradGain), g.band()
	if e >= gradFarUnder && math.Log(e) > 2*band {
		// Far under the target the stretch hardly moves with the capacity (below the
		// knee units run about as fast however many run), so the loop's gain is small
		// however large the move: the whole way, up to the step.
		m = e
	}
	switch {
	case math.Log(e) > band && (w.bound || w.alone) && !g.unsure:
		return grow(capacity, min(m-1, a.Step)), DecisionUp
	case math.Log(e) < -band:
		return shrink(capacity, min(1/m-1, a.Step)), DecisionDown
	}
	return capacity, DecisionHold
}

// noted keeps the spread of the stretch from window to window: an average of the squares
// of the differences of successive windows' stretches, in logs (twice their variance).
func (g *gradient) noted(stretch float64) {
	if g.last > 0 && stretch > 0 {
		d := math.Log(stretch / g.last)
		if g.spread == 0 {
			g.spread = d * d
		} else {
			g.spread += gradSpreadWeight * (d*d - g.spread)
		}
	}
	g.last = stretch
}

// band is how far from the target (in logs) the level may read before the capacity
// moves: the dead band, or the level's own noise where that is wider. The level is the
// median of three windows, whose spread is about two thirds of one window's (the standard
// deviation, sqrt(spread/2)): within it an error is as likely noise as a move of the knee,
// and moving on it makes the capacity wander with the noise.
func (g *gradient) band() float64 {
	return max(math.Log(gradDeadBand), gradNoiseBand*math.Sqrt(g.spread/2))
}

// askProbe calls a probe after a window that ended at capacity next: the capacity sat at its
// floor while units waited, or the stretch read far from the target once settled.
func (u *adjuster) askProbe(next time.Duration, w windowStats) {
	a, g := u.cfg, &u.grad
	if next <= u.ofShare(a.Min) && w.queued {
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
