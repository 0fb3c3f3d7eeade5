package admission

import "time"

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
	g := &c.granter
	s := Snapshot{
		Time: now, Discipline: c.cfg.Discipline, Aging: c.cfg.Aging, LastCall: c.cfg.LastCall,
		Capacity: g.capacity, Load: g.load, Running: g.running,
		Queued: c.queue.waiting(), OpenTxns: g.openTxns,
		ActiveLimit: c.cfg.Sessions.ActiveLimit, Active: c.gate.active,
		Blocked: c.queue.blocked.len(), BlockingQueue: c.gate.b,
		AdmitNew: c.gate.admitNew, Overload: c.gate.overload,
		Lane: g.lane, Parked: c.queue.parked.len(), Counters: c.stats,
		Auto: c.adjuster.state,
	}
	if c.cfg.Reserve.Floor > 0 {
		s.Reserve = g.reserveValue()
		s.LaneRate, s.QuickWait = g.pace.rate, g.pace.meanWait
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
	queued, blocked := c.queue.waiters()
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
