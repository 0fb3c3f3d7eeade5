package topology

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server is what the last read of one server's role found.
type Server struct {
	Addr string `json:"addr"`
	// Up: the server answered the last read.
	Up bool `json:"up"`
	// ReadOnly is its @@read_only.
	ReadOnly bool `json:"read_only"`
	// Replicating: a replication thread of it runs; Source is the server it replicates
	// from (host:port), when it has one configured.
	Replicating bool   `json:"replicating"`
	Source      string `json:"source,omitempty"`
	// Pos is its @@gtid_binlog_pos.
	Pos string `json:"gtid_binlog_pos,omitempty"`
	// Err is why the last read failed.
	Err     string    `json:"error,omitempty"`
	Checked time.Time `json:"checked"`
}

// writable tells whether the server takes writes as a primary: up, not read-only, and not
// replicating from another.
func (s Server) writable() bool { return s.Up && !s.ReadOnly && !s.Replicating }

// States of the writes, as View.State and the metrics name them.
const (
	// StateOK: one primary takes the writes.
	StateOK = "ok"
	// StateFailover: no server is a primary (the last one is unreachable or read-only);
	// writes wait for one.
	StateFailover = "failover"
	// StateSplitBrain: two or more servers are writable primaries; writes fail.
	StateSplitBrain = "split_brain"
	// StatePaused: writes are paused for a switchover.
	StatePaused = "paused"
)

// States lists every state, for the metrics.
var States = []string{StateOK, StateFailover, StateSplitBrain, StatePaused}

// Config configures a Topology.
type Config struct {
	// Servers are every server whose role is read, the configured primary first.
	Servers []string
	// Expected is the primary the configuration names ("" when it names none): the proxy
	// warns when the servers disagree, and follows them.
	Expected string
	// Interval is how often the roles are read. Zero: never (the primary is Expected, and
	// no failover is noticed).
	Interval time.Duration
	// BufferTimeout bounds how long a write waits for a primary; BufferMax how many wait
	// at once (0: no bound).
	BufferTimeout time.Duration
	BufferMax     int
	// Close, when set, is called when Run returns: it closes what the reader holds.
	Close func()
}

// Reader reads the role of the server at addr; a failed read returns a Server that is not
// Up, with Err set.
type Reader func(ctx context.Context, addr string) Server

// Change is a change of primary, as the functions given to OnChange see it.
type Change struct {
	// Old is the primary before ("" when none was known), New the one now.
	Old, New string
	// Pos is the new primary's binary log position as the read that found it saw it.
	Pos string
}

// View is the topology as an operator sees it.
type View struct {
	State   string `json:"state"`
	Primary string `json:"primary"`
	// Writable are the servers that take writes: more than one is a split brain.
	Writable []string `json:"writable,omitempty"`
	Servers  []Server `json:"servers"`
	// Waiting is how many writes wait for a primary now; LongestWait how long the
	// oldest of them has waited.
	Waiting     int     `json:"waiting"`
	LongestWait float64 `json:"longest_wait_seconds"`
	// Since is when the state began; Changed when the primary last changed.
	Since   time.Time `json:"since"`
	Changed time.Time `json:"primary_changed,omitempty"`
	// Failovers counts the changes of primary the proxy followed.
	Failovers uint64 `json:"failovers"`
}

// Topology knows the primary, reads the servers' roles, and holds writes while there is
// no primary to send them to.
type Topology struct {
	cfg  Config
	log  *slog.Logger
	read Reader
	// kick asks for a read of the roles now.
	kick chan struct{}
	m    *Metrics

	// open is the primary writes go to now; nil while they wait or fail.
	open atomic.Pointer[string]

	// mu guards the fields below it.
	mu      sync.Mutex
	servers []Server
	primary string
	// writable holds the writable servers of a split brain.
	writable []string
	state    string
	since    time.Time
	changed  time.Time
	// epoch grows at each event that makes a read begun before it out of date: a
	// connection error to the primary, a resume.
	epoch uint64
	// paused is set by Pause; pauses counts them, so that a pause's timer ends its own.
	paused bool
	pauses uint64
	// waiters are the start times of the writes that wait, by their token; tokens
	// numbers them.
	waiters   map[uint64]time.Time
	tokens    uint64
	failovers uint64
	onChange  []func(Change)
	// wake is closed (and replaced) when writes may go on or must fail.
	wake chan struct{}
}

