package proxy

import (
	"container/list"
	"context"
	"net/netip"
	"sync"
	"time"
)

// silentGrace is how long a login may keep silent after its greeting before a newer
// connection may take its slot: longer than a client takes to answer (a round trip and its
// TLS decision), short enough that a client at the address of sockets that never speak
// logs in well within its handshake timeout.
const silentGrace = 500 * time.Millisecond

// handshakeGate bounds the client connections that are logging in. A client is not known
// until it has authenticated, and in passthrough mode each login holds a backend connection
// from its first moment (the server speaks first): without a bound, sockets that connect and
// never speak would fill the database's max_connections for everyone.
//
// Past a bound (on all logins, or on those of one address) a new connection waits for a
// slot within its handshake deadline, and is refused when none comes. A slot comes free
// when its login ends, and goes to the connection that has waited longest. A slot is also
// given up when its login has kept silent for silentGrace since its greeting and a
// connection waits that the slot would let in: the silent connection is closed, and its
// slot goes to the newest such connection (by when it was accepted), so that sockets that
// never speak cannot lock out a client that shares their address (NAT, the same host),
// however many of them wait. A login that has answered its greeting is never given up.
// The slot passes once the closed login has ended, its backend connection closed with it:
// the logins in progress never exceed the bounds.
type handshakeGate struct {
	max, perClient int // 0: no bound
	clock          gateClock
	// evictions limits the log lines of logins given up for newer connections.
	evictions logEvery

	mu sync.Mutex
	// held counts the slots held; byAddr what each address holds or has been promised.
	held   int
	byAddr map[netip.Addr]*clientLogins
	// silent are the holders greeted and silent since, by greeting time; waiting the
	// connections waiting for a slot, by when they were accepted. Both hold *loginSlot.
	silent  list.List
	waiting list.List
	// sweep is the timer that looks again for a silent holder to give up when the next
	// one's grace ends, while connections wait; sweepAt is when (zero: none armed), and
	// sweepGen tells the armed timer from those stopped too late.
	sweep    gateTimer
	sweepAt  time.Time
	sweepGen uint64
}

// clientLogins is one address's logins: the slots it holds or has been promised (n), and
// its silent holders by greeting time.
type clientLogins struct {
	n      int
	silent list.List
}

// gateClock is the gate's time: the wall clock, or a test's.
type gateClock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) gateTimer
}

// gateTimer is a timer the gate can stop.
type gateTimer interface{ Stop() bool }

type wallClock struct{}

var _ gateClock = wallClock{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) AfterFunc(d time.Duration, f func()) gateTimer { return time.AfterFunc(d, f) }

// loginSlot is a connection's place at the gate, from enter to leave. Its methods are
// nil-safe: a session without a login (a hand-over's) has none.
type loginSlot struct {
	g    *handshakeGate
	addr netip.Addr
	// since is when the connection was accepted: the order of those waiting.
	since time.Time
	// evict closes the connection; the gate calls it, outside its lock, when it gives the
	// slot to a newer connection.
	evict func()
	// granted is closed when a connection that waited gets its slot.
	granted chan struct{}

	// The rest is guarded by g.mu.
	state     slotState
	greetedAt time.Time
	// inWaiting, inSilent and inAddrSilent are the slot's elements in g.waiting, g.silent
	// and its address's silent list; nil when it is not in them.
	inWaiting, inSilent, inAddrSilent *list.Element
	// heir is the connection that takes an evicted holder's slot when it has left; victim
	// the holder whose slot an heir waits for. reserved says that the heir's address
	// already counts the slot, the victim being of another address.
	heir, victim *loginSlot
	reserved     bool
	evicted      bool
}

type slotState uint8

const (
	slotWaiting slotState = iota // for a slot to come free
	slotHeir                     // for the holder it evicted to leave
	slotHeld
	slotLeft // gave the slot back, or never got one
)

func newHandshakeGate(max, perClient int) *handshakeGate {
	return &handshakeGate{max: max, perClient: perClient, clock: wallClock{},
		evictions: logEvery{period: time.Minute}, byAddr: map[netip.Addr]*clientLogins{}}
}

// enter waits for a login slot until ctx ends, for a client at addr whose connection was
// accepted at since; evict closes the connection, should its slot be given to a newer one.
// It returns the slot, or the bound that refused the client.
func (g *handshakeGate) enter(ctx context.Context, addr netip.Addr, since time.Time, evict func()) (*loginSlot, string) {
	s := &loginSlot{g: g, addr: addr, since: since, evict: evict}
	g.mu.Lock()
	if g.fitsLocked(addr) {
		g.holdLocked(s)
		g.mu.Unlock()
		return s, ""
	}
	if ctx.Err() != nil {
		// Too late to wait: a place taken for it would go unused.
		refused := g.refusalLocked(addr)
		g.mu.Unlock()
		return nil, refused
	}
	s.granted = make(chan struct{})
	g.queueLocked(s)
	acts := g.settleLocked()
	g.mu.Unlock()
	acts.run()
	select {
	case <-s.granted:
		return s, ""
	case <-ctx.Done():
		return g.giveUp(s)
	}
}

