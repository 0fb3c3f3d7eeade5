package admission

import (
	"fmt"
	"math"
	"time"
)

// The adjuster is the adaptive capacity: from what the controller tells it of each window
// (units completed with their busy times, whether units waited, the running units over
// time), it sets the granter's capacity and its bound on running units. It never sees the
// queue or the granter.

// AutoConfig turns on the adaptive capacity: the controller moves Config.Capacity itself,
// between Min and Max, so that the units it lets run take about Stretch times as long at the
// database as each of their types takes alone. It is off while Enabled is false;
// Config.Capacity is then fixed.
type AutoConfig struct {
	Enabled bool
	// Min and Max bound the capacity. Config.Capacity is where it starts (calibrate's
	// result makes a good start; the smallest capacity makes a cold start without a storm).
	Min, Max time.Duration
	// Interval is the measurement window: the capacity moves at most once per window,
	// except early in a cold start. Default 2s.
	Interval time.Duration
	// Step is the largest move in one window, as a fraction of the capacity: up to 1+Step
	// times it, or down to 1/(1+Step). Default 0.5. A cold start doubles.
	Step float64
	// Stretch is the target: how many times longer than alone the units run, averaged (in
	// logs) over them. Past the database's knee its processors are shared, so units run
	// longer in proportion to their number; below it they run about as fast as alone. A
	// target of 2 keeps the database's processors busy with about as many units again
	// waiting inside it. Default 2.5.
	Stretch float64
	// Law is the rule that moves the capacity: LawGradient (the default) or LawRules, the
	// controller of earlier releases, kept selectable so that the two can be compared.
	Law Law
}

// Law is the adaptive capacity's control law.
type Law uint8

const (
	// LawGradient moves the capacity in proportion to the error of the stretch after a
	// multiplicative start, and probes the time alone on a schedule (see gradient.go).
	LawGradient Law = iota
	// LawRules is the controller of earlier releases: fixed steps judged by descents,
	// climbs and probes (see judge.go).
	LawRules
)

// Laws lists the laws by their configuration names.
var Laws = map[string]Law{"gradient": LawGradient, "rules": LawRules}

func (l Law) String() string {
	if l == LawRules {
		return "rules"
	}
	return "gradient"
}

// withDefaults fills in the settings left 0.
func (a AutoConfig) withDefaults() AutoConfig {
	if a.Interval == 0 {
		a.Interval = defaultTuneInterval
	}
	if a.Step == 0 {
		a.Step = defaultTuneStep
	}
	if a.Stretch == 0 {
		a.Stretch = defaultTuneStretch
	}
	return a
}

// validate reports the first adaptive-capacity setting that cannot work.
func (a AutoConfig) validate(capacity time.Duration) error {
	switch {
	case !a.Enabled:
		return nil
	case a.Min <= 0:
		return fmt.Errorf("capacity_min must be positive (got %s)", a.Min)
	case a.Max < a.Min:
		return fmt.Errorf("capacity_max %s must be at least capacity_min %s", a.Max, a.Min)
	case capacity < a.Min || capacity > a.Max:
		return fmt.Errorf("the starting capacity %s must be between capacity_min %s and capacity_max %s", capacity, a.Min, a.Max)
	case a.Interval <= 0:
		return fmt.Errorf("the adaptive capacity's interval must be positive (got %s)", a.Interval)
	case a.Step <= 0 || a.Step > 1:
		return fmt.Errorf("the adaptive capacity's step must be in (0, 1] (got %g)", a.Step)
	case a.Stretch != 0 && a.Stretch <= 1:
		return fmt.Errorf("the adaptive capacity's target stretch must be more than 1 (got %g)", a.Stretch)
	}
	return nil
}

