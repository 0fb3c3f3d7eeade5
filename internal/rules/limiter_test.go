package rules

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestLimiterBound: 200 goroutines through a limiter of 5 never run more than 5 at once, and
// some of them, whose contexts end while they wait, leave without a slot and without
// losing one.
func TestLimiterBound(t *testing.T) {
	const n, workers = 5, 200
	l := NewLimiter(n)
	var cur, peak, done, gaveUp atomic.Int64
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			ctx := t.Context()
			if i%4 == 3 { // a quarter give up at some point while they wait
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				go func() { runtime.Gosched(); cancel() }() // ends when it has cancelled
			}
			for range 20 {
				if err := l.Acquire(ctx); err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("Acquire: %v", err)
					}
					gaveUp.Add(1)
					return
				}
				c := cur.Add(1)
				for p := peak.Load(); c > p && !peak.CompareAndSwap(p, c); p = peak.Load() {
				}
				runtime.Gosched()
				cur.Add(-1)
				l.Release()
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > n || p < 1 {
		t.Errorf("peak concurrency %d, want 1..%d", p, n)
	}
	if running, waiting := l.Load(); running != 0 || waiting != 0 {
		t.Errorf("after all released: running %d, waiting %d", running, waiting)
	}
	t.Logf("peak %d, %d units ran, %d gave up", peak.Load(), done.Load(), gaveUp.Load())
}

// TestLimiterContext: a waiter whose context ends gets the context's cause and leaves the
// line; the slot then goes to the next waiter, in arrival order.
func TestLimiterContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiter(1)
		if err := l.Acquire(t.Context()); err != nil {
			t.Fatal(err)
		}
		timeout := errors.New("queue timeout")
		ctx, cancel := context.WithTimeoutCause(t.Context(), time.Second, timeout)
		defer cancel()
		var order []string
		var mu sync.Mutex
		wait := func(name string, ctx context.Context, errc chan<- error) {
			err := l.Acquire(ctx)
			if err == nil {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				l.Release()
			}
			errc <- err
		}
		first, second, third := make(chan error, 1), make(chan error, 1), make(chan error, 1)
		go wait("first", ctx, first)
		synctest.Wait()
		go wait("second", t.Context(), second)
		synctest.Wait()
		go wait("third", t.Context(), third)
		synctest.Wait()
		if _, waiting := l.Load(); waiting != 3 {
			t.Fatalf("waiting %d, want 3", waiting)
		}
		time.Sleep(time.Second) // the fake clock: first's context ends
		synctest.Wait()
		if err := <-first; !errors.Is(err, timeout) {
			t.Errorf("first: %v, want the context's cause", err)
		}
		if _, waiting := l.Load(); waiting != 2 {
			t.Errorf("waiting %d after a waiter left, want 2", waiting)
		}
		l.Release()
		if err := <-second; err != nil {
			t.Error(err)
		}
		if err := <-third; err != nil {
			t.Error(err)
		}
		if len(order) != 2 || order[0] != "second" || order[1] != "third" {
			t.Errorf("served %v, want [second third]", order)
		}
		if running, waiting := l.Load(); running != 0 || waiting != 0 {
			t.Errorf("running %d, waiting %d; want none", running, waiting)
		}
	})
}

// TestLimiterHandedWhileLeaving: a waiter handed a slot just as its context ends either
// keeps it or passes it on; no slot is lost either way. The test holds the limiter's lock
// while it ends the context and hands the slot, so that a waiter woken by its context
// before the hand-over finds the slot handed when it gets the lock; which way each try goes
// is up to the scheduler.
func TestLimiterHandedWhileLeaving(t *testing.T) {
	kept, passed := 0, 0
	for range 100 {
		synctest.Test(t, func(t *testing.T) {
			l := NewLimiter(1)
			if err := l.Acquire(t.Context()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() { errc <- l.Acquire(ctx) }()
			synctest.Wait()
			l.mu.Lock()
			cancel()
			l.releaseLocked()
			l.mu.Unlock()
			err := <-errc
			running, waiting := l.Load()
			switch {
			case err == nil && running == 1:
				kept++
				l.Release()
			case errors.Is(err, context.Canceled) && running == 0:
				passed++
			default:
				t.Fatalf("Acquire: %v with %d running", err, running)
			}
			if waiting != 0 {
				t.Fatalf("%d waiting", waiting)
			}
		})
	}
	t.Logf("kept %d, passed on %d", kept, passed)
}

// TestLimiterEndedContext: with no slot free, a context that has already ended is refused at
// once; with a slot free, it still gets it (the fast path does not look at the context).
func TestLimiterEndedContext(t *testing.T) {
	l := NewLimiter(1)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := l.Acquire(ctx); err != nil {
		t.Fatalf("free slot: %v", err)
	}
	if err := l.Acquire(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("no slot, ended context: %v", err)
	}
	if _, waiting := l.Load(); waiting != 0 {
		t.Errorf("an ended context waits")
	}
	l.Release()
}

func TestLimiterReleaseWithoutAcquire(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Release without Acquire did not panic")
		}
	}()
	NewLimiter(1).Release()
}
