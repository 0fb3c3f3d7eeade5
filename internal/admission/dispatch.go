package admission

import "time"

// Dispatch joins the queue and the granter: the queue names the candidates (its head, the
// unit whose bound comes first, the first parked lengthy unit, the first quick unit), the
// granter says whether each fits, and dispatch admits them while one does. c.mu is held
// throughout.

// dispatch admits waiting units while the next one fits. A parked lengthy unit goes before
// the queue's next unit when the discipline puts it first: under fifo the earlier arrival,
// under sjf the cheaper, so that under sjf a lengthy unit takes the lane only when no
// cheaper unit waits for the room, unless its bound comes first: then it holds the
// room as the queue's head would, and only a full lane lets the units behind it pass. A
// paced lane's parked units go first whenever they fit: the pace bounds them instead.
func (c *Controller) dispatch(now time.Time) {
	for c.dispatchNext(now) {
	}
	c.noteWaits(now) // after the units that now fit have left the queue
}

// dispatchNext admits the next unit, or sets the queue's next aside, and says whether it
// did either (then there may be more to do).
func (c *Controller) dispatchNext(now time.Time) bool {
	var q *Ticket
	if c.queue.head() != nil {
		q = c.pick(now)
	}
	started, holds := c.parkedFirst(q, now)
	switch {
	case started:
		return true
	case holds || q == nil:
		return false
	}
	return c.startNext(q, now)
}

// parkedFirst starts the first parked lengthy unit when it goes before q, the queue's next
// unit (nil: none), and fits. It returns whether it started, and whether it holds the room
// against q: it is due first and only the room, not the lane, keeps it out.
func (c *Controller) parkedFirst(q *Ticket, now time.Time) (started, holds bool) {
	p := c.queue.nextParked()
	if p == nil {
		return false, false
	}
	due := q != nil && c.due(p, q, now)
	if q != nil && !due && !c.queue.paced() && !c.queue.ahead(p, q) {
		return false, false
	}
	ok, lane := c.fits(p, now)
	if ok {
		c.start(p, now, lane)
		return true, false
	}
	return false, due && !lane
}

// startNext starts q, the queue's next unit, when it fits. Else it sets q aside when only
// max_open_transactions or the lengthy lane keeps it out, or starts a unit that may go past
// it (see backfill and quickPast). It returns false when it did none of these.
func (c *Controller) startNext(q *Ticket, now time.Time) bool {
	ok, lane := c.fits(q, now)
	switch {
	case ok:
		c.start(q, now, lane)
	case c.granter.txnCapped(q):
		c.queue.hold(q)
	case lane:
		// Only the lengthy lane keeps it out.
		c.queue.park(q)
	default:
		b, lane := c.backfill(q, now)
		if b == nil {
			b, lane = c.quickPast(q, now)
		}
		if b == nil {
			return false
		}
		c.start(b, now, lane)
	}
	return true
}

// start admits the waiting unit t at now and wakes it.
func (c *Controller) start(t *Ticket, now time.Time, lane bool) {
	c.queue.unqueue(t)
	c.admit(t, now, lane)
	signal(t)
}

// fits asks the granter whether t may start now, and whether in the lengthy lane.
func (c *Controller) fits(t *Ticket, now time.Time) (ok, lane bool) {
	return c.granter.fits(t, now, c.queue.parked.len())
}

// pick returns the waiting unit to admit next: the head of the queue, unless it would still
// run when the earliest bound passes and may not pass the unit with that bound (see due);
// then that unit.
func (c *Controller) pick(now time.Time) *Ticket {
	head := c.queue.head()
	if !c.queue.bounded() {
		return head
	}
	if e := c.queue.earliestBound(); e != head && c.due(e, head, now) {
		return e
	}
	return head
}

// due says whether the waiting unit w must go before q to keep its bound: q would still run
// when w's bound passes, and may not pass w while w's deadline holds (see mayPass).
func (c *Controller) due(w, q *Ticket, now time.Time) bool {
	return c.queue.bounded() && now.Add(q.req.service()).After(w.bound) && !c.mayPass(q, w, now)
}

// backfill returns the queue's head when it may start before the unit q, which is past its
// bound and waits for room: the head fits now and is expected to end before q is expected
// to fit, so q starts no later for it. Else nil.
func (c *Controller) backfill(q *Ticket, now time.Time) (*Ticket, bool) {
	h := c.queue.head()
	if h == q { // q is the head: nothing waiting is cheaper (always so without bounds)
		return nil, false
	}
	ok, lane := c.fits(h, now)
	if !ok || now.Add(h.req.service()).After(c.granter.startOf(q, now)) {
		return nil, false
	}
	return h, lane
}

// quickPast returns the first quick unit waiting behind q, a lengthy unit at the head of the
// fifo queue that waits for room, when it fits within the reserve: the reserve is kept for
// quick units, so they do not wait for room a lengthy unit needs, and by keeping to the
// reserve they leave the rest of the room to drain for q. Else nil.
func (c *Controller) quickPast(q *Ticket, now time.Time) (*Ticket, bool) {
	if !c.queue.splitQueue() || !c.queue.lengthy(q) {
		return nil, false
	}
	h := c.queue.nextQuick()
	if h == nil || c.granter.quickLoad()+h.req.Cost > c.granter.reserveValue() {
		return nil, false
	}
	ok, lane := c.fits(h, now)
	if !ok {
		return nil, false
	}
	return h, lane
}
