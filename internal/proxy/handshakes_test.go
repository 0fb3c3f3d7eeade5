package proxy

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestHandshakeGate(t *testing.T) {
	g := newHandshakeGate(3, 2)
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	enter := func(addr netip.Addr, wait time.Duration) (*loginSlot, string) {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		return g.enter(ctx, addr, time.Now(), func() { t.Error("a login that never got its greeting was evicted") })
	}
	a1, r := enter(a, time.Second)
	a2, r2 := enter(a, time.Second)
	if r != "" || r2 != "" {
		t.Fatalf("the first two logins of a were refused: %q %q", r, r2)
	}
	if _, r := enter(a, 10*time.Millisecond); r != "max_handshakes_per_client" {
		t.Errorf("a third login of a: %q, want refused by max_handshakes_per_client", r)
	}
	b1, r := enter(b, time.Second)
	if r != "" {
		t.Fatalf("b was refused: %q", r)
	}
	if _, r := enter(b, 10*time.Millisecond); r != "max_handshakes" {
		t.Errorf("a fourth login in all: %q, want refused by max_handshakes", r)
	}
	if g.inProgress() != 3 {
		t.Errorf("in progress = %d, want 3", g.inProgress())
	}
	// A login that waits gets the slot given back.
	done := make(chan string)
	go func() {
		slot, r := enter(a, 5*time.Second)
		slot.leave()
		done <- r
	}()
	a1.leave()
	if r := <-done; r != "" {
		t.Errorf("a waiting login was refused after a slot came free: %q", r)
	}
	a2.leave()
	b1.leave()
	b1.leave() // again: no effect
	if g.inProgress() != 0 || len(g.byAddr) != 0 {
		t.Errorf("after every login ended: %d in progress, %d addresses kept", g.inProgress(), len(g.byAddr))
	}
	free := newHandshakeGate(0, 0)
	for range 100 {
		if _, r := free.enter(context.Background(), a, time.Now(), nil); r != "" {
			t.Fatal("a gate without bounds refused a login")
		}
	}
}

// manualGateClock is a manual clock: its timers run in advance, in the test's goroutine.
type manualGateClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualGateTimer
}

type manualGateTimer struct {
	c       *manualGateClock
	at      time.Time
	f       func()
	stopped bool
}

var _ gateClock = (*manualGateClock)(nil)

func (c *manualGateClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualGateClock) AfterFunc(d time.Duration, f func()) gateTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	tm := &manualGateTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, tm)
	return tm
}

func (tm *manualGateTimer) Stop() bool {
	tm.c.mu.Lock()
	defer tm.c.mu.Unlock()
	was := !tm.stopped
	tm.stopped = true
	return was
}

// advance moves the clock by d and runs the timers due, in order.
func (c *manualGateClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*manualGateTimer
	c.timers = slices.DeleteFunc(c.timers, func(tm *manualGateTimer) bool {
		if tm.stopped || tm.at.After(c.now) {
			return tm.stopped
		}
		tm.stopped = true
		due = append(due, tm)
		return true
	})
	c.mu.Unlock()
	slices.SortStableFunc(due, func(x, y *manualGateTimer) int { return x.at.Compare(y.at) })
	for _, tm := range due {
		tm.f()
	}
}

// gateScript drives a gate on a manual clock. Logins are named; each one's evict records
// its name, as the session's closing of its connection would.
type gateScript struct {
	t     *testing.T
	g     *handshakeGate
	clock *manualGateClock
	slots map[string]*loginSlot
	// results get what each login started with start ends with: "" (a slot) or the bound
	// that refused it.
	results map[string]chan string
	cancels map[string]context.CancelFunc

	mu      sync.Mutex
	evicted []string
}

func newGateScript(t *testing.T, max, perClient int) *gateScript {
	clock := &manualGateClock{now: time.Unix(1000, 0)}
	g := newHandshakeGate(max, perClient)
	g.clock = clock
	return &gateScript{t: t, g: g, clock: clock, slots: map[string]*loginSlot{},
		results: map[string]chan string{}, cancels: map[string]context.CancelFunc{}}
}

// start has login name, from addr, accepted now, enter the gate in a goroutine of its
// own, and waits until it holds a slot or waits for one.
func (s *gateScript) start(name, addr string) {
	s.startAccepted(name, addr, s.clock.Now())
}

