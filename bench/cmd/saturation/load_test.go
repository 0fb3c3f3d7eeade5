package main

import (
	"context"
	"testing"
	"time"
)

// TestWaitKeepsSchedule checks the pacing of the short clients: statements start on a grid
// of c.every from the first, and one that ends late is followed at once, the grid starting
// again from then rather than bunching to catch up.
func TestWaitKeepsSchedule(t *testing.T) {
	c := &client{every: 20 * time.Millisecond}
	ctx := context.Background()
	var next time.Time

	began := time.Now()
	if !c.wait(ctx, &next) {
		t.Fatal("wait reported its context done")
	}
	first := next.Add(-c.every)
	if first.Before(began) || first.After(time.Now()) {
		t.Fatalf("the first statement was due %s after the call; it starts at once", first.Sub(began))
	}
	if !c.wait(ctx, &next) {
		t.Fatal("wait reported its context done")
	}
	if now := time.Now(); now.Before(first.Add(c.every)) {
		t.Fatalf("the second statement started %s after the first; the schedule says %s", now.Sub(first), c.every)
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
	if start := next.Add(-c.every); start.Before(late) || start.After(time.Now()) {
		t.Fatalf("after a late statement the next was due %s from the call; it starts at once, the missed slots dropped", start.Sub(late))
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if c.wait(cancelled, &next) {
		t.Fatal("wait with its context done and a slot ahead reported true")
	}
}
