package cache

import "fmt"

// Policy is how the store picks what to evict.
type Policy uint8

const (
	// CostAware is GreedyDual-Size-Frequency: an entry's priority is
	// L + frequency × cost / size, the lowest goes first, and L rises to the priority of
	// each entry evicted. It keeps what saves the most database time per byte.
	CostAware Policy = iota
	// LRU evicts the entry least recently put or hit, for comparison.
	LRU
)

// policyNames are the configuration spellings of the policies, by value.
var policyNames = [...]string{CostAware: "cost_aware", LRU: "lru"}

// ParsePolicy reads a policy's configuration spelling: "cost_aware" or "lru".
func ParsePolicy(s string) (Policy, error) {
	for p, name := range policyNames {
		if s == name {
			return Policy(p), nil
		}
	}
	return 0, fmt.Errorf("cache: unknown eviction policy %q: want cost_aware or lru", s)
}

// String returns the policy's configuration spelling.
func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}
