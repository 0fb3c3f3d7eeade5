package rules

import (
	"regexp"
	"strings"
	"testing"
)

func TestWarnings(t *testing.T) {
	re := regexp.MustCompile
	tests := []struct {
		name  string
		rules []Rule
		// want is a substring of each warning, in order; never whether each says so.
		want  []string
		never []bool
	}{
		{
			name: "broad rule decides first",
			rules: []Rule{
				{Name: "all", Cache: CacheOn},
				{Name: "t", Match: Match{Table: "t"}, Cache: CacheOff},
			},
			want:  []string{`rule 1 "t": never decides anything: earlier rules that match every statement it matches decide it first (cache by rule 0 "all")`},
			never: []bool{true},
		},
		{
			name: "after a broader deny",
			rules: []Rule{
				{Name: "no-batch", Match: Match{User: "batch"}, Deny: "no"},
				{Name: "batch-orders", Match: Match{User: "batch", Table: "shop.orders"}, Route: RouteReplica},
			},
			want:  []string{`rule 1 "batch-orders": never reached: rule 0 "no-batch"`},
			never: []bool{true},
		},
		{
			name: "equal match, same action",
			rules: []Rule{
				{Name: "a", Match: Match{Type: "x", Digest: re(`^SELECT`)}, Route: RoutePrimary},
				{Name: "b", Match: Match{Type: "x", Digest: re(`^SELECT`)}, Route: RouteReplica},
			},
			want:  []string{`rule 1 "b": never decides anything`},
			never: []bool{true},
		},
		{
			name: "each action by a different earlier rule",
			rules: []Rule{
				{Name: "cache", Match: Match{Schema: "shop"}, Cache: CacheOn},
				{Name: "route", Match: Match{Table: "orders"}, Route: RoutePrimary},
				{Name: "both", Match: Match{Schema: "SHOP", Table: "shop.orders"}, Cache: CacheOff, Route: RouteReplica},
			},
			want:  []string{`rule 2 "both": never decides anything: earlier rules that match every statement it matches decide it first (cache by rule 0 "cache"; route by rule 1 "route")`},
			never: []bool{true},
		},
		{
			name: "part of a rule",
			rules: []Rule{
				{Name: "all", Cache: CacheOn},
				{Name: "orders", Match: Match{Table: "orders"}, Cache: CacheOff, MaxConcurrent: 2},
			},
			want:  []string{`rule 1 "orders": never decides part of what it sets`},
			never: []bool{false},
		},
		{
			name: "limit decided first",
			rules: []Rule{
				{Name: "a", Match: Match{User: "app"}, MaxConcurrent: 4},
				{Name: "b", Match: Match{User: "app", Type: "x"}, MaxConcurrent: 1},
			},
			want:  []string{"max_concurrent by rule 0"},
			never: []bool{true},
		},
		// Cases that must not warn.
		{
			name: "narrower rule first",
			rules: []Rule{
				{Name: "t", Match: Match{Table: "t"}, Cache: CacheOff},
				{Name: "all", Cache: CacheOn},
			},
		},
		{
			name: "different actions",
			rules: []Rule{
				{Name: "all", Cache: CacheOn},
				{Name: "t", Match: Match{Table: "t"}, Route: RoutePrimary},
			},
		},
		{
			name: "earlier rule has a condition the later lacks",
			rules: []Rule{
				{Name: "a", Match: Match{User: "app", Table: "t"}, Cache: CacheOn},
				{Name: "b", Match: Match{Table: "t"}, Cache: CacheOff},
			},
		},
		{
			name: "different values of a condition",
			rules: []Rule{
				{Name: "a", Match: Match{User: "app"}, Cache: CacheOn},
				{Name: "b", Match: Match{User: "App"}, Cache: CacheOff},
			},
		},
		{
			name: "qualified table does not cover a bare one",
			rules: []Rule{
				{Name: "a", Match: Match{Table: "shop.orders"}, Cache: CacheOn},
				{Name: "b", Match: Match{Table: "orders"}, Cache: CacheOff},
			},
		},
		{
			name: "other schema's table",
			rules: []Rule{
				{Name: "a", Match: Match{Table: "shop.orders"}, Cache: CacheOn},
				{Name: "b", Match: Match{Table: "archive.orders"}, Cache: CacheOff},
			},
		},
		{
			name: "regular expressions that differ in text, even if one is broader",
			rules: []Rule{
				{Name: "a", Match: Match{Digest: re(`SELECT`)}, Cache: CacheOn},
				{Name: "b", Match: Match{Digest: re(`^SELECT`)}, Cache: CacheOff},
			},
		},
		{
			name: "narrower deny",
			rules: []Rule{
				{Name: "a", Match: Match{User: "batch", Type: "x"}, Deny: "no"},
				{Name: "b", Match: Match{User: "batch"}, Cache: CacheOff},
			},
		},
		{
			name: "broad rule sets a deny the later lacks",
			rules: []Rule{
				{Name: "a", Match: Match{Type: "x"}, Cache: CacheOn},
				{Name: "b", Match: Match{Type: "x", User: "u"}, Deny: "no"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, warnings, err := Compile(tt.rules)
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) != len(tt.want) {
				t.Fatalf("warnings %v, want %d", warnings, len(tt.want))
			}
			for i, w := range warnings {
				if !strings.Contains(w.String(), tt.want[i]) {
					t.Errorf("warning %q does not contain %q", w, tt.want[i])
				}
				if w.Never != tt.never[i] {
					t.Errorf("warning %q: Never = %v, want %v", w, w.Never, tt.never[i])
				}
			}
		})
	}
}