// New returns the topology of cfg, reading roles with read. It takes the configured
// primary as the primary until the first read says otherwise.
func New(cfg Config, read Reader, log *slog.Logger, m *Metrics) *Topology {
	t := &Topology{cfg: cfg, log: log, read: read, kick: make(chan struct{}, 1), m: m,
		primary: cfg.Expected, state: StateOK, since: time.Now(), waiters: map[uint64]time.Time{},
		wake: make(chan struct{})}
	for _, a := range cfg.Servers {
		t.servers = append(t.servers, Server{Addr: a})
	}
	if cfg.Expected != "" {
		p := cfg.Expected
		t.open.Store(&p)
	} else {
		t.state = StateFailover
	}
	if m != nil {
		m.watch(t)
	}
	return t
}

// OnChange adds f to what runs when the primary changes, before writes go to the new one.
// Call it before Run.
func (t *Topology) OnChange(f func(Change)) { t.onChange = append(t.onChange, f) }

// Primary returns the primary writes go to now, or the last known one while they wait.
func (t *Topology) Primary() string {
	if p := t.open.Load(); p != nil {
		return *p
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.primary
}

// Changed returns a channel closed at the next change of state (and at each read of the
// roles that finds the primary).
func (t *Topology) Changed() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.wake
}

// Holds tells whether addr is still the primary, and reachable: writes go to it, or are
// paused for a switchover, rather than waiting for another.
func (t *Topology) Holds(addr string) (primary, reachable bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.primary == addr, t.state == StateOK || t.state == StatePaused
}

// Servers returns the addresses of the servers whose roles are read.
func (t *Topology) Servers() []string { return slices.Clone(t.cfg.Servers) }

// Seen returns when the server at addr was last read, and whether it was up then.
func (t *Topology) Seen(addr string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.servers {
		if s.Addr == addr {
			return s.Checked, s.Up
		}
	}
	return time.Time{}, false
}

// Error is why a write cannot go to a primary.
type Error struct {
	// State is the topology's state: failover, split_brain or paused.
	State string
	// Servers are the writable servers of a split brain, or the last primary.
	Servers []string
	// Waited is how long the write waited; Full: it did not wait, failover.buffer_max
	// writes waited already.
	Waited time.Duration
	Full   bool
}

func (e *Error) Error() string {
	switch {
	case e.State == StateSplitBrain:
		return fmt.Sprintf("split brain: %s are all writable primaries; writes stop until all but one are read-only (SET GLOBAL read_only=1)",
			strings.Join(e.Servers, " and "))
	case e.Full:
		return fmt.Sprintf("no primary (%s): failover.buffer_max writes wait for one already", e.what())
	default:
		return fmt.Sprintf("no primary within failover.buffer_timeout (%s, waited %s)", e.what(), e.Waited.Round(time.Millisecond))
	}
}

func (e *Error) what() string {
	if e.State == StatePaused {
		return "writes are paused for a switchover"
	}
	if len(e.Servers) > 0 {
		return "a failover from " + e.Servers[0] + " is under way"
	}
	return "no server is a writable primary"
}

// ErrPaused: writes are paused already.
var ErrPaused = errors.New("writes are paused already: resume them first (POST /api/v1/backends/resume-writes)")

// Writer returns the primary a write goes to, waiting while there is none (a failover, a
// pause) for up to failover.buffer_timeout. It fails at once in a split brain, and with
// ctx's error when ctx ends first.
func (t *Topology) Writer(ctx context.Context) (string, error) {
	if p := t.open.Load(); p != nil {
		return *p, nil
	}
	start := time.Now()
	t.mu.Lock()
	t.tokens++
	token := t.tokens
	t.mu.Unlock()
	var timer <-chan time.Time
	for {
		t.mu.Lock()
		if p := t.open.Load(); p != nil {
			delete(t.waiters, token)
			t.mu.Unlock()
			return *p, nil
		}
		if t.state == StateSplitBrain {
			delete(t.waiters, token)
			err := &Error{State: t.state, Servers: slices.Clone(t.writable), Waited: time.Since(start)}
			t.mu.Unlock()
			t.m.refused(StateSplitBrain)
			return "", err
		}
		if _, ok := t.waiters[token]; !ok {
			if t.cfg.BufferMax > 0 && len(t.waiters) >= t.cfg.BufferMax {
				err := &Error{State: t.state, Servers: t.lastPrimaryLocked(), Full: true}
				t.mu.Unlock()
				t.m.refused("buffer_full")
				return "", err
			}
			t.waiters[token] = start
			tm := time.NewTimer(t.cfg.BufferTimeout)
			defer tm.Stop()
			timer = tm.C
		}
		wake, state := t.wake, t.state
		t.mu.Unlock()
		select {
		case <-wake:
			continue
		case <-timer:
			t.mu.Lock()
			delete(t.waiters, token)
			err := &Error{State: state, Servers: t.lastPrimaryLocked(), Waited: time.Since(start)}
			t.mu.Unlock()
			t.m.refused("timeout")
			return "", err
		case <-ctx.Done():
			t.mu.Lock()
			delete(t.waiters, token)
			t.mu.Unlock()
			return "", ctx.Err()
		}
	}
}

