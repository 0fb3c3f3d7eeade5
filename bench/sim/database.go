package sim

import (
	"fmt"
	"math"
	"time"
)

// DatabaseConfig is the model database.
type DatabaseConfig struct {
	// Cores is K: the number of requests served at full speed at once.
	Cores int
	// Knee is the number of running requests past which the database thrashes.
	Knee int
	// Penalty is how fast it thrashes: each running request past the knee slows every
	// request down by this fraction of its speed at the knee.
	Penalty float64
	// Changes change the database's speed during a run, in order of time: from At on,
	// every request is served Speed times as fast (0.5: it lost half its processors).
	Changes []SpeedChange
}

// SpeedChange is a step in the database's speed.
type SpeedChange struct {
	At    time.Duration
	Speed float64
}

// Validate reports the first setting that cannot work.
func (c DatabaseConfig) Validate() error {
	switch {
	case c.Cores < 1:
		return fmt.Errorf("database: cores must be at least 1 (got %d)", c.Cores)
	case c.Knee < 0:
		return fmt.Errorf("database: knee must be 0 or positive (got %d)", c.Knee)
	case c.Penalty < 0:
		return fmt.Errorf("database: penalty must be 0 or positive (got %g)", c.Penalty)
	}
	for i, ch := range c.Changes {
		if ch.Speed <= 0 || ch.At < 0 || i > 0 && ch.At < c.Changes[i-1].At {
			return fmt.Errorf("database: change %d: speed must be positive and changes in order of time (got %g at %s)", i, ch.Speed, ch.At)
		}
	}
	return nil
}

// Rate is the speed at which each of n running requests is served, in seconds of demand
// per second:
//
//	rate(n) = min(1, K/n) / (1 + Penalty * max(0, n-Knee))
//
// so the work done per second, n*rate(n) = min(n, K) / (1 + Penalty*max(0, n-Knee)), is K
// from K to Knee running requests and falls as 1/(1+Penalty*excess) past the knee.
func (c DatabaseConfig) Rate(n int) float64 {
	if n <= 0 {
		return 0
	}
	r := 1.0
	if n > c.Cores {
		r = float64(c.Cores) / float64(n)
	}
	if excess := n - c.Knee; excess > 0 {
		r /= 1 + c.Penalty*float64(excess)
	}
	return r
}

// Database serves requests by processor sharing: all running requests progress at the same
// rate, DatabaseConfig.Rate of their number. It keeps the service every running request has
// received (the same for all, since they share equally) as one number, attained, and each
// request finishes when attained reaches the value it had at the request's start plus its
// demand; so a start or a finish costs O(log n).
type Database struct {
	cfg   DatabaseConfig
	speed float64
	// attained is the service each running request received since the database was
	// last empty, in seconds; it is brought up to date at last.
	attained float64
	last     time.Duration
	jobs     jobHeap
}

// NewDatabase returns an empty database.
func NewDatabase(cfg DatabaseConfig) *Database { return &Database{cfg: cfg, speed: 1} }

// rate is the speed of each of n running requests now.
func (d *Database) rate(n int) float64 { return d.speed * d.cfg.Rate(n) }

// SetSpeed makes the database serve speed times as fast from now on.
func (d *Database) SetSpeed(speed float64, now time.Duration) {
	d.advance(now)
	d.speed = speed
}

// Running returns the number of requests being served.
func (d *Database) Running() int { return len(d.jobs) }

// advance brings attained up to now.
func (d *Database) advance(now time.Duration) {
	if n := len(d.jobs); n > 0 {
		d.attained += d.rate(n) * (now - d.last).Seconds()
	}
	d.last = now
}

// Start begins serving r, which needs demand seconds of service, at now.
func (d *Database) Start(r *request, demand float64, now time.Duration) {
	d.advance(now)
	if len(d.jobs) == 0 {
		d.attained = 0 // keeps the numbers small, and so exact
	}
	r.finish = d.attained + demand
	d.jobs.push(r)
}

// Next returns when the next request finishes, if any runs.
func (d *Database) Next() (time.Duration, bool) {
	if len(d.jobs) == 0 {
		return 0, false
	}
	left := max(d.jobs[0].finish-d.attained, 0)
	// Round up, so that at the returned time the request has its whole demand.
	return d.last + time.Duration(math.Ceil(left/d.rate(len(d.jobs))*1e9)), true
}

// finishSlack absorbs rounding: a request this close to its demand is done.
const finishSlack = 1e-9

// Finish takes out, into done, the requests that have their whole demand at now.
func (d *Database) Finish(now time.Duration, done []*request) []*request {
	d.advance(now)
	for len(d.jobs) > 0 && d.jobs[0].finish <= d.attained+finishSlack {
		r := d.jobs.pop()
		// The rest of the requests share among fewer from here on; the service counted
		// is the finished one's, not a rounding past it.
		d.attained = max(d.attained, r.finish)
		done = append(done, r)
	}
	return done
}

// jobHeap is a min-heap of running requests by finish.
type jobHeap []*request

func (h *jobHeap) push(r *request) {
	*h = append(*h, r)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].before(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *jobHeap) pop() *request {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = nil
	s = s[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(s) {
			break
		}
		m := l
		if r := l + 1; r < len(s) && s[r].before(s[l]) {
			m = r
		}
		if !s[m].before(s[i]) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
