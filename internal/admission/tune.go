package admission

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// AutoConfig turns on the adaptive capacity: the controller moves Config.Capacity itself,
// between Min and Max, to the smallest capacity at which the database does the most work.
// It is off while Enabled is false; Config.Capacity is then fixed.
type AutoConfig struct {
	Enabled bool
	// Min and Max bound the capacity. Config.Capacity is where it starts (calibrate's
	// result makes a good start; the smallest capacity makes a cold start without a storm).
	Min, Max time.Duration
	// Interval is the measurement window: the capacity moves at most once per window,
	// except early in a cold start. Default 2s: a second of a loaded database is too noisy
	// to tell a step of the capacity from chance.
	Interval time.Duration
	// Step is the first move, as a fraction of the capacity. A move that helped is followed
	// by one half as large again (up to a half); a move that hurt is undone and the
	// step halves (down to a tenth). Default 0.25.
	Step float64
}

// withDefaults fills in the interval and step left 0.
func (a AutoConfig) withDefaults() AutoConfig {
	if a.Interval == 0 {
		a.Interval = defaultTuneInterval
	}
	if a.Step == 0 {
		a.Step = defaultTuneStep
	}
	return a
}

// Tuning defaults and bounds.
const (
	defaultTuneInterval = 2 * time.Second
	// earlyWindow is the shortest window: a cold start's, or one in which a unit ran
	// alone while others waited, end after it (or a quarter of the interval, if shorter).
	earlyWindow     = 250 * time.Millisecond
	defaultTuneStep = 0.25
	minTuneStep     = 0.1
	maxTuneStep     = 0.5
	// minTuneSamples is the fewest completions of types measured in both windows for a
	// window to count: fewer say nothing about the database.
	minTuneSamples = 20
	// stallWindows is how many windows in a row the capacity holds when throughput falls to
	// under half with nothing moved (a checkpoint, a lock): a stall is waited out, not
	// followed down. A change that lasts longer is the database's new state.
	stallWindows = 5
	// kneeElasticity is the elasticity of the slowdown to the running units past which the
	// capacity is past the knee: more running units bring at most a quarter as much more
	// work done. Processor sharing gives 1 past the knee and 0 below it.
	kneeElasticity = 0.75
	// bindingUse is the mean share of the capacity held by running units past which the
	// capacity binds: a move up that let no more units run then was too small, not useless.
	bindingUse = 0.75
	// starvedRetry is how many windows past the knee a starved capacity waits before it
	// doubles again.
	starvedRetry = 5
	// maxTuneTypes bounds the per-type prices kept between windows.
	maxTuneTypes = 4096
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
	// DecisionStall: throughput fell to under half with the capacity unchanged; it holds
	// for up to stallWindows windows.
	DecisionStall
	// DecisionUp and DecisionDown: the capacity moved, to learn whether that helps.
	DecisionUp
	DecisionDown
	// DecisionRevert: the last move hurt (less work done, or units slowed without more
	// work), so it was undone.
	DecisionRevert
	// DecisionHold: the last move's outcome was unclear; the capacity stays for a window.
	DecisionHold
	numDecisions
)

// Decisions lists every decision, for metrics.
var Decisions = []Decision{DecisionNone, DecisionIdle, DecisionSparse, DecisionStall, DecisionUp, DecisionDown, DecisionRevert, DecisionHold}

func (d Decision) String() string {
	return [...]string{"none", "idle", "sparse", "stall", "up", "down", "revert", "hold"}[d]
}

// AutoState is the adaptive capacity's state, in Snapshot.
type AutoState struct {
	Enabled  bool
	Min, Max time.Duration
	Last     Decision
	// Step is the size of the next move, as a fraction of the capacity.
	Step float64
	// Gain is the last window's completions a second over the window before's, Slowdown how
	// much longer each type took than in the window before (averaged over the units), and
	// Elasticity the slowdown's log over the log of the change in running units (0 when
	// they did not change). Gain and Slowdown are 0 when a window had nothing to compare.
	Gain, Slowdown, Elasticity float64
	// Moved counts the windows that moved the capacity, Decided the windows by decision.
	Moved   uint64
	Decided [numDecisions]uint64
}

// price is one type's completions in a window: how many, and the sum of the logs of
// their busy times (in seconds).
type price struct {
	n   int
	log float64
}

