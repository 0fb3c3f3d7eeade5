package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParseFlagsArms(t *testing.T) {
	base := []string{"--primary-dsn", "gk:gk@tcp(p:1)/db", "--replica-dsn", "gk:gk@tcp(r:1)/db"}
	tests := []struct {
		name    string
		args    []string
		wantErr string
		arms    []string
	}{
		{"one arm, named by default", []string{"--dsn", "gk:gk@tcp(a:1)/db"}, "", []string{"arm1"}},
		{"two arms, named", []string{"--dsn", "gk:gk@tcp(a:1)/db", "--dsn", "gk:gk@tcp(b:1)/db", "--arm", "per_table", "--arm", "global",
			"--metrics", "http://a/metrics", "--metrics", "http://b/metrics", "--primary", "p:1"}, "", []string{"per_table", "global"}},
		{"writes elsewhere", []string{"--dsn", "gk:gk@tcp(a:1)/db", "--write-dsn", "gk:gk@tcp(p:1)/db"}, "", []string{"arm1"}},
		{"a name missing", []string{"--dsn", "x@tcp(a:1)/db", "--dsn", "x@tcp(b:1)/db", "--arm", "one"}, "--arm names", nil},
		{"names alike", []string{"--dsn", "x@tcp(a:1)/db", "--dsn", "x@tcp(b:1)/db", "--arm", "one", "--arm", "one"}, "--arm names", nil},
		{"metrics missing", []string{"--dsn", "x@tcp(a:1)/db", "--dsn", "x@tcp(b:1)/db", "--metrics", "http://a", "--primary", "p:1"}, "--metrics", nil},
		{"read-dsn beside write-dsn", []string{"--dsn", "x@tcp(a:1)/db", "--write-dsn", "x@tcp(p:1)/db", "--read-dsn", "x@tcp(r:1)/db"}, "--read-dsn", nil},
		{"hot table of too few tables", []string{"--dsn", "x@tcp(a:1)/db", "--hot-table", "--tables", "2"}, "--hot-table", nil},
	}
	for _, tt := range tests {
		o, err := parseFlags(append(slices.Clone(base), tt.args...))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: error %v, want one about %s", tt.name, err, tt.wantErr)
		case tt.wantErr == "" && !slices.Equal(o.armNames, tt.arms):
			t.Errorf("%s: arms %v, want %v", tt.name, o.armNames, tt.arms)
		}
	}
	if _, err := parseFlags([]string{"--primary-dsn", "x@tcp(p:1)/db", "--dsn", "x@tcp(a:1)/db", "--dsn", "x@tcp(b:1)/db"}); err == nil ||
		!strings.Contains(err.Error(), "--replica-dsn") {
		t.Errorf("several --dsn without replicas: %v, want an error: the switches need the replicas to catch up", err)
	}
}