// The adjuster's defaults and rules. docs/admission.md ("Why the adaptive capacity's rules
// are as they are") tells the runs and the figures behind each.
const (
	defaultTuneInterval = 2 * time.Second
	defaultTuneStep     = 0.5
	defaultTuneStretch  = 2.5
	// earlyWindow is the shortest window: a cold start's, or one in which units ran one at
	// a time while others waited (or a quarter of the interval, if shorter).
	earlyWindow = 250 * time.Millisecond
	// minTuneSamples is the fewest completions of timed shapes for a window to count.
	minTuneSamples = 20
	// stallWindows is how many windows in a row the capacity holds through a stall:
	// throughput halved and units twice as long with nothing moved is waited out.
	stallWindows = 5
	// bindingUse is the share of a window through which units must wait for the capacity
	// (or the bound on running units) for it to have bound them.
	bindingUse = 0.75
	// deadBand is how far from the target, as a ratio, the stretch may read before the
	// capacity moves: within it a window's noise would only make it wander.
	deadBand = 1.15
	// Solo checks run every soloEvery windows while units wait, timing soloUnits units
	// alone; each that finds the solo times within soloAgree doubles that, to soloEveryMax.
	soloEvery    = 4
	soloEveryMax = 16
	soloUnits    = 8
	soloAgree    = 1.25
	// soloOff is the ratio to the target past which a stretch is far off: solo checks come
	// back to soloEvery, a descent does not wait to be judged, and a restore's floor gives way.
	soloOff = 2
	// A shape's solo time is the least of its first soloSeed times alone, then their moving
	// average at soloWeight (in logs), each time counting at most soloClip times off it.
	soloWeight = 0.25
	soloSeed   = 3
	soloClip   = 2
	// maxTuneTypes bounds the shapes kept.
	maxTuneTypes = 4096
	// A descent is judged descentStep times under where it was measured: it must lower the
	// stretch by deadBand or keep descentSame of the work, and keep descentSame of the units.
	descentStep = 1.5
	descentSame = 0.95
	// A descent undone holds the capacity at a floor for restoreWindows windows, doubling
	// with each restore in a row up to restoreDoublings times; floorMax windows at most.
	restoreWindows   = 15
	restoreDoublings = 3
	floorMax         = restoreWindows << restoreDoublings
	// descentHolds windows in a row without a move down end a descent (or settle a climb).
	descentHolds = 5
	// A probe steps down after probeHolds windows held near the target while the capacity
	// bound the units; each probe undone doubles that, up to probeDoublings times.
	probeHolds     = 3
	probeDoublings = 3
	// climbGain is how much more work (units or estimated costs a second) a climb must bring
	// once descentStep times over where it began.
	climbGain = 1.05
	// Once settled, the stretch moves the capacity settledGain of the way (in logs); each
	// reversal halves that, up to dampMax times, and dampRestore moves one way double it back.
	settledGain = 0.25
	dampMax     = 3
	dampRestore = 3
	// sizeRoom: the capacity stays at least sizeRoom times the size of the units doing most
	// of the work, so that one of them runs beside as much again of others.
	sizeRoom = 2
	// countRoom: the units running stay under countRoom times the target times the
	// database's parallelism, where the stretch would read soloOff times the target.
	countRoom  = 2
	countFloor = 4 // the least bound on running units
	// sizeBuckets bound the histogram of the costs completed, in steps of 2^(1/4) (19%)
	// from a microsecond.
	sizeBuckets = 128
)

// Decision is what the adaptive capacity did at the end of a window.
type Decision uint8

const (
	// DecisionNone: no window has ended yet, or the capacity is static.
	DecisionNone Decision = iota
	// DecisionIdle: nothing waited for capacity in the window, so the capacity did not
	// limit anything and says nothing about the database: it holds.
	DecisionIdle
	// DecisionSparse: too few completions to measure; it holds.
	DecisionSparse
	// DecisionStall: throughput fell to under half and the units ran twice as long with
	// the capacity unchanged; it holds for up to stallWindows windows.
	DecisionStall
	// DecisionUp and DecisionDown: the stretch was under or over the target.
	DecisionUp
	DecisionDown
	// DecisionHold: the stretch was near the target, or under it while the clients, not
	// the capacity, bound the units.
	DecisionHold
	// DecisionRestore: moves down did not bring the stretch down, or cost throughput; the
	// capacity went back to where the descent last stood, and holds there a while. Or moves
	// up brought no more work; it went back to where the climb began, and the stretch does
	// not take it over that for a while.
	DecisionRestore
	// DecisionProbe: the stretch held near the target for a while; the capacity moved
	// down, to be kept if the work holds there (see probeHolds).
	DecisionProbe
	numDecisions
)

// Decisions lists every decision, for metrics.
var Decisions = []Decision{DecisionNone, DecisionIdle, DecisionSparse, DecisionStall, DecisionUp, DecisionDown, DecisionHold, DecisionRestore, DecisionProbe}

func (d Decision) String() string {
	return [...]string{"none", "idle", "sparse", "stall", "up", "down", "hold", "restore", "probe"}[d]
}

