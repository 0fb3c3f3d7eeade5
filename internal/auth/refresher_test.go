package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// manualClock is a clock that moves only when told to.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// source is a load function whose accounts and failures the test sets.
type source struct {
	mu    sync.Mutex
	loads int
	users []string // names of the accounts the next load returns
	err   error    // the next load fails with err if set
}

func (s *source) load(ctx context.Context) (*Users, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loads++
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.err != nil {
		return nil, s.err
	}
	var us []User
	for _, name := range s.users {
		us = append(us, User{Name: name, Host: "%", HasPassword: true})
	}
	return NewUsers(us...), nil
}

func (s *source) set(users []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users, s.err = users, err
}

func (s *source) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loads
}

// lockedBuffer is a log destination safe to write from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestRefreshNowRateLimit(t *testing.T) {
	tests := []struct {
		name        string
		minInterval time.Duration // zero: the default
		steps       []time.Duration
		want        []bool // RefreshNow's answer after each step's advance
	}{
		{"default one second", 0,
			[]time.Duration{0, 0, 500 * time.Millisecond, 499 * time.Millisecond, time.Millisecond, 0},
			[]bool{true, false, false, false, true, false}},
		{"ten seconds", 10 * time.Second,
			[]time.Duration{0, 5 * time.Second, 5 * time.Second, 9 * time.Second, 2 * time.Second},
			[]bool{true, false, true, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &manualClock{t: time.Unix(1e9, 0)}
			src := &source{users: []string{"app"}}
			store := NewStore()
			r := NewRefresher(store, src.load, time.Minute, nil)
			r.Now, r.MinInterval = clock.now, tt.minInterval
			wantLoads := 0
			for i, d := range tt.steps {
				clock.advance(d)
				got := r.RefreshNow(t.Context())
				if got != tt.want[i] {
					t.Fatalf("step %d (+%v): RefreshNow = %v, want %v", i, d, got, tt.want[i])
				}
				if got {
					wantLoads++
				}
				if n := src.count(); n != wantLoads {
					t.Fatalf("step %d: %d loads, want %d", i, n, wantLoads)
				}
			}
			if _, ok := store.Lookup("app", netip.Addr{}); !ok {
				t.Error("the loaded account is not in the store")
			}
		})
	}
}

// A flood of clients with unknown users makes one load per MinInterval.
func TestRefreshNowFlood(t *testing.T) {
	clock := &manualClock{t: time.Unix(1e9, 0)}
	src := &source{}
	r := NewRefresher(NewStore(), src.load, time.Minute, nil)
	r.Now = clock.now
	var wg sync.WaitGroup
	for range 10 { // ten seconds, a thousand clients a second
		for range 1000 {
			wg.Go(func() { r.RefreshNow(t.Context()) })
		}
		wg.Wait()
		clock.advance(time.Second)
	}
	if n := src.count(); n != 10 {
		t.Errorf("%d loads for ten seconds of unknown users, want 10", n)
	}
}

func TestRefresherKeepsAccountsOnFailure(t *testing.T) {
	clock := &manualClock{t: time.Unix(1e9, 0)}
	src := &source{users: []string{"app"}}
	store := NewStore()
	var logs lockedBuffer
	r := NewRefresher(store, src.load, time.Minute, slog.New(slog.NewTextHandler(&logs, nil)))
	r.Now = clock.now
	has := func(name string) bool {
		_, ok := store.Lookup(name, netip.Addr{})
		return ok
	}

	steps := []struct {
		users    []string
		err      error
		want     bool
		present  string // an account the store has afterwards
		absent   string // one it has not
		warnings int    // log lines so far
		recovers int
	}{
		{[]string{"app"}, nil, true, "app", "new", 0, 0},
		{[]string{"new"}, errors.New("connection refused"), false, "app", "new", 1, 0},
		{nil, errors.New("connection refused"), false, "app", "new", 1, 0}, // warned once
		{[]string{"new"}, nil, true, "new", "app", 1, 1},
		{nil, errors.New("access denied"), false, "new", "app", 2, 1},
	}
	for i, st := range steps {
		src.set(st.users, st.err)
		clock.advance(time.Second)
		if got := r.RefreshNow(t.Context()); got != st.want {
			t.Fatalf("step %d: RefreshNow = %v, want %v", i, got, st.want)
		}
		if !has(st.present) || has(st.absent) {
			t.Errorf("step %d: store has %s: %v, %s: %v; want true, false", i, st.present, has(st.present), st.absent, has(st.absent))
		}
		out := logs.String()
		if w := strings.Count(out, "level=WARN"); w != st.warnings {
			t.Errorf("step %d: %d warnings, want %d:\n%s", i, w, st.warnings, out)
		}
		if n := strings.Count(out, "works again"); n != st.recovers {
			t.Errorf("step %d: %d recoveries logged, want %d:\n%s", i, n, st.recovers, out)
		}
	}
	if !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("the warning does not say why:\n%s", logs.String())
	}
}

