package proxy

import (
	"context"
	"net/netip"
	"sync"
)

// handshakeGate bounds the client connections that are logging in. A client is not known
// until it has authenticated, and in passthrough mode each login holds a backend connection
// from its first moment (the server speaks first): without a bound, sockets that connect and
// never speak would fill the database's max_connections for everyone. Past the bound a new
// connection waits for a slot within its handshake deadline, and is refused when none comes.
type handshakeGate struct {
	// slots holds a token per login in progress; nil: no bound.
	slots     chan struct{}
	perClient int // 0: no bound

	mu     sync.Mutex
	byAddr map[netip.Addr]*clientLogins
}

// clientLogins counts one address's logins in progress; freed is closed (and replaced)
// whenever one ends, to wake those that wait.
type clientLogins struct {
	n     int
	freed chan struct{}
}

func newHandshakeGate(max, perClient int) *handshakeGate {
	g := &handshakeGate{perClient: perClient, byAddr: map[netip.Addr]*clientLogins{}}
	if max > 0 {
		g.slots = make(chan struct{}, max)
	}
	return g
}

// enter waits for a login slot for a client at addr until ctx ends. It returns the
// function that gives the slot back, or the bound that refused the client.
func (g *handshakeGate) enter(ctx context.Context, addr netip.Addr) (leave func(), refused string) {
	if g.perClient > 0 {
		for {
			g.mu.Lock()
			c := g.byAddr[addr]
			if c == nil {
				c = &clientLogins{freed: make(chan struct{})}
				g.byAddr[addr] = c
			}
			if c.n < g.perClient {
				c.n++
				g.mu.Unlock()
				break
			}
			freed := c.freed
			g.mu.Unlock()
			select {
			case <-freed:
			case <-ctx.Done():
				return nil, "max_handshakes_per_client"
			}
		}
	}
	if g.slots != nil {
		select {
		case g.slots <- struct{}{}:
		case <-ctx.Done():
			g.leaveClient(addr)
			return nil, "max_handshakes"
		}
	}
	return func() {
		if g.slots != nil {
			<-g.slots
		}
		g.leaveClient(addr)
	}, ""
}

func (g *handshakeGate) leaveClient(addr netip.Addr) {
	if g.perClient <= 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.byAddr[addr]
	c.n--
	close(c.freed)
	c.freed = make(chan struct{})
	if c.n == 0 {
		delete(g.byAddr, addr)
	}
}

// inProgress returns the logins in progress, for metrics.
func (g *handshakeGate) inProgress() int {
	if g.slots == nil {
		return 0
	}
	return len(g.slots)
}