// AutoState is the adaptive capacity's state, in Snapshot.
type AutoState struct {
	Enabled  bool
	Min, Max time.Duration
	Last     Decision
	// Stretch is the last window's: how many times longer than alone its units ran
	// (geometric mean over the units of shapes timed alone; 0 when none was). Target is
	// the stretch the capacity is moved towards.
	Stretch, Target float64
	// Alone is what the stretch divides by: the time alone of the last window's units
	// of shapes timed alone (their shapes' solo times, geometric mean over the units; 0
	// when none was). Under one mix of work it follows the solo checks.
	Alone time.Duration
	// Gain is the last window's completions a second over the window before's (0 when a
	// window had nothing to compare).
	Gain float64
	// SizeFloor is the least capacity the sizes of the units doing most of the work allow
	// (see sizeRoom; 0 before a window had enough units to tell).
	SizeFloor time.Duration
	// Parallelism is the units the database runs at once for each unit of stretch, and
	// MaxRunning the most units let run at once by it (see countRoom; 0 before windows
	// told them).
	Parallelism float64
	MaxRunning  int
	// Moved counts the windows that moved the capacity, Decided the windows by decision,
	// Solo the solo checks and SoloUnits the units timed alone.
	Moved, Solo, SoloUnits uint64
	Decided                [numDecisions]uint64
	// Law is the control law; Phase where it stands (start, settle, or probe during a solo
	// check). Error is the last window's target over the stretch it moved by (1: on target;
	// over 1: room for more units; 0: the window did not measure it), and Move the ratio of
	// the capacity set at its end to the one before (1: held).
	Law   Law
	Phase Phase
	Error float64
	Move  float64
	// Probing is the time spent in solo checks since start: the cost of measuring the time
	// alone, during which units ran one at a time.
	Probing time.Duration
}