func (t *Topology) lastPrimaryLocked() []string {
	if t.primary == "" {
		return nil
	}
	return []string{t.primary}
}

// Suspect tells the topology that a connection to addr failed. When addr is the primary,
// writes wait from now on until a read of the roles, begun after this call, finds a
// primary again; that read begins at once.
func (t *Topology) Suspect(addr string) {
	t.mu.Lock()
	if addr != t.primary || t.state != StateOK {
		t.mu.Unlock()
		return
	}
	t.epoch++
	t.setStateLocked(StateFailover)
	t.mu.Unlock()
	t.log.Warn("topology: a connection to the primary failed; writes wait until a read of the roles finds a primary", "primary", addr)
	t.Refresh()
}

// Refresh asks for a read of the roles now.
func (t *Topology) Refresh() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// setStateLocked moves to state, closing or opening the way to the primary.
func (t *Topology) setStateLocked(state string) {
	if state != t.state {
		t.state, t.since = state, time.Now()
	}
	if state == StateOK {
		p := t.primary
		t.open.Store(&p)
	} else {
		t.open.Store(nil)
	}
	close(t.wake)
	t.wake = make(chan struct{})
}

// Run reads the roles every interval, and at once when asked, until ctx ends.
func (t *Topology) Run(ctx context.Context) {
	if t.cfg.Close != nil {
		defer t.cfg.Close()
	}
	if t.cfg.Interval <= 0 || len(t.cfg.Servers) == 0 {
		return
	}
	next := time.NewTimer(0)
	defer next.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-next.C:
		case <-t.kick:
			next.Stop()
		}
		t.Check(ctx)
		next.Reset(t.interval())
	}
}

// urgentInterval is how often the roles are read while writes wait or fail, so that they
// go on soon after a promotion.
const urgentInterval = 100 * time.Millisecond

// interval is the pause before the next read of the roles: shorter while writes wait.
func (t *Topology) interval() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != StateOK {
		return min(t.cfg.Interval, urgentInterval)
	}
	return t.cfg.Interval
}

