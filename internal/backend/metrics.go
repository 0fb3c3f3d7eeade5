package backend

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the pools' Prometheus metrics, labelled by backend.
type Metrics struct {
	dials       *prometheus.CounterVec
	dialSeconds *prometheus.HistogramVec
	waits       *prometheus.HistogramVec
	waitErrors  *prometheus.CounterVec
	discards    *prometheus.CounterVec
}

// NewMetrics registers the pool metrics with reg. The gauges of connections by state come
// from a collector over the pools (NewPoolCollector).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		dials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatekeeper_backend_dials_total",
			Help: "Connections the proxy opened to a backend for its pools, by backend and outcome (ok, refused, error).",
		}, []string{"backend", "outcome"}),
		dialSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gatekeeper_backend_dial_seconds",
			Help:    "Time to open and log in a pooled backend connection.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"backend"}),
		waits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gatekeeper_backend_lease_wait_seconds",
			Help:    "Time a unit waited for a pooled connection when all were leased.",
			Buckets: []float64{.0001, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"backend"}),
		waitErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatekeeper_backend_lease_wait_failures_total",
			Help: "Waits for a pooled connection that ended without one, by backend and reason (timeout, canceled).",
		}, []string{"backend", "reason"}),
		discards: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatekeeper_backend_connections_closed_total",
			Help: "Pooled connections closed, by backend and reason (broken, idle, max_lifetime, dead_when_idle, other_key, session_state).",
		}, []string{"backend", "reason"}),
	}
	reg.MustRegister(m.dials, m.dialSeconds, m.waits, m.waitErrors, m.discards)
	return m
}

// poolMetrics are the series of one backend, resolved once.
type poolMetrics struct {
	dialOK, dialRefused, dialError prometheus.Counter
	dialSeconds, waits             prometheus.Observer
	waitTimeout, waitCanceled      prometheus.Counter
	discards                       *prometheus.CounterVec
	backend                        string
}

func (m *Metrics) forBackend(addr string) *poolMetrics {
	if m == nil {
		m = NewMetrics(prometheus.NewRegistry())
	}
	return &poolMetrics{
		dialOK:       m.dials.WithLabelValues(addr, "ok"),
		dialRefused:  m.dials.WithLabelValues(addr, "refused"),
		dialError:    m.dials.WithLabelValues(addr, "error"),
		dialSeconds:  m.dialSeconds.WithLabelValues(addr),
		waits:        m.waits.WithLabelValues(addr),
		waitTimeout:  m.waitErrors.WithLabelValues(addr, "timeout"),
		waitCanceled: m.waitErrors.WithLabelValues(addr, "canceled"),
		discards:     m.discards,
		backend:      addr,
	}
}

func (m *poolMetrics) dialed(err error, took time.Duration) {
	switch {
	case err == nil:
		m.dialOK.Inc()
		m.dialSeconds.Observe(took.Seconds())
	case errors.Is(err, ErrLoginRefused) || errors.Is(err, ErrNoSecret) || errors.Is(err, ErrSchema):
		m.dialRefused.Inc()
	default:
		m.dialError.Inc()
	}
}

func (m *poolMetrics) waited(took time.Duration, err error) {
	m.waits.Observe(took.Seconds())
	switch {
	case err == nil:
	case errors.Is(err, ErrWaitTimeout):
		m.waitTimeout.Inc()
	default:
		m.waitCanceled.Inc()
	}
}

func (m *poolMetrics) discarded(reason string) {
	m.discards.WithLabelValues(m.backend, reason).Inc()
}

// PoolCollector exports the connections of pools by state.
type PoolCollector struct {
	pools func() []*Pool
	conns *prometheus.Desc
	limit *prometheus.Desc
	waits *prometheus.Desc
}

// NewPoolCollector returns a collector over the pools pools returns.
func NewPoolCollector(pools func() []*Pool) *PoolCollector {
	return &PoolCollector{
		pools: pools,
		conns: prometheus.NewDesc("gatekeeper_backend_connections",
			"Pooled backend connections now, by backend and state (idle, leased).", []string{"backend", "state"}, nil),
		limit: prometheus.NewDesc("gatekeeper_backend_connections_max",
			"The bound on pooled connections to a backend (pools.max_open).", []string{"backend"}, nil),
		waits: prometheus.NewDesc("gatekeeper_backend_lease_waiting",
			"Units waiting for a pooled connection now, by backend.", []string{"backend"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.conns
	ch <- c.limit
	ch <- c.waits
}

// Collect implements prometheus.Collector.
func (c *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.pools() {
		s := p.Stats()
		ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, float64(s.Idle), s.Addr, "idle")
		ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, float64(s.Leased), s.Addr, "leased")
		ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(s.Limit), s.Addr)
		ch <- prometheus.MustNewConstMetric(c.waits, prometheus.GaugeValue, float64(s.Waiting), s.Addr)
	}
}
