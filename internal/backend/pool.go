package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Errors of Acquire.
var (
	// ErrWaitTimeout reports that no connection came free within the pool's WaitTimeout.
	ErrWaitTimeout = errors.New("no backend connection came free in time")
	// ErrClosed reports a pool that was closed.
	ErrClosed = errors.New("pool closed")
	// ErrBackoff reports a dial refused because recent dials failed; it wraps the last
	// failure.
	ErrBackoff = errors.New("backend unavailable, not dialing again yet")
)

// PoolConfig are a pool's limits. Zero values take the defaults given.
type PoolConfig struct {
	// MaxOpen bounds the connections open to the backend, idle, leased or being opened.
	// Default 64.
	MaxOpen int
	// MaxIdle is how many idle connections are kept once they have been idle for a second;
	// the rest are closed, oldest first. Default 16.
	MaxIdle int
	// IdleTimeout closes a connection idle this long. Default 5m.
	IdleTimeout time.Duration
	// MaxLifetime closes a connection this old when it comes back. Default 1h.
	MaxLifetime time.Duration
	// WaitTimeout bounds the wait for a connection when MaxOpen are leased. Default 5s.
	WaitTimeout time.Duration
}

func (c *PoolConfig) defaults() {
	if c.MaxOpen <= 0 {
		c.MaxOpen = 64
	}
	if c.MaxIdle <= 0 {
		c.MaxIdle = 16
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 5 * time.Minute
	}
	if c.MaxLifetime <= 0 {
		c.MaxLifetime = time.Hour
	}
	if c.WaitTimeout <= 0 {
		c.WaitTimeout = 5 * time.Second
	}
}

// Dial backoff after a failed dial: it starts at minBackoff and doubles to maxBackoff.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
	// idleGrace is how long an idle connection past MaxIdle is kept, so that a load that
	// comes and goes does not close and reopen connections at every turn.
	idleGrace = time.Second
)

// Pool is the set of the proxy's connections to one backend.
type Pool struct {
	dialer  *Dialer
	cfg     PoolConfig
	log     *slog.Logger
	metrics *poolMetrics

	// mu guards the fields below it.
	mu sync.Mutex
	// idle holds the idle connections, the most recently released last.
	idle []*Conn
	// open counts the connections open or being opened; leased those lent out.
	open, leased int
	waiters      []*waiter
	// backoff is the dial backoff of the whole backend (network failures) and refused
	// that of single users whose login the backend refused.
	backoff dialBackoff
	refused map[string]*dialBackoff
	closed  bool

	stop chan struct{}
	done chan struct{}
}

type dialBackoff struct {
	until time.Time
	wait  time.Duration
	err   error
}

// waiter is an Acquire waiting for a connection; what it is given arrives on ch.
type waiter struct {
	ch chan grant
}

// grant is what a waiter gets: an idle connection, or a free slot to dial one in.
type grant struct {
	conn *Conn
	err  error
}

// Lease is a connection lent to one session until Release or Discard.
type Lease struct {
	pool  *Pool
	conn  *Conn
	since time.Time
}

// Conn returns the leased connection.
func (l *Lease) Conn() *Conn { return l.conn }

// Release gives the connection back for other sessions; a connection marked broken is
// closed instead.
func (l *Lease) Release() {
	l.pool.put(l.conn)
}

// Discard closes the connection: it broke, or holds state no other session may see.
func (l *Lease) Discard() {
	l.conn.broken = true
	l.pool.put(l.conn)
}

// NewPool returns a pool of connections dialed by d, and starts the goroutine that closes
// idle and old connections; Close stops it.
func NewPool(d *Dialer, cfg PoolConfig, m *Metrics, log *slog.Logger) *Pool {
	cfg.defaults()
	p := &Pool{
		dialer: d, cfg: cfg, log: log.With("backend", d.Addr), metrics: m.forBackend(d.Addr),
		refused: map[string]*dialBackoff{}, stop: make(chan struct{}), done: make(chan struct{}),
	}
	go p.reap() // ends at Close
	return p
}

// Addr returns the backend address.
func (p *Pool) Addr() string { return p.dialer.Addr }

// Config returns the pool's limits.
func (p *Pool) Config() PoolConfig { return p.cfg }

// PoolStats is a snapshot of a pool.
type PoolStats struct {
	Addr                               string
	Open, Idle, Leased, Waiting, Limit int
}

// Stats returns a snapshot of the pool.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{Addr: p.dialer.Addr, Open: p.open, Idle: len(p.idle), Leased: p.leased,
		Waiting: len(p.waiters), Limit: p.cfg.MaxOpen}
}

