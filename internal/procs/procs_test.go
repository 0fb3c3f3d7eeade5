package procs

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func steps(s *Sizer, used ...float64) []int {
	var got []int
	for _, u := range used {
		got = append(got, s.Next(u))
	}
	return got
}

// ProcessCPU reads this process's processor time, which grows as it works.
func TestProcessCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ProcessCPU reads /proc")
	}
	ran0, _, ok := ProcessCPU()
	if !ok {
		t.Fatal("ProcessCPU read nothing")
	}
	// Spin until 10 ms of processor time show, not for a span of wall time: on a loaded
	// machine the spinning thread may wait on the run queue for most of any span. The
	// deadline only bounds a ProcessCPU that never grows.
	const want = 10 * time.Millisecond
	ran1, waited := ran0, time.Duration(0)
	for end := time.Now().Add(10 * time.Second); ran1-ran0 < want && time.Now().Before(end); {
		for spin := time.Now().Add(time.Millisecond); time.Now().Before(spin); {
		}
		ran1, waited, _ = ProcessCPU()
	}
	if ran1-ran0 < want || waited < 0 {
		t.Errorf("10 s of spinning: %v of processor time more, %v waited", ran1-ran0, waited)
	}
}

func TestSizerGivesBackWhatALightLoadDoesNotUse(t *testing.T) {
	s := NewSizer(16)
	// One client's relay wants a third of a processor: after DownAfter intervals, one.
	if got, want := steps(s, 0.3, 0.3, 0.3, 0.3), []int{16, 16, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("at 0.3 processors used: %v, want %v", got, want)
	}
}

func TestSizerGrowsAtOnce(t *testing.T) {
	s := NewSizer(16)
	steps(s, 0.2, 0.2, 0.2)
	if s.N() != 1 {
		t.Fatalf("at 0.2 used: %d processors, want 1", s.N())
	}
	// Demand of a whole processor at one: it would fill half of ceil(0.95/0.5) = 2.
	if got := s.Next(0.95); got != 2 {
		t.Errorf("one processor used whole: %d, want 2", got)
	}
	// Demand past UpAt again: more at once, never past Max.
	if got := s.Next(2.9); got != 6 {
		t.Errorf("2.9 processors wanted on two: %d, want 6", got)
	}
	if got := s.Next(9.5); got != 16 {
		t.Errorf("9.5 processors wanted on six: %d, want Max 16", got)
	}
	if got := s.Next(15.9); got != 16 {
		t.Errorf("at Max: %d, want 16", got)
	}
}

func TestSizerHoldsBetweenTheMarks(t *testing.T) {
	s := NewSizer(2)
	// 0.63 of a processor on two (a loaded relay on a small machine): neither under
	// FillTo of one fewer, nor over UpAt of two. It holds.
	for i, got := range steps(s, 0.63, 0.63, 0.63, 0.63, 0.63) {
		if got != 2 {
			t.Fatalf("interval %d at 0.63 used: %d processors, want 2", i, got)
		}
	}
	// Once at one, 0.55 stays under UpAt of one.
	steps(s, 0.3, 0.3, 0.3)
	if got := steps(s, 0.55, 0.55, 0.55); !slices.Equal(got, []int{1, 1, 1}) {
		t.Errorf("at one, 0.55 used: %v, want to hold at 1", got)
	}
}

func TestSizerShrinksToTheMostTheIntervalsWanted(t *testing.T) {
	s := NewSizer(16)
	// Wanting 2, 4 and 3: it goes to 4, not to the last.
	if got := steps(s, 0.7, 1.9, 1.1); got[2] != 4 {
		t.Errorf("after wanting 2, 4, 3: %v, want 4 at the third", got)
	}
	// An interval that wants the count it has starts the count of fewer again.
	s = NewSizer(8)
	if got := steps(s, 0.3, 0.3, 3.9, 0.3, 0.3); !slices.Equal(got, []int{8, 8, 8, 8, 8}) {
		t.Errorf("a busy interval between light ones: %v, want 8 throughout", got)
	}
}

func TestSizerAtOneProcessor(t *testing.T) {
	s := NewSizer(0)
	if got := steps(s, 0, 5, 0.1); !slices.Equal(got, []int{1, 1, 1}) {
		t.Errorf("Max 1: %v, want 1 throughout", got)
	}
}

// Run sets the runtime's processors as the Sizer says, and gives back the count it
// started from when it ends. The bubble's clock drives its ticker.
func TestRunResizesTheRuntime(t *testing.T) {
	start := runtime.GOMAXPROCS(0)
	if start < 2 {
		runtime.GOMAXPROCS(2)
		defer runtime.GOMAXPROCS(start)
	}
	before := runtime.GOMAXPROCS(0)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { // no processor time at all: a light load
			defer close(done)
			Run(ctx, func() (time.Duration, time.Duration, bool) { return 0, 0, true }, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		time.Sleep(time.Duration(DownAfter)*Interval + Interval/2)
		synctest.Wait()
		if got := runtime.GOMAXPROCS(0); got != 1 {
			t.Errorf("an idle process after %d intervals runs on %d processors, want 1", DownAfter, got)
		}
		cancel()
		<-done
	})
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("after Run: %d processors, want the %d it started from", got, before)
	}
}
