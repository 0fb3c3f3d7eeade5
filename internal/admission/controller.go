package admission

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
	"time"
)

// State is where a ticket's unit is.
type State uint8

const (
	// Idle: not in the controller (never arrived, refused, timed out, or released).
	Idle State = iota
	// Blocked: waiting in the session gate's blocking queue.
	Blocked
	// Queued: waiting for capacity.
	Queued
	// Admitted: running; its cost is charged until Release.
	Admitted
)

func (s State) String() string {
	return [...]string{"idle", "blocked", "queued", "admitted"}[s]
}

// Request describes a unit asking for admission.
type Request struct {
	// Type is the unit's request type key, for listings.
	Type uint64
	// Shape groups the units that take about as long as each other alone, for the
	// adaptive capacity's solo times (0: by Type). A type may gather statements of very
	// different costs (an interaction's tag gathers its index lookups and its scans,
	// 0.3 ms and 40 ms alone in the bookstore); averaged together, their solo time
	// swings with which of them ran alone last, and every stretch with it.
	Shape uint64
	// Cost is the unit's expected cost, charged while it runs.
	Cost time.Duration
	// Service is how long the unit is expected to run, its expected service time: the aging
	// bound is a multiple of it. Zero means Cost (costs measured as busy time).
	Service time.Duration
	// Txn says the unit is a transaction, for max_open_transactions.
	Txn bool
	// Accepted says the unit's session was admitted before (AWAIT).
	Accepted bool
	// Conn identifies the client connection, for listings.
	Conn uint64
	// Holding says the unit's session already holds a backend connection that admitted
	// units may need (pooled mode: a transaction opened by BEGIN, a pinned session). It is
	// admitted at once, and charged: waiting while it holds the connection could leave the
	// units admitted meanwhile without one. Such units are as many as the pool's
	// connections at most.
	Holding bool
	// Unmeasured says that Cost is a default, not a measurement: the unit's type has no
	// sample yet. Admission charges such a unit coldCharge instead, and counts it lengthy
	// under the reserve, until its type is measured.
	Unmeasured bool
}

// shape is what the unit's solo time is kept by.
func (r *Request) shape() uint64 {
	if r.Shape != 0 {
		return r.Shape
	}
	return r.Type
}

// Heap slots of Ticket.pos.
const (
	slotOrder    = iota // the order heap, or the blocking queue
	slotBound           // the aging-bound heap
	slotDeadline        // the deadline heap
	slotRunning         // the running units' heap
	slotQuick           // the quick units waiting under fifo with the reserve
	numSlots
)

// Ticket carries one unit through admission. The caller owns it and may reuse it for its
// next unit once the previous one is Idle again. Its fields belong to the Controller.
type Ticket struct {
	req      Request
	state    State
	seq      uint64
	arrived  time.Time
	deadline time.Time
	// bound is when the unit must go first (SJF with Aging or LastCall): when it has waited
	// Aging times its expected service time, or LastCall before its deadline.
	bound time.Time
	// waited is how long the unit waited before admission.
	waited time.Duration
	// end is when the admitted unit is expected to end: its admission plus its expected
	// service time.
	end time.Time
	pos [numSlots]int
	// gated: the unit holds an active slot of the session gate.
	gated bool
	// lane: the unit runs in the lengthy lane, inside the reserve.
	lane bool
	// lengthy: the admitted unit's cost counts in the lengthy load.
	lengthy bool
	// lengthyWait: the waiting unit counts against the lengthy units' share of the queue.
	lengthyWait bool
	// held: the transaction waits aside for an open transaction to end.
	held bool
	// parked: the lengthy unit waits aside for room in the lengthy lane.
	parked bool
	// probe: the unit is the first of its unmeasured type, charged the default cost;
	// later units of the type wait aside (probing) until it ends.
	probe   bool
	probing bool
	// alone: the unit started with no other running; admitNo is the controller's count of
	// admissions at its own, so that it ran alone throughout if no other came after it.
	alone   bool
	admitNo uint64
	err     error
	ready   chan struct{}
}

// State returns where the unit is.
func (t *Ticket) State() State { return t.state }

// Waited returns how long the admitted unit waited.
func (t *Ticket) Waited() time.Duration { return t.waited }

// Err returns why the unit was refused, once it is Idle.
func (t *Ticket) Err() error { return t.err }