// Acquire lends a connection for w: the preferred one when it is idle, else an idle one
// of the same user and key (one already in the session's state first), else a new one
// while fewer than MaxOpen are open, else one given back by another session within
// WaitTimeout. A connection of another user or character set is returned as it is: Sync
// logs it in again.
func (p *Pool) Acquire(ctx context.Context, w *Want) (*Lease, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		if c := p.takeIdleLocked(w); c != nil {
			p.leased++
			p.mu.Unlock()
			if err := c.pc.CheckIdle(); err != nil {
				p.metrics.discarded("dead_when_idle")
				p.log.Debug("closing a pooled connection the backend closed", "thread", c.threadID, "err", err)
				c.broken = true
				p.put(c)
				continue
			}
			return p.lend(c), nil
		}
		if p.open < p.cfg.MaxOpen {
			if err := p.backoffLocked(w.Credential.User); err != nil {
				p.mu.Unlock()
				return nil, err
			}
			p.open++
			p.leased++
			p.mu.Unlock()
			return p.dialInSlot(ctx, w)
		}
		if len(p.idle) > 0 {
			// Every idle connection belongs to another user or key: take the oldest.
			c := p.idle[0]
			p.removeIdleLocked(0)
			p.leased++
			p.mu.Unlock()
			return p.adapt(ctx, w, c)
		}
		wt := &waiter{ch: make(chan grant, 1)}
		p.waiters = append(p.waiters, wt)
		p.mu.Unlock()
		return p.wait(ctx, w, wt)
	}
}

