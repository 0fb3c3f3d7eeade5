package main

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestWaitKeepsSchedule checks the pacing of the short clients: statements start on a grid
// of c.every from the first, and one that ends late is followed at once, the grid starting
// again from then rather than bunching to catch up. The bubble's clock moves only when
// every goroutine in it is blocked, so the times below are exact.
func TestWaitKeepsSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &client{every: 20 * time.Millisecond}
		ctx := context.Background()
		var next time.Time

		first := time.Now()
		if !c.wait(ctx, &next) {
			t.Fatal("wait reported its context done")
		}
		if d := time.Since(first); d != 0 {
			t.Fatalf("the first statement waited %s; it starts at once", d)
		}
		if !c.wait(ctx, &next) {
			t.Fatal("wait reported its context done")
		}
		if d := time.Since(first); d != c.every {
			t.Fatalf("the second statement started %s after the first; the schedule says %s", d, c.every)
		}
		if want := first.Add(2 * c.every); !next.Equal(want) {
			t.Fatalf("the third statement is due %s after the first; want %s", next.Sub(first), 2*c.every)
		}

		// A statement that ran past two slots: the next starts at once, one slot on from now.
		time.Sleep(3 * c.every)
		late := time.Now()
		if !c.wait(ctx, &next) {
			t.Fatal("wait reported its context done")
		}
		if d := time.Since(late); d != 0 {
			t.Fatalf("after a late statement the next waited %s; it starts at once", d)
		}
		if want := late.Add(c.every); !next.Equal(want) {
			t.Fatalf("after a late statement the next is due %s from now; want %s, the missed slots dropped", next.Sub(late), c.every)
		}

		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if c.wait(cancelled, &next) {
			t.Fatal("wait with its context done and a slot ahead reported true")
		}
	})
}