// adjuster is the adaptive capacity's state; it lives under the controller's lock.
//
// Each shape's busy time alone (its solo time) is what the database takes for its units
// with nothing else to do (a shape is a type, or a type and its first statement's digest:
// see Request.Shape). A window's stretch is how many times longer its units took than
// that, averaged in logs over the units, so that the many cheap ones make it precise and a
// few caught by a stall do not swing it. Below the database's knee units run about as fast
// as alone; past it they share its processors and run longer in proportion to their number.
// So the stretch measures the queue inside the database, not the one in front of it, and
// it does not depend on the mix of types. The capacity moves by the ratio of the target to
// the stretch (bounded by Step, and by its square root once settled): more units while
// they run as fast as alone, fewer while they wait on each other. When the database loses
// processors, units take longer alone too; the solo checks follow that, so that the
// capacity is not taken below what the slower database needs, nor left high when it
// gets them back.
type adjuster struct {
	cfg   AutoConfig // with its defaults
	start time.Time  // of the current window
	// queued: a unit waited for capacity during the window.
	queued bool
	// solo maps each shape (Request.Shape) to its solo time.
	solo map[uint64]soloTime
	// sum and n: the logs of this window's units' stretches (each unit's busy time over its
	// shape's solo time), and how many; alone sums the logs of their solo times.
	sum, alone float64
	n          int
	completed  int
	// costs is the sum of the estimated costs of the window's completed units; untimed
	// counts those of shapes with no solo time that did not run alone.
	costs   time.Duration
	untimed int
	// sizes sums the window's estimated costs completed by size (see sizeBucket), of
	// sizedSum in all, and sizeFloor is the least capacity they allow (see sizeRoom; 0:
	// none yet).
	sizes     [sizeBuckets]time.Duration
	sizedSum  time.Duration
	sizeFloor time.Duration
	// share is the part of a fleet's capacity this controller's is (0: alone); the bounds
	// (capacity_min, capacity_max, the size floor) are the fleet's, and hold its capacity,
	// not the share (see ofShare).
	share float64
	// area is the running units integrated over the window (unit-seconds, in ns), from
	// areaAt on, outside solo checks, loadArea their estimated costs (in ns²), and
	// cappedArea the time in it during which units waited while the bound on units running
	// held them (in ns); soloTime is the window's time in solo checks.
	area       float64
	loadArea   float64
	cappedArea float64
	areaAt     time.Time
	soloTime   time.Duration
	// spellAt is when units began to run one at a time while others waited, outside solo
	// checks, without a break up to areaAt; zero when they do not.
	spellAt time.Time
	// waitArea is the time in the window during which units waited for capacity (in ns),
	// up to waitAt, outside solo checks; waitingNow says whether they wait since waitAt.
	waitArea   float64
	waitAt     time.Time
	waitingNow bool
	// checking: a solo check runs, since checkAt, and timed checked units alone so far.
	checking bool
	checkAt  time.Time
	checked  int
	// checkedShapes are the shapes the check timed (up to soloUnits).
	checkedShapes []uint64
	// windows counts the windows since the last solo check, every is how many windows
	// are due between checks; drift sums how much longer (in logs, less where shorter)
	// the last check's units of shapes seeded before ran than their solo times, over driftN
	// units.
	windows, every int
	drift          float64
	driftN         int
	prevRate       float64
	prevStr        float64
	// recent are the stretches of the last two windows that had enough units to tell,
	// the last first (0: none yet).
	recent [2]float64
	// blind: the last window had more units of shapes with no solo time than of timed
	// ones (as has the one before the first). stale: a solo check is due at once (the
	// last window's units ran faster than alone, or a climb waits for one to be judged;
	// see adapt and judgeClimb).
	blind, stale bool
	moved        bool // the last window moved the capacity
	// warm: the stretch has reached the target once while units waited for capacity
	// through the window; until then (a cold start) windows end early and the capacity
	// doubles.
	warm    bool
	stalled int // windows held in a row for a stall
	// descending: the capacity moved down and has not moved up since. anchorCap is the
	// capacity at which the descent's stretch and throughput were last measured (0: not
	// yet, the window after the first move down measures them), anchorStr and anchorRate
	// those, and below the rates, estimated costs and stretches of the windows
	// since at a capacity descentStep times under it.
	// floorCap is the least capacity for floorLeft more windows (floorAge since it was
	// set), after a restore, unless the stretch is over floorBar (0: soloOff times the
	// target); overrode is the stretch that last took the capacity under the floor (0:
	// none did since the bar was set).
	// restores counts the restores since a descent was last kept.
	// anchorCost is the estimated costs completed a second at the anchor.
	descending            bool
	anchorCap, floorCap   time.Duration
	anchorRate            float64
	anchorStr, anchorCost float64
	below                 windowSums
	floorLeft, floorAge   int
	floorBar, overrode    float64
	restores              int
	holds                 int // windows in a row that held during the descent
	// calm is the run of windows that held near the target while the capacity bound the
	// units, outside a descent, that a probe waits for. probing: the descent began with a
	// probe and has not kept a step yet; probeFails counts the probes undone since one was
	// last kept.
	calm       calmRun
	probing    bool
	probeFails int
	// climbCap is where the capacity began to climb (0: it does not), climbRate and
	// climbWork the units and estimated costs completed a second there, and above those
	// of the windows since at a capacity descentStep times over it; climbHolds counts the windows in a row that held below that, and
	// climbFails the climbs undone since one was kept. ceilCap is the capacity the
	// stretch does not move it over for ceilLeft more windows, after a climb undone.
	climbCap, ceilCap    time.Duration
	climbRate, climbWork float64
	above                windowSums
	climbHolds           int
	climbFails, ceilLeft int
	climbChecked         bool // a solo check ended since the climb began
	// damp halves the settled moves by the stretch that many times; lastUp is the
	// direction of the last of them, dirRun how many in a row went that way (0: none
	// since the slow start; see turn).
	damp, dirRun int
	lastUp       bool
	prevWork     float64
	// par holds the parallelism of the last three windows that told it, the last
	// first (0: none yet); state.MaxRunning is the bound on running units it sets.
	par [3]float64
	// grad is the gradient law's state (see gradient.go).
	grad  gradient
	state AutoState
}

// reading is the present as the controller shows it to the adjuster: the units running,
// their estimated costs and the bound on them (0: none), and whether units wait for
// capacity.
type reading struct {
	running int
	load    time.Duration
	most    int
	waiting bool
}

func (u *adjuster) reset(cfg AutoConfig, now time.Time) {
	cfg = cfg.withDefaults()
	*u = adjuster{cfg: cfg, start: now, areaAt: now, waitAt: now, solo: map[uint64]soloTime{}, windows: soloEvery, every: soloEvery, blind: true}
	u.grad.rng, u.grad.since = uint64(now.UnixNano())|1, gradFarEvery // a blind start probes at once
	u.state = AutoState{Enabled: cfg.Enabled, Min: cfg.Min, Max: cfg.Max, Target: cfg.Stretch, Law: cfg.Law}
	u.state.Phase = u.phase()
}

// noteQueued notes that a unit waited for capacity in the window.
func (u *adjuster) noteQueued() { u.queued = true }

