package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"

	"github.com/gatekeeperdb/gatekeeper/bench/promtext"
)

// scrapeTimeout bounds one request to a proxy's admin server.
const scrapeTimeout = 5 * time.Second

// The proxy's series a run reads, all without labels.
const (
	hitsMetric      = "gatekeeper_cache_hits_total"
	missesMetric    = "gatekeeper_cache_misses_total"
	savedMetric     = "gatekeeper_cache_saved_seconds_total"
	bytesMetric     = "gatekeeper_cache_bytes"
	entriesMetric   = "gatekeeper_cache_entries"
	evictionsMetric = "gatekeeper_cache_evictions_total"
	heapInuseMetric = "go_memstats_heap_inuse_bytes"
)

// cacheSeries are the series a scrape keeps.
var cacheSeries = []string{hitsMetric, missesMetric, savedMetric, bytesMetric, entriesMetric, evictionsMetric, heapInuseMetric}

// cacheFigures is one scrape of a proxy: the value of each of cacheSeries it has.
type cacheFigures map[string]float64

// since is what the counters counted after before, an earlier scrape of the same proxy.
func (f cacheFigures) since(before cacheFigures, name string) float64 { return f[name] - before[name] }

// scrape reads the proxy's cacheSeries from http://admin/metrics.
func scrape(ctx context.Context, adminAddr string) (cacheFigures, error) {
	body, err := get(ctx, "http://"+adminAddr+"/metrics")
	if err != nil {
		return nil, err
	}
	defer body.Close()
	f, err := promtext.Sums(body, cacheSeries)
	if err != nil {
		return nil, fmt.Errorf("%s/metrics: %w", adminAddr, err)
	}
	for _, name := range []string{hitsMetric, savedMetric, bytesMetric} {
		if _, ok := f[name]; !ok {
			return nil, fmt.Errorf("%s/metrics has no %s: is the result cache on (cache.mode)?", adminAddr, name)
		}
	}
	return f, nil
}

// cacheReport reads the proxy's cache and what it did per statement type, from
// /api/v1/cache.
func cacheReport(ctx context.Context, adminAddr string) (admin.CacheResponse, error) {
	var c admin.CacheResponse
	body, err := get(ctx, "http://"+adminAddr+"/api/v1/cache")
	if err != nil {
		return c, err
	}
	defer body.Close()
	if err := json.NewDecoder(body).Decode(&c); err != nil {
		return c, fmt.Errorf("%s/api/v1/cache: %w", adminAddr, err)
	}
	return c, nil
}

// get returns the body of a GET of url, which the caller closes.
func get(ctx context.Context, url string) (io.ReadCloser, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return cancelOnClose{resp.Body, cancel}, nil
}

// cancelOnClose is a body whose request's context is cancelled when it is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
