package cache

import (
	"strings"
	"testing"
)

func TestParsePolicy(t *testing.T) {
	tests := []struct {
		in      string
		want    Policy
		wantErr bool
	}{
		{in: "cost_aware", want: CostAware},
		{in: "lru", want: LRU},
		{in: "LRU", wantErr: true},
		{in: "gdsf", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParsePolicy(tt.in)
		if tt.wantErr {
			if err == nil || !strings.Contains(err.Error(), "cost_aware") || !strings.Contains(err.Error(), "lru") {
				t.Errorf("ParsePolicy(%q) error = %v, want one naming cost_aware and lru", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParsePolicy(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if s := got.String(); s != tt.in {
			t.Errorf("%v.String() = %q, want %q", got, s, tt.in)
		}
	}
	if s := Policy(9).String(); s != "Policy(9)" {
		t.Errorf("Policy(9).String() = %q", s)
	}
}
