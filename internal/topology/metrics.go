package topology

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the topology's metrics.
type Metrics struct {
	failovers prometheus.Counter
	refusals  *prometheus.CounterVec
	reg       prometheus.Registerer
}

// NewMetrics registers the topology's counters with reg; its gauges are registered when a
// Topology is made with them.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{reg: reg,
		failovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatekeeper_failovers_total",
			Help: "Changes of primary the proxy followed (a failover or a switchover).",
		}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatekeeper_failover_writes_refused_total",
			Help: "Writes refused for want of a primary, by reason: timeout (failover.buffer_timeout), buffer_full (failover.buffer_max), split_brain.",
		}, []string{"reason"}),
	}
	for _, r := range []string{"timeout", "buffer_full", StateSplitBrain} {
		m.refusals.WithLabelValues(r)
	}
	reg.MustRegister(m.failovers, m.refusals)
	return m
}

func (m *Metrics) refused(reason string) {
	if m != nil {
		m.refusals.WithLabelValues(reason).Inc()
	}
}

// watch registers the gauges that read t.
func (m *Metrics) watch(t *Topology) {
	m.reg.MustRegister(&collector{t: t,
		state: prometheus.NewDesc("gatekeeper_failover_state",
			"1 for the state writes are in: ok, failover (no primary; writes wait), split_brain (writes fail), paused (a switchover).",
			[]string{"state"}, nil),
		waiting: prometheus.NewDesc("gatekeeper_failover_waiting_writes",
			"Writes that wait for a primary now.", nil, nil),
		longest: prometheus.NewDesc("gatekeeper_failover_longest_wait_seconds",
			"How long the oldest write that waits for a primary has waited.", nil, nil),
		since: prometheus.NewDesc("gatekeeper_failover_state_since_seconds",
			"Unix time at which the present state began.", nil, nil),
		role: prometheus.NewDesc("gatekeeper_backend_role",
			"1 for each server's role as last read: primary, replica (read-only or replicating), writable (a second writable server: split brain), down, unknown (not read yet).",
			[]string{"backend", "role"}, nil),
		changed: prometheus.NewDesc("gatekeeper_primary_changed_seconds",
			"Unix time of the last change of primary; 0 when none since the start.", nil, nil),
	})
}

type collector struct {
	t                                             *Topology
	state, waiting, longest, since, role, changed *prometheus.Desc
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.state, c.waiting, c.longest, c.since, c.role, c.changed} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	v := c.t.View()
	for _, s := range States {
		val := 0.0
		if s == v.State {
			val = 1
		}
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, val, s)
	}
	ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(v.Waiting))
	ch <- prometheus.MustNewConstMetric(c.longest, prometheus.GaugeValue, v.LongestWait)
	ch <- prometheus.MustNewConstMetric(c.since, prometheus.GaugeValue, float64(v.Since.UnixNano())/1e9)
	changed := 0.0
	if !v.Changed.IsZero() {
		changed = float64(v.Changed.UnixNano()) / 1e9
	}
	ch <- prometheus.MustNewConstMetric(c.changed, prometheus.GaugeValue, changed)
	for _, s := range v.Servers {
		ch <- prometheus.MustNewConstMetric(c.role, prometheus.GaugeValue, 1, s.Addr, roleOf(s, v))
	}
}

// roleOf names s's role in v.
func roleOf(s Server, v View) string {
	switch {
	case s.Checked.IsZero():
		return "unknown"
	case !s.Up:
		return "down"
	case s.Addr == v.Primary && s.writable():
		return "primary"
	case s.writable():
		return "writable"
	default:
		return "replica"
	}
}
