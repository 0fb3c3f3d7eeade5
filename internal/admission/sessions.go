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

	// Adaptive B: response times of all units and of those served under each B.
	all       hist
	perB      map[int]*hist
	completed int
	aborted   int
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
// AWAIT's adaptive policy does: up when both p95s meet the SLO and accepted sessions were
// aborted, down when both miss it.
func (g *gate) complete(c *SessionConfig, rt time.Duration) {
	if c.SLO <= 0 {
		return
	}
	g.all.add(rt)
	if g.perB == nil {
		g.perB = map[int]*hist{}
	}
	h := g.perB[g.b]
	if h == nil {
		h = &hist{}
		g.perB[g.b] = h
	}
	h.add(rt)
	g.completed++
	if g.completed < c.AdaptEvery {
		return
	}
	all, cur := g.all.quantile(0.95), h.quantile(0.95)
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
