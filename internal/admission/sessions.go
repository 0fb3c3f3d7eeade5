package admission

import (
	"math"
	"time"
)

// gate is AWAIT's session gate: the count of active units (admitted past the gate:
// waiting for capacity or running), whether new sessions are let in, and the blocking
// queue's capacity B with its adaptation.
type gate struct {
	active   int
	admitNew bool
	overload bool
	b        int

	// Adaptive B: the response times of the last adaptWindow periods of AdaptEvery
	// completions, window[cur] being the current one's.
	window    [adaptWindow]period
	cur       int
	completed int
	aborted   int
}

// adaptWindow is how many periods of AdaptEvery completions the adaptive B looks back on.
// Its p95s are those of recent units, so that an overload ages out of them within as many
// periods once it has passed: over all units since the start, a long overload would hold the
// p95 past the SLO, and B down, long after it ended.
const adaptWindow = 4

// period is the response times of the units that completed in one period, and the B they
// were served under.
type period struct {
	hist
	b int
}

// gateVerdict is what the gate does with an arriving unit.
type gateVerdict uint8

const (
	gatePass gateVerdict = iota
	gateBlock
	gateRefuseNew
	gateRefuseAccepted
)

func (g *gate) init(c SessionConfig) {
	g.admitNew = true
	g.b = c.BlockingQueue
}

// arrive decides for a unit of a new or an accepted session, with blocked units already in
// the blocking queue.
func (g *gate) arrive(c *SessionConfig, accepted bool, blocked int) gateVerdict {
	switch {
	case g.admitNew && g.active < c.ActiveLimit:
		g.active++
		if g.active >= c.ActiveLimit {
			g.admitNew = false
		}
		return gatePass
	case !accepted:
		return gateRefuseNew
	case g.active < c.ActiveLimit && blocked == 0:
		// Room while new sessions are held out (the aggressive variant's overload):
		// accepted sessions use it.
		g.active++
		return gatePass
	case blocked < g.b:
		return gateBlock
	}
	g.aborted++
	if c.Aggressive {
		g.overload = true
		g.admitNew = false
	}
	return gateRefuseAccepted
}

// leave gives back the active slot of a unit that left the system, unless a blocked unit
// takes it over (then it returns true and the caller moves that unit in).
func (g *gate) leave(c *SessionConfig, blocked int) (handOver bool) {
	if blocked > 0 {
		return true
	}
	g.active--
	if g.active < c.ActiveLimit && !g.overload {
		g.admitNew = true
	}
	if g.active <= 0 {
		g.active = 0
		g.overload = false
		g.admitNew = true
	}
	return false
}

// complete records a unit's response time and, every AdaptEvery completions, moves B as
// AWAIT's adaptive policy does, from the p95 response time of the units of the last
// adaptWindow periods and of those of them served under the current B: up when both meet the
// SLO and accepted sessions were aborted, down when both miss it.
func (g *gate) complete(c *SessionConfig, rt time.Duration) {
	if c.SLO <= 0 {
		return
	}
	p := &g.window[g.cur]
	if p.n > 0 && p.b != g.b {
		// B was set anew by a reload within the period: its units go in a period of their own.
		p = g.rotate()
	}
	p.b = g.b
	p.add(rt)
	g.completed++
	if g.completed < c.AdaptEvery {
		return
	}
	all, cur := g.p95s()
	maxB := c.MaxBlockingQueue
	if maxB <= 0 {
		maxB = 120
	}
	switch {
	case all < c.SLO && cur < c.SLO && g.aborted > 0:
		g.b = min(g.b+bStep(g.b), maxB)
	case all > c.SLO && cur > c.SLO:
		g.b = max(g.b-bStep(g.b-1), 1)
	}
	g.completed, g.aborted = 0, 0
	g.rotate()
}

// rotate starts a new period in the place of the oldest one.
func (g *gate) rotate() *period {
	g.cur = (g.cur + 1) % adaptWindow
	p := &g.window[g.cur]
	*p = period{}
	return p
}

// p95s returns the p95 response time of the units of the window, and of those of them
// served under the current B.
func (g *gate) p95s() (all, cur time.Duration) {
	var a, b hist
	for i := range g.window {
		p := &g.window[i]
		a.merge(&p.hist)
		if p.b == g.b {
			b.merge(&p.hist)
		}
	}
	return a.quantile(0.95), b.quantile(0.95)
}

// bStep is the change of B from b: 5 below 20, 20 from there on.
func bStep(b int) int {
	if b < 20 {
		return 5
	}
	return 20
}

// hist is a histogram of durations in buckets 10% wide from 10µs up, for p95s.
type hist struct {
	counts [histBuckets]uint64
	n      uint64
}

const (
	histBuckets = 200
	histMin     = 10 * time.Microsecond
)

var histLogBase = math.Log(1.1)

func histBucket(d time.Duration) int {
	if d <= histMin {
		return 0
	}
	i := int(math.Log(float64(d)/float64(histMin))/histLogBase) + 1
	return min(i, histBuckets-1)
}

// histUpper is the upper bound of bucket i.
func histUpper(i int) time.Duration {
	return time.Duration(float64(histMin) * math.Pow(1.1, float64(i)))
}

func (h *hist) add(d time.Duration) {
	h.counts[histBucket(d)]++
	h.n++
}

// merge adds o's counts to h.
func (h *hist) merge(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// quantile returns the upper bound of the bucket holding quantile q, or 0 when empty.
func (h *hist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return histUpper(i)
		}
	}
	return histUpper(histBuckets - 1)
}
