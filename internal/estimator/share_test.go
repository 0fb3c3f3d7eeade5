package estimator

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestShareChargesBusyTimeWithoutCPUs(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := NewShare(0, t0)
	a := s.Start(t0)
	b := s.Start(t0.Add(time.Millisecond))
	c := s.Start(t0.Add(2 * time.Millisecond))
	require.Equal(t, 10*time.Millisecond, s.Stop(t0.Add(10*time.Millisecond), a))
	require.Equal(t, 9*time.Millisecond, s.Stop(t0.Add(10*time.Millisecond), b))
	require.Equal(t, 18*time.Millisecond, s.Stop(t0.Add(20*time.Millisecond), c))
}

func TestShareSplitsTheProcessorsAmongWhatRuns(t *testing.T) {
	ms := func(n int) time.Time { return time.Unix(1000, 0).Add(time.Duration(n) * time.Millisecond) }
	s := NewShare(2, ms(0))

	// Alone and with one other on two processors: each has a processor to itself.
	a := s.Start(ms(0))
	b := s.Start(ms(0))
	require.Equal(t, 10*time.Millisecond, s.Stop(ms(10), b))

	// Four run from 10 to 30 ms: each gets half a processor, so 10 ms of work in 20 ms.
	c, d, e := s.Start(ms(10)), s.Start(ms(10)), s.Start(ms(10))
	require.Equal(t, 10*time.Millisecond, s.Stop(ms(30), c))
	// Three from 30 to 60 ms: two thirds of a processor each, 20 ms of work.
	require.Equal(t, 30*time.Millisecond, s.Stop(ms(60), d))
	// Two from 60 to 70 ms: whole processors again.
	require.Equal(t, 40*time.Millisecond, s.Stop(ms(70), e))
	// a ran throughout: 10 + 10 + 20 + 10 + 10 alone.
	require.Equal(t, 60*time.Millisecond, s.Stop(ms(80), a))
}

func TestShareCPUsChangeOnlyWhatFollows(t *testing.T) {
	ms := func(n int) time.Time { return time.Unix(1000, 0).Add(time.Duration(n) * time.Millisecond) }
	s := NewShare(0, ms(0))
	a := s.Start(ms(0))
	// From 10 ms, one processor; a was running and keeps its busy time.
	s.SetCPUs(1, ms(10))
	b, c := s.Start(ms(10)), s.Start(ms(10))
	require.Equal(t, 20*time.Millisecond, s.Stop(ms(20), a))
	// b and c share the processor from 10 to 30 ms: half each.
	require.Equal(t, 10*time.Millisecond, s.Stop(ms(30), b))
	// Back to busy time at 30 ms: c, counted, ends on the clock, which keeps real time
	// from there; what starts now is charged its busy time.
	s.SetCPUs(0, ms(30))
	d := s.Start(ms(30))
	require.Equal(t, 20*time.Millisecond, s.Stop(ms(40), c))
	require.Equal(t, 10*time.Millisecond, s.Stop(ms(40), d))
}

func TestShareIsSafeForConcurrentUse(t *testing.T) {
	s := NewShare(2, time.Now())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				start := time.Now()
				w := s.Stop(time.Now(), s.Start(start))
				require.GreaterOrEqual(t, w, time.Duration(0))
			}
		})
	}
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Zero(t, s.n)
}
