package replicas

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Consistency says which acknowledged writes a read on a replica must see.
type Consistency uint8

const (
	// Strong: every write acknowledged to any client before the read arrived, to the
	// tables it reads (and every write whose tables are not known).
	Strong Consistency = iota
	// Session: the writes of the client's own session.
	Session
	// Eventual: none; any replica under the lag bound.
	Eventual
)

var consistencyNames = []string{"strong", "session", "eventual"}

func (c Consistency) String() string { return consistencyNames[c] }

// ParseConsistency reads strong, session or eventual.
func ParseConsistency(s string) (Consistency, error) {
	for i, n := range consistencyNames {
		if s == n {
			return Consistency(i), nil
		}
	}
	return 0, fmt.Errorf("consistency %q: must be strong, session or eventual", s)
}

// Balance chooses among the backends a read may go to.
type Balance uint8

const (
	// SELF picks the least estimated outstanding work.
	SELF Balance = iota
	// LARD keeps reads of the same tables on the same backend until it is much busier
	// than the least busy one.
	LARD
	// SQF picks the fewest outstanding statements.
	SQF
	// RR takes turns.
	RR
)

var balanceNames = []string{"self", "lard", "sqf", "rr"}

func (b Balance) String() string { return balanceNames[b] }

// ParseBalance reads self, lard, sqf or rr.
func ParseBalance(s string) (Balance, error) {
	for i, n := range balanceNames {
		if s == n {
			return Balance(i), nil
		}
	}
	return 0, fmt.Errorf("balance %q: must be self, lard, sqf or rr", s)
}

// Config configures a Router.
type Config struct {
	Primary  string
	Replicas []string
	// User and Password are the monitoring account's.
	User, Password string
	Balance        Balance
	// PrimaryReads lets the primary take reads beside the replicas.
	PrimaryReads bool
	MaxLag       time.Duration
	PollInterval time.Duration
	// ClosureInterval is how often triggers, cascades and views are read again, for
	// DDL that does not pass through the proxy.
	ClosureInterval time.Duration
}

// Backend is a server reads may go to, with what the router knows of it.
type Backend struct {
	Addr    string
	Primary bool
	// Index is the backend's place: 0 for the primary, 1... for the replicas in order.
	Index int

	// outstanding is the estimated work (ns) of the reads sent and not finished;
	// inflight their number.
	outstanding, inflight atomic.Int64

	mu sync.Mutex
	st Status
}

// Status is what the monitor last saw of a backend.
type Status struct {
	Up bool
	// Shunned: up, but too far behind the primary to take reads.
	Shunned bool
	Pos     Pos
	// LagTxns is how many transactions the primary has that the backend has not
	// applied; LagSeconds how long ago the primary first had one of them.
	LagTxns    uint64
	LagSeconds float64
	// Replicating: the replication threads run (replicas).
	Replicating bool
	Err         string
	Checked     time.Time
}

// Status returns a copy of what the monitor last saw.
func (b *Backend) Status() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st
}

// Outstanding returns the estimated work and the number of reads sent and not finished.
func (b *Backend) Outstanding() (time.Duration, int64) {
	return time.Duration(b.outstanding.Load()), b.inflight.Load()
}

// Start counts a read of estimated cost sent to the backend; Done ends it.
func (b *Backend) Start(cost time.Duration) {
	b.outstanding.Add(int64(cost))
	b.inflight.Add(1)
}

// Done ends a read Start counted.
func (b *Backend) Done(cost time.Duration) {
	b.outstanding.Add(-int64(cost))
	b.inflight.Add(-1)
}