// queueLocked puts s in line among those waiting, after those accepted before it: under a
// flood, connections reach the gate in another order than they were accepted.
func (g *handshakeGate) queueLocked(s *loginSlot) {
	for e := g.waiting.Back(); e != nil; e = e.Prev() {
		if !e.Value.(*loginSlot).since.After(s.since) {
			s.inWaiting = g.waiting.InsertAfter(s, e)
			return
		}
	}
	s.inWaiting = g.waiting.PushFront(s)
}

// giveUp takes a connection whose time to wait is up out of line, and returns the bound
// that refused it; a slot that came meanwhile is kept.
func (g *handshakeGate) giveUp(s *loginSlot) (*loginSlot, string) {
	g.mu.Lock()
	switch s.state {
	case slotHeld:
		g.mu.Unlock()
		return s, ""
	case slotWaiting:
		g.waiting.Remove(s.inWaiting)
		s.inWaiting = nil
	case slotHeir:
		s.victim.heir, s.victim = nil, nil
		if s.reserved {
			s.reserved = false
			g.releaseAddrLocked(s.addr)
		}
	}
	s.state = slotLeft
	refused := g.refusalLocked(s.addr)
	acts := g.settleLocked() // a promise given back may let another in
	g.mu.Unlock()
	acts.run()
	return nil, refused
}

// refusalLocked names the bound that keeps a connection from addr out.
func (g *handshakeGate) refusalLocked(addr netip.Addr) string {
	if g.perClient > 0 && g.countLocked(addr) >= g.perClient {
		return "max_handshakes_per_client"
	}
	return "max_handshakes"
}

// greeted marks the moment the connection is sent its greeting: from then on its silence
// counts.
func (s *loginSlot) greeted() {
	if s == nil {
		return
	}
	g := s.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.state != slotHeld || !s.greetedAt.IsZero() {
		return
	}
	s.greetedAt = g.clock.Now()
	s.inSilent = g.silent.PushBack(s)
	s.inAddrSilent = g.byAddr[s.addr].silent.PushBack(s)
	g.armLocked(s.greetedAt)
}

// answered marks the connection's first packet after the greeting, which keeps its slot
// to the end of the login. It returns false when the slot was given up an instant before
// and the connection is being closed.
func (s *loginSlot) answered() bool {
	if s == nil {
		return true
	}
	g := s.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.evicted {
		return false
	}
	g.unsilenceLocked(s)
	return true
}

// wasEvicted says whether the slot was given up for a newer connection.
func (s *loginSlot) wasEvicted() bool {
	if s == nil {
		return false
	}
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	return s.evicted
}

// leave gives the slot back: to the connection that evicted its holder, or to those
// waiting. It may be called again, to no effect.
func (s *loginSlot) leave() {
	if s == nil {
		return
	}
	g := s.g
	g.mu.Lock()
	if s.state != slotHeld {
		g.mu.Unlock()
		return
	}
	s.state = slotLeft
	g.unsilenceLocked(s)
	h := s.heir
	if h == nil || h.addr != s.addr {
		g.releaseAddrLocked(s.addr)
	}
	if h == nil {
		g.held--
	} else {
		s.heir, h.victim, h.reserved = nil, nil, false
		h.state = slotHeld
	}
	acts := g.settleLocked()
	if h != nil {
		acts.granted = append(acts.granted, h)
	}
	g.mu.Unlock()
	acts.run()
}

// inProgress returns the logins in progress, for metrics.
func (g *handshakeGate) inProgress() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// gateActs is what a change at the gate leaves to do once its lock is released: wake the
// connections given a slot, close those given up.
type gateActs struct {
	granted, evicted []*loginSlot
}

func (a gateActs) run() {
	for _, s := range a.granted {
		close(s.granted)
	}
	for _, s := range a.evicted {
		s.evict()
	}
}

