package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gatekeeperdb/gatekeeper/bench/promtext"
)

// scrapeTimeout bounds one scrape of a proxy's metrics.
const scrapeTimeout = 5 * time.Second

// The proxy's series a run reads, all without labels. The gatekeeper_cache_ ones exist
// only while the result cache is on.
const (
	cacheBytesMetric   = "gatekeeper_cache_bytes"
	cacheEntriesMetric = "gatekeeper_cache_entries"
	evictionsMetric    = "gatekeeper_cache_evictions_total"
	fillsMetric        = "gatekeeper_cache_fills_total"
	heapInuseMetric    = "go_memstats_heap_inuse_bytes"
	heapAllocMetric    = "go_memstats_heap_alloc_bytes"
	goSysMetric        = "go_memstats_sys_bytes"
)

// memorySeries are the series a scrape keeps.
var memorySeries = []string{cacheBytesMetric, cacheEntriesMetric, evictionsMetric, fillsMetric,
	heapInuseMetric, heapAllocMetric, goSysMetric}

// scrape reads the proxy's memorySeries from http://admin/metrics; the Go runtime's must
// be there.
func scrape(ctx context.Context, admin string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	url := "http://" + admin + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := promtext.Sums(resp.Body, memorySeries)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if _, ok := f[heapInuseMetric]; !ok {
		return nil, fmt.Errorf("%s has no %s: the proxy does not export the Go runtime's metrics", url, heapInuseMetric)
	}
	return f, nil
}