// Router picks the backend of each read: among the replicas that have applied what the
// read needs, the one the balance policy prefers.
type Router struct {
	cfg      Config
	log      *slog.Logger
	versions *Versions
	primary  *Backend
	replicas []*Backend
	// readers are the backends reads may go to: the replicas, and the primary when it
	// takes reads.
	readers []*Backend

	// mu guards the primary's position history and the advance signal.
	mu sync.Mutex
	// history holds the primary's positions as they were first seen, oldest first.
	history []seen
	// advanced is closed when a replica's position moves or its standing changes.
	advanced chan struct{}

	rr   atomic.Uint64
	lard sync.Map // locality key -> *Backend
	// room, when set, tells whether a backend can take a read of a cost at once.
	room func(b *Backend, cost time.Duration) bool
	// reload asks for the closure to be read again.
	reload chan struct{}
	// primaryAddr is where the primary is now: the configured one until SetPrimary.
	primaryAddr atomic.Pointer[string]
	// durableOff is set while AwaitApplied does not wait, after a wait timed out.
	durableOff atomic.Bool
}

type seen struct {
	at  time.Time
	pos Pos
}

// NewRouter returns a router of cfg's backends. It routes nothing until Run has seen each
// replica.
func NewRouter(cfg Config, versions *Versions, log *slog.Logger) *Router {
	r := &Router{cfg: cfg, log: log, versions: versions, advanced: make(chan struct{}), reload: make(chan struct{}, 1)}
	r.primary = &Backend{Addr: cfg.Primary, Primary: true}
	r.primaryAddr.Store(&cfg.Primary)
	for i, a := range cfg.Replicas {
		r.replicas = append(r.replicas, &Backend{Addr: a, Index: i + 1})
	}
	r.readers = append(r.readers, r.replicas...)
	if cfg.PrimaryReads {
		r.readers = append(r.readers, r.primary)
	}
	return r
}

// Primary returns the primary.
func (r *Router) Primary() *Backend { return r.primary }

// SetPrimary moves the primary's monitor and the reads of the closure to the server at
// addr, after a failover: the primary keeps its place (Primary, index 0) under the name
// the configuration gave it.
func (r *Router) SetPrimary(addr string) {
	r.primaryAddr.Store(&addr)
	r.ReloadClosure()
}

// PrimaryAddr returns where the primary is now.
func (r *Router) PrimaryAddr() string { return *r.primaryAddr.Load() }

// Replicas returns the replicas, in the configured order.
func (r *Router) Replicas() []*Backend { return r.replicas }

// Versions returns the version map the router reads needs from.
func (r *Router) Versions() *Versions { return r.versions }

// SetRoom makes Pick prefer, among the backends that qualify, those that room says can
// take a read of its cost at once: with admission on, those whose capacity has room, so
// that a read does not wait for a full backend while another could run it. Call it before
// Run.
func (r *Router) SetRoom(room func(b *Backend, cost time.Duration) bool) { r.room = room }

// Pick returns the backend a read that needs need (nil: nothing) and costs about cost
// should go to, or nil when none qualifies. locality keys the tables it reads, for LARD.
// The primary qualifies only when it takes reads. Backends with room (SetRoom) come first.
func (r *Router) Pick(need Pos, anyPos bool, cost time.Duration, locality uint64) *Backend {
	var best, spare candidate // spare: the best with room
	n := len(r.readers)
	start := 0
	if r.cfg.Balance == RR || r.cfg.Balance == SELF || r.cfg.Balance == SQF {
		start = int(r.rr.Add(1) % uint64(n)) // ties go round
	}
	for i := range n {
		b := r.readers[(start+i)%n]
		if !b.eligible(need, anyPos) {
			continue
		}
		work, k := b.Outstanding()
		c := candidate{b, work, k}
		if r.better(c, best) {
			best = c
		}
		if r.room != nil && r.better(c, spare) && r.room(b, cost) {
			spare = c
		}
	}
	roomy := spare.b != nil
	if roomy {
		best = spare
	}
	if best.b == nil || r.cfg.Balance != LARD {
		return best.b
	}
	return r.local(locality, best.b, best.work, need, anyPos, cost, roomy)
}

// candidate is a backend Pick weighs, with its outstanding work and reads.
type candidate struct {
	b    *Backend
	work time.Duration
	n    int64
}

