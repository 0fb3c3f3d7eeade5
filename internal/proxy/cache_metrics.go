package proxy

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/cache"
)

// cacheMetrics count what the result cache did.
type cacheMetrics struct {
	hits, joined, misses, stale, unvouched prometheus.Counter
	saved                                  prometheus.Counter
	refused                                [numRefusals]prometheus.Counter
}

func newCacheMetrics(reg prometheus.Registerer, store *cache.Store) *cacheMetrics {
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	m := &cacheMetrics{
		hits:      counter("gatekeeper_cache_hits_total", "Reads answered from the result cache."),
		joined:    counter("gatekeeper_cache_joined_total", "Reads answered by the fill of a read of the same statement that was running when they arrived (among the hits)."),
		misses:    counter("gatekeeper_cache_misses_total", "Reads that could be cached and found no fresh result."),
		stale:     counter("gatekeeper_cache_invalidations_total", "Results found stale at a lookup (a write to a table they read came after them) and dropped."),
		unvouched: counter("gatekeeper_cache_unvouched_total", "Lookups whose freshness could not be told in time (the primary's position or the binlog follower did not answer): the read ran on the database."),
		saved:     counter("gatekeeper_cache_saved_seconds_total", "Database time the hits saved: the measured cost of each result's statement, summed over its hits."),
	}
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatekeeper_cache_refusals_total",
		Help: "Reads or results not cached, by reason.",
	}, []string{"reason"})
	reg.MustRegister(refused)
	for r := refusal(1); r < numRefusals; r++ {
		m.refused[r] = refused.WithLabelValues(r.String())
	}
	reg.MustRegister(storeCollector{store})
	return m
}

// storeCollector exports the store's own figures.
type storeCollector struct{ store *cache.Store }

var (
	cacheBytesDesc     = prometheus.NewDesc("gatekeeper_cache_bytes", "Bytes the result cache holds: results, keys and bookkeeping.", nil, nil)
	cacheEntriesDesc   = prometheus.NewDesc("gatekeeper_cache_entries", "Results the cache holds.", nil, nil)
	cacheEvictionsDesc = prometheus.NewDesc("gatekeeper_cache_evictions_total", "Results evicted to stay within cache.max_bytes.", nil, nil)
	cacheFillsDesc     = prometheus.NewDesc("gatekeeper_cache_fills_total", "Results stored in the cache.", nil, nil)
)

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cacheBytesDesc
	ch <- cacheEntriesDesc
	ch <- cacheEvictionsDesc
	ch <- cacheFillsDesc
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.store.Stats()
	ch <- prometheus.MustNewConstMetric(cacheBytesDesc, prometheus.GaugeValue, float64(st.Bytes))
	ch <- prometheus.MustNewConstMetric(cacheEntriesDesc, prometheus.GaugeValue, float64(st.Entries))
	ch <- prometheus.MustNewConstMetric(cacheEvictionsDesc, prometheus.CounterValue, float64(st.Evictions))
	ch <- prometheus.MustNewConstMetric(cacheFillsDesc, prometheus.CounterValue, float64(st.Puts))
}
