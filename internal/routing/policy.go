package routing

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

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
