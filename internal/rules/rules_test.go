package rules

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// stmt is the statement most tests match against.
func stmt() *Statement {
	return &Statement{
		Type:   "best_sellers",
		User:   "app",
		Schema: "Shop",
		Digest: []byte("SELECT i_id FROM orders WHERE o_date > ?"),
		Tables: []string{"shop.orders", "shop.item"},
	}
}

func mustCompile(t testing.TB, rules ...Rule) *Set {
	t.Helper()
	s, _, err := Compile(rules)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMatch(t *testing.T) {
	re := regexp.MustCompile
	tests := []struct {
		name  string
		match Match
		want  bool
	}{
		{"empty matches all", Match{}, true},
		{"type", Match{Type: "best_sellers"}, true},
		{"type is exact", Match{Type: "Best_Sellers"}, false},
		{"other type", Match{Type: "new_products"}, false},
		{"user", Match{User: "app"}, true},
		{"user is case-sensitive", Match{User: "APP"}, false},
		{"schema ignores case", Match{Schema: "shop"}, true},
		{"other schema", Match{Schema: "shop2"}, false},
		{"qualified table", Match{Table: "shop.orders"}, true},
		{"qualified table ignores case", Match{Table: "Shop.Orders"}, true},
		{"table in another schema", Match{Table: "archive.orders"}, false},
		{"bare table in any schema", Match{Table: "item"}, true},
		{"bare table name is whole", Match{Table: "tem"}, false},
		{"schema is not a table", Match{Table: "shop"}, false},
		{"digest", Match{Digest: re(`^SELECT .* FROM orders`)}, true},
		{"digest unanchored", Match{Digest: re(`o_date`)}, true},
		{"digest miss", Match{Digest: re(`^UPDATE`)}, false},
		{"digest case", Match{Digest: re(`^select`)}, false},
		{"digest case folded", Match{Digest: re(`(?i)^select`)}, true},
		{"all hold", Match{Type: "best_sellers", User: "app", Schema: "shop", Table: "orders", Digest: re(`FROM`)}, true},
		{"one fails", Match{Type: "best_sellers", User: "app", Schema: "shop", Table: "orders", Digest: re(`INSERT`)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, Rule{Name: "r", Match: tt.match, Route: RoutePrimary})
			var v Verdict
			s.Apply(stmt(), &v)
			if got := v.RouteRule != nil; got != tt.want {
				t.Errorf("matched = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTablesWithoutSchema(t *testing.T) {
	st := &Statement{Tables: []string{"orders"}}
	for table, want := range map[string]bool{"orders": true, "shop.orders": false} {
		s := mustCompile(t, Rule{Name: "r", Match: Match{Table: table}, Route: RoutePrimary})
		var v Verdict
		s.Apply(st, &v)
		if got := v.RouteRule != nil; got != want {
			t.Errorf("table %q against an unqualified table: matched = %v, want %v", table, got, want)
		}
	}
}

// TestFirstRuleDecides: each action is decided by the first matching rule that sets it;
// later rules decide only what is still open.
func TestFirstRuleDecides(t *testing.T) {
	s := mustCompile(t,
		Rule{Name: "other-type", Match: Match{Type: "new_products"}, Cache: CacheOff},
		Rule{Name: "orders", Match: Match{Table: "orders"}, Cache: CacheOn, TTL: 30 * time.Second, MaxConcurrent: 4},
		Rule{Name: "app", Match: Match{User: "app"}, Cache: CacheOff, Route: RouteReplica},
		Rule{Name: "all", Route: RoutePrimary, Consistency: "eventual", MaxConcurrent: 1},
	)
	var v Verdict
	s.Apply(stmt(), &v)
	checks := []struct {
		name      string
		got, want any
	}{
		{"cache", v.Cache, CacheOn},
		{"ttl", v.TTL, 30 * time.Second},
		{"cache rule", v.CacheRule.Name, "orders"},
		{"route", v.Route, RouteReplica},
		{"route rule", v.RouteRule.Name, "app"},
		{"consistency", v.Consistency, "eventual"},
		{"consistency rule", v.ConsistencyRule.Name, "all"},
		{"limit rule", v.LimitRule.Name, "orders"},
		{"limit", v.Limit.Max(), 4},
		{"not denied", v.Deny == nil, true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	wantCounts := map[string]uint64{"other-type": 0, "orders": 1, "app": 1, "all": 1}
	for _, rs := range s.Snapshot() {
		if rs.Matches != wantCounts[rs.Name] {
			t.Errorf("rule %s matched %d times, want %d", rs.Name, rs.Matches, wantCounts[rs.Name])
		}
	}
}

// TestDenyStops: a deny refuses the statement with nothing else decided, and the rules after
// it are not evaluated; a deny that does not match changes nothing.
func TestDenyStops(t *testing.T) {
	s := mustCompile(t,
		Rule{Name: "route", Route: RoutePrimary},
		Rule{Name: "no-writes", Match: Match{Digest: regexp.MustCompile(`^(UPDATE|DELETE)`)}, Deny: "read only"},
		Rule{Name: "no-reports", Match: Match{Type: "best_sellers"}, Deny: "reports are off"},
		Rule{Name: "after", Cache: CacheOn},
	)
	var v Verdict
	s.Apply(stmt(), &v)
	if v.Deny == nil || v.Deny.Name != "no-reports" || v.Deny.Deny != "reports are off" {
		t.Fatalf("deny = %+v, want no-reports", v.Deny)
	}
	if v.RouteRule != nil || v.CacheRule != nil || v.Limit != nil {
		t.Errorf("a refused statement has other actions: %+v", v)
	}
	other := stmt()
	other.Type = "home"
	s.Apply(other, &v)
	if v.Deny != nil || v.Route != RoutePrimary || v.Cache != CacheOn {
		t.Errorf("a statement no deny matches: %+v", v)
	}
	got := map[string]uint64{}
	for _, rs := range s.Snapshot() {
		got[rs.Name] = rs.Matches
	}
	want := map[string]uint64{"route": 2, "no-writes": 0, "no-reports": 1, "after": 1}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("rule %s matched %d times, want %d", name, got[name], n)
		}
	}
}

// TestApplyResets: a reused Verdict keeps nothing of the statement before.
func TestApplyResets(t *testing.T) {
	s := mustCompile(t, Rule{Name: "orders", Match: Match{Table: "shop.orders"}, Cache: CacheOn, MaxConcurrent: 2})
	var v Verdict
	s.Apply(stmt(), &v)
	if v.CacheRule == nil || v.Limit == nil {
		t.Fatalf("no match: %+v", v)
	}
	s.Apply(&Statement{Tables: []string{"shop.item"}}, &v)
	if v != (Verdict{}) {
		t.Errorf("verdict after a statement no rule matches = %+v, want zero", v)
	}
	var nilSet *Set
	v.Cache = CacheOn
	nilSet.Apply(stmt(), &v)
	if v != (Verdict{}) || nilSet.Len() != 0 || nilSet.Snapshot() != nil {
		t.Errorf("a nil Set decided %+v", v)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name  string
		rules []Rule
		want  string
	}{
		{"no name", []Rule{{Cache: CacheOn}}, "a name is required"},
		{"no action", []Rule{{Name: "a", Match: Match{Type: "x"}}}, "sets no action"},
		{"duplicate", []Rule{{Name: "a", Cache: CacheOn}, {Name: "a", Route: RoutePrimary}}, `rule 1 "a": rule 0 has the same name`},
		{"deny with more", []Rule{{Name: "a", Deny: "no", Cache: CacheOff}}, "deny goes alone"},
		{"ttl without cache on", []Rule{{Name: "a", Cache: CacheOff, TTL: time.Second}}, "needs cache on"},
		{"negative ttl", []Rule{{Name: "a", Cache: CacheOn, TTL: -time.Second}}, "must be positive"},
		{"bad consistency", []Rule{{Name: "a", Consistency: "linear"}}, `consistency "linear" is not one of strong, session, eventual`},
		{"negative limit", []Rule{{Name: "a", MaxConcurrent: -1}}, "at least 1"},
		{"bad route", []Rule{{Name: "a", Route: Route(9)}}, "route Route(9)"},
		{"bad table", []Rule{{Name: "a", Match: Match{Table: "a.b.c"}, Cache: CacheOn}}, `table "a.b.c" is neither schema.table nor table`},
		{"quoted table", []Rule{{Name: "a", Match: Match{Table: "`a`"}, Cache: CacheOn}}, "without quotes"},
		{"empty schema", []Rule{{Name: "a", Match: Match{Table: ".b"}, Cache: CacheOn}}, "is neither schema.table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Compile(tt.rules)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestRuleString(t *testing.T) {
	tests := []struct {
		rule Rule
		want string
	}{
		{Rule{Name: "a", Cache: CacheOn}, "* => cache=on"},
		{Rule{Name: "a", Match: Match{Type: "t", User: "u", Schema: "s", Table: "s.t", Digest: regexp.MustCompile(`^SELECT`)},
			Cache: CacheOn, TTL: 30 * time.Second, Route: RouteReplica, Consistency: "session", MaxConcurrent: 3},
			"type=t user=u schema=s table=s.t digest=/^SELECT/ => cache=30s route=replica consistency=session max_concurrent=3"},
		{Rule{Name: "a", Match: Match{User: "batch"}, Deny: `no "batch"`}, `user=batch => deny="no \"batch\""`},
	}
	for _, tt := range tests {
		if got := tt.rule.String(); got != tt.want {
			t.Errorf("String() = %s, want %s", got, tt.want)
		}
	}
}

// TestReloadCarries: a reload keeps the counts of rules by name and the limiters of rules
// whose max_concurrent is unchanged; a changed bound gets a new limiter, and the old one's
// holder releases into it. The running Set is not changed.
func TestReloadCarries(t *testing.T) {
	prev := mustCompile(t,
		Rule{Name: "same", Match: Match{Table: "orders"}, MaxConcurrent: 2},
		Rule{Name: "resized", Match: Match{Table: "item"}, MaxConcurrent: 2},
		Rule{Name: "dropped", Cache: CacheOn},
	)
	var v Verdict
	prev.Apply(stmt(), &v)
	prev.Apply(stmt(), &v)
	sameOld, resizedOld := prev.rules[0].limiter, prev.rules[1].limiter
	if err := resizedOld.Acquire(t.Context()); err != nil {
		t.Fatal(err)
	}

	next, _, err := CompileFrom(prev, []Rule{
		{Name: "new", Route: RoutePrimary},
		{Name: "same", Match: Match{Table: "orders"}, MaxConcurrent: 2},
		{Name: "resized", Match: Match{Table: "item"}, MaxConcurrent: 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	if next.rules[1].limiter != sameOld {
		t.Error("a rule with the same max_concurrent got a new limiter")
	}
	if next.rules[2].limiter == resizedOld || next.rules[2].limiter.Max() != 5 {
		t.Error("a rule whose max_concurrent changed kept its limiter")
	}
	if prev.rules[1].limiter != resizedOld || resizedOld.Max() != 2 {
		t.Error("compiling changed the running set")
	}
	resizedOld.Release()
	if running, _ := resizedOld.Load(); running != 0 {
		t.Errorf("old limiter holds %d after its holder released", running)
	}
	next.Apply(stmt(), &v)
	got := map[string]uint64{}
	for _, rs := range next.Snapshot() {
		got[rs.Name] = rs.Matches
	}
	want := map[string]uint64{"new": 1, "same": 3, "resized": 3}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("after reload rule %s has %d matches, want %d", name, got[name], n)
		}
	}
	// A rule set refused by a reload leaves the running one as it was.
	if _, _, err := CompileFrom(prev, []Rule{{Name: "same"}}); err == nil {
		t.Error("a rule without action compiled")
	}
	if prev.Snapshot()[0].Matches != 3 {
		t.Errorf("running set's count changed: %+v", prev.Snapshot()[0])
	}
}

func TestSnapshot(t *testing.T) {
	s := mustCompile(t, Rule{Name: "limit", Match: Match{Type: "best_sellers"}, MaxConcurrent: 3})
	var v Verdict
	s.Apply(stmt(), &v)
	if err := v.Limit.Acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer v.Limit.Release()
	got := s.Snapshot()
	want := []RuleStats{{Name: "limit", Rule: "type=best_sellers => max_concurrent=3", Matches: 1, MaxConcurrent: 3, Running: 1}}
	if len(got) != 1 || got[0] != want[0] {
		t.Errorf("Snapshot() = %+v, want %+v", got, want)
	}
}

// TestParse reads the configuration's spelling of tables, cache actions and routes.
func TestParse(t *testing.T) {
	tables := []struct {
		in, schema, table string
		ok                bool
	}{
		{"", "", "", true},
		{"Shop.Orders", "shop", "orders", true},
		{"orders", "", "orders", true},
		{"a.b.c", "", "", false},
		{"shop.", "", "", false},
		{".orders", "", "", false},
		{"`orders`", "", "", false},
		{"my table", "", "", false},
	}
	for _, tt := range tables {
		schema, table, err := ParseTable(tt.in)
		if schema != tt.schema || table != tt.table || (err == nil) != tt.ok {
			t.Errorf("ParseTable(%q) = %q, %q, %v", tt.in, schema, table, err)
		}
	}
	caches := []struct {
		in  string
		act CacheAction
		ttl time.Duration
		ok  bool
	}{
		{"", CacheUnset, 0, true},
		{"on", CacheOn, 0, true},
		{"off", CacheOff, 0, true},
		{"90s", CacheOn, 90 * time.Second, true},
		{"0s", CacheUnset, 0, false},
		{"-1s", CacheUnset, 0, false},
		{"30", CacheUnset, 0, false},
		{"yes", CacheUnset, 0, false},
	}
	for _, tt := range caches {
		act, ttl, err := ParseCache(tt.in)
		if act != tt.act || ttl != tt.ttl || (err == nil) != tt.ok {
			t.Errorf("ParseCache(%q) = %v, %v, %v", tt.in, act, ttl, err)
		}
	}
	routes := map[string]Route{"": RouteUnset, "primary": RoutePrimary, "replica": RouteReplica}
	for in, want := range routes {
		if got, err := ParseRoute(in); got != want || err != nil {
			t.Errorf("ParseRoute(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseRoute("Primary"); err == nil {
		t.Error(`ParseRoute("Primary"): no error`)
	}
}
