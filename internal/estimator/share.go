package estimator

import (
	"sync"
	"sync/atomic"
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
// With cpus 0, Start and Stop only read the time; otherwise they take one short lock, the
// clock being shared by every session of a backend. A request running when cpus changes
// from 0 is charged its busy time and is not counted among those sharing.
type Share struct {
	// cpus is read without the lock, so that with 0 nothing is written per request.
	cpus  atomic.Int64
	epoch time.Time
	mu    sync.Mutex
	last  time.Duration // when n or the clock last changed, since epoch
	clock time.Duration // the work clock at last
	n     int64         // requests running and counted
}

// A Reading is where a request started, for Stop.
type Reading struct {
	at time.Duration
	// counted says the request runs on the work clock; otherwise at is its start since the
	// epoch, and its work is its busy time.
	counted bool
}

// NewShare returns a work clock for a backend with cpus processors; 0 charges busy time.
func NewShare(cpus int, now time.Time) *Share {
	s := &Share{epoch: now}
	s.cpus.Store(int64(max(cpus, 0)))
	return s
}

// SetCPUs changes the processors the clock shares out from now on; 0 charges busy time.
func (s *Share) SetCPUs(cpus int, now time.Time) {
	s.mu.Lock()
	s.advance(now)
	s.cpus.Store(int64(max(cpus, 0)))
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
	if cpus := s.cpus.Load(); cpus > 0 && s.n > cpus {
		dt = time.Duration(int64(dt) * cpus / s.n)
	}
	s.clock += dt
}

// Start records that a request starts running at now and returns the reading to give to
// Stop.
func (s *Share) Start(now time.Time) Reading {
	if s.cpus.Load() == 0 {
		return Reading{at: now.Sub(s.epoch)}
	}
	s.mu.Lock()
	s.advance(now)
	s.n++
	c := s.clock
	s.mu.Unlock()
	return Reading{at: c, counted: true}
}

// Stop records that the request started at reading start ends at now, and returns its work.
func (s *Share) Stop(now time.Time, start Reading) time.Duration {
	if !start.counted {
		return now.Sub(s.epoch) - start.at
	}
	s.mu.Lock()
	s.advance(now)
	s.n--
	c := s.clock
	s.mu.Unlock()
	return c - start.at
}
