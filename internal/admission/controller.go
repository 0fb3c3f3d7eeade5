package admission

import (
	"context"
	"math"
	"sync"
	"time"
)

// Controller admits units against the capacity. It joins the three parts of admission under
// one lock: the queue (who goes next), the granter (whether there is room) and the adjuster
// (the adaptive capacity), with the session gate and the counters; dispatch asks the queue
// for candidates and the granter for room.
type Controller struct {
	clock Clock

	mu sync.Mutex
	// cfg is the policy as configured; the capacity in force is the granter's.
	cfg      Config
	seq      uint64
	queue    queue
	granter  granter
	adjuster adjuster
	gate     gate
	stats    Counters
	// following: the capacity is a share that a fleet of proxies gives (see Share); the
	// adaptive capacity holds it.
	following bool
	// drained: in a fleet, the other members run nothing on the backend, for the solo
	// check under way (see Drained).
	drained bool
}

// Counters count what happened to units since start.
type Counters struct {
	Admitted uint64
	// Queued counts units that had to wait (they are counted again when admitted or not).
	Queued            uint64
	QueueFull         uint64
	TimedOut          uint64
	Canceled          uint64
	NewSessionRefused uint64
	SessionAborted    uint64
}

// New returns a controller for cfg, which must be valid, on clock (nil: the system clock).
func New(cfg Config, clock Clock) *Controller {
	if clock == nil {
		clock = SystemClock{}
	}
	now := clock.Now()
	c := &Controller{clock: clock, cfg: cfg}
	c.queue.init(cfg)
	c.granter.init(cfg, now)
	c.gate.init(cfg.Sessions)
	c.adjuster.reset(cfg.Auto, now)
	c.adjusted()
	return c
}

// Arrive asks admission for a unit. It never blocks: the unit is Admitted, or waits
// (Queued or Blocked; see Wait), or is refused (Idle, with the reason as the error).
func (c *Controller) Arrive(t *Ticket, req Request) (State, error) {
	return c.ArriveAt(t, req, c.clock.Now())
}

// ArriveAt is [Controller.Arrive] at now, a reading of the controller's clock that the
// caller has at hand.
func (c *Controller) ArriveAt(t *Ticket, req Request, now time.Time) (State, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t.reset(c.charged(req), c.seq, now)
	if c.cfg.Sessions.ActiveLimit > 0 {
		if v := c.gate.arrive(&c.cfg.Sessions, req.Accepted, c.queue.blocked.len()); v != gatePass {
			return c.stopAtGate(t, v, now)
		}
		t.gated = true
	}
	return c.place(t, now)
}

// AdmitNowAt admits at now a unit that another controller admitted and that runs on this
// controller's backend instead (a read whose replica could not take it): at once, past the
// queue and the session gate, charged as a unit that holds a connection is. It waited its
// turn already; it must not wait again, nor count twice at the gate.
func (c *Controller) AdmitNowAt(t *Ticket, req Request, now time.Time) {
	req.Holding = true
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t.reset(c.charged(req), c.seq, now)
	c.admit(t, now, false)
}

// charged is req as admission charges it: an unmeasured unit's default cost stays its
// expected service time; one that holds a connection is admitted at its default, with no
// probe; one with no type to probe by is charged coldCharge.
func (c *Controller) charged(req Request) Request {
	if !req.Unmeasured {
		return req
	}
	if req.Service == 0 {
		req.Service = req.Cost
	}
	switch {
	case req.Holding:
		req.Unmeasured = req.Type == 0
	case req.Type == 0:
		req.Cost = max(req.Cost, c.coldCharge())
	}
	return req
}

// stopAtGate does what the session gate's verdict v says to the arriving unit t: it
// waits in the blocking queue, or is refused.
func (c *Controller) stopAtGate(t *Ticket, v gateVerdict, now time.Time) (State, error) {
	switch v {
	case gateBlock:
		c.wait(t, now)
		c.queue.block(t)
		return Blocked, nil
	case gateRefuseNew:
		c.stats.NewSessionRefused++
		t.err = ErrNewSession
	default:
		c.stats.SessionAborted++
		t.err = ErrBlockingQueueFull
	}
	return Idle, t.err
}

