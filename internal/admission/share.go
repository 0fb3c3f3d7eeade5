package admission

import "time"

// A controller in a fleet of proxies admits a share of the database's capacity, which the
// fleet sets from outside (internal/fleet): the members' shares add up to the capacity the
// fleet found, so that together they admit no more than one controller alone would. One
// member, the adjuster, runs its adaptive capacity on its own share; the others follow.

// Demand returns what the controller asks of its backend now: the expected cost of the
// units running and of those waiting for capacity (blocked units wait for the session
// gate, not for capacity, and are left out).
func (c *Controller) Demand() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.granter.load
	for _, t := range c.queue.order.items {
		d += t.req.Cost
	}
	for _, t := range c.queue.parked.items {
		d += t.req.Cost
	}
	return d
}

// Capacity returns the capacity in force.
func (c *Controller) Capacity() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.granter.capacity
}

// Share sets the capacity in force to capacity, the controller's share of the fleet's, and
// says whether its adaptive capacity goes on adapting from there (adapt: this member
// adjusts the fleet's capacity) or holds it until the next Share (a follower). A solo
// check under way ends. Units that fit now are admitted. Share with adapt true and the
// capacity the controller has is the way back to adapting alone.
func (c *Controller) Share(capacity time.Duration, adapt bool) {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !adapt && c.adjuster.checking {
		c.adjuster.endCheck(now, c.reading())
	}
	if adapt && c.following && c.cfg.Auto.Enabled {
		// Elected after following: the capacity it was given is the fleet's settled one,
		// not a cold start's to double.
		c.adjuster.grad.settled, c.adjuster.warm = true, true
		c.adjuster.state.Phase = c.adjuster.phase()
	}
	c.following = !adapt
	if capacity > 0 && capacity != c.granter.capacity {
		c.granter.setCapacity(capacity)
	}
	c.adjusted()
	c.dispatch(now)
}

// SetShare, Drained and Running serve a stricter fleet rule that the simulator compares
// (bench/sim's RuleDrain) and that internal/fleet does not run: with it the adjuster's times
// alone were the database's, but the members ran heavy units past their shares and the
// fleet's capacity sank to its floor (bench/results/sim-fleet).

// SetShare says what part of the fleet's capacity this controller's is (1 or 0: alone):
// the adaptive capacity's bounds (capacity_min, capacity_max, the size floor) are the
// fleet's, so that the adjuster, adapting its share, holds the fleet's capacity within
// them, not its own share.
//
// In a fleet a unit that runs with none of this controller's own beside it is not alone in
// the database, and does not time the database alone, but during a solo check that the
// other members drained for (Drained).
func (c *Controller) SetShare(share float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adjuster.share = share
	c.adjusted()
}

// Drained says that the fleet's other members run nothing on the backend now, for the solo
// check under way (they hold, and their running units ended): from now on a unit that runs
// alone here runs alone in the database, and the check lasts its full length from now. It
// returns the check's new end; false when no check is under way.
func (c *Controller) Drained() (until time.Time, ok bool) {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.adjuster.checking {
		return time.Time{}, false
	}
	if !c.drained {
		c.drained = true
		c.adjuster.checkAt = now
		c.adjusted()
	}
	return c.adjuster.checkAt.Add(c.adjuster.checkLength()), true
}

// DrainWait is how long a solo check in a fleet waits for the other members to drain (see
// Drained); one they have not drained for by then ends after its length, having timed no
// unit alone.
const DrainWait = time.Second

// Running returns how many units run now.
func (c *Controller) Running() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.granter.running
}

// Following tells whether the controller holds a capacity the fleet gave it.
func (c *Controller) Following() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.following
}

// Checking tells whether a solo check is under way, and until when it may last: the fleet
// holds the other members' units while the adjuster times its own alone.
func (c *Controller) Checking() (on bool, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.adjuster.checking {
		return false, time.Time{}
	}
	if c.granter.busyElsewhere {
		return true, c.adjuster.checkAt.Add(DrainWait + c.adjuster.checkLength())
	}
	return true, c.adjuster.checkAt.Add(c.adjuster.checkLength())
}

// Hold starts no new unit until until (the zero time: from now on again), so that another
// member of the fleet can time its units alone in the database; running units go on, and
// units that fit start once the hold ends (at the latest at the Tick after it).
func (c *Controller) Hold(until time.Time) {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.granter.heldUntil = until
	if !now.Before(until) {
		c.granter.heldUntil = time.Time{}
		c.dispatch(now)
	}
}