// tuner is the adaptive capacity's state; it lives under the controller's lock.
//
// Each window measures two things of the database: how many units ran in it at once (the
// time average of the running units) and how much slower each type ran than in the window
// before (the ratio of the type's geometric mean busy time in the two windows, averaged
// over the units, so that the many cheap units make it precise). Past the database's knee its processors
// are shared: a quarter more running units makes every unit a quarter slower, for the same
// work done. Below the knee more running units run as fast as before and do more. So after
// a move, the elasticity of the slowdown to the concurrency, log(slowdown) / log(concurrency
// ratio), says which side of the knee the capacity is on: near 0 below it, near 1 past it.
// The capacity goes up while it is under a half, and down while it is over; a move that
// lands on the wrong side is undone and the step halves, so that the capacity settles at the
// knee, and it keeps probing a step either side of it to follow the database.
type tuner struct {
	start time.Time // of the current window
	// queued: a unit waited for capacity during the window.
	queued bool
	cur    map[uint64]price // this window's completions by type
	prev   map[uint64]price // the last window's
	// area is the running units integrated over the window (unit-seconds, in ns), from
	// areaAt on; prevConc is the last window's mean concurrency, prevRate its completions a
	// second.
	area     float64
	loadArea float64 // the load integrated likewise
	areaAt   time.Time
	// waitArea is the time in the window during which units waited for capacity (in ns),
	// up to waitAt; waitingNow says whether they wait since waitAt.
	waitArea           float64
	waitAt             time.Time
	waitingNow         bool
	prevConc, prevRate float64
	// moved is the last window's move, as new capacity over old (1: none to judge).
	moved float64
	from  time.Duration // the capacity before that move
	step  float64
	up    bool // the next probe's direction
	// over: the last move that said anything said the capacity was past the knee; a move
	// that changes nothing then goes on down, or is undone if it went up.
	over bool
	// overFor counts the windows in a row that said nothing new while over.
	overFor int
	// warm: a move has been undone once; until then (a cold start) windows may end early.
	warm    bool
	stalled int // windows held in a row for a stall
	state   AutoState
}

func (u *tuner) reset(cfg AutoConfig, now time.Time) {
	cfg = cfg.withDefaults()
	*u = tuner{start: now, areaAt: now, waitAt: now, cur: map[uint64]price{}, prev: map[uint64]price{}, moved: 1, step: cfg.Step, up: true}
	u.state = AutoState{Enabled: cfg.Enabled, Min: cfg.Min, Max: cfg.Max, Step: cfg.Step}
}

// running integrates the running units and their load up to now; running and load are
// what they were until now.
func (u *tuner) running(now time.Time, running int, load time.Duration) {
	if d := now.Sub(u.areaAt); d > 0 {
		u.area += float64(running) * float64(d)
		u.loadArea += float64(load) * float64(d)
		u.areaAt = now
	}
}

// waits integrates the time units waited for capacity up to now, and notes whether they
// wait from now on; c.mu is held.
func (u *tuner) waits(now time.Time, c *Controller) {
	if d := now.Sub(u.waitAt); d > 0 {
		if u.waitingNow {
			u.waitArea += float64(d)
		}
		u.waitAt = now
	}
	u.waitingNow = c.waiting() > 0
}

// noteWaits tells the adaptive capacity, when on, that the queue may have changed now;
// c.mu is held.
func (c *Controller) noteWaits(now time.Time) {
	if c.cfg.Auto.Enabled {
		c.tune.waits(now, c)
	}
}

// complete records a unit's busy time.
func (u *tuner) complete(typ uint64, busy time.Duration) {
	p, ok := u.cur[typ]
	if !ok && len(u.cur) >= maxTuneTypes {
		typ = 0 // beyond the bound the rest share one entry
		p = u.cur[typ]
	}
	p.n++
	p.log += math.Log(max(busy, time.Microsecond).Seconds())
	u.cur[typ] = p
}

// slowdown is how much slower the units of this window ran than those of their type in the
// last: the ratio of the type's geometric mean busy times in the two windows, averaged (in
// logs) over this window's units of the types in both; n counts those units. Geometric
// means, because a few units caught by a stall (a throttled processor quota, a flush) are
// no sign of the capacity, and would make an arithmetic mean swing by several times.
func (u *tuner) slowdown() (slowdown float64, n int) {
	var sum float64
	for _, typ := range slices.Sorted(maps.Keys(u.cur)) { // in order: the same sum every run
		c := u.cur[typ]
		p, ok := u.prev[typ]
		if !ok || p.n < 2 {
			continue
		}
		sum += float64(c.n) * (c.log/float64(c.n) - p.log/float64(p.n))
		n += c.n
	}
	if n == 0 {
		return 0, 0
	}
	return math.Exp(sum / float64(n)), n
}

