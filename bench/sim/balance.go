package sim

import (
	"fmt"
	"strings"
	"time"
)

// Balance is a policy that picks the backend a read runs on, after Amza, Cox and
// Zwaenepoel's conflict-aware replica scheduling (section 5). The zero value is SELF.
type Balance uint8

const (
	// BalanceSELF (shortest execution length first) sends a read to the backend with the
	// least estimated work outstanding: the sum of the estimated costs of the requests
	// sent to it and not yet answered.
	BalanceSELF Balance = iota
	// BalanceLARD (locality-aware request distribution) gives each request type a backend
	// and keeps sending the type there; it moves the type to the least loaded backend
	// (by estimated work outstanding) when its backend is over a high threshold while
	// another is under a low one, or is over twice the high threshold.
	BalanceLARD
	// BalanceSQF (shortest queue first) sends a read to the backend with the fewest
	// requests outstanding.
	BalanceSQF
	// BalanceRR sends reads to the backends in turn.
	BalanceRR
)

// Balances are the policies, in the order the experiment reports them.
var Balances = []Balance{BalanceSELF, BalanceLARD, BalanceSQF, BalanceRR}

var balanceNames = [...]string{BalanceSELF: "self", BalanceLARD: "lard", BalanceSQF: "sqf", BalanceRR: "rr"}

func (b Balance) String() string {
	if int(b) < len(balanceNames) {
		return balanceNames[b]
	}
	return fmt.Sprintf("Balance(%d)", uint8(b))
}

// ParseBalance returns the policy named name: self, lard, sqf or rr.
func ParseBalance(name string) (Balance, error) {
	for b, n := range balanceNames {
		if strings.EqualFold(name, n) {
			return Balance(b), nil
		}
	}
	return 0, fmt.Errorf("balance: unknown policy %q (want one of %s)", name, strings.Join(balanceNames[:], ", "))
}

// load is what the proxy knows of a backend: the requests it sent there that have not
// been answered, and the sum of their estimated costs.
type load struct {
	requests int
	work     time.Duration
}

// picker picks, for a read of a class, one of the backends that may take it, by its index
// in loads. The backends that may take reads, and so the length of loads, stay the same
// for a picker's life.
type picker interface {
	pick(class int, loads []load) int
}

var (
	_ picker = (*leastWork)(nil)
	_ picker = (*lard)(nil)
	_ picker = (*fewestRequests)(nil)
	_ picker = (*roundRobin)(nil)
)

// newPicker returns policy b's picker for a mix of classes.
func newPicker(b Balance, classes int, low, high time.Duration) picker {
	switch b {
	case BalanceLARD:
		return newLARD(classes, low, high)
	case BalanceSQF:
		return &fewestRequests{}
	case BalanceRR:
		return &roundRobin{}
	}
	return &leastWork{}
}

// ties breaks ties among equally loaded backends in turn: the scan for the least starts
// after the backend last picked, so that idle backends share the work instead of the first
// of them taking it all.
type ties struct{ next int }

// least returns the index in [0, n) of the smallest key, the first from t.next on (going
// round) among equals, and moves t.next past it.
func (t *ties) least(n int, key func(int) int64) int {
	best := t.next % n
	for k := 1; k < n; k++ {
		i := (t.next + k) % n
		if key(i) < key(best) {
			best = i
		}
	}
	t.next = best + 1
	return best
}

// leastWork is SELF.
type leastWork struct{ ties }

func (p *leastWork) pick(_ int, loads []load) int {
	return p.least(len(loads), func(i int) int64 { return int64(loads[i].work) })
}

// fewestRequests is SQF.
type fewestRequests struct{ ties }

func (p *fewestRequests) pick(_ int, loads []load) int {
	return p.least(len(loads), func(i int) int64 { return int64(loads[i].requests) })
}

// roundRobin is RR.
type roundRobin struct{ next int }

func (p *roundRobin) pick(_ int, loads []load) int {
	i := p.next % len(loads)
	p.next = i + 1
	return i
}

// lard is LARD, with request types for the paper's table sets: a type's backend plays the
// part of the backends that recently ran queries on the same tables.
type lard struct {
	ties
	low, high time.Duration
	// home is each class's backend plus one; zero: none yet.
	home []int
}

func newLARD(classes int, low, high time.Duration) *lard {
	return &lard{low: low, high: high, home: make([]int, classes)}
}

func (p *lard) pick(class int, loads []load) int {
	work := func(i int) int64 { return int64(loads[i].work) }
	h := p.home[class] - 1
	if h < 0 || h >= len(loads) {
		h = p.least(len(loads), work)
		p.home[class] = h + 1
		return h
	}
	if w := loads[h].work; w > p.high && p.anyUnder(loads) || w >= 2*p.high {
		if m := p.least(len(loads), work); loads[m].work < w {
			h = m
			p.home[class] = h + 1
		}
	}
	return h
}

// anyUnder says whether some backend's load is under the low threshold.
func (p *lard) anyUnder(loads []load) bool {
	for _, l := range loads {
		if l.work < p.low {
			return true
		}
	}
	return false
}
