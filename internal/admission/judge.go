package admission

import (
	"math"
	"time"
)

// The judges of the adjuster's moves. The stretch alone would follow causes that fewer or
// more units do not cure (a processor quota, clients sharing the database's host), so each
// run of moves must do what it is for: a descent must shorten the queue in the database or
// keep the work with fewer units, a probe (a step down from a steady capacity) must keep the
// work, and a climb must bring more. A run that does not is undone, and held off a while.

// probe counts the windows that held near the target while the capacity bound the units
// (d is what the stretch decided), and after probeHolds of them in a row, or more after
// probes undone, moves the capacity down by descentStep as the start of a descent measured
// from the present (see probeHolds). rate and work are the window's units and estimated
// costs completed a second.
func (u *adjuster) probe(capacity, next time.Duration, d Decision, bound bool, rate, work, level float64, a AutoConfig) (time.Duration, Decision) {
	lower := stepDown(capacity)
	if d != DecisionHold || !bound || !u.warm || u.descending || u.floorLeft > 0 || lower < max(a.Min, u.sizeFloor) {
		u.calm = calmRun{}
		return next, d
	}
	u.calm.windows++
	if u.soloTime == 0 {
		u.calm.timed.add(rate, work, 0)
	}
	if u.calm.windows < probeHolds<<min(u.probeFails, probeDoublings) || u.calm.timed.n < 2 {
		return next, d
	}
	m, mc, _ := u.calm.timed.mean()
	u.anchor(capacity, m, mc, level)
	u.descending, u.probing, u.holds = true, true, 0
	u.calm = calmRun{}
	return lower, DecisionProbe
}

// judgeClimb weighs a window of a climb by the work it did (see climbGain): capacity is
// what the window ran at, next and d what the stretch decided, climb whether it moved the
// capacity up, rate and work its units and estimated costs completed a second, level the
// stretch the move went by. It returns the move, which a climb undone before holds under
// its ceiling.
func (u *adjuster) judgeClimb(capacity, next time.Duration, d Decision, climb bool, rate, work, level float64, a AutoConfig) (time.Duration, Decision) {
	if climb && u.ceilLeft > 0 && level >= math.Sqrt(a.Stretch) {
		next = min(next, max(capacity, u.ceilCap))
		if next == capacity {
			d = DecisionHold
		}
	}
	if u.ceilLeft > 0 {
		u.ceilLeft--
	}
	switch {
	case !u.warm || d == DecisionDown || d == DecisionIdle || d == DecisionRestore || d == DecisionUp && !climb:
		// A slow start's doublings are not judged; a move down or a window with nothing
		// waiting ends a climb.
		u.climbCap = 0
	case u.climbCap == 0:
		if climb {
			u.beginClimb(capacity, rate, work)
		}
	case u.soloTime > 0 || d == DecisionStall || d == DecisionSparse:
		// A solo check's window does less work whatever the capacity, a stall's or a
		// sparse one's tells nothing.
	case float64(capacity) >= descentStep*float64(u.climbCap):
		next, d = u.judgeAbove(next, d, rate, work)
	case climb:
		u.climbHolds = 0
	default:
		if u.climbHolds++; u.climbHolds >= descentHolds {
			u.climbCap = 0 // settled under descentStep times where it began
		}
	}
	return next, d
}

// beginClimb starts a climb from capacity, where the window completed rate units and work
// estimated costs a second.
func (u *adjuster) beginClimb(capacity time.Duration, rate, work float64) {
	u.climbCap, u.climbRate, u.climbWork = capacity, rate, work
	if !u.moved && u.prevRate > 0 {
		// The window before ran at the same capacity: the two, less noisy.
		u.climbRate, u.climbWork = (rate+u.prevRate)/2, (work+u.prevWork)/2
	}
	u.above, u.climbHolds, u.climbChecked = windowSums{}, 0, false
}