// place admits the arriving unit t past the gate at once when nothing waits before it and
// it fits, else queues it (or it waits for its type's probe), or refuses it when the queue
// is full.
func (c *Controller) place(t *Ticket, now time.Time) (State, error) {
	if t.req.Holding {
		c.admit(t, now, false)
		return Admitted, nil
	}
	if t.req.Unmeasured && t.req.Type != 0 {
		if c.queue.probed(t.req.Type) {
			return c.awaitProbe(t, now)
		}
		c.queue.startProbe(t)
	}
	if c.queue.head() == nil {
		if ok, lane := c.fits(t, now); ok {
			c.admit(t, now, lane)
			return Admitted, nil
		}
	}
	if c.full(t) {
		return c.queueFull(t, now)
	}
	c.wait(t, now)
	c.enqueue(t)
	c.dispatch(now)
	return t.state, t.err
}

// full says whether t finds no place to wait: max_queue units wait, or t is lengthy and the
// lengthy units' share of the queue is taken (see lengthyQueue).
func (c *Controller) full(t *Ticket) bool {
	return c.queue.waiting() >= c.cfg.MaxQueue || c.queue.lengthy(t) && c.queue.lengthyWaiting >= c.lengthyQueue()
}

// queueFull refuses the arriving unit t: the queue is full.
func (c *Controller) queueFull(t *Ticket, now time.Time) (State, error) {
	c.stats.QueueFull++
	c.endProbe(t, 0, now)
	if t.gated {
		c.leaveGate(now)
	}
	t.err = ErrQueueFull
	return Idle, t.err
}

// awaitProbe makes the arriving unit t, of an unmeasured type whose probe has not ended,
// wait aside for it: the units that follow a type's first unit wait for what it measures
// rather than run on its default cost, a guess, so that a burst of one unknown statement
// costs the database one unit until its cost is known.
func (c *Controller) awaitProbe(t *Ticket, now time.Time) (State, error) {
	if c.full(t) {
		return c.queueFull(t, now)
	}
	c.wait(t, now)
	c.queue.awaitProbe(t)
	c.noteWaits(now)
	return Queued, nil
}

// endProbe ends the probe t, if it is one, that ran for busy (0: it did not run): the units
// of its type waiting for it queue, charged what it measured; if it did not run, the first
// of them is the type's probe instead.
func (c *Controller) endProbe(t *Ticket, busy time.Duration, now time.Time) {
	if !t.probe {
		return
	}
	next := c.queue.probeEnded(t, busy)
	if len(next) == 0 {
		return
	}
	for _, w := range next {
		c.enqueue(w)
	}
	c.dispatch(now)
}

// wait sets a unit up to wait from now.
func (c *Controller) wait(t *Ticket, now time.Time) {
	t.deadline = now.Add(c.cfg.QueueTimeout)
	if t.ready == nil {
		t.ready = make(chan struct{}, 1)
	}
	c.queue.watch(t)
	c.stats.Queued++
}

// enqueue puts a waiting unit in the queue for capacity; the adjuster notes a unit that
// joined the order as one that waited in the window.
func (c *Controller) enqueue(t *Ticket) {
	if c.queue.enqueue(t) {
		c.adjuster.noteQueued()
	}
}

// coldCharge is what a unit of an unmeasured type is charged when it has no type to probe
// by (see awaitProbe): the whole capacity, so that it runs alone as a unit larger than the
// capacity does. The charge is at most the queue timeout, the longest any unit waits: a
// capacity beyond that (admission all but off) is no reason to run such units in turn.
func (c *Controller) coldCharge() time.Duration {
	return min(c.granter.capacity, c.cfg.QueueTimeout)
}

// lengthyQueue is how many lengthy units may wait, with the reserve on: the queue is split
// as the capacity is, the reserve floor's share of max_queue (at least one place) being
// kept for quick units, so that a queue full of lengthy units refuses the next lengthy
// unit and not a quick one, which the reserve would admit at once.
func (c *Controller) lengthyQueue() int {
	cfg := &c.cfg
	if cfg.Reserve.Floor <= 0 {
		return cfg.MaxQueue
	}
	quick := int(math.Ceil(float64(cfg.MaxQueue) * float64(cfg.Reserve.Floor) / float64(c.granter.capacity)))
	return max(cfg.MaxQueue-max(quick, 1), 0)
}

// admit starts t at now: it leaves the queue's books and is charged by the granter.
func (c *Controller) admit(t *Ticket, now time.Time, lane bool) {
	c.queue.stopWaiting(t)
	t.state = Admitted
	t.waited = now.Sub(t.arrived)
	if c.cfg.Auto.Enabled {
		c.integrate(now) // up to the start
	}
	c.granter.start(t, now, lane)
	c.stats.Admitted++
}

