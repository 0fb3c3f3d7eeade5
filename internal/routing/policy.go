package routing

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// StrongRule is which writes a strong read must see, and how the proxy learns them.
type StrongRule uint8

const (
	// PerTable: every write committed on the primary before the read arrived, whoever
	// made it, to the tables the read reads. The binlog follower records every write in the
	// version map; a position read tells what the primary had when the read arrived.
	PerTable StrongRule = iota
	// Global: every write committed on the primary before the read arrived, to any table:
	// a replica must have the primary's whole position (MaxScale's causal_reads=universal).
	Global
	// ProxyLocal: every write this proxy acknowledged before the read arrived, to the
	// tables the read reads; cheaper, and enough only where every write passes through
	// this one proxy.
	ProxyLocal
)

var ruleNames = []string{"per_table", "global", "proxy_local"}

func (r StrongRule) String() string { return ruleNames[r] }

// ParseStrongRule reads per_table, global or proxy_local.
func ParseStrongRule(s string) (StrongRule, error) {
	for i, n := range ruleNames {
		if s == n {
			return StrongRule(i), nil
		}
	}
	return 0, fmt.Errorf("strong rule %q: must be per_table, global or proxy_local", s)
}

// Positions reads the primary's position by a query that starts after the call began
// (binlog.Positions); Repoint moves it to another primary after a failover.
type Positions interface {
	Read(ctx context.Context) (replicas.Pos, error)
	Repoint(addr string)
}

// Follower says when the version map holds every write committed up to a position
// (binlog.Follower): Recorded returns once it does, or an error when it cannot tell (the
// follower does not follow the primary's log); Denied tells that it cannot follow for want
// of a grant; Repoint follows another primary's log after a failover.
type Follower interface {
	Recorded(ctx context.Context, p replicas.Pos) error
	Denied() bool
	Repoint(addr string)
}

// Config is the routing policy's settings.
type Config struct {
	// Consistency is what a session's reads must see, unless its user or a hint says
	// otherwise (routing.consistency).
	Consistency replicas.Consistency
	// CausalWait is how long a read waits for a replica to catch up before it goes to the
	// primary (routing.causal_wait); 0: it does not wait.
	CausalWait time.Duration
	// Poll is how often a waiting read looks again when no replica moved
	// (replicas.poll_interval): a write without a position resolves at the primary's poll.
	Poll time.Duration
	// ReadOnlyTransactions sends read-only transactions to replicas
	// (routing.read_only_transactions: replica).
	ReadOnlyTransactions bool
	// Rule is which writes a strong read must see (routing.strong_rule). PerTable and
	// Global need the sources of SetWrites; without them a strong read sees ProxyLocal's.
	Rule StrongRule
}

// Policy routes the units of every session: the router of the backends, the writes of
// named application sessions, the costs reads are balanced by, and the metrics of the
// choices made.
type Policy struct {
	cfg      Config
	router   *replicas.Router
	sessions *replicas.SessionPositions
	// costs estimates the work of a read (nil: every read costs a millisecond).
	costs *estimator.Table
	log   *slog.Logger
	m     *metrics
	// positions and follower tell what the primary had committed when a read arrived
	// (SetWrites); nil: only what this proxy acknowledged is known.
	positions Positions
	follower  Follower
	// held is set while another process, handing its connections over to this one, may
	// still acknowledge writes this one does not see (HoldStrong).
	held atomic.Bool
}

// sessionKeys bounds the application sessions whose writes are kept apart.
const sessionKeys = 1 << 16

// New returns the policy of cfg over router's backends, balancing reads by the costs of
// their types in costs (nil: all alike). Its metrics are registered with reg.
func New(cfg Config, router *replicas.Router, costs *estimator.Table, log *slog.Logger, reg prometheus.Registerer) *Policy {
	p := &Policy{cfg: cfg, router: router, sessions: replicas.NewSessionPositions(sessionKeys), costs: costs, log: log,
		m: newMetrics(router, reg)}
	return p
}

// SetWrites gives the policy what its rule needs to count every writer: the primary's
// position, read after a read arrives, and (PerTable) the follower that records every write
// up to it. Call it before routing any unit.
func (p *Policy) SetWrites(positions Positions, follower Follower) {
	p.positions, p.follower = positions, follower
}

