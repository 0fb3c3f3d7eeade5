package admission

import (
	"fmt"
	"math"
	"time"
)

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

// Tuning defaults and bounds.
const (
	defaultTuneInterval = 2 * time.Second
	defaultTuneStep     = 0.5
	defaultTuneStretch  = 2.5
	// earlyWindow is the shortest window: a cold start's, or one in which a unit ran
	// alone while others waited, end after it (or a quarter of the interval, if shorter).
	earlyWindow = 250 * time.Millisecond
	// minTuneSamples is the fewest completions of shapes with a solo time for a window to
	// count: fewer say nothing about the database.
	minTuneSamples = 20
	// stallWindows is how many windows in a row the capacity holds when throughput falls to
	// under half and the units run twice as long with nothing moved (a checkpoint, a lock):
	// a stall is waited out, not followed down. A change that lasts longer is the
	// database's new state.
	stallWindows = 5
	// bindingUse is the share of a window through which units must wait for capacity for a
	// stretch under the target to move the capacity up: when they waited less, the clients,
	// not the capacity, bound the units.
	bindingUse = 0.75
	// deadBand is how far the stretch may be from the target, as a ratio, before the
	// capacity moves: within it a window's noise would only make it wander.
	deadBand = 1.15
	// A solo check runs every soloEvery windows while units wait: it admits one unit at a
	// time until soloUnits units have each run alone, or a quarter of the interval has
	// passed, so that each shape's time alone follows the database (a lost processor makes
	// every unit slower alone too). Units that run alone at other times count as well.
	// While checks find the solo times where they were (the units longer or shorter than
	// them by less than soloAgree, averaged in logs: a shift of them all, not the spread
	// of a shape's units around its average, which for a type of an interaction's varied
	// statements, before shapes, was wider than that, and kept the checks at every fourth
	// window, some 6% of the database's time at one unit), the windows between them
	// double, up to soloEveryMax: a check holds the database to one unit at a time, and one
	// that finds nothing new only costs. A check that finds them moved, or a window whose
	// stretch is off the target by more than soloOff, brings them back to soloEvery.
	soloEvery    = 4
	soloEveryMax = 16
	soloUnits    = 8
	soloAgree    = 1.25
	soloOff      = 2
	// soloWeight is the weight of a new solo time in its shape's moving average (in logs),
	// once soloSeed times seeded it (see soloTime). A time more than soloClip times off
	// the average counts as soloClip times: a unit alone that a processor quota stops
	// for the rest of its period takes 100 times its time, and at soloWeight one such unit
	// triples its shape's solo time: at half the processor a check read the time alone at
	// 1.7 ms where it had been 0.5, the stretch at 1.5, and the capacity doubled.
	soloWeight = 0.25
	soloSeed   = 3
	soloClip   = 2
	// maxTuneTypes bounds the types kept.
	maxTuneTypes = 4096
	// A descent (moves down in a row) must do what it is for: once the capacity is
	// descentStep times under where the descent's stretch and throughput were last
	// measured, two windows there must show a stretch lower by deadBand at least (fewer
	// units, a shorter queue in the database), or the same stretch with descentSame of
	// the estimated costs completed (fewer units did the same work), and either way keep
	// descentSame of the best throughput the descent measured. When they do not, the capacity goes back up
	// to where it stood and holds at least there for restoreWindows windows, unless the
	// stretch is more than soloOff times the target (the database got slower since). A
	// move down past that floor which the next windows undo (the stretch back under the
	// bar, or the descent it began restored) raises the bar to deadBand times the stretch
	// that made it, for as long as the floor lasts: where a processor quota holds the
	// stretch near soloOff times the target at every capacity, the stretch crossed the bar
	// every other window, and the capacity moved by half and back as often, for nothing.
	// A descent kept lifts the floor. Units that run longer than alone for reasons that fewer units do not cure
	// (the database's processor quota throttling it, its host's processors busy with the
	// clients) read as a stretch over the target however few run, and without this the
	// capacity would fall to its minimum and the database idle between units. A descent
	// ends at a move up, or after descentHolds windows in a row without a move down, so
	// that what it is compared with is of the database's present state. Each restore
	// with no descent kept since the last doubles the windows it holds, up to
	// restoreWindows<<restoreDoublings: where fewer units do not help, a descent tried
	// every half minute and undone kept the capacity moving by half, for nothing. The
	// floor's windows run out only while the stretch reads near or under the target, up to
	// floorMax windows in all: where a processor quota holds the stretch over the target
	// at any capacity, the descent that was undone is tried again as soon as the floor
	// lapses, and undone again (at half the processor, the capacity moved between 33 and 93
	// ms within a minute, to the same throughput).
	descentStep      = 1.5
	descentSame      = 0.95
	restoreWindows   = 15
	restoreDoublings = 3
	floorMax         = restoreWindows << restoreDoublings
	descentHolds     = 5
	// A probe moves the capacity down by descentStep after probeHolds windows in a row
	// held with the stretch near the target while the capacity bound the units, and judges
	// the move as a descent's, but keeps it only where the work held (descentSame of the
	// units and of their estimated costs, so that holding heavy units back for quick ones
	// does not pass for the same work). Where the database's processors are
	// shared with its own clients, the stretch hardly moves with the capacity past the knee
	// and the target lands anywhere in a wide range; the probes find the least capacity
	// in it that keeps the work, and every unit admitted past that only queues inside the
	// database, in front of short ones. Where the stretch does fall at the lower capacity,
	// the stretch moves it back up. Each probe undone (by a restore, or by a move up
	// before it was kept) doubles the windows before the next, up to
	// probeHolds<<probeDoublings; a kept probe starts over.
	probeHolds     = 3
	probeDoublings = 3
	// A climb (moves up in a row, once settled: by the stretch, or to make room for two
	// of the units that ran one at a time while others waited) must do what it is for
	// too: once the capacity is descentStep times over where it began, two windows there
	// must complete climbGain times the units or the estimated costs a second of the
	// window or two before it began. When they do not, the capacity goes back to where
	// the climb began, and the stretch does not move it over that for restoreWindows
	// windows, twice as long for each climb undone in a row (up to
	// restoreWindows<<restoreDoublings), unless it reads so low that the knee is further
	// up (under the square root of the target; see nearBar). Units admitted past what
	// the database completes only queue inside it, in front of short ones, and a stretch
	// that reads under the target there (solo times timed while the database's host was
	// busier, a database whose processors its clients share, where the stretch hardly
	// moves with the capacity) took the capacity to ten times the best for the work.
	// The windows are judged on solo times timed since the climb began: where no solo
	// check ran since, one runs as soon as the capacity is descentStep times over where it
	// began, and the windows before it ends are not counted. Solo times timed while the
	// database was slower (a cold buffer pool in the warm-up) read a stretch under the
	// target while units ran far longer than alone, and a climb on them brought work
	// that the warming database, not the capacity, did: at 800 clients one climbed from
	// 0.28 to 0.68 s, and the next check read a stretch of 35. Room made for heavy
	// units that ran one at a time is judged too: past the knee at 800 clients it took the
	// capacity from 68 to 262 ms, and the units' stretch read over 7 twelve seconds later.
	climbGain = 1.05
	// Once settled, the stretch moves the capacity settledGain of the way to where it
	// would read the target (in logs, taking the stretch to grow in proportion to the
	// capacity), so that one window's noise moves it little. The stretch answers a move
	// some windows late: past the knee at 800 clients of the bookstore, where sjf holds
	// heavy units back for seconds, it kept rising for four windows of a descent, and
	// half the way a window took the capacity round a cycle between 24 and 250 ms every
	// 20-30 s, with the short interactions at 2-2.6 times a static capacity's mean. Each
	// move against the one before halves the moves that follow, up to dampMax times, as a
	// search narrows its steps around what it looks for; each run of dampRestore more
	// moves the same way (the capacity has far to go) doubles them back once.
	settledGain = 0.25
	dampMax     = 3
	dampRestore = 3
	// The capacity stays at least sizeRoom times the size of the units that do most of the
	// work: the estimated cost at which the window's completed units, weighed by their
	// costs, split in halves (the weighted median). A unit larger than the room runs only
	// once the database has drained to make room for it, and every unit behind it waits:
	// where such units do most of the work, the database runs them nearly one at a time,
	// with its processors part idle, and the short ones queue in the proxy behind each
	// drain. The stretch does not see it (units alone run as fast as alone): at 800
	// clients of the bookstore the capacity held 16-25 ms, under a Best Sellers unit's
	// charge, with the short interactions at 3.3 times a static 40 ms's mean and the same
	// throughput. Twice the size lets one such unit run beside as much again of others.
	// A unit of a shape timed alone counts at most at its solo time times the target: what
	// it is charged where the stretch reads the target. Charges are busy times, which grow
	// with the units running, and a floor on them grew with what it let run: at half the
	// processor the floor took the capacity from 0.22 to 0.81 s within 8 s, where Best
	// Sellers units ran 5 times as long as alone, and held it there for three minutes, to
	// 0.94 of a static 100 ms's throughput and 1.4 times its short interactions' mean.
	sizeRoom = 2
	// The units running at once stay under countRoom times the target times the database's
	// parallelism, where the stretch would read twice the target (see soloOff). The
	// parallelism is the units it runs at once for each unit of stretch: the window's mean
	// running units over its stretch (past the knee the units share its processors, and the
	// stretch grows in proportion to their number), the median of the last three windows
	// that ran at least two units at once while others waited. The capacity bounds the
	// estimated costs running, and the stretch answers it a window or two late: where the
	// heavy units that held the room end and many small units take it at once, their number
	// rises before the stretch can tell. At 800 bookstore clients, with the capacity held at
	// 115-130 ms, the units running went from 8 to 34-51 within 6 s and the stretch from 2.2
	// to 13, and the descent that followed took the capacity to 36 ms. The parallelism read
	// 2.7-4 through it, before and after. At 1.5 times the target the bound, not the
	// capacity, held the units through most of each run, at a stretch of 3.6, and did less
	// work than no bound. Never fewer than countFloor units: a stretch that some other cause
	// holds high, one unit at a time, must not pin the database there.
	countRoom  = 2
	countFloor = 4
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
}