// judgeAbove weighs a window of a climb descentStep times over where it began, on solo times
// timed since: two such windows must complete climbGain times the units or the estimated
// costs a second of where it began, or the capacity goes back there, and the stretch does
// not take it over that for a while.
func (u *adjuster) judgeAbove(next time.Duration, d Decision, rate, work float64) (time.Duration, Decision) {
	if !u.climbChecked {
		u.stale = true // a solo check at once; the windows count after it
		return next, d
	}
	u.above.add(rate, work, 0)
	if u.above.n < 2 {
		return next, d
	}
	if m, mc, _ := u.above.mean(); m >= climbGain*u.climbRate || mc >= climbGain*u.climbWork {
		u.climbCap, u.climbFails = 0, 0 // more work: kept
		return next, d
	}
	next, d = u.climbCap, DecisionRestore
	u.ceilCap, u.ceilLeft = u.climbCap, restoreWindows<<min(u.climbFails, restoreDoublings)
	u.climbCap = 0
	u.climbFails++
	return next, d
}

// calmRun counts the windows in a row before a probe; timed sums the units and
// estimated costs completed a second in those of them without a solo check.
type calmRun struct {
	windows int
	timed   windowSums
}

// windowSums sums windows' units and estimated costs completed a second, and their
// stretches, over n windows.
type windowSums struct {
	n                   int
	rate, work, stretch float64
}

func (w *windowSums) add(rate, work, stretch float64) {
	w.n++
	w.rate += rate
	w.work += work
	w.stretch += stretch
}

// mean is the windows' averages.
func (w windowSums) mean() (rate, work, stretch float64) {
	k := float64(w.n)
	return w.rate / k, w.work / k, w.stretch / k
}

// probeUndone ends a probe that was not kept: the next waits longer (see probe).
func (u *adjuster) probeUndone() {
	u.probing = false
	u.probeFails++
}

// judgeDescent weighs a window of a descent by its stretch and the work it did (see
// descentStep): capacity is what the window ran at, next and d what the stretch decided,
// rate and work its units and estimated costs completed a second. It returns the move,
// which a restore or its floor may change; level is the stretch the move went by.
func (u *adjuster) judgeDescent(capacity, next time.Duration, d Decision, rate, work, stretch, level float64, a AutoConfig) (time.Duration, Decision) {
	u.ageFloor(level, a)
	if d == DecisionHold {
		u.holds++
	} else if d == DecisionDown {
		u.holds = 0
	}
	switch {
	case d == DecisionProbe:
		// The descent begins, measured from here (see probe).
	case d == DecisionUp || d == DecisionIdle || d == DecisionRestore || u.holds >= descentHolds:
		if u.probing {
			u.probeUndone() // before the work was judged
		}
		u.descending = false
	case !u.descending:
		if d == DecisionDown {
			u.descending, u.anchorCap = true, 0
		}
	case u.soloTime > 0 || d != DecisionDown && d != DecisionHold:
		// A solo check's window does less work whatever the capacity, a stall's or a
		// sparse one's tells nothing: neither is compared.
	case u.anchorCap == 0:
		u.anchor(capacity, rate, work, stretch)
	case capacity == u.anchorCap:
		// Held there: the present's figures, less noisy.
		u.anchorRate, u.anchorCost, u.anchorStr = (u.anchorRate+rate)/2, (u.anchorCost+work)/2, (u.anchorStr+stretch)/2
	case capacity <= stepDown(u.anchorCap):
		if u.judgeBelow(capacity, rate, work, stretch) {
			next, d = u.restoreDescent(), DecisionRestore
		}
	}
	next = u.stopAtJudged(capacity, next, d, level, a)
	return u.holdFloor(capacity, next, d, level, a)
}

// ageFloor counts a window against a restore's floor: while the stretch reads over the
// target, as it did when the descent was undone, the floor's windows do not run out (up to
// floorMax in all).
func (u *adjuster) ageFloor(level float64, a AutoConfig) {
	if u.floorLeft <= 0 {
		return
	}
	if u.floorAge++; level <= deadBand*a.Stretch || u.floorAge > floorMax {
		if u.floorLeft--; u.floorLeft == 0 {
			u.floorBar, u.overrode = 0, 0 // the bar lapses with its floor
		}
	}
}

