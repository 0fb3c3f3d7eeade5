package admission

import (
	"math"
	"slices"
	"time"
)

// Solo times and solo checks: what the adjuster measures the stretch by. A shape's solo time
// is its units' busy time alone; units that happen to run alone time it, and so do solo
// checks, which hold the database to one unit at a time for a moment so that the solo times
// follow the database (a lost processor makes every unit slower alone too).

// complete records a unit's busy time; alone says it ran with no other unit at the
// database throughout. It returns whether a solo check has timed enough units alone.
func (u *adjuster) complete(shape uint64, cost, busy time.Duration, alone bool) bool {
	u.completed++
	u.costs += cost
	l := math.Log(max(busy, time.Microsecond).Seconds())
	st, ok := u.solo[shape]
	s := st.log
	if alone {
		u.state.SoloUnits++
		switch {
		case ok:
			u.solo[shape] = st.next(l)
			if u.checking && st.seeded() {
				u.drift += clipSolo(l - s)
				u.driftN++
			}
		case len(u.solo) < maxTuneTypes:
			u.solo[shape] = soloTime{log: l, n: 1}
		}
		if u.checking {
			if len(u.checkedShapes) < soloUnits {
				u.checkedShapes = append(u.checkedShapes, shape)
			}
			u.checked++
			return u.checked >= soloUnits // a unit timed in a check is no sign of the load
		}
	}
	if ok {
		u.sum += l - s
		u.alone += s
		u.n++
	} else if !alone {
		u.untimed++
	}
	return false
}

// soloTime is a shape's busy time alone: the least of its first soloSeed times alone, then
// their moving average (in logs of seconds), of which n counts the times up to soloSeed.
// The first units of a shape run while the clients connect and log in, far slower than
// later; after that, units spread around their shape's time both ways.
type soloTime struct {
	log float64
	n   int
}

func (s soloTime) seeded() bool { return s.n >= soloSeed }

// next is s with another time alone, l (log of seconds).
func (s soloTime) next(l float64) soloTime {
	if !s.seeded() {
		return soloTime{log: min(s.log, l), n: s.n + 1}
	}
	return soloTime{log: s.log + soloWeight*clipSolo(l-s.log), n: s.n}
}

// clipSolo bounds a time alone's distance from its shape's solo time, in logs (soloClip).
func clipSolo(d float64) float64 {
	lim := math.Log(soloClip)
	return min(max(d, -lim), lim)
}

// check starts a solo check at now, r, when one is due and units wait, and ends one that
// ran its time; it returns whether one ended. A slow start checks only when most of its
// units have no solo time to go by (as in its first window): its windows are short, and a
// check every few of them would hold a burst to one unit at a time.
func (u *adjuster) check(now time.Time, r reading) bool {
	switch {
	case u.checking && now.Sub(u.checkAt) >= u.checkLength():
		u.endCheck(now, r)
		return true
	case !u.checking && u.checkDue(now) && r.waiting:
		u.observe(now, r)
		u.checking, u.checkAt, u.checked, u.drift, u.driftN, u.stale = true, now, 0, 0, 0, false
		u.checkedShapes = u.checkedShapes[:0]
		u.state.Solo++
		u.state.Phase = PhaseProbe
	}
	return false
}

// checkDue says whether a solo check is due at now, under the adjuster's law.
func (u *adjuster) checkDue(now time.Time) bool {
	if u.cfg.Law == LawGradient {
		return u.grad.probeDue(now, u.stale, u.blind)
	}
	return u.windows >= u.every && (u.warm || u.blind) || u.stale
}

// checkLength is the longest a solo check lasts.
func (u *adjuster) checkLength() time.Duration {
	if u.cfg.Law == LawGradient {
		return u.cfg.Interval / gradProbeDiv
	}
	return u.cfg.Interval / 4
}

// endCheck ends a solo check at now, r. While checks find the solo times where they were
// (see soloAgree), the windows between them double: one that finds nothing new only costs.
func (u *adjuster) endCheck(now time.Time, r reading) {
	u.observe(now, r) // the check's time so far counts as solo time
	u.checking, u.windows, u.climbChecked = false, 0, true
	u.state.Probing += now.Sub(u.checkAt)
	u.state.Phase = u.phase()
	agree := u.driftN > 0 && math.Abs(u.drift/float64(u.driftN)) < math.Log(soloAgree)
	if agree {
		u.every = min(2*u.every, soloEveryMax)
	} else {
		u.every = soloEvery
	}
	if u.cfg.Law == LawGradient {
		moved := u.driftN > 0 && !agree
		if moved {
			u.recent = [2]float64{} // stretches of the times alone before
			u.shiftUnchecked(u.drift / float64(u.driftN))
		}
		u.grad.probed(now, u.cfg.Interval, moved)
	}
}

// shiftUnchecked moves the times alone of the shapes the check did not time by the drift it
// found in those it timed (in logs, at most soloClip either way): a database that lost
// processors is slower alone at everything, and a check, which takes the shortest units
// first, times only a few shapes. Left where they were, the others' stretches would read
// the queue twice as long as it is, and the capacity would settle under the knee.
func (u *adjuster) shiftUnchecked(drift float64) {
	drift = clipSolo(drift)
	for shape, st := range u.solo {
		if st.seeded() && !slices.Contains(u.checkedShapes, shape) {
			st.log += drift
			u.solo[shape] = st
		}
	}
}

// stretch is the window's: the geometric mean of its units' busy times over their types'
// solo times.
func (u *adjuster) stretch() (float64, int) {
	if u.n == 0 {
		return 0, 0
	}
	return math.Exp(u.sum / float64(u.n)), u.n
}