// refuse ends the wait of a unit with err.
func (c *Controller) refuse(t *Ticket, err error, now time.Time) {
	c.queue.unqueue(t)
	c.queue.stopWaiting(t)
	c.noteWaits(now)
	t.state, t.err = Idle, err
	c.endProbe(t, 0, now)
	if t.gated {
		c.leaveGate(now)
	}
	signal(t)
}

// leaveGate gives back an active slot of the session gate, or hands it to the first unit
// of the blocking queue.
func (c *Controller) leaveGate(now time.Time) {
	if !c.gate.leave(&c.cfg.Sessions, c.queue.blocked.len()) {
		return
	}
	t := c.queue.unblock()
	t.gated = true
	c.enqueue(t)
	c.dispatch(now)
}

// Release ends an admitted unit that kept the backend busy for busy: its charge is
// returned and waiting units are admitted into the room.
func (c *Controller) Release(t *Ticket, busy time.Duration) {
	c.ReleaseAt(t, busy, c.clock.Now())
}

// ReleaseAt is [Controller.Release] at now, a reading of the controller's clock that the
// caller has at hand.
func (c *Controller) ReleaseAt(t *Ticket, busy time.Duration, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.state != Admitted {
		return
	}
	t.state = Idle
	if c.cfg.Auto.Enabled {
		c.integrate(now) // up to the end
	}
	c.granter.finish(t)
	if t.req.Txn {
		if h := c.queue.unhold(); h != nil {
			c.enqueue(h)
		}
	}
	if c.cfg.Auto.Enabled && busy > 0 {
		c.completed(t, busy, now)
	}
	c.endProbe(t, busy, now)
	if c.cfg.Sessions.ActiveLimit > 0 {
		c.gate.complete(&c.cfg.Sessions, t.waited+busy)
		if t.gated {
			c.leaveGate(now)
		}
	}
	c.dispatch(now)
}

// Room tells whether a unit of cost arriving now would be admitted at once: nothing
// waits, and it fits the capacity and the concurrency bound.
func (c *Controller) Room(cost time.Duration) bool {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queue.waiting() > 0 {
		return false
	}
	t := Ticket{req: Request{Cost: cost}}
	ok, _ := c.fits(&t, now)
	return ok
}

// Cancel takes a waiting unit out (its client went away). It returns false when the unit
// was not waiting: if it was admitted meanwhile, the caller must Release it.
func (c *Controller) Cancel(t *Ticket) bool {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.state != Queued && t.state != Blocked {
		return false
	}
	c.stats.Canceled++
	c.refuse(t, ErrCanceled, now)
	c.dispatch(now)
	return true
}

// Expire refuses every unit whose deadline has passed at now.
func (c *Controller) Expire(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire(now)
}

func (c *Controller) expire(now time.Time) {
	n := 0
	for t := c.queue.expired(now); t != nil; t = c.queue.expired(now) {
		c.stats.TimedOut++
		c.refuse(t, ErrTimeout, now)
		n++
	}
	if n > 0 {
		c.dispatch(now)
	}
}

// Tick does the periodic work at now: expired units are refused, the adaptive capacity
// ends its window, and the reserve moves. The proxy calls it a few times a second; the
// simulator at every step.
func (c *Controller) Tick(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire(now)
	if g := &c.granter; !g.heldUntil.IsZero() && !now.Before(g.heldUntil) {
		g.heldUntil = time.Time{} // a hold that was not ended ends at its bound
		c.dispatch(now)
	}
	if c.cfg.Auto.Enabled && !c.following {
		before := c.granter.capacity
		ended := c.check(now)
		c.adapt(now)
		if ended || c.granter.capacity > before {
			c.dispatch(now) // units that fit now
		}
	}
	if c.cfg.Reserve.Floor > 0 {
		c.granter.moveReserve(now)
		c.dispatch(now)
	}
}

// Wait blocks until a waiting unit is admitted (nil), refused (its reason), or ctx ends
// (ErrCanceled; the unit is then out of the controller either way). It uses the wall clock
// for the unit's deadline.
func (c *Controller) Wait(ctx context.Context, t *Ticket) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		c.mu.Lock()
		state, err, deadline := t.state, t.err, t.deadline
		c.mu.Unlock()
		switch state {
		case Admitted:
			return nil
		case Idle:
			return err
		}
		d := deadline.Sub(c.clock.Now())
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-t.ready:
		case <-timer.C:
			c.Expire(c.clock.Now())
		case <-ctx.Done():
			if !c.Cancel(t) {
				c.Release(t, 0)
			}
			return ErrCanceled
		}
	}
}

