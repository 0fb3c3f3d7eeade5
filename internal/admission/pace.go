package admission

import "time"

// Pacing of the lengthy lane. The lane bounds how many lengthy units run inside the reserve
// at once, but not how often they start: past saturation a lane that is never empty starts
// lengthy units as fast as they finish, and every one that finishes sends its client back
// to the quick units' queue. pace bounds the lane's start rate instead and moves it once a
// second, from the quick units' mean wait in that second, towards the target: down by a
// tenth (from the starts it saw, when fewer) while they waited longer; up by a tenth while
// they did not and a lengthy unit was kept out for want of a start, never while the rate
// goes unused (the adaptive inbound controls' guard). Pacing must not turn waits into
// refusals: whatever the rate, the lane starts the parked units at least fast enough to
// start them all within half the queue timeout.
const (
	paceDown     = 0.9
	paceUp       = 1.1
	paceMinStep  = 0.5 // starts a second: the least a raise adds
	paceMinRate  = 1.0 // starts a second: the lane is never shut
	paceInterval = time.Second
)

type pace struct {
	// rate is the lane's starts a second: reserve.lane_rate at first, then moved by the
	// target; 0 while it is not paced.
	rate float64
	// bucket holds the starts due, one at most; its rate is set at each start asked for.
	bucket TokenBucket

	// meanWait is the quick units' mean wait in the last window.
	meanWait time.Duration

	// The current window.
	since   time.Time
	waited  time.Duration // by the quick units admitted in it
	quick   int
	starts  int
	starved bool // a lengthy unit was kept out of the lane for want of a start
}

// reset starts the pace again at rate (0: not paced until the quick units wait).
func (p *pace) reset(rate float64, now time.Time) {
	*p = pace{rate: rate, bucket: NewTokenBucket(rate, 1, now)}
}

// allow says whether a lengthy unit may start in the lane at now, at least at the rate
// floor.
func (p *pace) allow(now time.Time, floor float64) bool {
	if p.rate == 0 {
		return true
	}
	p.bucket.Rate = max(p.rate, floor)
	p.bucket.refill(now)
	if p.bucket.tokens < 1 {
		p.starved = true
		return false
	}
	return true
}

// started counts a lengthy unit started in the lane.
func (p *pace) started() {
	p.starts++
	if p.rate > 0 {
		p.bucket.tokens--
	}
}

// quickAdmitted counts a quick unit admitted after waiting w.
func (p *pace) quickAdmitted(w time.Duration) {
	p.quick++
	p.waited += w
}

// adapt moves the rate towards target at now, once a window has passed.
func (p *pace) adapt(target time.Duration, now time.Time) {
	if p.since.IsZero() {
		p.since = now
		return
	}
	secs := now.Sub(p.since).Seconds()
	if secs < paceInterval.Seconds() {
		return
	}
	var mean time.Duration
	if p.quick > 0 {
		mean = p.waited / time.Duration(p.quick)
	}
	p.meanWait = mean
	seen := float64(p.starts) / secs
	switch {
	case mean > target && p.starts > 0:
		base := seen
		if p.rate > 0 {
			base = min(base, p.rate)
		} else {
			p.bucket = NewTokenBucket(0, 1, now)
		}
		p.rate = max(paceMinRate, base*paceDown)
	case mean <= target && p.rate > 0 && p.starved:
		p.rate = max(p.rate*paceUp, p.rate+paceMinStep)
	}
	p.since, p.waited, p.quick, p.starts, p.starved = now, 0, 0, 0, false
}
