package estimator

import (
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultTopN is the number of types NewCollector exports when given no positive number.
const DefaultTopN = 20

// collector exports a table's statistics, built from a snapshot at each scrape so that the
// per-type series are those of the current top types only.
type collector struct {
	t    *Table
	topN int

	estimate  *prometheus.Desc
	cost      *prometheus.Desc
	share     *prometheus.Desc
	types     *prometheus.Desc
	evictions *prometheus.Desc
}

var _ prometheus.Collector = (*collector)(nil)

// NewCollector returns a collector of the metrics of t. Per-type series carry a "type" label
// whose value is the type's Name, for the topN types by share of load (the other bucket
// among them when it ranks); a type that leaves the top disappears from the next scrape.
// topN <= 0 means DefaultTopN.
//
//	gatekeeper_estimator_estimated_cost_seconds{type}  gauge: the estimate admission charges
//	gatekeeper_estimator_cost_seconds{type,quantile}   summary: p50, p95, p99 over the recent
//	                                                   horizon; _count and _sum since start
//	gatekeeper_estimator_load_share_ratio{type}        gauge: share of the recent measured cost
//	gatekeeper_estimator_tracked_types                 gauge: types in the table
//	gatekeeper_estimator_evictions_total               counter: types evicted into "other"
func NewCollector(t *Table, topN int) prometheus.Collector {
	if topN <= 0 {
		topN = DefaultTopN
	}
	typ := []string{"type"}
	return &collector{
		t:    t,
		topN: topN,
		estimate: prometheus.NewDesc("gatekeeper_estimator_estimated_cost_seconds",
			"Estimated cost of a unit of the request type (moving average of its measured backend busy time), as charged by admission.",
			typ, nil),
		cost: prometheus.NewDesc("gatekeeper_estimator_cost_seconds",
			"Measured cost of units of the request type: quantiles over the recent horizon, count and sum since start.",
			typ, nil),
		share: prometheus.NewDesc("gatekeeper_estimator_load_share_ratio",
			"Share of the cost measured over the recent horizon that the request type accounts for.",
			typ, nil),
		types: prometheus.NewDesc("gatekeeper_estimator_tracked_types",
			"Number of request types tracked, not counting the other bucket.",
			nil, nil),
		evictions: prometheus.NewDesc("gatekeeper_estimator_evictions_total",
			"Request types evicted from the table into the other bucket.",
			nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.estimate
	ch <- c.cost
	ch <- c.share
	ch <- c.types
	ch <- c.evictions
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	snap := c.t.Snapshot()
	if len(snap) > c.topN {
		snap = snap[:c.topN]
	}
	for _, ts := range snap {
		ch <- prometheus.MustNewConstMetric(c.estimate, prometheus.GaugeValue, ts.Mean.Seconds(), ts.Name)
		ch <- prometheus.MustNewConstSummary(c.cost, ts.Count, ts.Total.Seconds(), map[float64]float64{
			0.5:  ts.P50.Seconds(),
			0.95: ts.P95.Seconds(),
			0.99: ts.P99.Seconds(),
		}, ts.Name)
		ch <- prometheus.MustNewConstMetric(c.share, prometheus.GaugeValue, ts.Share, ts.Name)
	}
	ch <- prometheus.MustNewConstMetric(c.types, prometheus.GaugeValue, float64(c.t.Len()))
	ch <- prometheus.MustNewConstMetric(c.evictions, prometheus.CounterValue, float64(c.t.Evictions()))
}