// Configure swaps the policy. Waiting units keep their place and deadlines; the queue is
// reordered when the discipline or the bounds changed. The adaptive capacity goes on from
// where it is while its settings are unchanged: cfg.Capacity is then ignored.
func (c *Controller) Configure(cfg Config) {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.cfg
	if cfg.Auto.Enabled && cfg.Auto == old.Auto {
		cfg.Capacity = c.granter.capacity
	} else if cfg.Auto != old.Auto {
		c.adjuster.reset(cfg.Auto, now)
	}
	c.cfg = cfg
	c.granter.configure(cfg, now)
	c.adjusted()
	if c.queue.configure(cfg) {
		c.adjuster.noteQueued()
	}
	c.configureGate(old.Sessions, cfg.Sessions)
	c.dispatch(now)
}

// configureGate moves the session gate from old to cfg: a new B, or, with the gate off,
// the blocked units let in.
func (c *Controller) configureGate(old, cfg SessionConfig) {
	if old.BlockingQueue != cfg.BlockingQueue || old.SLO != cfg.SLO {
		c.gate.b = cfg.BlockingQueue
	}
	if cfg.ActiveLimit == 0 {
		for t := c.queue.unblock(); t != nil; t = c.queue.unblock() {
			c.enqueue(t)
		}
		c.gate = gate{}
		c.gate.init(cfg)
	}
}

// The adjuster's feed. It sees only what these hand it, and sets the granter's capacity
// and bound on running units through adapt and adjusted; c.mu is held.

// reading is the present as the adjuster sees it.
func (c *Controller) reading() reading {
	return reading{running: c.granter.running, load: c.granter.load, most: c.granter.maxRunning(),
		waiting: c.queue.waiting() > 0}
}

// integrate brings the adjuster's integrals of the running units up to now.
func (c *Controller) integrate(now time.Time) {
	c.adjuster.running(now, c.granter.running, c.granter.load, c.granter.maxRunning())
}

// noteWaits tells the adjuster, when on, whether units wait for capacity from now on.
func (c *Controller) noteWaits(now time.Time) {
	if c.cfg.Auto.Enabled {
		c.adjuster.waits(now, c.queue.waiting() > 0)
	}
}

// completed hands the adjuster a unit that ran for busy: its size, and its busy time with
// whether it ran alone; a solo check that has timed enough units alone ends.
func (c *Controller) completed(t *Ticket, busy time.Duration, now time.Time) {
	if !t.req.Unmeasured {
		c.adjuster.sized(t.req.shape(), t.req.Cost)
	}
	if c.adjuster.complete(t.req.shape(), t.req.Cost, busy, c.granter.ranAlone(t)) {
		c.endCheck(now)
	}
}

// check starts or ends a solo check at now (see adjuster.check); it returns whether one
// ended.
func (c *Controller) check(now time.Time) bool {
	if c.adjuster.checking && c.granter.busyElsewhere && now.Sub(c.adjuster.checkAt) < DrainWait {
		return false // the fleet's other members drain for it; it is timed from then on
	}
	ended := c.adjuster.check(now, c.reading())
	c.adjusted()
	return ended
}

// endCheck ends a solo check at now.
func (c *Controller) endCheck(now time.Time) {
	c.adjuster.endCheck(now, c.reading())
	c.adjusted()
}

// adapt ends the adjuster's window if it is over, and sets the capacity it decided.
func (c *Controller) adapt(now time.Time) {
	if next := c.adjuster.adapt(now, c.granter.capacity, c.reading()); next != c.granter.capacity {
		c.granter.setCapacity(next)
	}
	c.adjusted()
}

// adjusted hands the granter what the adjuster holds it to: the bound it learnt on running
// units (while the adaptive capacity is on), and one unit at a time during a solo check.
func (c *Controller) adjusted() {
	c.granter.learnt, c.granter.solo = 0, c.adjuster.checking
	if !c.adjuster.checking {
		c.drained = false
	}
	c.granter.busyElsewhere = c.adjuster.share > 0 && c.adjuster.share < 1 && !c.drained
	if c.cfg.Auto.Enabled {
		c.granter.learnt = c.adjuster.state.MaxRunning
	}
}