// Check reads every server's role once and applies what it found.
func (t *Topology) Check(ctx context.Context) {
	t.mu.Lock()
	epoch := t.epoch
	t.mu.Unlock()
	servers := make([]Server, len(t.cfg.Servers))
	var wg sync.WaitGroup
	for i, a := range t.cfg.Servers {
		wg.Add(1)
		go func() { // ends when the read does, within its timeout
			defer wg.Done()
			servers[i] = t.read(ctx, a)
			servers[i].Addr = a
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	t.apply(servers, epoch)
}

// apply takes the roles read by a check begun at epoch.
func (t *Topology) apply(servers []Server, epoch uint64) {
	var writable []string
	var pos string
	for _, s := range servers {
		if s.writable() {
			writable = append(writable, s.Addr)
			pos = s.Pos
		}
	}
	t.mu.Lock()
	t.servers = servers
	old, was := t.primary, t.state
	switch {
	case len(writable) > 1:
		t.writable = writable
		t.setStateLocked(StateSplitBrain)
		t.mu.Unlock()
		if was != StateSplitBrain {
			t.log.Error("topology: split brain: more than one server is a writable primary; writes fail until all but one are read-only",
				"writable", strings.Join(writable, ","))
		}
		return
	case len(writable) == 0:
		t.writable = nil
		if !t.paused {
			t.setStateLocked(StateFailover)
		}
		t.mu.Unlock()
		if was == StateOK || was == StateSplitBrain {
			t.log.Warn("topology: no server is a writable primary; writes wait for one (failover.buffer_timeout)",
				"last_primary", old, "servers", describe(servers))
		}
		return
	}
	t.writable = nil
	primary := writable[0]
	if epoch != t.epoch {
		// A connection error or a resume came while the roles were read: read again.
		t.mu.Unlock()
		t.Refresh()
		return
	}
	if primary == old {
		paused := t.paused
		if !paused {
			t.setStateLocked(StateOK)
		}
		t.mu.Unlock()
		if was != StateOK && !paused {
			t.log.Info("topology: writes go to the primary again", "primary", primary)
		}
		return
	}
	t.mu.Unlock()

	// A new primary: what follows the primary moves to it before writes do.
	c := Change{Old: old, New: primary, Pos: pos}
	for _, f := range t.onChange {
		f(c)
	}
	t.mu.Lock()
	t.primary, t.changed = primary, time.Now()
	if old != "" {
		t.failovers++
	}
	if !t.paused {
		t.setStateLocked(StateOK)
	}
	t.mu.Unlock()
	if old != "" && t.m != nil {
		t.m.failovers.Inc()
	}
	if t.cfg.Expected != "" && primary != t.cfg.Expected {
		t.log.Warn("topology: the primary is not the one backends.primary names; following the servers", "primary", primary,
			"configured", t.cfg.Expected, "previous", old, "position", pos)
	} else {
		t.log.Info("topology: new primary", "primary", primary, "previous", old, "position", pos)
	}
}

// describe sums up the servers' roles for a log line.
func describe(servers []Server) string {
	var b strings.Builder
	for i, s := range servers {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(s.Addr)
		switch {
		case !s.Up:
			b.WriteString(" down")
		case s.ReadOnly:
			b.WriteString(" read_only")
		case s.Replicating:
			b.WriteString(" replicating")
		default:
			b.WriteString(" writable")
		}
	}
	return b.String()
}

// View returns the topology now.
func (t *Topology) View() View {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := View{State: t.state, Primary: t.primary, Writable: slices.Clone(t.writable), Servers: slices.Clone(t.servers),
		Waiting: len(t.waiters), Since: t.since, Changed: t.changed, Failovers: t.failovers}
	now := time.Now()
	for _, start := range t.waiters {
		v.LongestWait = max(v.LongestWait, now.Sub(start).Seconds())
	}
	return v
}

// PauseResult is what a pause found.
type PauseResult struct {
	// Drained is how long the writes in flight took to end.
	Drained time.Duration
	// InFlight is how many units still held the primary when the pause gave up.
	InFlight int
}

// Pause stops new writes (they wait as in a failover) and returns once inflight says the
// primary has none in flight, or an error when that does not happen within timeout: the
// pause is then undone. A pause left standing ends by itself after timeout, so that a
// switchover script that dies does not stop writes for good.
func (t *Topology) Pause(ctx context.Context, timeout time.Duration, inflight func() int) (PauseResult, error) {
	t.mu.Lock()
	if t.paused {
		t.mu.Unlock()
		return PauseResult{}, ErrPaused
	}
	t.paused = true
	t.pauses++
	n := t.pauses
	if t.state == StateOK {
		t.setStateLocked(StatePaused)
	}
	t.mu.Unlock()
	t.log.Info("topology: writes paused for a switchover", "timeout", timeout)
	time.AfterFunc(timeout, func() { t.resume(n, "the pause's timeout passed") })

	start := time.Now()
	deadline := start.Add(timeout)
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	for {
		k := inflight()
		if k == 0 {
			return PauseResult{Drained: time.Since(start)}, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.resume(n, "the writes in flight did not end in time")
			return PauseResult{Drained: time.Since(start), InFlight: k},
				fmt.Errorf("%d units of work still hold the primary after %s; writes resumed", k, timeout)
		}
		select {
		case <-ctx.Done():
		case <-poll.C:
		}
	}
}

// Resume ends a pause: writes go on once a read of the roles begun after this call finds
// the primary (the one promoted meanwhile). It reports whether writes were paused.
func (t *Topology) Resume() bool {
	t.mu.Lock()
	n := t.pauses
	t.mu.Unlock()
	return t.resume(n, "resumed")
}

// resume ends pause n, when it still stands.
func (t *Topology) resume(n uint64, why string) bool {
	t.mu.Lock()
	if !t.paused || t.pauses != n {
		t.mu.Unlock()
		return false
	}
	t.paused = false
	t.epoch++
	if t.state == StatePaused {
		t.setStateLocked(StateFailover)
	}
	static := t.cfg.Interval <= 0
	if static {
		t.setStateLocked(StateOK)
	}
	t.mu.Unlock()
	t.log.Info("topology: writes resume once the roles are read", "why", why)
	t.Refresh()
	return true
}
