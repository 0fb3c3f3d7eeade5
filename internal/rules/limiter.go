package rules

import (
	"container/list"
	"context"
	"fmt"
	"sync"
)

// Limiter bounds how many units run at once: a rule's max_concurrent. Waiters are served in
// arrival order, each blocked on its own channel; one whose context ends leaves the line.
type Limiter struct {
	max int

	mu sync.Mutex
	// running counts the slots held.
	running int
	// waiters holds a chan struct{} per waiting unit, first come first; a slot is handed to
	// the front one by closing its channel.
	waiters list.List
}

// NewLimiter returns a Limiter of n slots; n must be at least 1.
func NewLimiter(n int) *Limiter {
	if n < 1 {
		panic(fmt.Sprintf("rules: NewLimiter(%d): a limiter needs at least one slot", n))
	}
	return &Limiter{max: n}
}

// Max returns the number of slots.
func (l *Limiter) Max() int { return l.max }

// Load returns the slots held and the units waiting for one.
func (l *Limiter) Load() (running, waiting int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running, l.waiters.Len()
}

// Acquire takes a slot, waiting for one until ctx ends (the caller bounds ctx by its queue
// timeout). The error wraps context.Cause(ctx); a nil error must be paired with Release.
func (l *Limiter) Acquire(ctx context.Context) error {
	l.mu.Lock()
	if l.running < l.max && l.waiters.Len() == 0 {
		l.running++
		l.mu.Unlock()
		return nil
	}
	if ctx.Err() != nil {
		l.mu.Unlock()
		return l.waitError(ctx)
	}
	ready := make(chan struct{})
	e := l.waiters.PushBack(ready)
	l.mu.Unlock()

	select {
	case <-ready:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	select {
	case <-ready: // handed a slot as ctx ended: pass it on
		l.releaseLocked()
	default:
		l.waiters.Remove(e)
	}
	l.mu.Unlock()
	return l.waitError(ctx)
}

func (l *Limiter) waitError(ctx context.Context) error {
	return fmt.Errorf("waiting for one of %d slots (max_concurrent): %w", l.max, context.Cause(ctx))
}

// Release gives back a slot taken by Acquire.
func (l *Limiter) Release() {
	l.mu.Lock()
	l.releaseLocked()
	l.mu.Unlock()
}

// releaseLocked hands the slot to the first waiter, or frees it.
func (l *Limiter) releaseLocked() {
	if front := l.waiters.Front(); front != nil {
		close(l.waiters.Remove(front).(chan struct{}))
		return
	}
	if l.running == 0 {
		panic("rules: Limiter.Release without Acquire")
	}
	l.running--
}