// Controller admits units against the capacity.
type Controller struct {
	clock Clock

	mu  sync.Mutex
	cfg Config
	seq uint64

	load     time.Duration // expected cost of the running units
	running  int
	admits   uint64 // units admitted, ever
	openTxns int
	lane     int // lengthy units running inside the reserve
	// lengthyLoad is the part of load that lengthy units hold (with the reserve on).
	lengthyLoad time.Duration
	// lengthyWaiting counts the lengthy units waiting for capacity (with the reserve on).
	lengthyWaiting int

	order     heap      // units waiting for capacity, in discipline order
	bound     heap      // the same units by bound (SJF with Aging or LastCall only)
	deadlines heap      // every waiting unit by deadline
	active    heap      // the running units by expected end
	ends      []*Ticket // scratch for startOf
	blocked   heap      // the session gate's blocking queue, in arrival order
	// held are transactions that reached the head of the queue while
	// max_open_transactions were open: they wait aside, in arrival order, so that units
	// that are not transactions are not held behind them.
	held heap
	// parked are lengthy units that reached the head of the queue while the lengthy lane was
	// full and the rest of the room is the reserve's: they wait aside (see parkedOrder), so
	// that the quick units the reserve is for are not held behind them. Which goes first, a
	// parked unit or the queue's next, is the discipline's choice (see dispatch).
	parked heap
	// quick are the quick units of order, in arrival order, under fifo with the reserve:
	// when the queue's head is a lengthy unit waiting for room, they go past it into the
	// reserve (see quickPast).
	quick heap
	// probing are units of an unmeasured type that wait aside, in arrival order, for the
	// type's probe (its first unit, running or queued) to end and say what the type costs;
	// probes counts the probes by type.
	probing heap
	probes  map[uint64]int

	gate    gate
	reserve reserve
	pace    pace
	tune    tuner
	stats   Counters
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
	c := &Controller{clock: clock, cfg: cfg}
	c.deadlines = heap{less: byDeadline, slot: slotDeadline}
	c.active = heap{less: byEnd, slot: slotRunning}
	c.blocked = heap{less: bySeq, slot: slotOrder}
	c.held = heap{less: bySeq, slot: slotOrder}
	c.parked = heap{less: parkedOrder(cfg), slot: slotOrder}
	c.bound = heap{less: byBound, slot: slotBound}
	c.order = heap{less: orderFor(cfg), slot: slotOrder}
	c.quick = heap{less: bySeq, slot: slotQuick}
	c.probing = heap{less: bySeq, slot: slotOrder}
	c.probes = map[uint64]int{}
	c.gate.init(cfg.Sessions)
	c.pace.reset(cfg.Reserve.LaneRate, clock.Now())
	c.tune.reset(cfg.Auto, clock.Now())
	return c
}

func bySeq(a, b *Ticket) bool { return a.seq < b.seq }

// byCost is sjf's order: the cheapest first, except that a probe (the first unit of a type
// not yet measured) goes before measured units. Its cost is a default, not a measurement,
// and there is at most one per type at a time, so that going first costs the database one
// unit per new statement; ordered by its default it would wait behind every cheaper unit,
// and a steady stream of them would hold a new statement until its queue timeout.
func byCost(a, b *Ticket) bool {
	if a.probe != b.probe {
		return a.probe
	}
	if a.req.Cost != b.req.Cost {
		return a.req.Cost < b.req.Cost
	}
	return a.seq < b.seq
}

func byBound(a, b *Ticket) bool {
	if !a.bound.Equal(b.bound) {
		return a.bound.Before(b.bound)
	}
	return a.seq < b.seq
}

func byEnd(a, b *Ticket) bool {
	if !a.end.Equal(b.end) {
		return a.end.Before(b.end)
	}
	return a.seq < b.seq
}

func byDeadline(a, b *Ticket) bool {
	if !a.deadline.Equal(b.deadline) {
		return a.deadline.Before(b.deadline)
	}
	return a.seq < b.seq
}

func orderFor(cfg Config) func(a, b *Ticket) bool {
	if cfg.Discipline == SJF {
		return byCost
	}
	return bySeq
}

// parkedOrder is the order of the parked lengthy units among themselves: by bound under
// sjf with bounds, else by arrival.
func parkedOrder(cfg Config) func(a, b *Ticket) bool {
	if cfg.bounded() {
		return byBound
	}
	return bySeq
}

