package estimator

import (
	"sync"
	"time"
)

// Share measures the work a request does on a backend with a known number of processors,
// as opposed to the time it takes there. A request's busy time grows with the requests it
// shares the processors with: on two processors, a query that runs 30 ms alone takes about
// 90 ms among six others. Charged that busy time, a type costs more the more admission lets
// run at once, and a capacity in milliseconds fits fewer units of it the larger it is set.
//
// Share keeps a work clock that advances at min(1, cpus/n) of real time while n requests
// run, the rate each of them gets from processor sharing; a request's work is how far the
// clock moved while it ran. With cpus 0 the clock keeps real time and the work is the busy
// time. Requests that wait on something other than the processors (locks, disk) are
// charged less than their busy time while many run; the capacity is calibrated in the same
// measure, so what matters is that a type's cost no longer depends on the concurrency.
//
// Start and Stop take one short lock; the clock is shared by every session of a backend.
type Share struct {
	mu    sync.Mutex
	cpus  int64
	epoch time.Time
	last  time.Duration // when n or the clock last changed, since epoch
	clock time.Duration // the work clock at last
	n     int64         // requests running
}

// NewShare returns a work clock for a backend with cpus processors; 0 charges busy time.
func NewShare(cpus int, now time.Time) *Share {
	return &Share{cpus: int64(max(cpus, 0)), epoch: now}
}

// SetCPUs changes the processors the clock shares out from now on; 0 charges busy time.
func (s *Share) SetCPUs(cpus int, now time.Time) {
	s.mu.Lock()
	s.advance(now)
	s.cpus = int64(max(cpus, 0))
	s.mu.Unlock()
}

// advance moves the clock to now; s.mu is held.
func (s *Share) advance(now time.Time) {
	t := now.Sub(s.epoch)
	dt := t - s.last
	if dt <= 0 {
		return
	}
	s.last = t
	if s.cpus > 0 && s.n > s.cpus {
		dt = time.Duration(int64(dt) * s.cpus / s.n)
	}
	s.clock += dt
}

// Start records that a request starts running at now and returns the clock reading to give
// to Stop.
func (s *Share) Start(now time.Time) time.Duration {
	s.mu.Lock()
	s.advance(now)
	s.n++
	c := s.clock
	s.mu.Unlock()
	return c
}

// Stop records that the request started at reading start ends at now, and returns its work.
func (s *Share) Stop(now time.Time, start time.Duration) time.Duration {
	s.mu.Lock()
	s.advance(now)
	s.n--
	c := s.clock
	s.mu.Unlock()
	return c - start
}