// running integrates the running units up to now: running is how many ran until now, load
// their estimated costs, and most the bound on them (0: none).
func (u *adjuster) running(now time.Time, running int, load time.Duration, most int) {
	if d := now.Sub(u.areaAt); d > 0 {
		if u.checking {
			u.soloTime += d
		} else {
			u.area += float64(running) * float64(d)
			u.loadArea += float64(load) * float64(d)
			if most > 0 && running >= most && u.waitingNow {
				u.cappedArea += float64(d)
			}
		}
		switch {
		case running > 1 || !u.waitingNow || u.checking:
			u.spellAt = time.Time{}
		case u.spellAt.IsZero():
			u.spellAt = u.areaAt
		}
		u.areaAt = now
	}
}

// waits integrates the time units waited for capacity up to now, and notes whether they
// wait from now on.
func (u *adjuster) waits(now time.Time, waiting bool) {
	if d := now.Sub(u.waitAt); d > 0 {
		if u.waitingNow && !u.checking {
			u.waitArea += float64(d)
		}
		u.waitAt = now
	}
	u.waitingNow = waiting
}

// observe brings the integrals of the running units and of the waits up to now, r.
func (u *adjuster) observe(now time.Time, r reading) {
	u.running(now, r.running, r.load, r.most)
	u.waits(now, r.waiting)
}

// windowStats is what a window measured.
type windowStats struct {
	dt, measured time.Duration // its length, and its time outside solo checks
	conc         float64       // the mean units running, outside solo checks
	bound        bool          // units waited for capacity through bindingUse of it
	queued       bool          // a unit waited for capacity in it
	stretch      float64       // its stretch (0: no unit of a timed shape)
	n            int           // the units of timed shapes
	level        float64       // the stretch the capacity moves by
	alone        bool          // about one unit ran at a time while others waited
	rate, work   float64       // units and estimated costs completed a second
	gain         float64       // rate over the window before's (0: none)
}

// move is what a window's stretch decided: where the capacity goes, why, whether the move
// is a climb (judged by its work once settled), and whether it is a settled move by the
// stretch (see settledGain).
type move struct {
	next      time.Duration
	d         Decision
	climb     bool
	byStretch bool
}

// adapt ends the window if it is over at now, r, and returns the capacity it decides on,
// set when it does not move it.
func (u *adjuster) adapt(now time.Time, set time.Duration, r reading) time.Duration {
	if u.cfg.Law == LawGradient {
		return u.adaptGradient(now, set, r)
	}
	defer func() { u.state.Phase = u.phase() }()
	w, over := u.measure(now, r)
	if !over {
		return set
	}
	u.note(w)
	capacity := u.movesFrom(set, w) // what held the units: the window's moves go from it
	mv := u.decide(capacity, w)
	next, d := u.judge(capacity, set, mv, w)
	u.record(capacity, set, next, d, mv.byStretch, w)
	u.endWindow(now, d, w)
	return next
}

// measure reads the window at now, r, and says whether it is over. A cold start's windows,
// and any in which units ran one at a time while others waited, end early: a burst on a
// cold proxy, or of units larger than the capacity, reaches the database's pace within
// seconds, not minutes.
func (u *adjuster) measure(now time.Time, r reading) (w windowStats, over bool) {
	a := u.cfg
	early := min(a.Interval/4, earlyWindow) // the shortest window
	w, ok := u.window(now, r, early, u.warm)
	if !ok || w.dt < a.Interval && !w.alone && (u.warm || w.n < minTuneSamples) {
		return w, false
	}
	return w, true
}

// window reads the window at now, r, once it is at least early long (ok), outside solo
// checks. smooth: the level is the median of this window's stretch and the two before.
func (u *adjuster) window(now time.Time, r reading, early time.Duration, smooth bool) (w windowStats, ok bool) {
	a := u.cfg
	w.dt = now.Sub(u.start)
	if !a.Enabled || w.dt < early || u.checking {
		return w, false
	}
	u.observe(now, r)
	w.measured = w.dt - u.soloTime
	if w.measured <= 0 {
		return w, false
	}
	w.conc = u.area / float64(w.measured)
	w.bound = u.waitArea >= bindingUse*float64(w.measured)
	w.queued = u.queued || r.waiting
	w.stretch, w.n = u.stretch()
	// Once settled the capacity moves by the median of this window's stretch and the two
	// before, so that one window's outlier does not move it by half and back.
	w.level = w.stretch
	if smooth && w.n >= minTuneSamples && u.recent[1] > 0 {
		w.level = median3(w.stretch, u.recent[0], u.recent[1])
	}
	// alone: about one unit ran at a time while others waited, through the window, or
	// through the end of it while the window's units ran faster than the target: units
	// as large as the capacity ran one by one. (A heavy unit larger than the capacity
	// runs alone too, in a database already past its knee; the stretch tells them apart.)
	spell := !u.spellAt.IsZero() && now.Sub(u.spellAt) >= early && w.n > 0 && w.stretch < a.Stretch
	w.alone = w.queued && (w.conc < 1.5 || spell)
	w.rate = float64(u.completed) / w.dt.Seconds()
	w.work = u.costs.Seconds() / w.dt.Seconds()
	if u.prevRate > 0 {
		w.gain = w.rate / u.prevRate
	}
	return w, true
}