// better tells whether c is to be preferred to cur under the balance policy; the first
// found wins ties, and under rr the first found wins.
func (r *Router) better(c, cur candidate) bool {
	switch {
	case cur.b == nil:
		return true
	case r.cfg.Balance == SQF:
		return c.n < cur.n
	case r.cfg.Balance == SELF || r.cfg.Balance == LARD:
		return c.work < cur.work || c.work == cur.work && c.n < cur.n
	}
	return false // rr
}

// Waitable tells whether a read that finds no replica may wait for one: some backend
// reads may go to is up and not shunned, only behind what the read needs.
func (r *Router) Waitable() bool {
	for _, b := range r.readers {
		if b.Primary {
			continue
		}
		b.mu.Lock()
		ok := b.st.Up && !b.st.Shunned
		b.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// local is LARD's choice: the backend that served these tables before, unless it is no
// longer eligible, carries more than twice the least busy one's work plus this read, or
// has no room while least has (roomy).
func (r *Router) local(key uint64, least *Backend, leastWork time.Duration, need Pos, anyPos bool, cost time.Duration, roomy bool) *Backend {
	if v, ok := r.lard.Load(key); ok {
		home := v.(*Backend)
		if home.eligible(need, anyPos) && (!roomy || r.room(home, cost)) {
			if work, _ := home.Outstanding(); work <= 2*leastWork+cost {
				return home
			}
		}
	}
	r.lard.Store(key, least)
	return least
}

// eligible tells whether the backend is up, not shunned, and has applied need.
func (b *Backend) eligible(need Pos, anyPos bool) bool {
	if b.Primary {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.Up && !b.st.Shunned && (anyPos || b.st.Pos.Covers(need))
}

// Outcomes of AwaitApplied.
const (
	// AppliedOnReplica: a replica applied the position.
	AppliedOnReplica = "replica"
	// AppliedNoReplica: no replica was up to wait for, or the waits are off since one
	// timed out and no replica has caught up since.
	AppliedNoReplica = "no_replica"
	// AppliedTimeout: no replica applied it within the bound.
	AppliedTimeout = "timeout"
	// AppliedCancelled: the wait was given up (its context ended).
	AppliedCancelled = "cancelled"
)

// AwaitApplied returns once a replica has applied p, as its monitor last read it (the
// primary of the moment, after a failover, does not count). It returns at once when no
// replica is up, after timeout when none applied p by then, and when ctx ends; after a timeout it waits no
// more, as semi-synchronous replication switches itself off, until a replica has applied a
// position asked for again. It says which of the three it was.
func (r *Router) AwaitApplied(ctx context.Context, p Pos, timeout time.Duration) string {
	var deadline <-chan time.Time
	for {
		advanced := r.Advanced()
		applied, up := r.applied(p)
		switch {
		case applied:
			r.durableOff.Store(false)
			return AppliedOnReplica
		case !up || r.durableOff.Load():
			return AppliedNoReplica
		}
		if deadline == nil {
			t := time.NewTimer(timeout)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-advanced:
		case <-deadline:
			r.durableOff.Store(true)
			return AppliedTimeout
		case <-ctx.Done():
			return AppliedCancelled
		}
	}
}

// applied tells whether a replica other than the primary of the moment has applied p, and
// whether any such replica is up.
func (r *Router) applied(p Pos) (applied, up bool) {
	primary := r.PrimaryAddr()
	for _, b := range r.replicas {
		if b.Addr == primary {
			continue
		}
		b.mu.Lock()
		ok, pos := b.st.Up, b.st.Pos
		b.mu.Unlock()
		if ok && pos.Covers(p) {
			return true, true
		}
		up = up || ok
	}
	return false, up
}

// Advanced returns a channel closed at the next change of a replica's position or
// standing.
func (r *Router) Advanced() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.advanced
}

func (r *Router) signal() {
	r.mu.Lock()
	close(r.advanced)
	r.advanced = make(chan struct{})
	r.mu.Unlock()
}

// Run polls every backend, and reads the closure, until ctx ends.
func (r *Router) Run(ctx context.Context) error {
	var monitors []*monitor
	for _, b := range append([]*Backend{r.primary}, r.replicas...) {
		m, err := newMonitor(r, b)
		if err != nil {
			for _, m := range monitors {
				m.db.Close()
			}
			return err
		}
		monitors = append(monitors, m)
	}
	var wg sync.WaitGroup
	wg.Add(1 + len(monitors))
	go func() {
		defer wg.Done()
		r.keepClosure(ctx)
	}()
	for _, m := range monitors {
		go func() {
			defer wg.Done()
			m.run(ctx)
		}()
	}
	wg.Wait()
	return nil
}

// sawPrimary records the primary's position p, read by a query sent at started.
func (r *Router) sawPrimary(started, at time.Time, p Pos) {
	r.versions.Resolve(started, p)
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.history); n > 0 && r.history[n-1].pos.Covers(p) {
		return
	}
	r.history = append(r.history, seen{at: at, pos: p})
	// Keep twice the lag bound, so that a replica past it is seen to be.
	keep := at.Add(-2 * r.cfg.MaxLag)
	i := 0
	for i < len(r.history)-1 && r.history[i].at.Before(keep) {
		i++
	}
	if i > 0 {
		r.history = append(r.history[:0], r.history[i:]...)
	}
}

// lag returns how far a replica at p is behind the primary: the transactions it lacks
// and how long ago the primary first had one of them. known is false while the primary's
// monitor has not yet answered once, or failed every time since the start: then there is
// nothing to compare p with, and the lag reads 0.
func (r *Router) lag(p Pos, now time.Time) (txns uint64, seconds float64, known bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.history
	if len(h) == 0 {
		return 0, 0, false
	}
	i := sort.Search(len(h), func(i int) bool { return !p.Covers(h[i].pos) })
	if i == len(h) {
		return 0, 0, true
	}
	return p.Behind(h[len(h)-1].pos), now.Sub(h[i].at).Seconds(), true
}

// Lag returns how far position p is behind the primary, as lag does for a replica's: the
// transactions p lacks and how long ago the primary first had one of them; known is false
// until the primary's monitor has answered.
func (r *Router) Lag(p Pos, now time.Time) (txns uint64, seconds float64, known bool) {
	return r.lag(p, now)
}

// sawReplica records what a poll of replica b found: its position, or the error that
// kept it from answering.
func (r *Router) sawReplica(b *Backend, p Pos, replicating bool, err error, now time.Time) {
	var txns uint64
	var secs float64
	if err == nil {
		var known bool
		if txns, secs, known = r.lag(p, now); !known && r.primary.Status().Checked.IsZero() {
			// The primary's first poll has not answered yet, so how far behind the
			// replica is cannot be told: it takes no reads until it can, rather than
			// eventual reads past max_lag for a poll interval. (A primary that was
			// polled and is down leaves the replicas to the reads, as they stood.)
			return
		}
	}
	maxLag := r.cfg.MaxLag.Seconds()
	b.mu.Lock()
	before := b.st
	st := &b.st
	st.Checked = now
	st.Up = err == nil
	if err != nil {
		st.Err = err.Error()
		st.Shunned = true
	} else {
		st.Err = ""
		st.Pos, st.LagTxns, st.LagSeconds, st.Replicating = p, txns, secs, replicating
		switch {
		case secs > maxLag:
			st.Shunned = true
		case !before.Up || secs <= maxLag/2:
			st.Shunned = false // rejoins once well under the bound
		}
	}
	after := b.st
	b.mu.Unlock()
	if before.Up != after.Up || before.Shunned != after.Shunned {
		r.logStanding(b, before, after)
	}
	if !after.Shunned && after.Up && (before.Shunned || !before.Up || !before.Pos.Covers(after.Pos)) {
		r.signal()
	}
}

// Record records what a poll of b found at now: its position p, or the error that kept
// it from answering. It is how positions learnt elsewhere than Run's monitors (a test, a
// binlog follower) reach the router.
func (r *Router) Record(b *Backend, p Pos, err error, now time.Time) {
	if !b.Primary {
		r.sawReplica(b, p, err == nil, err, now)
		return
	}
	if err == nil {
		r.sawPrimary(now, now, p)
	}
	b.setPrimary(err, now)
}

func (r *Router) logStanding(b *Backend, before, after Status) {
	switch {
	case !after.Up:
		r.log.Warn("replica down: reads go elsewhere", "backend", b.Addr, "err", after.Err)
	case after.Shunned:
		r.log.Warn("replica shunned: behind the primary past routing.max_lag", "backend", b.Addr,
			"lag_seconds", after.LagSeconds, "lag_transactions", after.LagTxns)
	case !before.Up && before.Checked.IsZero():
		r.log.Info("replica up: takes reads", "backend", b.Addr, "position", after.Pos.String())
	default:
		r.log.Info("replica rejoins: takes reads again", "backend", b.Addr, "lag_seconds", after.LagSeconds)
	}
}

// MarkDown records that a connection to b failed: b takes no reads until the monitor
// sees it answer again.
func (r *Router) MarkDown(b *Backend, err error) {
	if b.Primary {
		return
	}
	r.sawReplica(b, nil, false, fmt.Errorf("connection failed: %w", err), time.Now())
}

// ReloadClosure drops the closure and asks for it to be read again: DDL was acknowledged.
func (r *Router) ReloadClosure() {
	r.versions.DropClosure()
	select {
	case r.reload <- struct{}{}:
	default:
	}
}

// keepClosure reads the closure at start, after every DDL through the proxy, and every
// ClosureInterval for DDL that went to the primary some other way; every second while the
// primary does not answer.
func (r *Router) keepClosure(ctx context.Context) {
	addr := r.PrimaryAddr()
	db, err := OpenMonitor(addr, r.cfg.User, r.cfg.Password, 10*time.Second)
	if err != nil {
		r.log.Error("cannot read triggers, cascades and views: every write raises the floor", "err", err)
		return
	}
	defer func() { db.Close() }()
	next := time.NewTimer(0)
	defer next.Stop()
	var last *Closure
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.reload:
		case <-next.C:
		}
		if a := r.PrimaryAddr(); a != addr {
			if moved, err := OpenMonitor(a, r.cfg.User, r.cfg.Password, 10*time.Second); err == nil {
				db.Close()
				db, addr = moved, a
			}
		}
		gen := r.versions.Generation()
		c, err := LoadClosure(ctx, db)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				r.log.Warn("cannot read triggers, cascades and views yet: every write raises the floor", "err", err)
			}
			next.Reset(time.Second)
			continue
		case !r.versions.SetClosure(gen, c):
			next.Reset(0) // DDL came while it was read
			continue
		}
		if last != nil && !last.Equal(c) {
			r.log.Info("triggers, cascades or views changed", "closure", c.String())
		}
		last = c
		next.Reset(r.cfg.ClosureInterval)
	}
}

// SessionPositions keeps the writes of sessions named by a key (/* gk:session=KEY */),
// so that the connections of an application's pool see each other's writes. Past max
// keys, every position kept is folded into a floor all keys share, and the keys go.
type SessionPositions struct {
	mu    sync.Mutex
	keys  map[string]Pos
	floor Pos
	max   int
}

// NewSessionPositions returns an empty store of at most max keys.
func NewSessionPositions(max int) *SessionPositions {
	return &SessionPositions{keys: make(map[string]Pos), max: max}
}

// Wrote records a write of session key at g.
func (s *SessionPositions) Wrote(key []byte, g GTID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.keys[string(key)]
	if !ok && len(s.keys) >= s.max {
		for _, q := range s.keys {
			s.floor = s.floor.Merge(q)
		}
		clear(s.keys)
	}
	s.keys[string(key)] = p.With(g)
}

// Need appends to dst what a read of session key needs.
func (s *SessionPositions) Need(dst Pos, key []byte) Pos {
	s.mu.Lock()
	defer s.mu.Unlock()
	return addAll(addAll(dst, s.floor), s.keys[string(key)])
}

// Len returns the number of keys kept.
func (s *SessionPositions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}
