package cache

import (
	"context"
	"errors"
	"testing"
	"time"
)

// waitResult is what one waiter's Wait returned.
type waitResult struct {
	e   *Entry
	err error
}

func TestFill(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), t0)
	defer cancel2()
	tests := []struct {
		name      string
		result    *Entry          // what the leader Puts and hands to Done
		waiterCtx context.Context // nil: Background
		wantErr   error
		wantEntry bool // waiters get the leader's entry (else nil)
		wantCache bool // the store holds it after
	}{
		{name: "leader stores, waiters share", result: entry(10, time.Second, "db.t"), wantEntry: true, wantCache: true},
		{name: "leader caches nothing", result: nil},
		{name: "refused by Put, still handed over", result: entry(1<<20, time.Second), wantEntry: true},
		{name: "waiter cancelled", result: entry(10, time.Second), waiterCtx: cancelled, wantErr: context.Canceled, wantCache: true},
		{name: "waiter past its deadline", result: entry(10, time.Second), waiterCtx: expired, wantErr: context.DeadlineExceeded, wantCache: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Config{MaxBytes: 1 << 20, MaxEntryBytes: 1 << 10})
			key := []byte("SELECT 1")
			f, leader := s.Fill(key)
			if !leader {
				t.Fatal("first Fill is not the leader")
			}
			ctx := tt.waiterCtx
			if ctx == nil {
				ctx = context.Background()
			}
			const waiters = 5
			results := make(chan waitResult, waiters)
			for range waiters {
				w, leader := s.Fill(key)
				if leader || w != f {
					t.Fatal("a Fill during a fill did not join it")
				}
				go func() { // ends when the fill is done or ctx ends
					e, err := w.Wait(ctx)
					results <- waitResult{e, err}
				}()
			}
			got := make([]waitResult, 0, waiters)
			if tt.wantErr != nil {
				// Cancelled waiters return while the leader still runs.
				for range waiters {
					got = append(got, receive(t, results))
				}
			} else {
				select {
				case r := <-results:
					t.Fatalf("Wait returned %+v before the leader was done", r)
				default:
				}
			}
			if tt.result != nil {
				s.Put(key, tt.result)
			}
			f.Done(tt.result)
			for len(got) < waiters {
				got = append(got, receive(t, results))
			}
			for _, r := range got {
				if !errors.Is(r.err, tt.wantErr) {
					t.Errorf("Wait error = %v, want %v", r.err, tt.wantErr)
				}
				if want := tt.wantEntry && tt.wantErr == nil; (r.e == tt.result && r.e != nil) != want {
					t.Errorf("Wait entry = %p, leader's %p; want shared %v", r.e, tt.result, want)
				}
				if r.e != nil && r.e != tt.result {
					t.Error("Wait returned an entry not the leader's")
				}
			}
			if got := s.Get(key, t0) != nil; got != tt.wantCache {
				t.Errorf("stored after Done = %v, want %v", got, tt.wantCache)
			}
			if st := s.Stats(); st.Coalesced != waiters {
				t.Errorf("Coalesced = %d, want %d", st.Coalesced, waiters)
			}
			next, leader := s.Fill(key)
			if !leader || next == f {
				t.Error("the Fill after Done did not start a new fill")
			}
			next.Done(nil)
		})
	}
}

// receive returns the next result, failing t if none comes within a generous deadline.
func receive(t *testing.T, results <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-results:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return")
		return waitResult{}
	}
}

func TestFillKeysAreIndependent(t *testing.T) {
	s := New(Config{MaxBytes: 1 << 20})
	a, leaderA := s.Fill([]byte("a"))
	b, leaderB := s.Fill([]byte("b"))
	if !leaderA || !leaderB || a == b {
		t.Fatal("fills of different keys joined")
	}
	a.Done(nil)
	if _, leader := s.Fill([]byte("b")); leader {
		t.Error("b's fill ended with a's")
	}
	b.Done(nil)
}

func TestFillWaitAfterDone(t *testing.T) {
	s := New(Config{MaxBytes: 1 << 20})
	f, _ := s.Fill([]byte("k"))
	w, _ := s.Fill([]byte("k"))
	e := entry(10, time.Second)
	s.Put([]byte("k"), e)
	f.Done(e)
	// Even with ctx already over, a finished fill hands over its entry.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, err := w.Wait(ctx); got != e || err != nil {
		t.Errorf("Wait after Done = %p, %v; want %p, nil", got, err, e)
	}
}

func TestFillDoneTwicePanics(t *testing.T) {
	s := New(Config{MaxBytes: 1 << 20})
	f, _ := s.Fill([]byte("k"))
	f.Done(nil)
	defer func() {
		if recover() == nil {
			t.Error("second Done did not panic")
		}
	}()
	f.Done(nil)
}
