package admission

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFastPathAllocatesNothing: with room and nothing waiting, a unit is admitted and
// released without allocating.
func TestFastPathAllocatesNothing(t *testing.T) {
	c := New(Config{Capacity: time.Second, QueueTimeout: time.Second, MaxQueue: 10, Discipline: SJF, Aging: 2}, nil)
	var tk Ticket
	allocs := testing.AllocsPerRun(1000, func() {
		if st, _ := c.Arrive(&tk, Request{Cost: time.Millisecond}); st != Admitted {
			t.Fatal("not admitted")
		}
		c.Release(&tk, time.Millisecond)
	})
	require.Zero(t, allocs)
}

// TestWaitRealClock: blocked callers are woken by a release, time out at their deadline,
// and leave the queue when their context ends, with the books right after many goroutines.
// The system clock runs in a synctest bubble: time moves when every goroutine waits.
func TestWaitRealClock(t *testing.T) {
	synctest.Test(t, testWait)
}

func testWait(t *testing.T) {
	c := New(Config{Capacity: 10 * time.Millisecond, QueueTimeout: 200 * time.Millisecond, MaxQueue: 1000, Discipline: SJF}, nil)
	var run Ticket
	st, err := c.Arrive(&run, Request{Cost: 10 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, Admitted, st)

	// Times out.
	var late Ticket
	st, _ = c.Arrive(&late, Request{Cost: time.Millisecond})
	require.Equal(t, Queued, st)
	start := time.Now()
	require.ErrorIs(t, c.Wait(context.Background(), &late), ErrTimeout)
	require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)

	// Cancelled: its place is given back.
	ctx, cancel := context.WithCancel(context.Background())
	var gone Ticket
	_, _ = c.Arrive(&gone, Request{Cost: time.Millisecond})
	go func() { synctest.Wait(); cancel() }() // once Wait blocks
	require.ErrorIs(t, c.Wait(ctx, &gone), ErrCanceled)
	require.Equal(t, 0, c.Snapshot().Queued)

	// Woken by a release.
	var next Ticket
	_, _ = c.Arrive(&next, Request{Cost: time.Millisecond})
	go func() { synctest.Wait(); c.Release(&run, 0) }() // once Wait blocks
	require.NoError(t, c.Wait(context.Background(), &next))
	c.Release(&next, 0)

	// Many goroutines, each reusing its ticket.
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var tk Ticket
			for i := 0; i < 50; i++ {
				st, err := c.Arrive(&tk, Request{Cost: time.Duration(1+i%5) * time.Millisecond})
				if st != Admitted && err == nil {
					err = c.Wait(context.Background(), &tk)
				}
				if err == nil {
					time.Sleep(50 * time.Microsecond) // the unit's work, in the bubble's time
					c.Release(&tk, 0)
				} else if !errors.Is(err, ErrTimeout) {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	s := c.Snapshot()
	require.Zero(t, s.Load)
	require.Zero(t, s.Running)
	require.Zero(t, s.Queued)
}

// BenchmarkFastPath: admit and release with room and nothing waiting.
func BenchmarkFastPath(b *testing.B) {
	c := New(Config{Capacity: time.Second, QueueTimeout: time.Second, MaxQueue: 10, Discipline: SJF}, nil)
	var tk Ticket
	b.ReportAllocs()
	for b.Loop() {
		c.Arrive(&tk, Request{Cost: time.Millisecond})
		c.Release(&tk, 0)
	}
}

// BenchmarkQueued100k: with 100,000 units waiting, one unit ends (admitting the next) and
// one arrives; each operation is O(log n).
func BenchmarkQueued100k(b *testing.B) {
	for _, cfg := range []Config{
		{Discipline: FIFO},
		{Discipline: SJF},
		{Discipline: SJF, Aging: 5},
	} {
		name := cfg.Discipline.String()
		if cfg.Aging > 0 {
			name += "-aging"
		}
		b.Run(name, func(b *testing.B) {
			cfg.Capacity, cfg.MaxConcurrency = time.Hour, 1
			cfg.QueueTimeout, cfg.MaxQueue = time.Hour, 1<<20
			clock := NewManualClock(time.Unix(0, 0))
			c := New(cfg, clock)
			const waiting = 100_000
			tickets := make([]Ticket, waiting+1)
			cost := func(i int) time.Duration { return time.Duration(1+(i*7919)%1000) * time.Millisecond }
			for i := range tickets {
				c.Arrive(&tickets[i], Request{Cost: cost(i)})
			}
			cur := &tickets[0]
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				clock.Advance(time.Millisecond)
				next := c.pick(clock.Now())
				c.Release(cur, 0)
				c.Arrive(cur, Request{Cost: cost(i)})
				cur = next
				i++
			}
			if s := c.Snapshot(); s.Queued != waiting || s.Running != 1 {
				b.Fatalf("queued %d running %d", s.Queued, s.Running)
			}
		})
	}
}