// judgeBelow weighs a window of a descent descentStep times under where it was measured:
// two such windows keep the step, going on from here, or it returns true and the descent
// is undone.
func (u *adjuster) judgeBelow(capacity time.Duration, rate, work, stretch float64) (undo bool) {
	u.below.add(rate, work, stretch)
	if u.below.n < 2 {
		return false
	}
	m, mc, ms := u.below.mean()
	if !u.probing && m >= descentSame*u.anchorRate && ms*deadBand <= u.anchorStr {
		// The queue in the database shrank, and no work was lost: go on from here,
		// compared with the descent's best rate so far.
		u.anchor(capacity, max(m, u.anchorRate), mc, ms)
		u.keptDescent()
		return false
	}
	if m >= descentSame*u.anchorRate && mc >= descentSame*u.anchorCost {
		// The units run as much longer than alone as before, but fewer did the same work
		// (units and estimated costs: sjf holding heavy units back for quick ones completes
		// more units, not more work): the extra units only queued in the database, in front
		// of short ones. Go on from here, compared with the descent's best so far, so that
		// losses within the noise do not add up.
		u.anchor(capacity, max(m, u.anchorRate), max(mc, u.anchorCost), ms)
		u.keptDescent()
		u.probing, u.probeFails = false, 0
		return false
	}
	return true
}

// restoreDescent undoes a descent and returns where it goes back to: where the descent was
// last measured. A descent, not a probe, leaves a floor there (see restoreWindows), kept
// with its bar if one still holds, raised where the descent began under it past the bar.
func (u *adjuster) restoreDescent() time.Duration {
	u.descending = false
	if u.probing {
		// The stretch has no move down to hold off.
		u.probeUndone()
		return u.anchorCap
	}
	floor, bar := u.anchorCap, 0.0
	if u.floorLeft > 0 {
		floor, bar = max(floor, u.floorCap), max(u.floorBar, deadBand*u.overrode)
	}
	u.floorCap, u.floorLeft, u.floorAge = floor, restoreWindows<<min(u.restores, restoreDoublings), 0
	u.floorBar, u.overrode = bar, 0
	u.restores++
	return u.anchorCap
}

// stopAtJudged stops settled moves down where the descent is judged, until a step there is
// kept, so that a descent undone costs one step and the windows that judge it run at one
// capacity. A stretch past soloOff times the target is an overload and does not wait.
func (u *adjuster) stopAtJudged(capacity, next time.Duration, d Decision, level float64, a AutoConfig) time.Duration {
	if judged := stepDown(u.anchorCap); u.warm && u.descending && u.anchorCap > 0 &&
		d == DecisionDown && next < judged && level <= soloOff*a.Stretch {
		next = min(capacity, max(next, judged))
	}
	return next
}

// holdFloor holds the capacity at a restore's floor unless the stretch reads over the bar
// (soloOff times the target, or floorBar); a move past the bar that the next windows undo
// raises the bar.
func (u *adjuster) holdFloor(capacity, next time.Duration, d Decision, level float64, a AutoConfig) (time.Duration, Decision) {
	if u.floorLeft <= 0 || next >= u.floorCap {
		return next, d
	}
	if level <= max(soloOff*a.Stretch, u.floorBar) {
		if capacity < u.floorCap && u.overrode > 0 {
			// A move past the bar, undone: the bar rises.
			u.floorBar, u.overrode = max(u.floorBar, deadBand*u.overrode), 0
		}
		if d == DecisionDown {
			d = DecisionHold
		}
		return u.floorCap, d
	}
	u.overrode = max(u.overrode, level)
	return next, d
}

// release forgets what the descents, climbs and probes learnt of the capacity, when it did
// not hold the units (see movesFrom).
func (u *adjuster) release() {
	u.keptDescent()
	u.descending, u.probing, u.anchorCap, u.holds = false, false, 0, 0
	u.climbCap, u.ceilLeft = 0, 0
	u.calm = calmRun{}
}

// keptDescent notes a descent's step kept: fewer units helped, so the floor and the count
// of restores start over.
func (u *adjuster) keptDescent() {
	u.restores, u.floorLeft, u.floorBar, u.overrode = 0, 0, 0, 0
}

// anchor measures a descent from capacity on: rate, work and stretch are its figures there.
func (u *adjuster) anchor(capacity time.Duration, rate, work, stretch float64) {
	u.anchorCap, u.anchorRate, u.anchorCost, u.anchorStr = capacity, rate, work, stretch
	u.below = windowSums{}
}

// stepDown is where a descent from c is judged, descentStep times under it.
func stepDown(c time.Duration) time.Duration {
	return time.Duration(float64(c) / descentStep)
}
