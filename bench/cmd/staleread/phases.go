package main

import (
	"sync"
	"time"
)

// phases is which arm (a proxy the clients go through) the clients use now, when a run
// compares several: they take turns, a phase each. Every operation runs inside one phase: a
// switch waits until the operations in flight have ended and holds new ones back until the
// next phase begins, so that no operation of one arm overlaps one of the next. A run that
// compares arms ends at a switch, once every arm has had its reads (close).
type phases struct {
	// mu is the barrier: an operation holds it shared from before it picks its arm until
	// it has been judged; a switch holds it alone, across its settle step on purpose.
	mu sync.RWMutex
	// cur is the arm of the phase now; since is when that phase began; active sums each
	// arm's phases and turns counts them.
	cur    int
	since  time.Time
	active []time.Duration
	turns  []int
	// closed is set when the run ends: no operation starts after it.
	closed bool
	now    func() time.Time
}

// newPhases returns the phases of arms arms, the first arm's beginning at now().
func newPhases(arms int, now func() time.Time) *phases {
	p := &phases{active: make([]time.Duration, arms), turns: make([]int, arms), now: now}
	p.begin()
	return p
}

// begin starts the current arm's phase at now(); mu is held alone or not yet shared.
func (p *phases) begin() {
	p.since = p.now()
	p.turns[p.cur]++
}

// enter returns the arm an operation runs on, once no switch is under way, and false when
// the run has ended; either way the caller calls leave when it is done.
func (p *phases) enter() (arm int, open bool) {
	p.mu.RLock()
	return p.cur, !p.closed
}

// leave ends an operation that enter began.
func (p *phases) leave() { p.mu.RUnlock() }

// next waits until no operation is in flight, runs settle while none can start (nil: none),
// then begins the next arm's phase.
func (p *phases) next(settle func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active[p.cur] += p.now().Sub(p.since)
	if settle != nil {
		settle()
	}
	p.cur = (p.cur + 1) % len(p.active)
	p.begin()
}

// close waits until no operation is in flight and ends the run: every enter after it
// reports it closed.
func (p *phases) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
}

// end closes the current phase and returns how long each arm's phases lasted and how many
// each had.
func (p *phases) end() (active []time.Duration, turns []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active[p.cur] += p.now().Sub(p.since)
	p.since = p.now()
	return append([]time.Duration(nil), p.active...), append([]int(nil), p.turns...)
}
