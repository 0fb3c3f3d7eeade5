package main

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// manualClock is a clock that moves only when told.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestPhasesTakeTurnsAndTime(t *testing.T) {
	clock := &manualClock{now: time.Unix(0, 0)}
	p := newPhases(2, clock.Now)
	arms := []int{}
	for _, d := range []time.Duration{5, 3, 4} {
		a, _ := p.enter()
		p.leave()
		arms = append(arms, a)
		clock.advance(d * time.Second)
		p.next(nil)
	}
	a, _ := p.enter()
	p.leave()
	arms = append(arms, a)
	clock.advance(time.Second)
	active, turns := p.end()
	if want := []int{0, 1, 0, 1}; !slices.Equal(arms, want) {
		t.Errorf("arms in turn = %v, want %v", arms, want)
	}
	if want := []time.Duration{9 * time.Second, 4 * time.Second}; !slices.Equal(active, want) {
		t.Errorf("active = %v, want %v", active, want)
	}
	if want := []int{2, 2}; !slices.Equal(turns, want) {
		t.Errorf("turns = %v, want %v", turns, want)
	}
}

// A switch waits for the operation in flight before it settles, and an operation that
// starts after it began runs on the next arm: no operation of one arm overlaps the next.
func TestPhaseSwitchWaitsForOperationsInFlight(t *testing.T) {
	p := newPhases(2, time.Now)
	if a, open := p.enter(); a != 0 || !open {
		t.Fatalf("first arm = %d (open %v), want 0, open", a, open)
	}
	var settled atomic.Bool
	switched := make(chan struct{})
	go func() { // ends once the switch is done
		p.next(func() { settled.Store(true) })
		close(switched)
	}()
	// Wait until the switch has begun: it then holds newcomers back.
	deadline := time.Now().Add(10 * time.Second)
	for p.mu.TryRLock() {
		p.mu.RUnlock()
		if time.Now().After(deadline) {
			t.Fatal("the switch did not begin within 10s")
		}
		runtime.Gosched()
	}
	entered := make(chan int)
	go func() { // ends once it has run, after the switch
		a, _ := p.enter()
		p.leave()
		entered <- a
	}()
	if settled.Load() {
		t.Error("the switch settled while an operation was in flight")
	}
	p.leave()
	<-switched
	if !settled.Load() {
		t.Error("the switch did not settle")
	}
	if a := <-entered; a != 1 {
		t.Errorf("an operation that started during the switch ran on arm %d, want 1", a)
	}
}

func TestPhasesClose(t *testing.T) {
	p := newPhases(2, time.Now)
	p.close()
	if _, open := p.enter(); open {
		t.Error("enter after close reports the run open")
	}
	p.leave()
}

// With the arms taking a turn at each injection, each arm sees each replica held back, as
// many times as the others.
func TestEachArmSeesEachReplicaHeld(t *testing.T) {
	for _, tt := range []struct{ arms, replicas int }{{1, 2}, {2, 2}, {3, 2}, {2, 3}} {
		seen := map[[2]int]int{}
		n := tt.arms * tt.replicas * 3
		for i := range n {
			seen[[2]int{i % tt.arms, heldReplica(i, tt.arms, tt.replicas)}]++
		}
		for a := range tt.arms {
			for r := range tt.replicas {
				if got := seen[[2]int{a, r}]; got != 3 {
					t.Errorf("%d arms, %d replicas: arm %d saw replica %d held %d times in %d injections, want 3", tt.arms, tt.replicas, a, r, got, n)
				}
			}
		}
	}
}
