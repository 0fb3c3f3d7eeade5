package rules

import (
	"fmt"
	"regexp"
	"testing"
)

// benchSet is twenty rules of every kind, most of which do not match the statement, and
// two digest expressions that are evaluated for it.
func benchSet(b testing.TB) *Set {
	rules := []Rule{
		{Name: "no-batch", Match: Match{User: "batch"}, Deny: "batch jobs run at night"},
		{Name: "reports", Match: Match{Type: "best_sellers"}, Cache: CacheOn, MaxConcurrent: 4},
		{Name: "orders-primary", Match: Match{Table: "shop.orders", Digest: regexp.MustCompile(`FOR UPDATE$`)}, Route: RoutePrimary},
		{Name: "selects", Match: Match{Digest: regexp.MustCompile(`^SELECT .* FROM orders`)}, Consistency: "session"},
	}
	for i := range 16 {
		rules = append(rules, Rule{Name: fmt.Sprint("t", i), Match: Match{Table: fmt.Sprint("t", i)}, Cache: CacheOff})
	}
	return mustCompile(b, rules...)
}

// TestApplyAllocs keeps the hot path at zero allocations. Rules without a digest
// expression are checked always; with one, only without the race detector, under which
// sync.Pool drops some of regexp's matchers and they are allocated again.
func TestApplyAllocs(t *testing.T) {
	st := stmt()
	plain := mustCompile(t,
		Rule{Name: "reports", Match: Match{Type: "best_sellers", Schema: "shop"}, Cache: CacheOn, MaxConcurrent: 4},
		Rule{Name: "orders", Match: Match{Table: "orders"}, Route: RoutePrimary},
		Rule{Name: "no-batch", Match: Match{User: "batch"}, Deny: "no"},
	)
	var v Verdict
	if allocs := testing.AllocsPerRun(1000, func() { plain.Apply(st, &v) }); allocs != 0 {
		t.Errorf("Apply without digest expressions allocates %v times per statement", allocs)
	}
	if v.CacheRule == nil || v.RouteRule == nil || v.Limit == nil {
		t.Errorf("verdict %+v", v)
	}
	if raceEnabled {
		return
	}
	s := benchSet(t)
	if allocs := testing.AllocsPerRun(1000, func() { s.Apply(st, &v) }); allocs != 0 {
		t.Errorf("Apply allocates %v times per statement", allocs)
	}
	if v.CacheRule == nil || v.ConsistencyRule == nil || v.RouteRule != nil {
		t.Errorf("verdict %+v", v)
	}
}

func BenchmarkApply(b *testing.B) {
	s, st := benchSet(b), stmt()
	b.ReportAllocs()
	var v Verdict
	for b.Loop() {
		s.Apply(st, &v)
	}
}

// BenchmarkApplyParallel shows what the shared match counters cost across processors.
func BenchmarkApplyParallel(b *testing.B) {
	s, st := benchSet(b), stmt()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var v Verdict
		for pb.Next() {
			s.Apply(st, &v)
		}
	})
}