// A load that its caller cancels says nothing about the source: no warning, and the
// accounts stay.
func TestRefreshNowCanceled(t *testing.T) {
	src := &source{users: []string{"app"}}
	store := NewStore()
	store.Swap(NewUsers(User{Name: "old", Host: "%"}))
	var logs lockedBuffer
	r := NewRefresher(store, src.load, time.Minute, slog.New(slog.NewTextHandler(&logs, nil)))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if r.RefreshNow(ctx) {
		t.Fatal("RefreshNow = true with a canceled context")
	}
	if _, ok := store.Lookup("old", netip.Addr{}); !ok {
		t.Error("a canceled load dropped the accounts")
	}
	if out := logs.String(); out != "" {
		t.Errorf("a canceled load logged:\n%s", out)
	}
}

// Callers that find a load under way wait for it and share its outcome; loads never overlap.
func TestRefreshNowJoinsLoadUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var mu sync.Mutex
		loads, running, overlap := 0, 0, false
		load := func(ctx context.Context) (*Users, error) {
			mu.Lock()
			loads++
			running++
			overlap = overlap || running > 1
			mu.Unlock()
			<-release
			mu.Lock()
			running--
			mu.Unlock()
			return NewUsers(User{Name: "app", Host: "%"}), nil
		}
		r := NewRefresher(NewStore(), load, time.Minute, nil)
		results := make(chan bool, 5)
		for range 5 {
			go func() { results <- r.RefreshNow(t.Context()) }()
		}
		synctest.Wait() // one load started, the other callers wait for it
		close(release)
		for range 5 {
			if !<-results {
				t.Error("a caller that joined the load got false")
			}
		}
		if loads != 1 || overlap {
			t.Errorf("%d loads (overlapping: %v), want 1", loads, overlap)
		}
	})
}

func TestRefresherRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 30 * time.Second
		loaded := make(chan int)
		n := 0
		load := func(ctx context.Context) (*Users, error) {
			n++
			loaded <- n
			return NewUsers(User{Name: fmt.Sprint("user", n), Host: "%"}), nil
		}
		store := NewStore()
		r := NewRefresher(store, load, interval, nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		start := time.Now()
		go func() {
			defer close(done)
			r.Run(ctx)
		}()
		for want := 1; want <= 3; want++ {
			got := <-loaded
			if elapsed := time.Since(start); got != want || elapsed != time.Duration(want)*interval {
				t.Fatalf("load %d after %v, want load %d after %v", got, elapsed, want, time.Duration(want)*interval)
			}
		}
		synctest.Wait() // the third load's accounts are in
		if _, ok := store.Lookup("user3", netip.Addr{}); !ok {
			t.Error("the store lacks the accounts of the last load")
		}
		cancel()
		<-done
	})
}

func TestRefresherRunWithoutInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &source{}
		r := NewRefresher(NewStore(), src.load, 0, nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.Run(ctx)
		}()
		synctest.Wait()
		cancel()
		<-done
		if n := src.count(); n != 0 {
			t.Errorf("%d loads without an interval, want 0", n)
		}
	})
}
