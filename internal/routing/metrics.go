package routing

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// metrics are the choices routing made, by backend, and what it waited.
type metrics struct {
	// reads counts units by backend (replicas.Backend.Index) and reason.
	reads       [][numReasons]prometheus.Counter
	causalWaits prometheus.Histogram
	// horizonWaits are the strong reads' waits to learn what the primary had committed when
	// they arrived; unvouched counts those that could not, and went to the primary.
	horizonWaits prometheus.Histogram
	unvouched    prometheus.Counter
}

func newMetrics(router *replicas.Router, reg prometheus.Registerer) *metrics {
	m := &metrics{}
	reads := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatekeeper_reads_total",
		Help: "Units by the backend they went to and why: routed (to a replica at once), waited (to a replica after waiting for it to catch up), fell_back_to_primary (no replica caught up in routing.causal_wait), in_transaction, pinned (session state, a cursor), write, unsure (statements the classifier is unsure of).",
	}, []string{"backend", "reason"})
	m.causalWaits = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "gatekeeper_causal_wait_seconds",
		Help:    "Time reads waited for a replica to apply the writes they need, whether one did or the read went to the primary.",
		Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1},
	})
	m.horizonWaits = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "gatekeeper_causal_wait_follower_seconds",
		Help:    "Time strong reads waited to learn what the primary had committed when they arrived (routing.strong_rule per_table or global): the position read and, per_table, the binlog follower reaching it.",
		Buckets: []float64{.0001, .00025, .0005, .001, .002, .005, .01, .02, .05, .1},
	})
	m.unvouched = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gatekeeper_reads_unvouched_total",
		Help: "Strong reads that went to the primary because what the primary had committed when they arrived could not be learnt in time (the binlog follower down or behind, the position read failed).",
	})
	for _, b := range backendsOf(router) {
		var c [numReasons]prometheus.Counter
		for r := Routed; r < numReasons; r++ {
			c[r] = reads.WithLabelValues(b.Addr, reasonNames[r])
		}
		m.reads = append(m.reads, c)
	}
	reg.MustRegister(reads, m.causalWaits, m.horizonWaits, m.unvouched, &replicaCollector{router: router})
	return m
}

// backendsOf returns the primary and the replicas, in the order of their Index.
func backendsOf(r *replicas.Router) []*replicas.Backend {
	return append([]*replicas.Backend{r.Primary()}, r.Replicas()...)
}

// replicaCollector exports what the router knows of each backend.
type replicaCollector struct {
	router *replicas.Router
}

func desc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, []string{"backend"}, nil)
}

var (
	descUp               = desc("gatekeeper_replica_up", "1 when the replica answered its last poll.")
	descShunned          = desc("gatekeeper_replica_shunned", "1 when the replica takes no reads: down, or behind the primary past routing.max_lag (it rejoins at half of it).")
	descLagTxns          = desc("gatekeeper_replica_lag_transactions", "Transactions the primary has that the replica has not applied.")
	descLagSeconds       = desc("gatekeeper_replica_lag_seconds", "How long ago the primary first had a transaction the replica has not applied; 0 when it has them all.")
	descOutstandingReads = desc("gatekeeper_backend_outstanding_reads", "Reads routed to the backend and not finished.")
	descOutstandingWork  = desc("gatekeeper_backend_outstanding_work_seconds", "Estimated work of the reads routed to the backend and not finished (what balance self compares).")
)

func (c *replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descShunned, descLagTxns, descLagSeconds, descOutstandingReads, descOutstandingWork} {
		ch <- d
	}
}

func (c *replicaCollector) Collect(ch chan<- prometheus.Metric) {
	g := func(d *prometheus.Desc, v float64, addr string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, addr)
	}
	for _, b := range backendsOf(c.router) {
		work, n := b.Outstanding()
		g(descOutstandingReads, float64(n), b.Addr)
		g(descOutstandingWork, work.Seconds(), b.Addr)
		if b.Primary {
			continue
		}
		st := b.Status()
		g(descUp, b2f(st.Up), b.Addr)
		g(descShunned, b2f(st.Shunned), b.Addr)
		g(descLagTxns, float64(st.LagTxns), b.Addr)
		g(descLagSeconds, st.LagSeconds, b.Addr)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
