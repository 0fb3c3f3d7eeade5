package admission

import "time"

// reserve is the share of capacity kept for quick units (the template servers' t_reserve,
// in milliseconds of capacity instead of threads). It is moved once per second from the
// spare capacity measured then: when the spare falls under it, it rises at once by the
// difference plus however far the spare fell under the floor; when the spare is above it,
// it falls by half the difference, never under the floor.
type reserve struct {
	value time.Duration
	last  time.Time // of the last update; zero before the first
}

// update moves the reserve for the spare capacity measured at now, at most once a second,
// and returns it. Amounts are whole milliseconds.
func (r *reserve) update(floor, spare time.Duration, now time.Time) time.Duration {
	if r.value < floor {
		r.value = floor
	}
	if !r.last.IsZero() && now.Sub(r.last) < time.Second {
		return r.value
	}
	r.last = now
	spare = spare.Truncate(time.Millisecond)
	switch {
	case spare < r.value:
		r.value += r.value - spare
		if spare < floor {
			r.value += floor - spare
		}
	case spare > r.value:
		r.value -= ((spare - r.value) / 2).Truncate(time.Millisecond)
		if r.value < floor {
			r.value = floor
		}
	}
	return r.value
}
