package admission

import (
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// TokenBucket lets through Rate units a second on average and Burst at once.
type TokenBucket struct {
	Rate, Burst float64
	tokens      float64
	last        time.Time
}

// NewTokenBucket returns a full bucket.
func NewTokenBucket(rate, burst float64, now time.Time) TokenBucket {
	return TokenBucket{Rate: rate, Burst: burst, tokens: burst, last: now}
}

func (b *TokenBucket) refill(now time.Time) {
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = min(b.Burst, b.tokens+dt*b.Rate)
		b.last = now
	}
}

// Allow takes a token if there is one.
func (b *TokenBucket) Allow(now time.Time) bool {
	b.refill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Rule is one policer: a token bucket on the units that match it, with an optional
// feedback controller that moves its rate towards a target value of a signal (the
// adaptive inbound controls: P on a utilization, PD on a queue length).
type Rule struct {
	Name string
	// Match: empty fields match anything; Client is a CIDR block (an IP is a /32 or /128).
	Type, User, Schema string
	Client             netip.Prefix
	Rate, Burst        float64
	MinRate, MaxRate   float64 // MaxRate 0: no bound
	// Controller is "" (static), "p" or "pd"; Signal names the value Adapt is given.
	Controller, Signal string
	Target, Kp, Kd     float64
}

// Policed is what a rule matches a unit on.
type Policed struct {
	Type, User, Schema string
	Client             netip.Addr
}

func (r *Rule) matches(p *Policed) bool {
	return (r.Type == "" || r.Type == p.Type) && (r.User == "" || r.User == p.User) &&
		(r.Schema == "" || r.Schema == p.Schema) && (!r.Client.IsValid() || r.Client.Contains(p.Client))
}

type policer struct {
	Rule
	bucket TokenBucket
	// hits counts units that matched since the last adaptation; prev is the signal then.
	hits             uint64
	prev             float64
	havePrev         bool
	allowed, refused uint64
}

// Policers is a set of rules. A unit must find a token in every rule it matches.
type Policers struct {
	mu   sync.Mutex
	list []*policer
	last time.Time // of the last adaptation
}

// NewPolicers returns the policers of rules, with full buckets.
func NewPolicers(rules []Rule, now time.Time) (*Policers, error) {
	p := &Policers{last: now}
	for _, r := range rules {
		if r.Burst < 1 {
			return nil, fmt.Errorf("policer %q: burst must be at least 1", r.Name)
		}
		if r.Controller != "" && r.Controller != "p" && r.Controller != "pd" {
			return nil, fmt.Errorf("policer %q: controller must be p or pd, not %q", r.Name, r.Controller)
		}
		p.list = append(p.list, &policer{Rule: r, bucket: NewTokenBucket(r.Rate, r.Burst, now)})
	}
	return p, nil
}

// Len returns the number of rules.
func (p *Policers) Len() int { return len(p.list) }

// Allow says whether the unit may go on, and if not which rule refused it. Tokens are
// taken only when every matching rule has one.
func (p *Policers) Allow(u *Policed, now time.Time) (refusedBy string, ok bool) {
	if len(p.list) == 0 {
		return "", true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.list {
		if !r.matches(u) {
			continue
		}
		r.hits++
		r.bucket.refill(now)
		if r.bucket.tokens < 1 {
			r.refused++
			return r.Name, false
		}
	}
	for _, r := range p.list {
		if r.matches(u) {
			r.bucket.tokens--
			r.allowed++
		}
	}
	return "", true
}

// Adapt moves the rate of every rule with a controller, given the current value of each
// signal by name. A P controller adds Kp times (Target - signal); a PD controller adds as
// well Kd times the fall of the signal since the last adaptation. A rate is never raised
// while the rule goes unused: the units it matched since the last adaptation must reach
// 90% of what its rate let through (P), or the signal must have moved (PD). Rates stay
// within [MinRate, MaxRate].
func (p *Policers) Adapt(signals map[string]float64, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	dt := now.Sub(p.last).Seconds()
	p.last = now
	for _, r := range p.list {
		hits := r.hits
		r.hits = 0
		v, ok := signals[r.Signal]
		if r.Controller == "" || !ok || dt <= 0 {
			continue
		}
		e := r.Target - v
		delta := r.Kp * e
		used := float64(hits) >= 0.9*r.bucket.Rate*dt
		if r.Controller == "pd" {
			if r.havePrev {
				delta += r.Kd * (r.prev - v)
			}
			used = !r.havePrev || v != r.prev
			r.prev, r.havePrev = v, true
		}
		if delta > 0 && !used {
			continue
		}
		rate := max(r.bucket.Rate+delta, r.MinRate)
		if r.MaxRate > 0 {
			rate = min(rate, r.MaxRate)
		}
		r.bucket.refill(now)
		r.bucket.Rate = rate
	}
}

// PolicerState is one rule's state, for metrics and the admin API.
type PolicerState struct {
	Name             string
	Rate             float64
	Allowed, Refused uint64
}

// States returns the state of every rule.
func (p *Policers) States() []PolicerState {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]PolicerState, len(p.list))
	for i, r := range p.list {
		out[i] = PolicerState{Name: r.Name, Rate: r.bucket.Rate, Allowed: r.allowed, Refused: r.refused}
	}
	return out
}

// Signals the proxy feeds the controllers.
const (
	SignalInflight       = "inflight"        // load over capacity, in percent
	SignalQueue          = "queue"           // units waiting
	SignalThreadsRunning = "threads_running" // the primary's Threads_running
)

// Signals returns the controller's own signals: inflight (percent) and queue.
func (c *Controller) Signals() map[string]float64 {
	s := c.Snapshot()
	return map[string]float64{
		SignalInflight: 100 * s.Load.Seconds() / s.Capacity.Seconds(),
		SignalQueue:    float64(s.Queued + s.Blocked),
	}
}