// takeIdleLocked removes and returns the best idle connection for w, or nil.
func (p *Pool) takeIdleLocked(w *Want) *Conn {
	if c := w.Prefer; c != nil && c.idx >= 0 && c.idx < len(p.idle) && p.idle[c.idx] == c && c.key == w.Key {
		p.removeIdleLocked(c.idx)
		return c
	}
	best := -1
	for i := len(p.idle) - 1; i >= 0; i-- {
		c := p.idle[i]
		if c.user != w.Credential.User || c.key != w.Key {
			continue
		}
		if w.State == nil || w.State.Matches(c) {
			best = i
			break
		}
		if best < 0 {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	c := p.idle[best]
	p.removeIdleLocked(best)
	return c
}

func (p *Pool) removeIdleLocked(i int) {
	p.idle[i].idx = -1
	p.idle = slices.Delete(p.idle, i, i+1)
	for j := i; j < len(p.idle); j++ {
		p.idle[j].idx = j
	}
}

func (p *Pool) lend(c *Conn) *Lease {
	c.lease = Lease{pool: p, conn: c, since: time.Now()}
	return &c.lease
}

// adapt turns a connection of another key into one for w: the capabilities are fixed at
// login, so it is closed and another dialed in its slot.
func (p *Pool) adapt(ctx context.Context, w *Want, c *Conn) (*Lease, error) {
	if c.key == w.Key {
		if err := c.pc.CheckIdle(); err == nil {
			return p.lend(c), nil
		}
	}
	p.metrics.discarded("other_key")
	_ = c.Close()
	return p.dialInSlot(ctx, w)
}

// dialInSlot opens a connection in a slot already counted in open and leased.
func (p *Pool) dialInSlot(ctx context.Context, w *Want) (*Lease, error) {
	start := time.Now()
	c, err := p.dialer.Dial(ctx, w)
	p.metrics.dialed(err, time.Since(start))
	p.mu.Lock()
	if err != nil {
		p.open--
		p.leased--
		p.noteDialErrorLocked(w.Credential.User, err)
		p.grantSlotLocked()
		p.mu.Unlock()
		return nil, err
	}
	p.backoff = dialBackoff{}
	delete(p.refused, w.Credential.User)
	p.mu.Unlock()
	return p.lend(c), nil
}

// Redial ends the backend's network backoff when it began before seen, a time at which the
// backend was seen to answer (by a health check that does not use the pool), so that the
// next Acquire dials at once instead of waiting out a backoff that doubled while the
// backend was away. It reports whether a backoff ended. A dial that fails again starts a
// new backoff, which only a later sighting ends.
func (p *Pool) Redial(seen time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := &p.backoff
	if !time.Now().Before(b.until) || !b.until.Add(-b.wait).Before(seen) {
		return false
	}
	*b = dialBackoff{}
	return true
}

// backoffLocked returns the error to give instead of dialing while a backoff runs.
func (p *Pool) backoffLocked(user string) error {
	now := time.Now()
	if now.Before(p.backoff.until) {
		return fmt.Errorf("%w: %w", ErrBackoff, p.backoff.err)
	}
	if b := p.refused[user]; b != nil && now.Before(b.until) {
		return fmt.Errorf("%w: %w", ErrBackoff, b.err)
	}
	return nil
}

func (p *Pool) noteDialErrorLocked(user string, err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, ErrSchema) {
		// The client went away, or asked for a schema the server refused: neither the
		// backend nor the user's credential did anything wrong, and other sessions'
		// dials must not wait or fail for it.
		return
	}
	b := &p.backoff
	if errors.Is(err, ErrLoginRefused) || errors.Is(err, ErrNoSecret) {
		if b = p.refused[user]; b == nil {
			if len(p.refused) > 10000 {
				clear(p.refused)
			}
			b = &dialBackoff{}
			p.refused[user] = b
		}
	}
	first := b.wait == 0
	b.wait = min(max(2*b.wait, minBackoff), maxBackoff)
	b.until, b.err = time.Now().Add(b.wait), err
	if first {
		p.log.Warn("cannot open a backend connection; backing off", "user", user, "err", err, "retry_in", b.wait)
	}
}

// wait waits for a connection or a slot given back by another session.
func (p *Pool) wait(ctx context.Context, w *Want, wt *waiter) (*Lease, error) {
	start := time.Now()
	timer := time.NewTimer(p.cfg.WaitTimeout)
	defer timer.Stop()
	var err error
	select {
	case g := <-wt.ch:
		p.metrics.waited(time.Since(start), nil)
		return p.taken(ctx, w, g)
	case <-timer.C:
		err = ErrWaitTimeout
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	p.mu.Lock()
	if i := slices.Index(p.waiters, wt); i >= 0 {
		p.waiters = slices.Delete(p.waiters, i, i+1)
		p.mu.Unlock()
		p.metrics.waited(time.Since(start), err)
		return nil, err
	}
	p.mu.Unlock()
	// Granted as the wait ended: pass it on.
	g := <-wt.ch
	p.metrics.waited(time.Since(start), err)
	if g.conn != nil {
		p.put(g.conn)
	} else if g.err == nil {
		p.mu.Lock()
		p.open--
		p.leased--
		p.grantSlotLocked()
		p.mu.Unlock()
	}
	return nil, err
}

// taken turns what a waiter was granted into a lease.
func (p *Pool) taken(ctx context.Context, w *Want, g grant) (*Lease, error) {
	switch {
	case g.err != nil:
		return nil, g.err
	case g.conn != nil:
		return p.adapt(ctx, w, g.conn)
	}
	p.mu.Lock()
	err := p.backoffLocked(w.Credential.User)
	if err != nil {
		p.open--
		p.leased--
		p.grantSlotLocked()
	}
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return p.dialInSlot(ctx, w)
}

// grantSlotLocked gives a slot freed by a closed connection to the first waiter, which
// then dials: open and leased count it already.
func (p *Pool) grantSlotLocked() {
	if len(p.waiters) == 0 || p.closed {
		return
	}
	wt := p.waiters[0]
	p.waiters = slices.Delete(p.waiters, 0, 1)
	p.open++
	p.leased++
	wt.ch <- grant{}
}

// put takes a connection back from a lease.
func (p *Pool) put(c *Conn) {
	c.Packets().Unpair()
	c.lease = Lease{}
	now := time.Now()
	c.lastUsed = now
	p.mu.Lock()
	p.leased--
	if c.broken || p.closed || now.Sub(c.created) > p.cfg.MaxLifetime {
		p.open--
		p.grantSlotLocked()
		p.mu.Unlock()
		switch {
		case c.broken:
			p.metrics.discarded("broken")
		case !p.closed:
			p.metrics.discarded("max_lifetime")
		}
		_ = c.Close()
		return
	}
	if len(p.waiters) > 0 {
		wt := p.waiters[0]
		p.waiters = slices.Delete(p.waiters, 0, 1)
		p.leased++
		p.mu.Unlock()
		wt.ch <- grant{conn: c}
		return
	}
	c.idx = len(p.idle)
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

// reap closes connections idle past IdleTimeout, and those past MaxIdle idle for more
// than idleGrace, until Close.
func (p *Pool) reap() {
	defer close(p.done)
	t := time.NewTicker(min(idleGrace, p.cfg.IdleTimeout/4))
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			var closing []*Conn
			p.mu.Lock()
			for len(p.idle) > 0 {
				c := p.idle[0] // the oldest
				idleFor := now.Sub(c.lastUsed)
				if idleFor < p.cfg.IdleTimeout && (len(p.idle) <= p.cfg.MaxIdle || idleFor < idleGrace) &&
					now.Sub(c.created) < p.cfg.MaxLifetime {
					break
				}
				p.removeIdleLocked(0)
				p.open--
				closing = append(closing, c)
			}
			p.mu.Unlock()
			for _, c := range closing {
				p.metrics.discarded("idle")
				_ = c.Close()
			}
		}
	}
}

// Close closes the idle connections and makes Acquire fail; leased connections are closed
// as they come back.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.open -= len(idle)
	waiters := p.waiters
	p.waiters = nil
	p.mu.Unlock()
	for _, wt := range waiters {
		wt.ch <- grant{err: ErrClosed}
	}
	for _, c := range idle {
		c.idx = -1
		_ = c.Close()
	}
	close(p.stop)
	<-p.done
}
