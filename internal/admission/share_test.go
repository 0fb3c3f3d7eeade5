package admission

import (
	"testing"
	"time"
)

// A hold starts nothing new until it ends; running units go on; at its end what fits
// starts, by Hold or at the Tick past its bound.
func TestHoldStartsNothingNew(t *testing.T) {
	clock := NewManualClock(time.Unix(1000, 0))
	c := New(Config{Capacity: 100 * time.Millisecond, QueueTimeout: time.Minute, MaxQueue: 10}, clock)
	var a, b, d Ticket
	if st, _ := c.Arrive(&a, Request{Cost: 10 * time.Millisecond}); st != Admitted {
		t.Fatalf("before the hold: %v", st)
	}
	c.Hold(clock.Now().Add(time.Second))
	if st, _ := c.Arrive(&b, Request{Cost: 10 * time.Millisecond}); st != Queued {
		t.Fatalf("during the hold a unit that fits was %v, want queued", st)
	}
	if c.Room(time.Millisecond) {
		t.Error("Room says yes during a hold")
	}
	c.Hold(time.Time{})
	if b.State() != Admitted {
		t.Fatalf("after the hold ended: %v", b.State())
	}
	c.Hold(clock.Now().Add(time.Second))
	if st, _ := c.Arrive(&d, Request{Cost: 10 * time.Millisecond}); st != Queued {
		t.Fatalf("during the second hold: %v", st)
	}
	clock.Advance(time.Second)
	c.Tick(clock.Now())
	if d.State() != Admitted {
		t.Fatalf("at the Tick past the hold's bound: %v", d.State())
	}
}

// In a fleet the adaptive capacity's bounds are the fleet's: an adjuster with a third of
// the fleet's capacity may go down to a third of capacity_min.
func TestShareScalesTheBounds(t *testing.T) {
	var u adjuster
	u.reset(AutoConfig{Enabled: true, Min: 30 * time.Millisecond, Max: time.Second}, time.Unix(0, 0))
	if got := u.ofShare(u.cfg.Min); got != 30*time.Millisecond {
		t.Errorf("alone, the bound is %v; want capacity_min", got)
	}
	u.share = 1.0 / 3
	if got := u.ofShare(u.cfg.Min); got != 10*time.Millisecond {
		t.Errorf("with a third of the fleet's capacity, the bound is %v; want 10ms", got)
	}
}

// In a fleet a unit that starts with none of the controller's own beside it is not alone in
// the database: the other members' may run.
func TestFleetUnitIsNotAloneUnlessDrained(t *testing.T) {
	clock := NewManualClock(time.Unix(1000, 0))
	c := New(Config{Capacity: 100 * time.Millisecond, QueueTimeout: time.Minute, MaxQueue: 10}, clock)
	var a, b Ticket
	c.SetShare(0.5)
	if st, _ := c.Arrive(&a, Request{Cost: time.Millisecond}); st != Admitted || a.alone {
		t.Fatalf("in a fleet: %v, alone %v; want admitted, not alone", st, a.alone)
	}
	c.Release(&a, time.Millisecond)
	if _, ok := c.Drained(); ok {
		t.Error("Drained without a solo check under way")
	}
	c.SetShare(0)
	if st, _ := c.Arrive(&b, Request{Cost: time.Millisecond}); st != Admitted || !b.alone {
		t.Fatalf("alone again: %v, alone %v; want admitted alone", st, b.alone)
	}
}