// tuner is the adaptive capacity's state; it lives under the controller's lock.
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
type tuner struct {
	start time.Time // of the current window
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
	par   [3]float64
	state AutoState
}

func (u *tuner) reset(cfg AutoConfig, now time.Time) {
	cfg = cfg.withDefaults()
	*u = tuner{start: now, areaAt: now, waitAt: now, solo: map[uint64]soloTime{}, windows: soloEvery, every: soloEvery, blind: true}
	u.state = AutoState{Enabled: cfg.Enabled, Min: cfg.Min, Max: cfg.Max, Target: cfg.Stretch}
}

// running integrates the running units up to now: running is how many ran until now, load
// their estimated costs, and most the bound on them (0: none).
func (u *tuner) running(now time.Time, running int, load time.Duration, most int) {
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
// wait from now on; c.mu is held.
func (u *tuner) waits(now time.Time, c *Controller) {
	if d := now.Sub(u.waitAt); d > 0 {
		if u.waitingNow && !u.checking {
			u.waitArea += float64(d)
		}
		u.waitAt = now
	}
	u.waitingNow = c.waiting() > 0
}

// integrate brings the adaptive capacity's integrals of the running units up to now; c.mu
// is held.
func (c *Controller) integrate(now time.Time) {
	c.tune.running(now, c.running, c.load, c.maxRunning())
}

// noteWaits tells the adaptive capacity, when on, that the queue may have changed now;
// c.mu is held.
func (c *Controller) noteWaits(now time.Time) {
	if c.cfg.Auto.Enabled {
		c.tune.waits(now, c)
	}
}

// soloOnly says whether a solo check holds back every unit while another runs.
func (c *Controller) soloOnly() bool { return c.tune.checking && c.running > 0 }

// complete records a unit's busy time; alone says it ran with no other unit at the
// database throughout. It returns whether a solo check has timed enough units alone.
func (u *tuner) complete(shape uint64, cost, busy time.Duration, alone bool) bool {
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
// The first units of a shape run as the clients connect, and the database's processors
// go to their logins too: in the bookstore, the first time alone of many shapes was 10 to
// 30 times their later ones, and at soloWeight a shape timed in few checks kept it for
// minutes. Later times move it as an average, since units spread around their shape's time
// both ways.
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

// sized counts a completed unit's estimated cost by size, for the floor (see sizeRoom), at
// most its shape's solo time times the target. Units of types not measured yet are left
// out: their charge is a default, or the whole capacity, and a floor on it would double the
// capacity at every window. It goes before complete, which may move the solo time.
func (u *tuner) sized(shape uint64, cost time.Duration) {
	if st, ok := u.solo[shape]; ok {
		cost = min(cost, time.Duration(math.Exp(st.log)*u.state.Target*float64(time.Second)))
	}
	u.sizes[sizeBucket(cost)] += cost
	u.sizedSum += cost
}

// sizeMedian is the weighted median of the window's sized costs: units of that size or
// larger did at least half of the work (0: none).
func (u *tuner) sizeMedian() time.Duration {
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

// endCheck ends a solo check; c.mu is held.
func (c *Controller) endCheck(now time.Time) {
	u := &c.tune
	c.integrate(now) // the check's time so far counts as solo time
	u.waits(now, c)
	u.checking, u.windows, u.climbChecked = false, 0, true
	if u.driftN > 0 && math.Abs(u.drift/float64(u.driftN)) < math.Log(soloAgree) {
		u.every = min(2*u.every, soloEveryMax)
	} else {
		u.every = soloEvery
	}
}

// check starts a solo check when one is due and units wait, and ends one that ran its
// time; it returns whether one ended. c.mu is held. A slow start checks only when most of
// its units have no solo time to go by (as in its first window): its windows are short,
// and a check every few of them would hold a burst to one unit at a time for much of the
// seconds in which the capacity must reach the database's pace.
func (c *Controller) check(now time.Time) bool {
	u := &c.tune
	switch {
	case u.checking && now.Sub(u.checkAt) >= c.cfg.Auto.withDefaults().Interval/4:
		c.endCheck(now)
		return true
	case !u.checking && (u.windows >= u.every && (u.warm || u.blind) || u.stale) && c.waiting() > 0:
		c.integrate(now)
		u.waits(now, c)
		u.checking, u.checkAt, u.checked, u.drift, u.driftN, u.stale = true, now, 0, 0, 0, false
		u.state.Solo++
	}
	return false
}

// stretch is the window's: the geometric mean of its units' busy times over their types'
// solo times.
func (u *tuner) stretch() (float64, int) {
	if u.n == 0 {
		return 0, 0
	}
	return math.Exp(u.sum / float64(u.n)), u.n
}

// adapt ends the window if it is over, and moves the capacity; c.mu is held.
func (c *Controller) adapt(now time.Time) {
	a := c.cfg.Auto.withDefaults()
	u := &c.tune
	dt := now.Sub(u.start)
	early := min(a.Interval/4, earlyWindow) // the shortest window
	if !a.Enabled || dt < early || u.checking {
		return
	}
	c.integrate(now)
	u.waits(now, c)
	measured := dt - u.soloTime // the window's time outside solo checks
	if measured <= 0 {
		return
	}
	conc := u.area / float64(measured)
	bound := u.waitArea >= bindingUse*float64(measured)
	queued := u.queued || c.waiting() > 0
	stretch, n := u.stretch()
	// level is the stretch the capacity moves by: once settled, the median of this
	// window's and the two before, so that one window's outlier (units that a burst of the
	// clients' own work on the database's host slowed, or solo times that one check put
	// off) does not move it by half and back.
	level := stretch
	if u.warm && n >= minTuneSamples && u.recent[1] > 0 {
		level = median3(stretch, u.recent[0], u.recent[1])
	}
	// alone: about one unit ran at a time while others waited, through the window, or
	// through the end of it while the window's units ran faster than the target: units
	// as large as the capacity ran one by one. (A heavy unit larger than the capacity
	// runs alone too, in a database already past its knee; the stretch tells them apart.)
	spell := !u.spellAt.IsZero() && now.Sub(u.spellAt) >= early && n > 0 && stretch < a.Stretch
	alone := queued && (conc < 1.5 || spell)
	if dt < a.Interval && !alone && (u.warm || n < minTuneSamples) {
		// A cold start's windows, and any in which units ran one at a time while others
		// waited, end early: a burst on a cold proxy, or of units larger than the capacity,
		// reaches the database's pace within seconds, not minutes.
		return
	}
	rate := float64(u.completed) / dt.Seconds()
	work := u.costs.Seconds() / dt.Seconds() // estimated costs completed a second
	gain := 0.0
	if u.prevRate > 0 {
		gain = rate / u.prevRate
	}
	u.state.Stretch, u.state.Gain, u.state.Target = stretch, gain, a.Stretch
	if u.completed >= minTuneSamples && u.sizedSum > 0 {
		u.sizeFloor = min(sizeRoom*u.sizeMedian(), a.Max)
	}
	u.state.SizeFloor = u.sizeFloor
	if n >= minTuneSamples && queued && conc >= 2 && stretch > 0 {
		u.parallelism(conc/stretch, a)
	}
	if u.cappedArea > 0 && n >= minTuneSamples && stretch < math.Sqrt(a.Stretch) {
		// The bound held units back while they ran nearly as fast as alone (under the
		// square root of the target, as in nearBar; this window's stretch, not the level,
		// which answers a window late): it was learnt of other work (units that share the
		// processors, where these wait on a lock or a sleep), and is lifted until three
		// windows tell it again. A bound of 5 learnt while 500 clients logged in would hold
		// 500 sleeps of 50 ms that follow to 100 a second, past a 5 s queue timeout.
		u.par, u.state.Parallelism, u.state.MaxRunning = [3]float64{}, 0, 0
	}
	if n > 0 {
		u.state.Alone = time.Duration(math.Exp(u.alone/float64(n)) * float64(time.Second))
	}
	set := c.cfg.Capacity // what the capacity is set to
	capacity := set       // what held the units: the window's moves go from it
	if held := time.Duration(u.loadArea / float64(measured)); u.cappedArea >= bindingUse*float64(measured) &&
		queued && n >= minTuneSamples && level*deadBand >= a.Stretch && held < capacity {
		// The bound on units running, not the capacity, held the units through the window,
		// and the stretch asks for no more: the capacity moves from the estimated costs the
		// bound let run, where its moves take hold, and what its descents and climbs learnt
		// is of another capacity. Past the knee at 800 bookstore clients, and at half the
		// processor, the bound held the units through most of each run with the capacity
		// at 2-8 times what ran; the stretch read 4-5 and moved it down, but no fewer units
		// ran, the descents were undone, and their floors held it there for minutes.
		capacity = max(held, a.Min)
		u.release()
	}
	next, d := capacity, DecisionHold
	climb := false     // the stretch, or units run one at a time, moved it up
	byStretch := false // a settled move by the stretch (see settledGain)
	step := a.Step
	if !u.warm {
		step = 1 // the slow start doubles
	}
	switch {
	case !queued:
		d = DecisionIdle
	case n >= minTuneSamples && level*deadBand < 1:
		// The units ran faster than alone, which they cannot: their solo times are too
		// high, timed while the database was slower (at a cold start, say, while it still
		// flushed a bulk load). The window tells nothing; a solo check follows at once, in
		// a slow start too. (Taken for room, such windows doubled a slow start's capacity
		// several times over.)
		u.stale = true
	case alone && u.probing:
		// A probe took the capacity to where units ran one at a time while others waited:
		// too low to keep the database busy. It is undone at once, not doubled from.
		d, next = DecisionRestore, u.anchorCap
	case alone && (n == 0 || stretch < a.Stretch && (!u.warm || stretch < math.Sqrt(a.Stretch))):
		// One unit at a time ran, as fast as alone or with none to tell by: whatever the
		// knee, it is further up. (Units that ran alone but far slower than alone, as a
		// heavy unit in a database past its knee does, say the opposite.) Double, and
		// make room for two of the units that ran at least: a burst of units far larger
		// than a cold start's capacity gets there in one window, not in one per doubling.
		// Once settled, "as fast as alone" is within the square root of the target: at
		// half the processor under a quota, one unit at a time runs twice as long as alone
		// (the quota stops the database half of each period), and doubling on stretches
		// of 1.4-2.4 moved the capacity between 45 and 216 ms through the minute. Between
		// that and the target, the stretch moves it, as any window's.
		d, next = DecisionUp, grow(capacity, 1)
		if u.completed > 0 {
			next = max(next, 2*u.costs/time.Duration(u.completed))
		}
		climb = true // judged by its work once settled, as the stretch's moves up are
	case n < minTuneSamples:
		d = DecisionSparse
	case !u.moved && gain > 0 && gain < 0.5 && u.prevStr > 0 && stretch > 2*u.prevStr && u.stalled < stallWindows:
		d = DecisionStall
		u.stalled++
	default:
		r := a.Stretch / level
		m := r // the move
		near := u.warm && bound && max(level, stretch) < u.nearBar(a)
		if u.warm && !near {
			// Settled: part of the way (see settledGain), less after reversals.
			m = math.Pow(r, math.Ldexp(settledGain, -u.damp))
		}
		switch {
		case r > deadBand && bound:
			// A move from near alone goes the whole way, up to the step, and is not judged
			// as a climb (see nearBar).
			d, next = DecisionUp, grow(capacity, math.Min(m-1, step))
			climb, byStretch = !near, u.warm && !near
		case r < 1/deadBand:
			d, next = DecisionDown, shrink(capacity, math.Min(1/m-1, step))
			byStretch = u.warm
			u.warm = u.warm || bound
		case r <= deadBand:
			u.warm = u.warm || bound // reached the target
		}
	}
	if lo := max(a.Min, u.sizeFloor); next < lo {
		// Not under the units' size (see sizeRoom): up to it, when the capacity is under.
		if next = min(lo, a.Max); next > capacity {
			d = DecisionUp
		}
	}
	if d != DecisionStall {
		u.stalled = 0
	}
	if n >= minTuneSamples && (level > soloOff*a.Stretch || soloOff*level < a.Stretch) {
		u.every = soloEvery // far off: the solo times may have moved
	}
	next, d = u.judgeClimb(capacity, next, d, climb, rate, work, level, a)
	next, d = u.probe(capacity, next, d, bound, rate, work, level, a)
	next, d = u.judgeDescent(capacity, next, d, rate, work, stretch, level, a)
	next = min(max(next, a.Min, u.sizeFloor), a.Max)
	if next == capacity && (d == DecisionUp || d == DecisionDown || d == DecisionProbe) {
		d = DecisionHold // at a bound
	}
	if next < set && d == DecisionHold {
		d = DecisionDown // to what held the units
	}
	u.moved = next != set
	if u.moved {
		u.state.Moved++
		c.setCapacity(next)
		if byStretch && (d == DecisionUp || d == DecisionDown) {
			u.turn(next > capacity)
		}
	}
	u.state.Last = d
	u.state.Decided[d]++
	if d != DecisionStall {
		// A stall is not what the next window is compared with: the window before it is.
		u.prevRate, u.prevStr, u.prevWork = rate, stretch, work
		if n >= minTuneSamples {
			u.recent = [2]float64{stretch, u.recent[0]}
		}
	}
	u.windows++
	u.start, u.queued, u.area, u.waitArea, u.soloTime = now, false, 0, 0, 0
	u.loadArea, u.cappedArea = 0, 0
	u.blind = u.untimed > n
	if d == DecisionUp && bound && level < math.Sqrt(a.Stretch) && (!u.warm || max(level, stretch) < u.nearBar(a)) {
		// Units ran nearly as fast as alone while the capacity held others back: the knee
		// is further up (the load moved to larger units, or the database got faster), and
		// what the climbs and reversals before learnt is of another state. Where they ran
		// as fast as alone, within the dead band, the slow start resumes, with its short
		// windows and doublings (see nearBar).
		u.ceilLeft, u.damp, u.dirRun = 0, 0, 0
		u.warm = u.warm && level >= deadBand
	}
	u.sum, u.alone, u.n, u.completed, u.costs, u.untimed = 0, 0, 0, 0, 0, 0
	u.sizes, u.sizedSum = [sizeBuckets]time.Duration{}, 0
}

// parallelism notes a window's units running at once for each unit of stretch, p, and sets
// the bound on running units (see countRoom).
func (u *tuner) parallelism(p float64, a AutoConfig) {
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
func (u *tuner) turn(up bool) {
	if u.dirRun > 0 && up != u.lastUp {
		u.damp, u.dirRun = min(u.damp+1, dampMax), 1
	} else if u.dirRun++; u.dirRun > dampRestore && u.damp > 0 {
		u.damp, u.dirRun = u.damp-1, 1
	}
	u.lastUp = up
}

// nearBar is the stretch under which a settled window's units ran nearly as fast as alone:
// the square root of the target, or its fourth root while reversals damp the moves (there a
// low stretch may be a descent's overshoot read late: at 800 clients, stretches of 1.3-1.5
// at the bottom of descents restarted doublings, 45 to 82 ms and 59 to 276 ms). Under it the
// capacity moves the whole way to where the stretch would read the target, up to the step,
// not part of the way, and the move is not judged as a climb. Only under the dead band,
// units as fast as alone, does the slow start resume: stretches of 1.16-1.3 at the bottom
// of a descent, read while the units it held back were few, restarted doublings in
// quarter-second windows that overshot before the stretch could answer (at 800 bookstore
// clients, 54 to 170 ms in two windows; the stretch then read 9.4, and the descent back to
// 48 ms took 20 s).
func (u *tuner) nearBar(a AutoConfig) float64 {
	if u.damp > 0 {
		return math.Sqrt(math.Sqrt(a.Stretch))
	}
	return math.Sqrt(a.Stretch)
}

// probe counts the windows that held near the target while the capacity bound the units
// (d is what the stretch decided), and after probeHolds of them in a row, or more after
// probes undone, moves the capacity down by descentStep as the start of a descent measured
// from the present (see probeHolds). rate and work are the window's units and estimated
// costs completed a second.
func (u *tuner) probe(capacity, next time.Duration, d Decision, bound bool, rate, work, level float64, a AutoConfig) (time.Duration, Decision) {
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
func (u *tuner) judgeClimb(capacity, next time.Duration, d Decision, climb bool, rate, work, level float64, a AutoConfig) (time.Duration, Decision) {
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
			u.climbCap, u.climbRate, u.climbWork = capacity, rate, work
			if !u.moved && u.prevRate > 0 {
				// The window before ran at the same capacity: the two, less noisy.
				u.climbRate, u.climbWork = (rate+u.prevRate)/2, (work+u.prevWork)/2
			}
			u.above, u.climbHolds, u.climbChecked = windowSums{}, 0, false
		}
	case u.soloTime > 0 || d == DecisionStall || d == DecisionSparse:
		// A solo check's window does less work whatever the capacity, a stall's or a
		// sparse one's tells nothing.
	case float64(capacity) >= descentStep*float64(u.climbCap):
		if !u.climbChecked {
			u.stale = true // a solo check at once; the windows count after it
			break
		}
		u.above.add(rate, work, 0)
		if u.above.n < 2 {
			break
		}
		if m, mc, _ := u.above.mean(); m >= climbGain*u.climbRate || mc >= climbGain*u.climbWork {
			u.climbCap, u.climbFails = 0, 0 // more work: kept
			break
		}
		next, d = u.climbCap, DecisionRestore
		u.ceilCap, u.ceilLeft = u.climbCap, restoreWindows<<min(u.climbFails, restoreDoublings)
		u.climbCap = 0
		u.climbFails++
	case climb:
		u.climbHolds = 0
	default:
		if u.climbHolds++; u.climbHolds >= descentHolds {
			u.climbCap = 0 // settled under descentStep times where it began
		}
	}
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
func (u *tuner) probeUndone() {
	u.probing = false
	u.probeFails++
}

// judgeDescent weighs a window of a descent by its stretch and the work it did (see
// descentStep): capacity is what the window ran at, next and d what the stretch decided,
// rate and work its units and estimated costs completed a second. It returns the move,
// which a restore or its floor may change; level is the stretch the move went by.
func (u *tuner) judgeDescent(capacity, next time.Duration, d Decision, rate, work, stretch, level float64, a AutoConfig) (time.Duration, Decision) {
	if u.floorLeft > 0 {
		// While the stretch reads over the target, as it did when the descent was undone,
		// the floor's windows do not run out (up to floorMax in all; see restoreWindows).
		if u.floorAge++; level <= deadBand*a.Stretch || u.floorAge > floorMax {
			if u.floorLeft--; u.floorLeft == 0 {
				u.floorBar, u.overrode = 0, 0 // the bar lapses with its floor
			}
		}
	}
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
		u.below.add(rate, work, stretch)
		if u.below.n < 2 {
			break
		}
		m, mc, ms := u.below.mean()
		if !u.probing && m >= descentSame*u.anchorRate && ms*deadBand <= u.anchorStr {
			// The queue in the database shrank, and no work was lost: go on from here,
			// compared with the descent's best rate so far. (With 85% of the units a
			// step, descents at 50 clients of the bookstore took the capacity from 121
			// to 58 ms where 160 ms did the most.)
			u.anchor(capacity, max(m, u.anchorRate), mc, ms)
			u.keptDescent()
			break
		}
		if m >= descentSame*u.anchorRate && mc >= descentSame*u.anchorCost {
			// The units run as much longer than alone as before, but fewer did the same
			// work: what slows them is not their number, and the extra units only queued
			// in the database, in front of short ones. Go on from here, compared with the
			// descent's best rate so far, so that losses within the noise do not add up.
			// (The estimated costs must hold as well: sjf holding heavy units back for
			// quick ones completes more units, not more work; and a probe kept with 85%
			// of them held the capacity at 58-98 ms at 200 clients of the bookstore,
			// where 160 ms did the most.)
			u.anchor(capacity, max(m, u.anchorRate), max(mc, u.anchorCost), ms)
			u.keptDescent()
			u.probing, u.probeFails = false, 0
			break
		}
		next, d = u.anchorCap, DecisionRestore
		u.descending = false
		if u.probing {
			// The stretch has no move down to hold off.
			u.probeUndone()
			break
		}
		floor, bar := u.anchorCap, 0.0
		if u.floorLeft > 0 {
			// A floor still holds: it stays, with its bar, raised where the descent began
			// under it, past the bar.
			floor, bar = max(floor, u.floorCap), max(u.floorBar, deadBand*u.overrode)
		}
		u.floorCap, u.floorLeft, u.floorAge = floor, restoreWindows<<min(u.restores, restoreDoublings), 0
		u.floorBar, u.overrode = bar, 0
		u.restores++
	}
	if judged := stepDown(u.anchorCap); u.warm && u.descending && u.anchorCap > 0 &&
		d == DecisionDown && next < judged && level <= soloOff*a.Stretch {
		// Settled moves down stop where the descent is judged, and go on once a step is
		// kept: without this a descent undone costs more than the step, and the windows
		// that judge it run at different capacities. At half the processor the stretch
		// moved a descent from 52 to 34 ms in the two windows that judged it, and undid
		// it to 52; the capacity was away from where it held for 37 s. A stretch past
		// soloOff times the target (which a floor gives way to as well) is an overload
		// and does not wait: at 800 clients, after a slow start that overshot to 189 ms
		// (stretch 28), the stops made the descent wait at 126 ms, and the restore that
		// judged it took the capacity back to 189; the short interactions took 3.9
		// times as long as at a static 40 ms.
		next = min(capacity, max(next, judged))
	}
	if u.floorLeft > 0 && next < u.floorCap {
		if level <= max(soloOff*a.Stretch, u.floorBar) {
			if capacity < u.floorCap && u.overrode > 0 {
				// A move past the bar, undone: the bar rises (see restoreWindows).
				u.floorBar, u.overrode = max(u.floorBar, deadBand*u.overrode), 0
			}
			next = u.floorCap
			if d == DecisionDown {
				d = DecisionHold
			}
		} else {
			u.overrode = max(u.overrode, level)
		}
	}
	return next, d
}

// release forgets what the descents, climbs and probes learnt of the capacity, when it did
// not hold the units (see adapt).
func (u *tuner) release() {
	u.keptDescent()
	u.descending, u.probing, u.anchorCap, u.holds = false, false, 0, 0
	u.climbCap, u.ceilLeft = 0, 0
	u.calm = calmRun{}
}

// keptDescent notes a descent's step kept: fewer units helped, so the floor and the count
// of restores start over.
func (u *tuner) keptDescent() {
	u.restores, u.floorLeft, u.floorBar, u.overrode = 0, 0, 0, 0
}

// anchor measures a descent from capacity on: rate, work and stretch are its figures there.
func (u *tuner) anchor(capacity time.Duration, rate, work, stretch float64) {
	u.anchorCap, u.anchorRate, u.anchorCost, u.anchorStr = capacity, rate, work, stretch
	u.below = windowSums{}
}

// median3 is the middle one of a, b and c.
func median3(a, b, c float64) float64 {
	return max(min(a, b), min(max(a, b), c))
}

// grow is c larger by step (at least a millisecond).
func grow(c time.Duration, step float64) time.Duration {
	return c + max(time.Duration(float64(c)*step), time.Millisecond)
}

// stepDown is where a descent from c is judged, descentStep times under it.
func stepDown(c time.Duration) time.Duration {
	return time.Duration(float64(c) / descentStep)
}

// shrink is c smaller by step: c/(1+step).
func shrink(c time.Duration, step float64) time.Duration {
	return c - time.Duration(float64(c)*step/(1+step))
}

// setCapacity moves the capacity to v; c.mu is held. The reserve keeps within it, and
// waiting units that now fit are admitted by the caller's dispatch.
func (c *Controller) setCapacity(v time.Duration) {
	c.cfg.Capacity = v
	c.reserve.value = min(c.reserve.value, v)
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
