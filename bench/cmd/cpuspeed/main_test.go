package main

import (
	"flag"
	"math"
	"runtime"
	"testing"
)

// measure reads a speed that is positive and finite, of the same order however long the
// loop: the speed is iterations per processor time, not a count.
func TestMeasure(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	short, err := measure(100_000)
	if err != nil {
		t.Fatal(err)
	}
	long, err := measure(1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []float64{short, long} {
		if s <= 0 || math.IsInf(s, 0) || math.IsNaN(s) {
			t.Fatalf("speeds %v and %v, want positive and finite", short, long)
		}
	}
	if r := long / short; r < 0.1 || r > 10 {
		t.Errorf("ten times the loop read %.2f times the speed, want about the same", r)
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-every", "0s"}, {"-loop", "-1"}} {
		if err := run(args); err == nil || err == flag.ErrHelp {
			t.Errorf("run(%q) = %v, want an error", args, err)
		}
	}
}