// bounded says whether waiting units have bounds: SJF with Aging or LastCall.
func (c *Config) bounded() bool {
	return c.Discipline == SJF && (c.Aging > 0 || c.LastCall > 0)
}

func (c *Controller) bounded() bool { return c.cfg.bounded() }

// boundOf is when the waiting unit t must go first: the earlier of its aging bound and its
// last call.
func (c *Controller) boundOf(t *Ticket) time.Time {
	var b time.Time
	if c.cfg.Aging > 0 {
		b = t.arrived.Add(time.Duration(c.cfg.Aging * float64(t.req.service())))
	}
	if c.cfg.LastCall > 0 {
		if call := t.deadline.Add(-c.cfg.LastCall); b.IsZero() || call.Before(b) {
			b = call
		}
	}
	return b
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
	if req.Unmeasured {
		if req.Service == 0 {
			req.Service = req.Cost // the default stays its expected service time
		}
		switch {
		case req.Holding: // admitted at once, at its default; no probe
			req.Unmeasured = req.Type == 0
		case req.Type == 0: // no type to probe by: charged the capacity
			req.Cost = max(req.Cost, c.coldCharge())
		}
	}
	*t = Ticket{req: req, seq: c.seq, arrived: now, ready: t.ready}
	for i := range t.pos {
		t.pos[i] = -1
	}
	if t.ready != nil {
		select { // a signal left from an earlier unit
		case <-t.ready:
		default:
		}
	}
	if c.cfg.Sessions.ActiveLimit > 0 {
		switch c.gate.arrive(&c.cfg.Sessions, req.Accepted, c.blocked.len()) {
		case gatePass:
			t.gated = true
		case gateBlock:
			c.wait(t, now)
			c.blocked.push(t)
			t.state = Blocked
			return Blocked, nil
		case gateRefuseNew:
			c.stats.NewSessionRefused++
			t.err = ErrNewSession
			return Idle, t.err
		case gateRefuseAccepted:
			c.stats.SessionAborted++
			t.err = ErrBlockingQueueFull
			return Idle, t.err
		}
	}
	if req.Holding {
		c.admit(t, now, false)
		return Admitted, nil
	}
	if req.Unmeasured && req.Type != 0 {
		if c.probes[req.Type] > 0 {
			return c.awaitProbe(t, now)
		}
		t.probe = true
		c.probes[req.Type]++
	}
	if c.order.len() == 0 {
		if ok, lane := c.fits(t, now); ok {
			c.admit(t, now, lane)
			return Admitted, nil
		}
	}
	if c.waiting() >= c.cfg.MaxQueue || c.lengthy(t) && c.lengthyWaiting >= c.lengthyQueue() {
		return c.queueFull(t, now)
	}
	c.wait(t, now)
	c.enqueue(t)
	c.dispatch(now)
	return t.state, t.err
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
// wait aside for it. A type's first unit runs at the default cost, a guess; the units that
// follow it before it ends wait for what it measures rather than run on the guess, so that
// a burst of one unknown statement costs the database one unit until its cost is known
// (at a 10ms default, five 500ms statements ran at once against 50ms of capacity), while
// a new type never waits behind a whole capacity's worth of others.
func (c *Controller) awaitProbe(t *Ticket, now time.Time) (State, error) {
	lengthy := c.lengthy(t)
	if c.waiting() >= c.cfg.MaxQueue || lengthy && c.lengthyWaiting >= c.lengthyQueue() {
		return c.queueFull(t, now)
	}
	c.wait(t, now)
	t.state, t.probing = Queued, true
	if lengthy {
		t.lengthyWait = true
		c.lengthyWaiting++
	}
	c.probing.push(t)
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
	t.probe = false
	typ := t.req.Type
	if c.probes[typ]--; c.probes[typ] <= 0 {
		delete(c.probes, typ)
	}
	var next []*Ticket
	for _, w := range c.probing.items {
		if w.req.Type == typ {
			next = append(next, w)
		}
	}
	if len(next) == 0 {
		return
	}
	slices.SortFunc(next, func(a, b *Ticket) int { return cmp.Compare(a.seq, b.seq) })
	if busy <= 0 {
		next = next[:1] // the next probe
	}
	for _, w := range next {
		c.probing.remove(w)
		w.probing = false
		if busy > 0 {
			w.req.Cost, w.req.Service, w.req.Unmeasured = busy, busy, false
			if !c.lengthy(w) {
				c.stopWaiting(w)
			}
		} else {
			w.probe = true
			c.probes[typ]++
		}
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
	c.deadlines.push(t)
	c.stats.Queued++
}

// enqueue puts a waiting unit in the queue for capacity.
func (c *Controller) enqueue(t *Ticket) {
	t.state = Queued
	lengthy := c.lengthy(t)
	if lengthy && !t.lengthyWait {
		t.lengthyWait = true
		c.lengthyWaiting++
	}
	if c.bounded() {
		t.bound = c.boundOf(t)
	}
	if c.paced() && lengthy {
		// A paced lane starts lengthy units at its pace, not when the queue lets them
		// through: they wait aside from the start.
		c.parked.push(t)
		t.parked = true
		return
	}
	c.order.push(t)
	c.tune.queued = true
	if c.bounded() {
		c.bound.push(t)
	}
	if !lengthy && c.splitQueue() {
		c.quick.push(t)
	}
}

// lengthy says whether t is a lengthy unit of the reserve: expected to cost at least the
// quick cutoff, or not measured yet (an unknown unit is not known to be quick).
func (c *Controller) lengthy(t *Ticket) bool {
	return c.cfg.Reserve.Floor > 0 && (t.req.Cost >= c.cfg.Reserve.QuickCutoff || t.req.Unmeasured)
}

// coldCharge is what a unit of an unmeasured type is charged when it has no type to probe
// by (see awaitProbe): the whole capacity, so that it runs alone as a unit larger than the
// capacity does. The charge is at most the queue timeout, the longest any unit waits: a
// capacity beyond that (admission all but off) is no reason to run such units in turn.
func (c *Controller) coldCharge() time.Duration {
	return min(c.cfg.Capacity, c.cfg.QueueTimeout)
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
	quick := int(math.Ceil(float64(cfg.MaxQueue) * float64(cfg.Reserve.Floor) / float64(cfg.Capacity)))
	return max(cfg.MaxQueue-max(quick, 1), 0)
}

// splitQueue says whether quick units may go past the queue's head into the reserve: under
// fifo with the reserve on (under sjf they are its head anyway).
func (c *Controller) splitQueue() bool {
	return c.cfg.Reserve.Floor > 0 && c.cfg.Discipline == FIFO
}

// paced says whether the lengthy lane's starts are paced.
func (c *Controller) paced() bool {
	r := &c.cfg.Reserve
	return r.Floor > 0 && (r.LaneRate > 0 || r.QuickWaitTarget > 0)
}

// fits says whether t may start now, and whether it would run in the lengthy lane.
func (c *Controller) fits(t *Ticket, now time.Time) (ok, lane bool) {
	cfg := &c.cfg
	if m := c.maxRunning(); m > 0 && c.running >= m || c.soloOnly() {
		return false, false
	}
	if t.req.Txn && cfg.MaxOpenTransactions > 0 && c.openTxns >= cfg.MaxOpenTransactions {
		return false, false
	}
	cost := t.req.Cost
	if cfg.Reserve.Floor <= 0 {
		// Alone, even a unit larger than the whole capacity runs.
		return c.running == 0 || c.load+cost <= cfg.Capacity, false
	}
	reserve := c.reserveValue()
	if !c.lengthy(t) {
		return c.running == 0 || c.quickLoad()+c.heldFromQuick(reserve)+cost <= cfg.Capacity, false
	}
	lane = cfg.Capacity-c.load-cost < reserve
	switch {
	case c.running == 0:
		// Alone: even a unit larger than the whole capacity runs.
		return true, cfg.Capacity-cost < reserve
	case c.load+cost > cfg.Capacity:
		// Larger than the room. Once no other lengthy unit runs and the quick units hold no
		// more than the reserve's floor, it runs beside them as it would alone (it could
		// not start otherwise while they keep coming), in the lane, by the lane's rules: it
		// holds only what the reserve leaves against them (see heldFromQuick).
		if c.lengthyLoad > 0 || c.quickLoad() > cfg.Reserve.Floor {
			return false, false
		}
		lane = cfg.Capacity-cost < reserve
	}
	if lane {
		// It would eat into the reserve: only in the lengthy lane, at its pace when paced.
		return c.lane < cfg.Reserve.LengthyLane && c.pace.allow(now, c.paceFloor()), true
	}
	return true, false
}

// maxRunning is the most units that may run at once: max_concurrency, and under the
// adaptive capacity the bound its windows learnt (see countRoom), whichever is less; 0
// when neither bounds them.
func (c *Controller) maxRunning() int {
	m, learnt := c.cfg.MaxConcurrency, 0
	if c.cfg.Auto.Enabled {
		learnt = c.tune.state.MaxRunning
	}
	if m == 0 || learnt > 0 && learnt < m {
		return learnt
	}
	return m
}

// quickLoad is the part of the load that quick units hold.
func (c *Controller) quickLoad() time.Duration { return c.load - c.lengthyLoad }

// heldFromQuick is how much of the capacity the running lengthy units hold against quick
// units: their load, but never more than what the reserve leaves. The reserve is the quick
// units' own: neither the lane, which lets lengthy units start into it while it is free,
// nor a unit larger than the capacity, admitted alone, takes it from them. While quick
// units then use it, the database carries up to the reserve beyond the capacity, as the
// template servers' lengthy pool adds its threads to the general pool's.
func (c *Controller) heldFromQuick(reserve time.Duration) time.Duration {
	return min(c.lengthyLoad, c.cfg.Capacity-reserve)
}

// quickRoom is the capacity a quick unit finds spare: what the reserve moves by.
func (c *Controller) quickRoom() time.Duration {
	return c.cfg.Capacity - c.quickLoad() - c.heldFromQuick(c.reserveValue())
}

// paceFloor is the least start rate of a paced lane: enough to start every parked unit
// within half the queue timeout.
func (c *Controller) paceFloor() float64 {
	return float64(c.parked.len()) / (c.cfg.QueueTimeout / 2).Seconds()
}

func (c *Controller) reserveValue() time.Duration {
	return clampReserve(c.reserve.value, c.cfg.Reserve.Floor, c.cfg.Capacity)
}

func (c *Controller) admit(t *Ticket, now time.Time, lane bool) {
	c.stopWaiting(t)
	t.state = Admitted
	t.waited = now.Sub(t.arrived)
	t.lane = lane
	t.lengthy = c.lengthy(t)
	t.end = now.Add(t.req.service())
	c.active.push(t)
	if c.cfg.Auto.Enabled {
		c.integrate(now)
	}
	c.admits++
	t.alone, t.admitNo = c.running == 0, c.admits
	c.load += t.req.Cost
	if t.lengthy {
		c.lengthyLoad += t.req.Cost
	}
	c.running++
	if t.req.Txn {
		c.openTxns++
	}
	if lane {
		c.lane++
		c.pace.started()
	}
	if c.cfg.Reserve.QuickWaitTarget > 0 && !t.lengthy {
		c.pace.quickAdmitted(t.waited)
	}
	c.stats.Admitted++
}

// stopWaiting takes a unit that leaves the queue off the lengthy units' count.
func (c *Controller) stopWaiting(t *Ticket) {
	if t.lengthyWait {
		t.lengthyWait = false
		c.lengthyWaiting--
	}
}

// service is the unit's expected service time.
func (r *Request) service() time.Duration {
	if r.Service > 0 {
		return r.Service
	}
	return r.Cost
}

// pick returns the waiting unit to admit next: the head of the queue, unless it would still
// run when the earliest bound passes and may not pass the unit with that bound (see due);
// then that unit.
func (c *Controller) pick(now time.Time) *Ticket {
	head := c.order.min()
	if !c.bounded() {
		return head
	}
	if e := c.bound.min(); e != head && c.due(e, head, now) {
		return e
	}
	return head
}

// due says whether the waiting unit w must go before q to keep its bound: q would still run
// when w's bound passes, and may not pass w while w's deadline holds (see mayPass).
func (c *Controller) due(w, q *Ticket, now time.Time) bool {
	return c.bounded() && now.Add(q.req.service()).After(w.bound) && !c.mayPass(q, w, now)
}

// waiting counts the units waiting for capacity.
func (c *Controller) waiting() int {
	return c.order.len() + c.held.len() + c.parked.len() + c.probing.len()
}

// dispatch admits waiting units while the next one fits. A parked lengthy unit goes before
// the queue's next unit when the discipline puts it first: under fifo the earlier arrival,
// under sjf the cheaper, so that under sjf a lengthy unit takes the lane only when no
// cheaper unit waits for the room, unless its bound comes first: then it holds the
// room as the queue's head would, and only a full lane lets the units behind it pass. A
// paced lane's parked units go first whenever they fit: the pace bounds them instead.
func (c *Controller) dispatch(now time.Time) {
	defer c.noteWaits(now) // after the units that now fit have left the queue
	for {
		var q *Ticket
		if c.order.len() > 0 {
			q = c.pick(now)
		}
		if p := c.parked.min(); p != nil {
			due := q != nil && c.due(p, q, now)
			if q == nil || due || c.paced() || c.order.less(p, q) {
				ok, lane := c.fits(p, now)
				if ok {
					c.unqueue(p)
					c.admit(p, now, lane)
					signal(p)
					continue
				}
				if due && !lane {
					return
				}
			}
		}
		if q == nil {
			return
		}
		ok, lane := c.fits(q, now)
		switch {
		case !ok && c.txnCapped(q):
			c.setAside(q, &c.held)
			q.held = true
		case !ok && lane:
			// Only the lengthy lane keeps it out.
			c.setAside(q, &c.parked)
			q.parked = true
		case !ok:
			b, lane := c.backfill(q, now)
			if b == nil {
				b, lane = c.quickPast(q, now)
			}
			if b == nil {
				return
			}
			c.unqueue(b)
			c.admit(b, now, lane)
			signal(b)
		default:
			c.unqueue(q)
			c.admit(q, now, lane)
			signal(q)
		}
	}
}

// backfill returns the queue's head when it may start before the unit q, which is past its
// bound and waits for room: the head fits now and is expected to end before q is expected
// to fit, so q starts no later for it. Else nil.
func (c *Controller) backfill(q *Ticket, now time.Time) (*Ticket, bool) {
	h := c.order.min()
	if h == q { // q is the head: nothing waiting is cheaper (always so without bounds)
		return nil, false
	}
	ok, lane := c.fits(h, now)
	if !ok || now.Add(h.req.service()).After(c.startOf(q, now)) {
		return nil, false
	}
	return h, lane
}

// quickPast returns the first quick unit waiting behind q, a lengthy unit at the head of the
// fifo queue that waits for room, when it fits within the reserve: the reserve is kept for
// quick units, so they do not wait for room a lengthy unit needs, and by keeping to the
// reserve they leave the rest of the room to drain for q. Else nil.
func (c *Controller) quickPast(q *Ticket, now time.Time) (*Ticket, bool) {
	if !c.splitQueue() || !c.lengthy(q) {
		return nil, false
	}
	h := c.quick.min()
	if h == nil || c.quickLoad()+h.req.Cost > c.reserveValue() {
		return nil, false
	}
	ok, lane := c.fits(h, now)
	if !ok {
		return nil, false
	}
	return h, lane
}

// startOf is when the waiting unit q is expected to fit by capacity and concurrency: the
// expected end of the running unit whose end leaves room for it, or of the last one.
func (c *Controller) startOf(q *Ticket, now time.Time) time.Time {
	c.ends = append(c.ends[:0], c.active.items...)
	slices.SortFunc(c.ends, func(a, b *Ticket) int { return cmpBy(byEnd, a, b) })
	load, running := c.load, c.running
	start, most := now, c.maxRunning()
	for _, r := range c.ends {
		load -= r.req.Cost
		running--
		start = r.end
		concurrency := most == 0 || running < most
		if running == 0 || (concurrency && load+q.req.Cost <= c.cfg.Capacity) {
			break
		}
	}
	clear(c.ends)
	return start
}

// setAside moves a queued unit to h, keeping its deadline.
func (c *Controller) setAside(t *Ticket, h *heap) {
	c.unqueue(t)
	c.deadlines.push(t)
	h.push(t)
}

// txnCapped says whether t is a transaction kept out by max_open_transactions alone.
func (c *Controller) txnCapped(t *Ticket) bool {
	return t.req.Txn && c.cfg.MaxOpenTransactions > 0 && c.openTxns >= c.cfg.MaxOpenTransactions
}

// unqueue takes a unit out of the heaps it waits in.
func (c *Controller) unqueue(t *Ticket) {
	switch {
	case t.held:
		c.held.remove(t)
		t.held = false
	case t.parked:
		c.parked.remove(t)
		t.parked = false
	case t.probing:
		c.probing.remove(t)
		t.probing = false
	case t.state == Queued:
		c.order.remove(t)
		if t.pos[slotBound] >= 0 {
			c.bound.remove(t)
		}
		if t.pos[slotQuick] >= 0 {
			c.quick.remove(t)
		}
	case t.state == Blocked:
		c.blocked.remove(t)
	}
	c.deadlines.remove(t)
}

func signal(t *Ticket) {
	select {
	case t.ready <- struct{}{}:
	default:
	}
}

// refuse ends the wait of a unit with err.
func (c *Controller) refuse(t *Ticket, err error, now time.Time) {
	c.unqueue(t)
	c.stopWaiting(t)
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
	if !c.gate.leave(&c.cfg.Sessions, c.blocked.len()) {
		return
	}
	t := c.blocked.min()
	c.blocked.remove(t)
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
	c.active.remove(t)
	if c.cfg.Auto.Enabled {
		c.integrate(now)
	}
	c.load -= t.req.Cost
	if t.lengthy {
		c.lengthyLoad -= t.req.Cost
	}
	c.running--
	if t.req.Txn {
		c.openTxns--
		if h := c.held.min(); h != nil {
			c.held.remove(h)
			h.held = false
			c.enqueue(h)
		}
	}
	if t.lane {
		c.lane--
	}
	if c.cfg.Auto.Enabled && busy > 0 {
		if !t.req.Unmeasured {
			c.tune.sized(t.req.shape(), t.req.Cost)
		}
		if c.tune.complete(t.req.shape(), t.req.Cost, busy, t.alone && c.admits == t.admitNo) {
			c.endCheck(now)
		}
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
	if c.waiting() > 0 {
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
	for t := c.deadlines.min(); t != nil && !t.deadline.After(now); t = c.deadlines.min() {
		c.stats.TimedOut++
		c.refuse(t, ErrTimeout, now)
		n++
	}
	if n > 0 {
		c.dispatch(now)
	}
}

// Tick does the periodic work at now: expired units are refused and the reserve moves.
// The proxy calls it a few times a second; the simulator at every step.
func (c *Controller) Tick(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire(now)
	if c.cfg.Auto.Enabled {
		before := c.cfg.Capacity
		ended := c.check(now)
		c.adapt(now)
		if ended || c.cfg.Capacity > before {
			c.dispatch(now) // units that fit now
		}
	}
	if c.cfg.Reserve.Floor > 0 {
		c.reserve.update(c.cfg.Reserve.Floor, c.cfg.Capacity, c.quickRoom(), now)
		if c.cfg.Reserve.QuickWaitTarget > 0 {
			c.pace.adapt(c.cfg.Reserve.QuickWaitTarget, now)
		}
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
// reordered when the discipline or the bounds changed.
func (c *Controller) Configure(cfg Config) {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.cfg
	if cfg.Auto.Enabled && cfg.Auto == old.Auto {
		// The adaptive capacity goes on from where it is: cfg.Capacity is where it starts.
		cfg.Capacity = old.Capacity
	} else if cfg.Auto != old.Auto {
		c.tune.reset(cfg.Auto, now)
	}
	c.cfg = cfg
	c.reserve.value = min(c.reserve.value, cfg.Capacity)
	rebound := old.Discipline != cfg.Discipline || old.Aging != cfg.Aging || old.LastCall != cfg.LastCall
	resplit := rebound || old.Reserve != cfg.Reserve
	if resplit {
		// Which units are quick, or whether they go past the head at all, may change: the
		// quick heap is made again below, from the queue.
		for _, t := range c.quick.items {
			t.pos[slotQuick] = -1
		}
		c.quick.reset(bySeq)
	}
	if rebound {
		waiting := slices.Clone(c.order.items)
		for _, t := range waiting {
			t.pos[slotOrder], t.pos[slotBound] = -1, -1
		}
		c.order.reset(orderFor(cfg))
		c.bound.reset(byBound)
		for _, t := range waiting {
			c.enqueue(t)
		}
	}
	if old.Reserve != cfg.Reserve || rebound {
		// The lane, the cutoff or the order changed: the parked units queue again under the
		// new rule (a paced lane parks its lengthy units again at once).
		parked := slices.Clone(c.parked.items)
		for _, t := range parked {
			t.pos[slotOrder] = -1
			t.parked = false
		}
		c.parked.reset(parkedOrder(cfg))
		for _, t := range parked {
			c.enqueue(t)
		}
	}
	if resplit && c.splitQueue() {
		for _, t := range c.order.items {
			if t.pos[slotQuick] < 0 && !c.lengthy(t) {
				c.quick.push(t)
			}
		}
	}
	if old.Reserve != cfg.Reserve {
		c.pace.reset(cfg.Reserve.LaneRate, now)
	}
	if old.Sessions.BlockingQueue != cfg.Sessions.BlockingQueue || old.Sessions.SLO != cfg.Sessions.SLO {
		c.gate.b = cfg.Sessions.BlockingQueue
	}
	if cfg.Sessions.ActiveLimit == 0 {
		// Gate off: let the blocked units in.
		for c.blocked.len() > 0 {
			t := c.blocked.min()
			c.blocked.remove(t)
			c.enqueue(t)
		}
		c.gate = gate{}
		c.gate.init(cfg.Sessions)
	}
	c.dispatch(now)
}

// Snapshot is the controller's state at one moment.
type Snapshot struct {
	Time       time.Time
	Discipline Discipline
	Aging      float64
	LastCall   time.Duration
	Capacity   time.Duration
	Load       time.Duration
	Running    int
	Queued     int
	OpenTxns   int
	// Session gate (when ActiveLimit > 0).
	ActiveLimit   int
	Active        int
	Blocked       int
	BlockingQueue int
	AdmitNew      bool
	Overload      bool
	// Reserve (when its floor is set).
	Reserve time.Duration
	Lane    int
	// Parked counts the lengthy units waiting aside for room in the lane (also in Queued).
	Parked int
	// LaneRate is the lane's starts a second when paced (reserve.lane_rate or
	// reserve.quick_wait_target), else 0.
	LaneRate float64
	// QuickWait is the quick units' mean queue wait over the last second, when paced.
	QuickWait time.Duration
	// Auto is the adaptive capacity's state, when on.
	Auto AutoState
	Counters
}

// Snapshot returns the current state and counters.
func (c *Controller) Snapshot() Snapshot {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{
		Time: now, Discipline: c.cfg.Discipline, Aging: c.cfg.Aging, LastCall: c.cfg.LastCall,
		Capacity: c.cfg.Capacity, Load: c.load, Running: c.running,
		Queued: c.waiting(), OpenTxns: c.openTxns,
		ActiveLimit: c.cfg.Sessions.ActiveLimit, Active: c.gate.active,
		Blocked: c.blocked.len(), BlockingQueue: c.gate.b,
		AdmitNew: c.gate.admitNew, Overload: c.gate.overload,
		Lane: c.lane, Parked: c.parked.len(), Counters: c.stats,
		Auto: c.tune.state,
	}
	if c.cfg.Reserve.Floor > 0 {
		s.Reserve = c.reserveValue()
		s.LaneRate, s.QuickWait = c.pace.rate, c.pace.meanWait
	}
	return s
}

// Waiter is a waiting unit, for listings.
type Waiter struct {
	Type    uint64
	Conn    uint64
	Cost    time.Duration
	Waited  time.Duration
	Blocked bool
	// Parked: a lengthy unit waiting for room in the lengthy lane.
	Parked bool
}

// Waiting lists up to limit waiting units: those waiting for capacity in the order the
// queue holds them (with aging, a unit past its bound may go first), then the blocked
// ones in arrival order.
func (c *Controller) Waiting(limit int) []Waiter {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	queued := slices.Clone(c.order.items)
	queued = append(queued, c.held.items...)
	queued = append(queued, c.parked.items...)
	queued = append(queued, c.probing.items...)
	blocked := slices.Clone(c.blocked.items)
	less := c.order.less
	slices.SortFunc(queued, func(a, b *Ticket) int { return cmpBy(less, a, b) })
	slices.SortFunc(blocked, func(a, b *Ticket) int { return cmpBy(bySeq, a, b) })
	out := make([]Waiter, 0, min(limit, len(queued)+len(blocked)))
	for _, t := range append(queued, blocked...) {
		if len(out) >= limit {
			break
		}
		out = append(out, Waiter{Type: t.req.Type, Conn: t.req.Conn, Cost: t.req.Cost,
			Waited: now.Sub(t.arrived), Blocked: t.state == Blocked, Parked: t.parked})
	}
	return out
}

func cmpBy(less func(a, b *Ticket) bool, a, b *Ticket) int {
	switch {
	case less(a, b):
		return -1
	case less(b, a):
		return 1
	}
	return 0
}