// adapt ends the window if it is over, and moves the capacity; c.mu is held.
func (c *Controller) adapt(now time.Time) {
	a := c.cfg.Auto.withDefaults()
	u := &c.tune
	dt := now.Sub(u.start)
	if !a.Enabled || dt < min(a.Interval/4, earlyWindow) {
		return
	}
	u.running(now, c.running, c.load)
	u.waits(now, c)
	conc := u.area / float64(dt)
	// bound: units waited for capacity through most of the window. A window in which the
	// queue emptied early (a burst that ended) or filled late (one that began) measured the
	// clients as much as the capacity, and judges no move.
	bound := u.waitArea >= bindingUse*float64(dt)
	used := u.loadArea / float64(dt) / float64(c.cfg.Capacity) // the capacity's mean use
	completed := 0
	for _, p := range u.cur {
		completed += p.n
	}
	queued := u.queued || c.waiting() > 0
	// Past the knee a capacity of about one unit is probed up again only every
	// starvedRetry windows: a queue of units each as large as the capacity (the heavy
	// ones, which the quick ones pass under sjf) would otherwise run one at a time for
	// good after one unlucky window, with processors idle.
	alone := queued && conc < 1.5
	starved := alone && (!u.over || u.overFor >= starvedRetry)
	// In the slow start a window in which a few units at a time filled the capacity while
	// others waited ends early even with too few completions to judge: the capacity
	// doubles until there are enough, as TCP's congestion window grows until a loss. (Not
	// in the first window, which has nothing before it.)
	filling := !u.warm && queued && used >= bindingUse && !u.over && conc < 4 && u.prevRate > 0
	if dt < a.Interval && !alone && !filling && (u.warm || completed < minTuneSamples) {
		// Until a move is first undone (a cold start), a window ends early (earlyWindow)
		// once it has enough to judge; and at any time when the capacity lets about one unit
		// run at a time while others wait: a burst on a cold proxy, or of units
		// larger than the capacity, reaches the database's pace within seconds, not minutes.
		return
	}
	rate := float64(completed) / dt.Seconds()
	slowdown, n := u.slowdown()
	gain := 0.0
	if u.prevRate > 0 {
		gain = rate / u.prevRate
	}
	elasticity := math.NaN() // of the slowdown to the concurrency
	if lc := math.Log(conc / u.prevConc); u.prevConc > 0 && conc > 0 && math.Abs(lc) > 0.02 && slowdown > 0 {
		elasticity = math.Log(slowdown) / lc
	}
	u.state.Gain, u.state.Slowdown, u.state.Elasticity = gain, slowdown, elasticity
	if math.IsNaN(elasticity) {
		u.state.Elasticity = 0
	}
	capacity := c.cfg.Capacity
	next, d := capacity, DecisionHold
	told := false // this window said the capacity is past the knee
	moved := u.moved
	keepStep := false
	quiet := false // an undo that learnt nothing: the step and the slow start stay
	ratio := 0.0   // the move's size, when not the capacity's ratio
	switch {
	case !queued && moved == 1:
		d = DecisionIdle
	case starved && !(moved > 1 && elasticity >= kneeElasticity):
		// About one unit runs at a time and others wait: a unit as large as the capacity
		// runs alone. Whatever the knee, it is further up: double, or more, to let two of
		// the cheapest waiting units run at once.
		d, next = DecisionUp, grow(capacity, maxTuneStep*2)
		if h := c.order.min(); h != nil {
			next = max(next, 2*h.req.Cost)
		}
		// The knee found before (in another load, or an unlucky window) did not hold here:
		// the slow start resumes, with its short windows, until a move is undone again. A
		// burst of units each larger than the capacity then reaches the database's pace
		// within a second or two, not many windows, before their queue timeout.
		u.warm = false
		// The move is judged by the running units it lets in, about twice as many, not by
		// the capacity's ratio: a unit larger than the capacity ran alone before it.
		ratio = 2
	case n < minTuneSamples && filling && !(moved > 1 && elasticity >= kneeElasticity):
		d, next = DecisionUp, grow(capacity, maxTuneStep*2)
	case n < minTuneSamples && moved < 1 && alone:
		// A move down left one unit running at a time while others wait: too few complete
		// to judge, and that is the judgment. Undo it.
		d, next = DecisionRevert, u.from
	case n < minTuneSamples:
		d = DecisionSparse
	case moved == 1 && (gain < 0.5 || slowdown > 2) && u.stalled < stallWindows:
		d = DecisionStall
		u.stalled++
	case moved > 1: // went up
		s := moved - 1
		rose := conc > u.prevConc*(1+s/2)
		gained := gain >= 1+s/4
		switch {
		case !bound && !(rose && gained):
			// The queue was empty for a quarter of the window or more (a burst ended, or
			// began late): the clients, not the capacity, bound the units, so the move says
			// nothing of the knee. Undo it, as when the clients bound them throughout.
			d, next, keepStep = DecisionRevert, u.from, true
		case rose && elasticity >= kneeElasticity && !gained:
			// The units slowed as much as they were more: past the knee; undo.
			d, next, u.over, told = DecisionRevert, u.from, true, true
		case !rose && !gained && slowdown >= 1+s/2:
			// The units slowed by half the step or more, no more of them ran and no more
			// work was done: charged busy times grow past the knee, so that a larger
			// capacity fills with the same units, slower. Undo.
			d, next, u.over, told = DecisionRevert, u.from, true, true
		case rose && gained:
			// More ran, and did more: below the knee; go on.
			d, next, u.over = DecisionUp, grow(capacity, u.upStep()), false
		case rose:
			// More units ran, no slower at the database, yet no more work was done: they
			// spent the time elsewhere (the clients, the network, the proxy's processor
			// shared with the database). Past the knee of the whole; undo.
			d, next, u.over, told = DecisionRevert, u.from, true, true
		case used >= bindingUse && !u.over:
			// As many ran as before, yet the capacity was full: the step was too small to
			// let another unit in. Go on, with a larger one.
			d, next = DecisionUp, grow(capacity, u.upStep())
		default:
			// As many ran as before, with room left: the clients, not the capacity, bound
			// them (or the last telling move said past the knee). Undo, so that the capacity
			// stays where it binds.
			d, next, keepStep = DecisionRevert, u.from, true
		}
	case moved < 1: // went down
		s := 1 - moved
		fell := conc < u.prevConc*(1-s/2)
		switch {
		case !bound:
			// The queue was empty for a quarter of the window or more: the move says nothing.
			d, next, quiet = DecisionRevert, u.from, true
		case gain <= 1-s/4, fell && !(elasticity >= kneeElasticity):
			// Did less, or ran no faster for being fewer: below the knee; undo.
			d, next, u.over = DecisionRevert, u.from, false
		case fell:
			// The units ran as much faster as they were fewer, doing as much: go on.
			d, next, u.over, told = DecisionDown, shrink(capacity, u.step*1.5), true, true
		case u.over:
			d, next = DecisionDown, shrink(capacity, u.step*1.5)
		default: // as many ran as before, and the last that said anything said below the knee
			d, next = DecisionRevert, u.from
		}
	case !queued:
		d = DecisionIdle
	default: // settled, or back from an undo: probe
		if u.up {
			d, next = DecisionUp, grow(capacity, u.step)
		} else {
			d, next = DecisionDown, shrink(capacity, u.step)
		}
	}
	switch {
	case quiet:
	case keepStep:
		// The clients bound the units, not the database: the slow start goes on.
		u.step, u.up = math.Min(u.step*1.5, maxTuneStep), false
	case d == DecisionUp || d == DecisionDown:
		if moved != 1 { // a move that went on grows its step
			u.step = math.Min(u.step*1.5, maxTuneStep)
		}
		u.up = d == DecisionUp
	case d == DecisionRevert:
		u.step, u.warm = math.Max(u.step/2, minTuneStep), true
		u.up = next > capacity // the next probe goes where the undo went
	}
	if d != DecisionStall {
		u.stalled = 0
	}
	if u.over && !told {
		u.overFor++
	} else {
		u.overFor = 0 // not past the knee, or just found to be
	}
	next = min(max(next, a.Min), a.Max)
	if next == capacity && (d == DecisionUp || d == DecisionDown) {
		d, u.up = DecisionHold, !u.up // at a bound: probe the other way
	}
	u.moved = 1
	if next != capacity {
		if d != DecisionRevert {
			u.moved = float64(next) / float64(capacity)
			if ratio > 0 {
				u.moved = ratio
			}
		}
		u.from = capacity
		u.state.Moved++
		c.setCapacity(next)
	}
	u.state.Last, u.state.Step = d, u.step
	u.state.Decided[d]++
	if d != DecisionStall {
		// A stall is not what the next window is compared with: the window before it is.
		u.prev, u.cur = u.cur, u.prev
		u.prevConc, u.prevRate = conc, rate
	}
	clear(u.cur)
	u.start, u.queued, u.area, u.loadArea, u.waitArea = now, false, 0, 0, 0
}

// upStep is the step of a move up that goes on after one that helped. Until a move has
// been undone (a cold start) the capacity doubles, as TCP's slow start does: a burst on a
// cold proxy waits a few quarter windows for the capacity, not the many windows that
// steps of a quarter or a half would take, and the first move past the knee is undone.
func (u *tuner) upStep() float64 {
	if !u.warm {
		return maxTuneStep * 2
	}
	return u.step * 1.5
}

func grow(c time.Duration, step float64) time.Duration {
	return c + max(time.Duration(float64(c)*step), time.Millisecond)
}

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
	case a.Step <= 0 || a.Step > maxTuneStep:
		return fmt.Errorf("the adaptive capacity's step must be in (0, 1] (got %g)", a.Step)
	}
	return nil
}