// startAccepted is start for a connection accepted at since.
func (s *gateScript) startAccepted(name, addr string, since time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan string, 1)
	s.results[name], s.cancels[name] = done, cancel
	evict := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.evicted = append(s.evicted, name)
	}
	go func() { // ends when the login gets a slot or gives up
		slot, refused := s.g.enter(ctx, netip.MustParseAddr(addr), since, evict)
		s.mu.Lock()
		s.slots[name] = slot
		s.mu.Unlock()
		done <- refused
	}()
	synctest.Wait()
}

// holds enters logins that must get a slot at once.
func (s *gateScript) holds(addr string, names ...string) {
	s.t.Helper()
	for _, name := range names {
		s.start(name, addr)
		if r := s.outcome(name); r != "held" {
			s.t.Fatalf("%s: %s, want a slot at once", name, r)
		}
	}
}

// outcome says where login name stands: "waiting", "held", or the bound that refused it.
func (s *gateScript) outcome(name string) string {
	synctest.Wait()
	done := s.results[name]
	select {
	case r := <-done:
		done <- r
		if r != "" {
			return r
		}
		return "held"
	default:
		return "waiting"
	}
}

func (s *gateScript) slot(name string) *loginSlot {
	s.t.Helper()
	if s.outcome(name) != "held" {
		s.t.Fatalf("%s holds no slot", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slots[name]
}

// greet marks logins greeted, and then the clock moves by gap.
func (s *gateScript) greet(gap time.Duration, names ...string) {
	for _, name := range names {
		s.slot(name).greeted()
		s.clock.advance(gap)
	}
}

// takeEvicted returns the logins evicted since it was last called.
func (s *gateScript) takeEvicted() []string {
	synctest.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.evicted
	s.evicted = nil
	return e
}

func (s *gateScript) expectEvicted(want ...string) {
	s.t.Helper()
	if got := s.takeEvicted(); !slices.Equal(got, want) {
		s.t.Errorf("evicted %q, want %q", got, want)
	}
}

func (s *gateScript) expect(name, want string) {
	s.t.Helper()
	if got := s.outcome(name); got != want {
		s.t.Errorf("%s: %s, want %s", name, got, want)
	}
}

// leave ends login name, as its session does when it ends.
func (s *gateScript) leave(name string) {
	s.slot(name).leave()
	synctest.Wait()
}

func (s *gateScript) expectInProgress(want int) {
	s.t.Helper()
	if got := s.g.inProgress(); got != want {
		s.t.Errorf("%d logins in progress, want %d (the bound holds while an evicted login ends)", got, want)
	}
}

const (
	addrA = "10.0.0.1"
	addrB = "10.0.0.2"
	addrC = "10.0.0.3"
)

// Past the bound of an address, the newcomer takes the place of the address's login
// silent longest since its greeting, once that login has ended; a login that answered
// its greeting keeps its place.
func TestHandshakeGateEvictsTheOldestSilentOfTheAddress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newGateScript(t, 0, 3)
		s.holds(addrA, "a1", "a2", "a3")
		s.holds(addrB, "b1")
		s.greet(10*time.Millisecond, "a1", "b1", "a2", "a3")
		if !s.slot("a1").answered() {
			t.Fatal("a1's answer came too late")
		}
		s.clock.advance(silentGrace)
		s.start("a4", addrA)
		s.expectEvicted("a2")
		s.expect("a4", "waiting") // until a2 has left
		s.expectInProgress(4)
		if s.slot("a2").answered() {
			t.Error("a2 answered after it was evicted, and was let on")
		}
		if !s.slot("a2").wasEvicted() || s.slot("a3").wasEvicted() {
			t.Error("wasEvicted does not tell a2 from a3")
		}
		s.leave("a2")
		s.expect("a4", "held")
		s.expectInProgress(4)
		// a3 is silent longest now; b1 is of another address.
		s.start("a5", addrA)
		s.expectEvicted("a3")
		s.leave("a3")
		s.expect("a5", "held")
		for _, name := range []string{"a1", "a4", "a5", "b1"} {
			s.leave(name)
		}
		if s.g.inProgress() != 0 || len(s.g.byAddr) != 0 || s.g.silent.Len() != 0 {
			t.Errorf("after every login ended: %d in progress, %d addresses, %d silent", s.g.inProgress(), len(s.g.byAddr), s.g.silent.Len())
		}
	})
}

