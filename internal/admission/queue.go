package admission

import (
	"cmp"
	"slices"
	"time"
)

// queue orders the units waiting for capacity: it decides who goes next, never whether there
// is room (the granter does). Besides the discipline's order it keeps the units that wait
// aside for a reason of their own, so that none holds back the units behind it: the blocking
// queue of the session gate, transactions held by max_open_transactions, lengthy units parked
// for the lengthy lane, and units waiting for their type's probe.
type queue struct {
	// The discipline, from Config.
	discipline Discipline
	aging      float64
	lastCall   time.Duration
	reserveCfg ReserveConfig

	order     heap // units waiting for capacity, in discipline order
	bound     heap // the same units by bound (SJF with Aging or LastCall only)
	deadlines heap // every waiting unit by deadline
	blocked   heap // the session gate's blocking queue, in arrival order
	// held are transactions that reached the head of the queue while
	// max_open_transactions were open: they wait aside, in arrival order, so that units
	// that are not transactions are not held behind them.
	held heap
	// parked are lengthy units that reached the head of the queue while the lengthy lane was
	// full and the rest of the room is the reserve's: they wait aside (see parkedLess), so
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
	// lengthyWaiting counts the lengthy units waiting for capacity (with the reserve on).
	lengthyWaiting int
}

func (q *queue) init(cfg Config) {
	q.set(cfg)
	q.deadlines = heap{less: byDeadline, slot: slotDeadline}
	q.blocked = heap{less: bySeq, slot: slotOrder}
	q.held = heap{less: bySeq, slot: slotOrder}
	q.parked = heap{less: q.parkedLess(), slot: slotOrder}
	q.bound = heap{less: byBound, slot: slotBound}
	q.order = heap{less: q.orderLess(), slot: slotOrder}
	q.quick = heap{less: bySeq, slot: slotQuick}
	q.probing = heap{less: bySeq, slot: slotOrder}
	q.probes = map[uint64]int{}
}