// note records the window's figures in the state, with the size floor (see sizeRoom) and
// the bound on running units (see countRoom) they set.
func (u *adjuster) note(w windowStats) {
	a := u.cfg
	u.state.Stretch, u.state.Gain, u.state.Target = w.stretch, w.gain, a.Stretch
	if u.completed >= minTuneSamples && u.sizedSum > 0 {
		u.sizeFloor = min(sizeRoom*u.sizeMedian(), a.Max)
	}
	u.state.SizeFloor = u.sizeFloor
	if w.n >= minTuneSamples && w.queued && w.conc >= 2 && w.stretch > 0 {
		u.parallelism(w.conc/w.stretch, a)
	}
	if u.cappedArea > 0 && w.n >= minTuneSamples && w.stretch < math.Sqrt(a.Stretch) {
		// The bound held units back while they ran nearly as fast as alone (this window's
		// stretch, not the level, which answers a window late): it was learnt of other
		// work, and is lifted until three windows tell it again.
		u.par, u.state.Parallelism, u.state.MaxRunning = [3]float64{}, 0, 0
	}
	if w.n > 0 {
		u.state.Alone = time.Duration(math.Exp(u.alone/float64(w.n)) * float64(time.Second))
	}
}

// movesFrom is the capacity the window's move goes from: set, or, when the bound on running
// units held the units through the window and the stretch asks for no more, the estimated
// costs that bound let run, where the capacity's moves take hold; what descents and climbs
// learnt is then of another capacity.
func (u *adjuster) movesFrom(set time.Duration, w windowStats) time.Duration {
	a := u.cfg
	held := time.Duration(u.loadArea / float64(w.measured))
	if u.cappedArea >= bindingUse*float64(w.measured) && w.queued && w.n >= minTuneSamples &&
		w.level*deadBand >= a.Stretch && held < set {
		u.release()
		return max(held, u.ofShare(a.Min))
	}
	return set
}

// decide is what the window says of the capacity, before the judges of descents, probes and
// climbs weigh it.
func (u *adjuster) decide(capacity time.Duration, w windowStats) move {
	a := u.cfg
	mv := move{next: capacity, d: DecisionHold}
	switch {
	case !w.queued:
		mv.d = DecisionIdle
	case w.n >= minTuneSamples && w.level*deadBand < 1:
		// The units ran faster than alone, which they cannot: their solo times are too
		// high, timed while the database was slower. The window tells nothing; a solo check
		// follows at once, in a slow start too.
		u.stale = true
	case w.alone && u.probing:
		// A probe took the capacity to where units ran one at a time while others waited:
		// too low to keep the database busy. It is undone at once, not doubled from.
		mv.d, mv.next = DecisionRestore, u.anchorCap
	case w.alone && (w.n == 0 || w.stretch < a.Stretch && (!u.warm || w.stretch < math.Sqrt(a.Stretch))):
		mv = u.roomForAlone(capacity)
	case w.n < minTuneSamples:
		mv.d = DecisionSparse
	case !u.moved && w.gain > 0 && w.gain < 0.5 && u.prevStr > 0 && w.stretch > 2*u.prevStr && u.stalled < stallWindows:
		mv.d = DecisionStall
		u.stalled++
	default:
		mv = u.stretchMove(capacity, w)
	}
	return mv
}

// roomForAlone doubles the capacity after units ran one at a time while others waited, as
// fast as alone (once settled, within the square root of the target) or with none to tell
// by: whatever the knee, it is further up. It makes room for two of the units that ran at
// least, so that a burst of units far larger than the capacity gets there in one window.
func (u *adjuster) roomForAlone(capacity time.Duration) move {
	mv := move{next: grow(capacity, 1), d: DecisionUp, climb: true}
	if u.completed > 0 {
		mv.next = max(mv.next, 2*u.costs/time.Duration(u.completed))
	}
	return mv
}

