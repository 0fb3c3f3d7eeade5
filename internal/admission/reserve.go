package admission

import "time"

// reserve is the share of capacity kept for quick units (the template servers' t_reserve,
// in milliseconds of capacity instead of threads). It is moved once per second from the
// spare capacity a quick unit finds then: when the spare falls under it, it rises at once
// by the difference plus however far the spare fell under the floor; when the spare is
// above it, it falls by half the difference, never under the floor.
//
// Two bounds keep that rule sane where the paper's threads had none. The reserve never
// exceeds the capacity: a spare measured against a pool can never rise above a reserve
// larger than the pool, so past it the rise would feed on itself (it doubled every second
// once a unit larger than the capacity had run) and the fall would never come. And since
// a spare can never rise above a reserve equal to the capacity either, a second in which
// the whole capacity is spare (nothing a quick unit waits for) lowers the reserve by at
// least half of what it holds above the floor: an idle database ends a spike however
// high the reserve went.
type reserve struct {
	value time.Duration
	last  time.Time // of the last update; zero before the first
}

// update moves the reserve for the spare capacity measured at now, at most once a second,
// and returns it: between floor and capacity. Amounts are whole milliseconds.
func (r *reserve) update(floor, capacity, spare time.Duration, now time.Time) time.Duration {
	r.value = clampReserve(r.value, floor, capacity)
	if !r.last.IsZero() && now.Sub(r.last) < time.Second {
		return r.value
	}
	r.last = now
	spare = min(max(spare, 0), capacity).Truncate(time.Millisecond)
	idle := spare >= capacity.Truncate(time.Millisecond)
	switch {
	case spare > r.value || idle:
		fall := max(((spare - r.value) / 2).Truncate(time.Millisecond), 0)
		if idle {
			excess := r.value - floor
			half := (excess / 2).Truncate(time.Millisecond)
			if half == 0 {
				half = excess // under 2ms above the floor: the rest of it
			}
			fall = max(fall, half)
		}
		r.value = max(r.value-fall, floor)
	case spare < r.value:
		rise := r.value - spare
		if spare < floor {
			rise += floor - spare
		}
		r.value += min(rise, capacity-r.value)
	}
	return r.value
}

// lengthy says whether r is a lengthy unit of the reserve: expected to cost at least the
// quick cutoff, or not measured yet (an unknown unit is not known to be quick).
func (c *ReserveConfig) lengthy(r *Request) bool {
	return c.Floor > 0 && (r.Cost >= c.QuickCutoff || r.Unmeasured)
}

// paced says whether the lengthy lane's starts are paced.
func (c *ReserveConfig) paced() bool {
	return c.Floor > 0 && (c.LaneRate > 0 || c.QuickWaitTarget > 0)
}

// clampReserve bounds a reserve to [floor, capacity]; a floor is never above the capacity
// (Config.Validate).
func clampReserve(v, floor, capacity time.Duration) time.Duration {
	return min(max(v, floor), capacity)
}