// set takes the discipline from cfg.
func (q *queue) set(cfg Config) {
	q.discipline, q.aging, q.lastCall, q.reserveCfg = cfg.Discipline, cfg.Aging, cfg.LastCall, cfg.Reserve
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

func byDeadline(a, b *Ticket) bool {
	if !a.deadline.Equal(b.deadline) {
		return a.deadline.Before(b.deadline)
	}
	return a.seq < b.seq
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

// orderLess is the discipline's order.
func (q *queue) orderLess() func(a, b *Ticket) bool {
	if q.discipline == SJF {
		return byCost
	}
	return bySeq
}

// parkedLess is the order of the parked lengthy units among themselves: by bound under
// sjf with bounds, else by arrival.
func (q *queue) parkedLess() func(a, b *Ticket) bool {
	if q.bounded() {
		return byBound
	}
	return bySeq
}

// bounded says whether waiting units have bounds: SJF with Aging or LastCall.
func (q *queue) bounded() bool {
	return q.discipline == SJF && (q.aging > 0 || q.lastCall > 0)
}

// boundOf is when the waiting unit t must go first: the earlier of its aging bound and its
// last call.
func (q *queue) boundOf(t *Ticket) time.Time {
	var b time.Time
	if q.aging > 0 {
		b = t.arrived.Add(time.Duration(q.aging * float64(t.req.service())))
	}
	if q.lastCall > 0 {
		if call := t.deadline.Add(-q.lastCall); b.IsZero() || call.Before(b) {
			b = call
		}
	}
	return b
}

// lengthy says whether t is a lengthy unit of the reserve (see ReserveConfig.lengthy).
func (q *queue) lengthy(t *Ticket) bool { return q.reserveCfg.lengthy(&t.req) }

// splitQueue says whether quick units may go past the queue's head into the reserve: under
// fifo with the reserve on (under sjf they are its head anyway).
func (q *queue) splitQueue() bool {
	return q.reserveCfg.Floor > 0 && q.discipline == FIFO
}

// paced says whether the lengthy lane's starts are paced: its lengthy units wait parked.
func (q *queue) paced() bool { return q.reserveCfg.paced() }

// waiting counts the units waiting for capacity.
func (q *queue) waiting() int {
	return q.order.len() + q.held.len() + q.parked.len() + q.probing.len()
}

// head is the queue's head in the discipline's order (nil: none waits in it).
func (q *queue) head() *Ticket { return q.order.min() }

// earliestBound is the unit of the queue whose bound comes first (nil without bounds).
func (q *queue) earliestBound() *Ticket { return q.bound.min() }

// nextParked is the first of the parked lengthy units (nil: none).
func (q *queue) nextParked() *Ticket { return q.parked.min() }

// nextQuick is the first quick unit waiting under fifo with the reserve (nil: none).
func (q *queue) nextQuick() *Ticket { return q.quick.min() }

// ahead says whether a goes ahead of b in the discipline's order.
func (q *queue) ahead(a, b *Ticket) bool { return q.order.less(a, b) }

// watch keeps t's deadline, for expired.
func (q *queue) watch(t *Ticket) { q.deadlines.push(t) }

// expired returns the waiting unit whose deadline passed first by now (nil: none did).
func (q *queue) expired(now time.Time) *Ticket {
	if t := q.deadlines.min(); t != nil && !t.deadline.After(now) {
		return t
	}
	return nil
}

// block puts t in the session gate's blocking queue.
func (q *queue) block(t *Ticket) {
	q.blocked.push(t)
	t.state = Blocked
}

// unblock takes the first unit out of the blocking queue (nil: none waits there).
func (q *queue) unblock() *Ticket {
	t := q.blocked.min()
	if t != nil {
		q.blocked.remove(t)
	}
	return t
}

// enqueue puts a waiting unit in the queue for capacity. It returns whether the unit joined
// the order (a lengthy unit under a paced lane is parked at once instead).
func (q *queue) enqueue(t *Ticket) (joined bool) {
	t.state = Queued
	lengthy := q.lengthy(t)
	if lengthy && !t.lengthyWait {
		t.lengthyWait = true
		q.lengthyWaiting++
	}
	if q.bounded() {
		t.bound = q.boundOf(t)
	}
	if q.paced() && lengthy {
		// A paced lane starts lengthy units at its pace, not when the queue lets them
		// through: they wait aside from the start.
		q.parked.push(t)
		t.parked = true
		return false
	}
	q.order.push(t)
	if q.bounded() {
		q.bound.push(t)
	}
	if !lengthy && q.splitQueue() {
		q.quick.push(t)
	}
	return true
}

// unqueue takes a unit out of the heaps it waits in.
func (q *queue) unqueue(t *Ticket) {
	switch {
	case t.held:
		q.held.remove(t)
		t.held = false
	case t.parked:
		q.parked.remove(t)
		t.parked = false
	case t.probing:
		q.probing.remove(t)
		t.probing = false
	case t.state == Queued:
		q.order.remove(t)
		if t.pos[slotBound] >= 0 {
			q.bound.remove(t)
		}
		if t.pos[slotQuick] >= 0 {
			q.quick.remove(t)
		}
	case t.state == Blocked:
		q.blocked.remove(t)
	}
	q.deadlines.remove(t)
}

// stopWaiting takes a unit that leaves the queue off the lengthy units' count.
func (q *queue) stopWaiting(t *Ticket) {
	if t.lengthyWait {
		t.lengthyWait = false
		q.lengthyWaiting--
	}
}

// hold sets a queued transaction aside until an open transaction ends.
func (q *queue) hold(t *Ticket) {
	q.setAside(t, &q.held)
	t.held = true
}

// unhold takes the first held transaction out (nil: none is held), to queue again.
func (q *queue) unhold() *Ticket {
	h := q.held.min()
	if h != nil {
		q.held.remove(h)
		h.held = false
	}
	return h
}

// park sets a queued lengthy unit aside until the lengthy lane has room.
func (q *queue) park(t *Ticket) {
	q.setAside(t, &q.parked)
	t.parked = true
}

// setAside moves a queued unit to h, keeping its deadline.
func (q *queue) setAside(t *Ticket, h *heap) {
	q.unqueue(t)
	q.deadlines.push(t)
	h.push(t)
}

// probed says whether units of type typ wait for a probe: one runs or waits.
func (q *queue) probed(typ uint64) bool { return q.probes[typ] > 0 }

// startProbe makes t its unmeasured type's probe.
func (q *queue) startProbe(t *Ticket) {
	t.probe = true
	q.probes[t.req.Type]++
}

// awaitProbe sets t aside until its type's probe ends.
func (q *queue) awaitProbe(t *Ticket) {
	t.state, t.probing = Queued, true
	if q.lengthy(t) {
		t.lengthyWait = true
		q.lengthyWaiting++
	}
	q.probing.push(t)
}

// probeEnded ends the probe t, which ran for busy (0: it did not run), and returns the units
// of its type that waited for it, in arrival order, taken out of the probing heap for the
// caller to queue: charged what it measured, or, if it did not run, the first of them
// alone, as the type's probe.
func (q *queue) probeEnded(t *Ticket, busy time.Duration) []*Ticket {
	t.probe = false
	typ := t.req.Type
	if q.probes[typ]--; q.probes[typ] <= 0 {
		delete(q.probes, typ)
	}
	var next []*Ticket
	for _, w := range q.probing.items {
		if w.req.Type == typ {
			next = append(next, w)
		}
	}
	if len(next) == 0 {
		return nil
	}
	slices.SortFunc(next, func(a, b *Ticket) int { return cmp.Compare(a.seq, b.seq) })
	if busy <= 0 {
		next = next[:1] // the next probe
	}
	for _, w := range next {
		q.probing.remove(w)
		w.probing = false
		if busy > 0 {
			w.req.Cost, w.req.Service, w.req.Unmeasured = busy, busy, false
			if !q.lengthy(w) {
				q.stopWaiting(w)
			}
		} else {
			w.probe = true
			q.probes[typ]++
		}
	}
	return next
}

// configure takes the discipline from cfg, reordering the waiting units when the order, the
// bounds or the reserve changed. It returns whether a unit joined the order.
func (q *queue) configure(cfg Config) (joined bool) {
	rebound := q.discipline != cfg.Discipline || q.aging != cfg.Aging || q.lastCall != cfg.LastCall
	resplit := rebound || q.reserveCfg != cfg.Reserve
	q.set(cfg)
	if !resplit {
		return false
	}
	// Which units are quick, or whether they go past the head at all, may change: the
	// quick heap is made again below, from the queue.
	for _, t := range q.quick.items {
		t.pos[slotQuick] = -1
	}
	q.quick.reset(bySeq)
	if rebound && q.reorder() {
		joined = true
	}
	// The lane, the cutoff or the order changed: the parked units queue again under the
	// new rule (a paced lane parks its lengthy units again at once).
	if q.requeueParked() {
		joined = true
	}
	if q.splitQueue() {
		for _, t := range q.order.items {
			if t.pos[slotQuick] < 0 && !q.lengthy(t) {
				q.quick.push(t)
			}
		}
	}
	return joined
}

// reorder queues the units of the order again under the discipline's order and bounds.
func (q *queue) reorder() (joined bool) {
	waiting := slices.Clone(q.order.items)
	for _, t := range waiting {
		t.pos[slotOrder], t.pos[slotBound] = -1, -1
	}
	q.order.reset(q.orderLess())
	q.bound.reset(byBound)
	for _, t := range waiting {
		if q.enqueue(t) {
			joined = true
		}
	}
	return joined
}

// requeueParked queues the parked units again.
func (q *queue) requeueParked() (joined bool) {
	parked := slices.Clone(q.parked.items)
	for _, t := range parked {
		t.pos[slotOrder] = -1
		t.parked = false
	}
	q.parked.reset(q.parkedLess())
	for _, t := range parked {
		if q.enqueue(t) {
			joined = true
		}
	}
	return joined
}

// waiters lists the waiting units: those waiting for capacity in the discipline's order,
// and those of the blocking queue in arrival order.
func (q *queue) waiters() (queued, blocked []*Ticket) {
	queued = slices.Clone(q.order.items)
	queued = append(queued, q.held.items...)
	queued = append(queued, q.parked.items...)
	queued = append(queued, q.probing.items...)
	blocked = slices.Clone(q.blocked.items)
	less := q.order.less
	slices.SortFunc(queued, func(a, b *Ticket) int { return cmpBy(less, a, b) })
	slices.SortFunc(blocked, func(a, b *Ticket) int { return cmpBy(bySeq, a, b) })
	return queued, blocked
}