// stretchMove moves the capacity by the ratio of the target to the level: the whole way in
// a slow start or near alone (see nearBar), part of the way once settled, up to the step.
func (u *adjuster) stretchMove(capacity time.Duration, w windowStats) move {
	a := u.cfg
	step := a.Step
	if !u.warm {
		step = 1 // the slow start doubles
	}
	mv := move{next: capacity, d: DecisionHold}
	r := a.Stretch / w.level
	m := r // the move
	near := u.warm && w.bound && max(w.level, w.stretch) < u.nearBar(a)
	if u.warm && !near {
		// Settled: part of the way (see settledGain), less after reversals.
		m = math.Pow(r, math.Ldexp(settledGain, -u.damp))
	}
	switch {
	case r > deadBand && w.bound:
		// A move from near alone goes the whole way, up to the step, and is not judged
		// as a climb (see nearBar).
		mv.d, mv.next = DecisionUp, grow(capacity, math.Min(m-1, step))
		mv.climb, mv.byStretch = !near, u.warm && !near
	case r < 1/deadBand:
		mv.d, mv.next = DecisionDown, shrink(capacity, math.Min(1/m-1, step))
		mv.byStretch = u.warm
		u.warm = u.warm || w.bound
	case r <= deadBand:
		u.warm = u.warm || w.bound // reached the target
	}
	return mv
}

// judge weighs the window's move: not under the units' size (see sizeRoom), then by the
// judges of climbs, probes and descents, within the bounds. capacity is what the move goes
// from, set what the capacity is set to.
func (u *adjuster) judge(capacity, set time.Duration, mv move, w windowStats) (time.Duration, Decision) {
	a := u.cfg
	next, d := mv.next, mv.d
	if lo := u.ofShare(max(a.Min, u.sizeFloor)); next < lo {
		// Not under the units' size: up to it, when the capacity is under.
		if next = min(lo, u.ofShare(a.Max)); next > capacity {
			d = DecisionUp
		}
	}
	if d != DecisionStall {
		u.stalled = 0
	}
	if w.n >= minTuneSamples && (w.level > soloOff*a.Stretch || soloOff*w.level < a.Stretch) {
		u.every = soloEvery // far off: the solo times may have moved
	}
	next, d = u.judgeClimb(capacity, next, d, mv.climb, w.rate, w.work, w.level, a)
	next, d = u.probe(capacity, next, d, w.bound, w.rate, w.work, w.level, a)
	next, d = u.judgeDescent(capacity, next, d, w.rate, w.work, w.stretch, w.level, a)
	next = min(max(next, u.ofShare(max(a.Min, u.sizeFloor))), u.ofShare(a.Max))
	if next == capacity && (d == DecisionUp || d == DecisionDown || d == DecisionProbe) {
		d = DecisionHold // at a bound
	}
	if next < set && d == DecisionHold {
		d = DecisionDown // to what held the units
	}
	return next, d
}

// record notes the window's decision d, moving the capacity from set to next (capacity is
// what the move went from), and keeps its figures for the windows that follow.
func (u *adjuster) record(capacity, set, next time.Duration, d Decision, byStretch bool, w windowStats) {
	u.moved = next != set
	if u.moved {
		u.state.Moved++
		if byStretch && (d == DecisionUp || d == DecisionDown) {
			u.turn(next > capacity)
		}
	}
	u.state.Last = d
	u.state.Decided[d]++
	u.state.Move, u.state.Error = float64(next)/float64(set), 0
	if w.n >= minTuneSamples && w.level > 0 {
		u.state.Error = u.cfg.Stretch / w.level
	}
	if d != DecisionStall {
		// A stall is not what the next window is compared with: the window before it is.
		u.prevRate, u.prevStr, u.prevWork = w.rate, w.stretch, w.work
		if w.n >= minTuneSamples {
			u.recent = [2]float64{w.stretch, u.recent[0]}
		}
	}
}

// endWindow starts the next window at now, after one that decided d.
func (u *adjuster) endWindow(now time.Time, d Decision, w windowStats) {
	a := u.cfg
	u.windows++
	u.start, u.queued, u.area, u.waitArea, u.soloTime = now, false, 0, 0, 0
	u.loadArea, u.cappedArea = 0, 0
	u.blind = u.untimed > w.n
	if d == DecisionUp && w.bound && w.level < math.Sqrt(a.Stretch) && (!u.warm || max(w.level, w.stretch) < u.nearBar(a)) {
		// Units ran nearly as fast as alone while the capacity held others back: the knee
		// is further up (the load moved to larger units, or the database got faster), and
		// what the climbs and reversals before learnt is of another state. Where they ran
		// as fast as alone, within the dead band, the slow start resumes, with its short
		// windows and doublings (see nearBar).
		u.ceilLeft, u.damp, u.dirRun = 0, 0, 0
		u.warm = u.warm && w.level >= deadBand
	}
	u.sum, u.alone, u.n, u.completed, u.costs, u.untimed = 0, 0, 0, 0, 0, 0
	u.sizes, u.sizedSum = [sizeBuckets]time.Duration{}, 0
}

