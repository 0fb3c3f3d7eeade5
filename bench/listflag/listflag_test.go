package listflag

import (
	"flag"
	"slices"
	"testing"
)

// TestLists keeps every value of a repeated flag, in order, and refuses a number that is
// not whole.
func TestLists(t *testing.T) {
	var s Strings
	var n Ints
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Var(&s, "s", "")
	fs.Var(&n, "n", "")
	if err := fs.Parse([]string{"-s", "a", "-n", "1", "-s", "b", "-n", "2"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s, Strings{"a", "b"}) || !slices.Equal(n, Ints{1, 2}) {
		t.Errorf("got %v and %v, want [a b] and [1 2]", s, n)
	}
	if err := n.Set("x"); err == nil {
		t.Error("Ints took x")
	}
}
