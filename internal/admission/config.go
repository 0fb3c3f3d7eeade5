package admission

import (
	"fmt"
	"time"
)

// Discipline orders the waiting queue.
type Discipline uint8

const (
	// FIFO admits waiting units in arrival order.
	FIFO Discipline = iota
	// SJF admits the waiting unit with the smallest expected cost first; with an aging
	// factor it keeps every waiting unit within its bound.
	SJF
)

func (d Discipline) String() string {
	if d == FIFO {
		return "fifo"
	}
	return "sjf"
}

// ParseDiscipline reads "fifo" or "sjf".
func ParseDiscipline(s string) (Discipline, error) {
	switch s {
	case "fifo":
		return FIFO, nil
	case "sjf":
		return SJF, nil
	}
	return 0, fmt.Errorf("unknown discipline %q; use fifo or sjf", s)
}

// Config is the admission policy. The zero value of an optional part turns it off.
type Config struct {
	// Capacity is the pool of concurrent estimated work: a unit is admitted while the
	// estimated costs of the running units plus its own stay within it. A unit larger than
	// the whole capacity is admitted alone. With Auto on it is where the adaptive capacity
	// starts.
	Capacity time.Duration
	Auto     AutoConfig
	// MaxConcurrency bounds the number of running units; 0 means no bound.
	MaxConcurrency int
	Discipline     Discipline
	// Aging is X: under SJF each waiting unit has a bound, its arrival plus X times its
	// expected service time (Request.Service). A unit is admitted ahead of a waiting one only
	// if it is expected to end before that one's bound, or its own bound comes first, or the
	// waiting one is overdue (past its bound) with its deadline far off: then a cheaper unit
	// that fits and is expected to end before the running units do passes it, so that it
	// starts once they have ended and, at saturation, when every costly unit is overdue, the
	// cheap ones do not wait behind them. Once the overdue unit's deadline is within twice
	// the time the running units are expected to take to end (or within LastCall), it goes
	// first, overdue units in the order of their bounds (Alpha scheduling). While the unit
	// that goes first waits for room, the queue's head may still start if it fits and is
	// expected to end before the running units leave that room (backfilling). Small X is
	// closer to FIFO, large X to SJF; 0 is off (pure SJF).
	Aging float64
	// LastCall is how long before its queue timeout a waiting unit's bound comes under SJF:
	// from then on it goes ahead of cheaper units, in the order of the bounds, so that the
	// discipline serves it before it would be refused. With Aging set the earlier of the two
	// bounds holds. 0 is off; FIFO ignores it (it serves in deadline order already).
	LastCall time.Duration
	// QueueTimeout is how long a unit may wait before it is refused.
	QueueTimeout time.Duration
	// MaxQueue bounds the number of units waiting for capacity.
	MaxQueue int
	// MaxOpenTransactions bounds the transactions running at once; 0 means no bound.
	MaxOpenTransactions int
	Sessions            SessionConfig
	Reserve             ReserveConfig
}

// SessionConfig is the AWAIT session gate. It is off while ActiveLimit is 0.
type SessionConfig struct {
	// ActiveLimit is A: past this many units in the system (waiting for capacity or
	// running), units of new sessions are refused and those of accepted sessions wait in
	// the blocking queue.
	ActiveLimit int
	// BlockingQueue is B, the capacity of the blocking queue (the initial one when it
	// adapts).
	BlockingQueue int
	// Aggressive: once a unit of an accepted session has been refused, new sessions stay
	// refused until the system has emptied.
	Aggressive bool
	// SLO turns on the adaptive B: every AdaptEvery completions the p95 response time of
	// the recent units (those of the last four periods of AdaptEvery completions) and of
	// those of them served under the current B are compared with it, so that an overload
	// that has passed no longer holds B down.
	SLO        time.Duration
	AdaptEvery int
	// MaxBlockingQueue is the largest B the adaptation may reach. Default 120.
	MaxBlockingQueue int
}

