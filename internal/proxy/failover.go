package proxy

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
	"github.com/gatekeeperdb/gatekeeper/internal/topology"
)

// unreachable tells whether err, from leasing or dialing a backend connection, says the
// server cannot be reached (rather than that it answered with a refusal, or that the pool
// was full, or that the session ended).
func unreachable(ctx context.Context, err error) bool {
	var se *protocol.ServerError
	switch {
	case err == nil, ctx.Err() != nil, errors.As(err, &se):
		return false
	case errors.Is(err, backend.ErrWaitTimeout), errors.Is(err, backend.ErrClosed), errors.Is(err, context.Canceled):
		return false
	}
	return true
}

// suspect tells the topology that a connection to addr broke or could not be made, so
// that the roles are read at once when addr is the primary.
func (s *session) suspect(addr string) {
	if s.topology != nil && addr != "" {
		s.topology.Suspect(addr)
	}
}

// durableAcks holds the OK of each write until a replica has applied its transaction:
// semi-synchronous replication done by the proxy, which knows the write's position from its
// OK and the replicas' positions from their monitors. A failover to a replica that took
// writes then loses none that a client was told of.
type durableAcks struct {
	router *replicas.Router
	// topology, when set, tells that the primary of a held write is gone.
	topology *topology.Topology
	timeout  time.Duration
	waited   prometheus.Histogram
	acks     *prometheus.CounterVec
}

// outcomePrimaryLost: the primary that committed the write was lost before a replica
// applied it; the client is not acknowledged.
const outcomePrimaryLost = "primary_lost"

func newDurableAcks(router *replicas.Router, top *topology.Topology, timeout time.Duration, reg prometheus.Registerer) *durableAcks {
	d := &durableAcks{router: router, topology: top, timeout: timeout,
		waited: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gatekeeper_durable_ack_wait_seconds",
			Help:    "How long a write's OK was held until a replica had applied it (failover.durable_acks: replica).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		acks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatekeeper_durable_acks_total",
			Help: "Writes whose OK was held for a replica, by outcome: replica (a replica applied it), no_replica (none up to wait for, or the holds are off since one timed out: acknowledged at once), timeout (none applied it within failover.buffer_timeout: acknowledged anyway), cancelled (the session ended first), primary_lost (the primary was lost first: not acknowledged, the connection closed).",
		}, []string{"outcome"}),
	}
	for _, o := range []string{replicas.AppliedOnReplica, replicas.AppliedNoReplica, replicas.AppliedTimeout, replicas.AppliedCancelled, outcomePrimaryLost} {
		d.acks.WithLabelValues(o)
	}
	reg.MustRegister(d.waited, d.acks)
	return d
}

// await returns once a replica has applied the transactions at gtids, committed on the
// primary at addr, or cannot. It returns false when the primary was lost before a replica
// applied them: the write must not be acknowledged.
func (d *durableAcks) await(ctx context.Context, addr string, gtids []replicas.GTID) bool {
	start := time.Now()
	var pos replicas.Pos
	for _, g := range gtids {
		pos = pos.With(g)
	}
	if d.topology != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go d.watch(ctx, addr, cancel) // ends with ctx
	}
	outcome := d.router.AwaitApplied(ctx, pos, d.timeout)
	if outcome != replicas.AppliedOnReplica && d.topology != nil {
		if primary, reachable := d.topology.Holds(addr); !primary || !reachable {
			outcome = outcomePrimaryLost
		}
	}
	d.acks.WithLabelValues(outcome).Inc()
	if outcome == replicas.AppliedOnReplica {
		d.waited.Observe(time.Since(start).Seconds())
	}
	return outcome != outcomePrimaryLost
}

// watch cancels a hold once another server is the primary than addr.
func (d *durableAcks) watch(ctx context.Context, addr string, cancel context.CancelFunc) {
	for {
		changed := d.topology.Changed()
		if primary, _ := d.topology.Holds(addr); !primary {
			cancel()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}