// sized counts a completed unit's estimated cost by size, for the floor (see sizeRoom), at
// most its shape's solo time times the target: charges are busy times, which grow with the
// units running. Units of types not measured yet are left out (the controller does not
// size them): their charge is a default, or the whole capacity. It goes before complete,
// which may move the solo time.
func (u *adjuster) sized(shape uint64, cost time.Duration) {
	if st, ok := u.solo[shape]; ok {
		cost = min(cost, time.Duration(math.Exp(st.log)*u.state.Target*float64(time.Second)))
	}
	u.sizes[sizeBucket(cost)] += cost
	u.sizedSum += cost
}

// sizeMedian is the weighted median of the window's sized costs: units of that size or
// larger did at least half of the work (0: none).
func (u *adjuster) sizeMedian() time.Duration {
	var sum time.Duration
	for i, c := range u.sizes {
		if sum += c; sum > 0 && 2*sum >= u.sizedSum {
			return time.Duration(math.Exp2((float64(i)+0.5)/4) * float64(time.Microsecond))
		}
	}
	return 0
}

// sizeBucket is the histogram bucket of cost: its log2 in microseconds, in quarters (the
// median reads a bucket's middle, within 9% of its costs).
func sizeBucket(cost time.Duration) int {
	if cost <= time.Microsecond {
		return 0
	}
	return min(int(4*math.Log2(float64(cost)/float64(time.Microsecond))), sizeBuckets-1)
}

// parallelism notes a window's units running at once for each unit of stretch, p, and sets
// the bound on running units (see countRoom): the median of the last three windows.
func (u *adjuster) parallelism(p float64, a AutoConfig) {
	copy(u.par[1:], u.par[:])
	u.par[0] = p
	if u.par[2] == 0 {
		return
	}
	m := median3(u.par[0], u.par[1], u.par[2])
	u.state.Parallelism, u.state.MaxRunning = m, max(countFloor, int(math.Ceil(countRoom*a.Stretch*m)))
}

// turn notes a settled move by the stretch, up or down: a move against the one before
// halves the moves that follow (up to dampMax times), and each run of dampRestore more
// moves the same way doubles them back once (see settledGain).
func (u *adjuster) turn(up bool) {
	if u.dirRun > 0 && up != u.lastUp {
		u.damp, u.dirRun = min(u.damp+1, dampMax), 1
	} else if u.dirRun++; u.dirRun > dampRestore && u.damp > 0 {
		u.damp, u.dirRun = u.damp-1, 1
	}
	u.lastUp = up
}

// nearBar is the stretch under which a settled window's units ran nearly as fast as alone:
// the square root of the target, or its fourth root while reversals damp the moves (there a
// low stretch may be a descent's overshoot read late). Under it the capacity moves the whole
// way to where the stretch would read the target, up to the step, and the move is not
// judged as a climb; only under the dead band does the slow start resume.
func (u *adjuster) nearBar(a AutoConfig) float64 {
	if u.damp > 0 {
		return math.Sqrt(math.Sqrt(a.Stretch))
	}
	return math.Sqrt(a.Stretch)
}

// median3 is the middle one of a, b and c.
func median3(a, b, c float64) float64 {
	return max(min(a, b), min(max(a, b), c))
}

// grow is c larger by step (at least a millisecond).
func grow(c time.Duration, step float64) time.Duration {
	return c + max(time.Duration(float64(c)*step), time.Millisecond)
}

// shrink is c smaller by step: c/(1+step).
func shrink(c time.Duration, step float64) time.Duration {
	return c - time.Duration(float64(c)*step/(1+step))
}

// ofShare returns a bound on the fleet's capacity as a bound on this controller's: share of
// it in a fleet, all of it alone.
func (u *adjuster) ofShare(d time.Duration) time.Duration {
	if u.share <= 0 || u.share >= 1 {
		return d
	}
	return max(time.Duration(u.share*float64(d)), 1)
}
