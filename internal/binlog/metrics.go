package binlog

import (
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// Metrics are the position reads' and, once there is a follower (New), the follower's.
type Metrics struct {
	reg       prometheus.Registerer
	follower  followerMetrics
	positions positionMetrics
	// lag tells how far a position is behind the primary (replicas.Router.Lag).
	lag func(p replicas.Pos, now time.Time) (txns uint64, seconds float64, known bool)

	mu sync.Mutex
	f  *Follower // the follower the position and lag gauges read
}

type followerMetrics struct {
	up, refused                               prometheus.Gauge
	events, transactions, reconnects, resyncs prometheus.Counter
	denied                                    prometheus.Counter
}

type positionMetrics struct {
	reads, served prometheus.Counter
	inFlight      prometheus.Gauge
}

// NewMetrics registers the position reads' metrics with reg, where the follower's join
// them once there is one; lag tells how far a position is behind the primary.
func NewMetrics(reg prometheus.Registerer, lag func(replicas.Pos, time.Time) (uint64, float64, bool)) *Metrics {
	m := &Metrics{reg: reg, lag: lag}
	m.positions = positionMetrics{
		reads:    m.counter("gatekeeper_binlog_position_reads_total", "Reads of the primary's position for strong reads (one in flight at a time)."),
		served:   m.counter("gatekeeper_binlog_position_read_statements_total", "Strong reads served by the position reads: over gatekeeper_binlog_position_reads_total, the reads each position read served."),
		inFlight: m.gauge("gatekeeper_binlog_position_reads_in_flight", "Reads of the primary's position in flight now (at most 1)."),
	}
	return m
}

func (m *Metrics) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	m.reg.MustRegister(c)
	return c
}

func (m *Metrics) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	m.reg.MustRegister(g)
	return g
}

// registerFollower registers the follower's metrics.
func (m *Metrics) registerFollower() {
	m.follower = followerMetrics{
		up:           m.gauge("gatekeeper_binlog_follower_up", "1 while the binlog follower streams the primary's log."),
		refused:      m.gauge("gatekeeper_binlog_follower_refused", "1 while the primary refuses the binlog follower for want of a grant (REPLICATION SLAVE): strong reads count only this proxy's writes."),
		events:       m.counter("gatekeeper_binlog_events_total", "Events the binlog follower read from the primary's log."),
		transactions: m.counter("gatekeeper_binlog_transactions_total", "Committed transactions the binlog follower recorded in the version map."),
		reconnects:   m.counter("gatekeeper_binlog_reconnects_total", "Times the binlog follower lost the primary's log and connected again from its position."),
		resyncs:      m.counter("gatekeeper_binlog_resyncs_total", "Times the binlog follower's position was purged from the primary's log and it started again from the primary's present one."),
		denied:       m.counter("gatekeeper_binlog_denied_total", "Times the primary refused the binlog follower for want of a grant (REPLICATION SLAVE)."),
	}
	m.reg.MustRegister(m)
}

// watch makes f the follower the metrics are of, and registers them.
func (m *Metrics) watch(f *Follower) {
	m.mu.Lock()
	m.f = f
	m.mu.Unlock()
	m.registerFollower()
}

var (
	descLagTxns    = prometheus.NewDesc("gatekeeper_binlog_follower_lag_transactions", "Transactions the primary has that the binlog follower has not recorded yet; NaN until both are known.", nil, nil)
	descLagSeconds = prometheus.NewDesc("gatekeeper_binlog_follower_lag_seconds", "How long ago the primary first had a transaction the binlog follower has not recorded (0 when it has them all); NaN until both are known.", nil, nil)
)

// Describe implements prometheus.Collector for the gauges read at scrape time.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLagTxns
	ch <- descLagSeconds
}

// Collect implements prometheus.Collector: the follower's lag behind the primary.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	txns, secs := m.Lag(time.Now())
	ch <- prometheus.MustNewConstMetric(descLagTxns, prometheus.GaugeValue, txns)
	ch <- prometheus.MustNewConstMetric(descLagSeconds, prometheus.GaugeValue, secs)
}

// Lag returns how far the follower is behind the primary at now, in transactions and
// seconds; NaN while the follower has no position or the primary's is not known.
func (m *Metrics) Lag(now time.Time) (txns, seconds float64) {
	m.mu.Lock()
	f := m.f
	m.mu.Unlock()
	if f == nil || m.lag == nil {
		return math.NaN(), math.NaN()
	}
	p := f.Pos()
	if p == nil {
		return math.NaN(), math.NaN()
	}
	n, secs, known := m.lag(p, now)
	if !known {
		return math.NaN(), math.NaN()
	}
	return float64(n), secs
}