// ReserveConfig keeps part of the capacity for quick units. It is off while Floor is 0.
type ReserveConfig struct {
	// Floor is the least capacity kept for quick units. The reserve rises at once when
	// the spare capacity falls under it and decays by half the difference per second.
	Floor time.Duration
	// QuickCutoff: a unit whose expected cost is under it is quick; others are lengthy.
	QuickCutoff time.Duration
	// LengthyLane is how many lengthy units may run inside the reserve at once.
	LengthyLane int
	// LaneRate, when positive, paces the lane's starts at this many a second (see pace).
	LaneRate float64
	// QuickWaitTarget, when positive, paces the lane's starts too: their rate moves once a
	// second, from LaneRate when set, to hold the quick units' mean queue wait at it.
	QuickWaitTarget time.Duration
}

// Validate reports the first setting that cannot work, saying what to do.
func (c Config) Validate() error {
	auto := c.Auto.withDefaults().validate(c.Capacity)
	switch {
	case c.Capacity <= 0:
		return fmt.Errorf("capacity must be positive (got %s); set it to the concurrent work the database sustains, e.g. 500ms, or run gatekeeper calibrate", c.Capacity)
	case auto != nil:
		return auto
	case c.MaxConcurrency < 0:
		return fmt.Errorf("max_concurrency must be 0 (no bound) or positive (got %d)", c.MaxConcurrency)
	case c.Aging < 0:
		return fmt.Errorf("aging must be 0 (off) or positive (got %g)", c.Aging)
	case c.QueueTimeout <= 0:
		return fmt.Errorf("queue_timeout must be positive (got %s)", c.QueueTimeout)
	case c.LastCall < 0 || c.LastCall >= c.QueueTimeout:
		return fmt.Errorf("last_call must be 0 (off) or shorter than queue_timeout %s (got %s); it is how long before its timeout a unit goes first", c.QueueTimeout, c.LastCall)
	case c.MaxQueue < 1:
		return fmt.Errorf("max_queue must be at least 1 (got %d)", c.MaxQueue)
	case c.MaxOpenTransactions < 0:
		return fmt.Errorf("max_open_transactions must be 0 (no bound) or positive (got %d)", c.MaxOpenTransactions)
	case c.Sessions.ActiveLimit < 0:
		return fmt.Errorf("sessions.active_limit must be 0 (off) or positive (got %d)", c.Sessions.ActiveLimit)
	case c.Sessions.BlockingQueue < 0:
		return fmt.Errorf("sessions.blocking_queue must be 0 or positive (got %d)", c.Sessions.BlockingQueue)
	case c.Sessions.SLO < 0:
		return fmt.Errorf("sessions.slo must be 0 (fixed B) or positive (got %s)", c.Sessions.SLO)
	case c.Sessions.SLO > 0 && c.Sessions.AdaptEvery < 1:
		return fmt.Errorf("sessions.adapt_every must be at least 1 when sessions.slo is set (got %d)", c.Sessions.AdaptEvery)
	case c.Reserve.Floor < 0 || c.Reserve.Floor > c.Capacity:
		return fmt.Errorf("reserve.floor must be between 0 (off) and the capacity %s (got %s)", c.Capacity, c.Reserve.Floor)
	case c.Auto.Enabled && c.Reserve.Floor > c.Auto.Min:
		return fmt.Errorf("reserve.floor must be at most capacity_min %s (got %s): the adaptive capacity may go down to it", c.Auto.Min, c.Reserve.Floor)
	case c.Reserve.Floor > 0 && c.Reserve.QuickCutoff <= 0:
		return fmt.Errorf("reserve.quick_cutoff must be positive when reserve.floor is set (got %s); units cheaper than it are quick", c.Reserve.QuickCutoff)
	case c.Reserve.LengthyLane < 0:
		return fmt.Errorf("reserve.lengthy_lane must be 0 or positive (got %d)", c.Reserve.LengthyLane)
	case c.Reserve.QuickWaitTarget < 0:
		return fmt.Errorf("reserve.quick_wait_target must be 0 (lane not paced) or positive (got %s)", c.Reserve.QuickWaitTarget)
	case c.Reserve.LaneRate < 0:
		return fmt.Errorf("reserve.lane_rate must be 0 (no bound) or positive (got %g)", c.Reserve.LaneRate)
	case c.Reserve.QuickWaitTarget > 0 && c.Reserve.Floor == 0:
		return fmt.Errorf("reserve.quick_wait_target paces the lengthy lane, which needs reserve.floor: set the floor too, or the target to 0")
	}
	return nil
}
