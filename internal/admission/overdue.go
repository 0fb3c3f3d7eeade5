package admission

import "time"

// Passing an overdue unit. Under sjf with bounds a waiting unit whose bound has come (it is
// overdue) goes ahead of cheaper units (see due). At saturation every costly unit is overdue,
// so the units would go in the order of their bounds and the cheap ones wait behind the
// costly ones as under fifo, though the costly ones' deadlines are far off. The bound orders
// the queue; the deadline is what the client sees. So an overdue unit whose deadline is not
// at risk is passed by a cheaper unit that fits now and is expected to end before the
// running units do: every unit that passes it ends before them, so the first overdue unit
// starts once the units running now have ended, as expected. It is passed only while they
// are expected to end with time to spare before its deadline (twice the time they take, for
// estimates that fall short, and at least LastCall); from then on it goes first and holds
// the room, the units behind it starting only as backfill.

// mayPass says whether the waiting unit q may start now before w, whose bound would pass
// while q runs: q fits now and is expected to end before the running units, and w's
// deadline is far enough off that waiting for them puts it at no risk (see riskMargin).
func (c *Controller) mayPass(q, w *Ticket, now time.Time) bool {
	if ok, _ := c.fits(q, now); !ok {
		return false
	}
	last := c.granter.lastEnd()
	if now.Add(q.req.service()).After(last) {
		return false // nothing runs, or q would outlast what runs
	}
	return w.deadline.After(now.Add(c.riskMargin(last, now)))
}

// riskMargin is how close to its deadline an overdue unit goes first: twice the time until
// last, when the last of the running units is expected to end, and no less than LastCall.
func (c *Controller) riskMargin(last, now time.Time) time.Duration {
	return max(2*last.Sub(now), c.cfg.LastCall)
}