// Past the bound on all logins, the newcomer takes the place of the login silent longest
// of any address, and its address counts the place from then on.
func TestHandshakeGateEvictsTheOldestSilentOfAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newGateScript(t, 3, 2)
		s.holds(addrA, "a1", "a2")
		s.holds(addrB, "b1")
		s.greet(10*time.Millisecond, "a1", "b1", "a2")
		s.slot("a1").answered()
		s.clock.advance(silentGrace)
		s.start("c1", addrC)
		s.expectEvicted("b1")
		s.start("c2", addrC)
		s.expectEvicted("a2")
		// c has two places promised: its bound, though neither is free yet.
		s.start("c3", addrC)
		s.expectEvicted()
		s.expect("c3", "waiting")
		s.expectInProgress(3)
		s.leave("a2")
		s.expect("c2", "held")
		s.expect("c1", "waiting")
		s.leave("b1")
		s.expect("c1", "held")
		s.expectInProgress(3)
		s.cancels["c3"]()
		s.expect("c3", "max_handshakes_per_client")
	})
}

// While every holder has answered, or keeps within its grace, the newcomer waits; when
// the grace of one ends, the newest waiting takes its place, and a slot that comes free
// goes to the one that has waited longest.
func TestHandshakeGateWaitsForSilence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newGateScript(t, 0, 2)
		s.holds(addrA, "a1", "a2")
		s.greet(0, "a1", "a2")
		s.slot("a1").answered()
		s.slot("a2").answered()
		s.start("a3", addrA)
		s.clock.advance(time.Minute)
		s.expectEvicted()
		s.expect("a3", "waiting")
		s.cancels["a3"]()
		s.expect("a3", "max_handshakes_per_client")

		s.leave("a2")
		s.holds(addrA, "a4")
		s.greet(0, "a4")
		s.start("a5", addrA)
		s.start("a6", addrA)
		s.clock.advance(silentGrace - time.Millisecond)
		s.expectEvicted()
		s.clock.advance(time.Millisecond) // a4's grace ends: the timer looks again
		s.expectEvicted("a4")
		s.leave("a4")
		s.expect("a6", "held")
		s.expect("a5", "waiting")
		s.leave("a1")
		s.expect("a5", "held")
	})
}

// Those waiting are in line by when they were accepted, not by when they reached the gate
// (under a flood, later than others accepted after them): the one accepted last takes a
// silent holder's place, the one accepted first a slot that comes free.
func TestHandshakeGateOrdersByAcceptance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newGateScript(t, 0, 2)
		s.holds(addrA, "a1", "a2")
		s.greet(0, "a1", "a2")
		s.slot("a2").answered()
		accepted := s.clock.Now()
		s.startAccepted("middle", addrA, accepted.Add(2*time.Millisecond))
		s.startAccepted("last", addrA, accepted.Add(3*time.Millisecond))
		s.startAccepted("first", addrA, accepted.Add(time.Millisecond))
		s.clock.advance(silentGrace)
		s.expectEvicted("a1")
		s.leave("a1")
		s.expect("last", "held")
		s.leave("a2")
		s.expect("first", "held")
		s.expect("middle", "waiting")
		s.cancels["middle"]()
		s.expect("middle", "max_handshakes_per_client")
	})
}

// A newcomer whose time to wait is up before the login it evicted has left gives up its
// promise; the slot then comes free for those waiting.
func TestHandshakeGateHeirGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newGateScript(t, 2, 2)
		s.holds(addrA, "a1")
		s.holds(addrB, "b1")
		s.greet(0, "a1", "b1")
		s.slot("b1").answered()
		s.clock.advance(silentGrace)
		s.start("c1", addrC)
		s.expectEvicted("a1")
		s.cancels["c1"]()
		s.expect("c1", "max_handshakes")
		s.g.mu.Lock()
		n := s.g.countLocked(netip.MustParseAddr(addrC))
		s.g.mu.Unlock()
		if n != 0 {
			t.Errorf("c counts %d places after its login gave up, want 0", n)
		}
		s.start("b2", addrB)
		s.expect("b2", "waiting")
		s.leave("a1")
		s.expect("b2", "held")
		s.expectInProgress(2)
	})
}

// 2000 sockets whose handshakes time out write a line a minute, not 2000 lines.
func TestLogEvery(t *testing.T) {
	l := logEvery{period: time.Minute}
	start := time.Unix(1000, 0)
	lines, counted := 0, 0
	for i := range 2000 {
		if n, ok := l.allow(start.Add(time.Duration(i) * 10 * time.Millisecond)); ok {
			lines++
			counted += n
		}
	}
	if lines != 1 || counted != 1 {
		t.Errorf("%d lines counting %d timeouts in 20 s, want 1 line", lines, counted)
	}
	if n, ok := l.allow(start.Add(2 * time.Minute)); !ok || n != 2000 {
		t.Errorf("the next line after a minute: %v, %d; want it, counting 2000 (the 1999 left out and itself)", ok, n)
	}
}