// settleLocked gives the free slots to the connections waiting, oldest first; then the
// slots of holders silent past their grace, oldest first, each to the newest connection
// waiting that it lets in; and arms the timer for when the next holder's grace ends.
func (g *handshakeGate) settleLocked() (acts gateActs) {
	for e := g.waiting.Front(); e != nil && (g.max == 0 || g.held < g.max); {
		next := e.Next()
		if w := e.Value.(*loginSlot); g.fitsLocked(w.addr) {
			g.waiting.Remove(e)
			w.inWaiting = nil
			g.holdLocked(w)
			acts.granted = append(acts.granted, w)
		}
		e = next
	}
	now := g.clock.Now()
	if first := g.silent.Front(); first != nil && !first.Value.(*loginSlot).inGraceLocked(now) {
		for e := g.waiting.Back(); e != nil; {
			prev := e.Prev()
			w := e.Value.(*loginSlot)
			if v := g.victimLocked(w.addr, now); v != nil {
				g.evictLocked(v, w)
				acts.evicted = append(acts.evicted, v)
			}
			e = prev
		}
	}
	g.armLocked(now)
	return acts
}

// inGrace says whether s, a silent holder, is still within its grace at now.
func (s *loginSlot) inGraceLocked(now time.Time) bool {
	return now.Sub(s.greetedAt) < silentGrace
}

// victimLocked returns the holder that a connection from addr may evict at now: the
// oldest silent past its grace of the same address when that address is at its bound,
// else of all when all are; nil when there is none.
func (g *handshakeGate) victimLocked(addr netip.Addr, now time.Time) *loginSlot {
	var silent *list.List
	switch {
	case g.perClient > 0 && g.countLocked(addr) >= g.perClient:
		silent = &g.byAddr[addr].silent
	case g.max > 0 && g.held >= g.max:
		silent = &g.silent
	default:
		return nil
	}
	e := silent.Front()
	if e == nil {
		return nil
	}
	if v := e.Value.(*loginSlot); !v.inGraceLocked(now) {
		return v
	}
	return nil
}

// evictLocked gives holder v's slot to w, waiting, for when v has left.
func (g *handshakeGate) evictLocked(v, w *loginSlot) {
	g.unsilenceLocked(v)
	v.evicted, v.heir = true, w
	g.waiting.Remove(w.inWaiting)
	w.inWaiting = nil
	w.state, w.victim = slotHeir, v
	if w.addr != v.addr {
		// The slot counts for w's address from now, so that the address keeps within its
		// bound however many of its connections evict at once.
		g.addrLocked(w.addr).n++
		w.reserved = true
	}
}

// armLocked sets the timer for when the next silent holder's grace ends, while
// connections wait. The holders past their grace before it let no one waiting in.
func (g *handshakeGate) armLocked(now time.Time) {
	if g.waiting.Len() == 0 {
		return
	}
	var at time.Time
	for e := g.silent.Front(); e != nil; e = e.Next() {
		if s := e.Value.(*loginSlot); s.inGraceLocked(now) {
			at = s.greetedAt.Add(silentGrace)
			break
		}
	}
	if at.IsZero() || (!g.sweepAt.IsZero() && !at.Before(g.sweepAt)) {
		return
	}
	if g.sweep != nil {
		g.sweep.Stop()
	}
	g.sweepGen++
	gen := g.sweepGen
	g.sweepAt = at
	g.sweep = g.clock.AfterFunc(at.Sub(now), func() { g.sweepNow(gen) })
}

// sweepNow is the timer's: it gives up the silent holders whose grace has ended to the
// connections waiting.
func (g *handshakeGate) sweepNow(gen uint64) {
	g.mu.Lock()
	if gen == g.sweepGen {
		g.sweep, g.sweepAt = nil, time.Time{}
	}
	acts := g.settleLocked()
	g.mu.Unlock()
	acts.run()
}

func (g *handshakeGate) fitsLocked(addr netip.Addr) bool {
	return (g.max == 0 || g.held < g.max) && (g.perClient == 0 || g.countLocked(addr) < g.perClient)
}

func (g *handshakeGate) holdLocked(s *loginSlot) {
	g.held++
	g.addrLocked(s.addr).n++
	s.state = slotHeld
}

func (g *handshakeGate) countLocked(addr netip.Addr) int {
	if c := g.byAddr[addr]; c != nil {
		return c.n
	}
	return 0
}

func (g *handshakeGate) addrLocked(addr netip.Addr) *clientLogins {
	c := g.byAddr[addr]
	if c == nil {
		c = &clientLogins{}
		g.byAddr[addr] = c
	}
	return c
}

// releaseAddrLocked takes one slot off addr's count; an address with none is forgotten.
func (g *handshakeGate) releaseAddrLocked(addr netip.Addr) {
	c := g.byAddr[addr]
	if c.n--; c.n == 0 {
		delete(g.byAddr, addr)
	}
}

// unsilenceLocked takes s out of the silent lists.
func (g *handshakeGate) unsilenceLocked(s *loginSlot) {
	if s.inSilent == nil {
		return
	}
	g.silent.Remove(s.inSilent)
	g.byAddr[s.addr].silent.Remove(s.inAddrSilent)
	s.inSilent, s.inAddrSilent = nil, nil
}