// PrimaryChanged moves what follows the primary to the server now at addr, which a
// failover or a switchover made the primary with pos applied, before writes go to it: every
// read needs pos at least from now on (what the old primary acknowledged and the new one
// has), the primary's monitor, the position reader and the binary log follower read the
// new one, and the follower starts again from its present position.
func (p *Policy) PrimaryChanged(addr string, pos replicas.Pos) {
	p.router.Versions().Covered(pos)
	p.router.SetPrimary(addr)
	if p.positions != nil {
		p.positions.Repoint(addr)
	}
	if p.follower != nil {
		p.follower.Repoint(addr)
	}
}

// Writes returns what SetWrites gave: the position reader and the follower, nil where
// none.
func (p *Policy) Writes() (Positions, Follower) { return p.positions, p.follower }

// HoldStrong sends strong reads to the primary until ReleaseStrong, when writes are known
// only as this proxy acknowledges them (ProxyLocal): a process handing its connections
// over to this one still acknowledges writes this one does not see. Under the rules that
// learn writes from the primary, every writer is counted already and nothing changes.
func (p *Policy) HoldStrong() { p.held.Store(true) }

// ReleaseStrong ends HoldStrong once the other process has acknowledged its last write,
// with its version map as it ended (nil when it ended without saying: every read then
// needs the primary's position as it is read next).
func (p *Policy) ReleaseStrong(last *replicas.VersionsRecord) {
	v := p.router.Versions()
	if last == nil || v.Merge(*last) != nil {
		v.WroteUnknown(time.Now())
	}
	p.held.Store(false)
}

// Versions returns the version map of the writes this proxy recorded, for a process that
// takes its connections over.
func (p *Policy) Versions() replicas.VersionsRecord { return p.router.Versions().Record() }

// MergeVersions adds the version map of the process this one takes over from.
func (p *Policy) MergeVersions(r replicas.VersionsRecord) error { return p.router.Versions().Merge(r) }

// holdsStrong tells whether a strong read goes to the primary for HoldStrong.
func (p *Policy) holdsStrong() bool { return p.held.Load() && p.rule() == ProxyLocal }

// Rule returns the rule strong reads go by now: routing.strong_rule, or ProxyLocal while
// what it needs is missing (the follower refused for want of a grant).
func (p *Policy) Rule() StrongRule { return p.rule() }

// rule is the rule strong reads go by now: cfg.Rule, or ProxyLocal while what it needs is
// missing (no sources, or a follower the primary refused).
func (p *Policy) rule() StrongRule {
	switch {
	case p.cfg.Rule == ProxyLocal || p.positions == nil:
		return ProxyLocal
	case p.cfg.Rule == PerTable && (p.follower == nil || p.follower.Denied()):
		return ProxyLocal
	}
	return p.cfg.Rule
}

// minHorizonWait is the least time a strong read waits to learn what the primary had
// committed when it arrived, however short the causal wait: a position read's round trip.
const minHorizonWait = 5 * time.Millisecond

// horizonWait bounds that wait: the causal wait, and minHorizonWait at least.
func (p *Policy) horizonWait() time.Duration { return max(p.cfg.CausalWait, minHorizonWait) }

// Run runs the router's monitors and the follower, when there is one, until ctx ends. It
// returns at once when the monitors cannot start; the follower then goes on until ctx
// ends.
func (p *Policy) Run(ctx context.Context) error {
	done := make(chan struct{})
	go func() { // ends with ctx
		defer close(done)
		if r, ok := p.follower.(interface{ Run(context.Context) }); ok {
			r.Run(ctx)
		}
	}()
	if c, ok := p.positions.(io.Closer); ok {
		defer c.Close()
	}
	if err := p.router.Run(ctx); err != nil {
		return err
	}
	<-done
	return nil
}

// Router returns the router of the backends.
func (p *Policy) Router() *replicas.Router { return p.router }

// NewSession returns the routing side of a new client session.
func (p *Policy) NewSession() *Session {
	return &Session{p: p, consistency: p.cfg.Consistency}
}

// cost is the estimated work of a read of type key, for balancing.
func (p *Policy) cost(key uint64) time.Duration {
	if p.costs == nil {
		return time.Millisecond
	}
	cost, _, _ := p.costs.ExpectMeasured(estimator.Key(key))
	return max(cost, time.Microsecond)
}

// count counts a unit sent to b for r.
func (p *Policy) count(b *replicas.Backend, r Reason) {
	if r != ReasonNone {
		p.m.reads[b.Index][r].Inc()
	}
}
