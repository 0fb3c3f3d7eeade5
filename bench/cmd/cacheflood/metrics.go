package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
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
	f, err := parseSeries(resp.Body, memorySeries)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if _, ok := f[heapInuseMetric]; !ok {
		return nil, fmt.Errorf("%s has no %s: the proxy does not export the Go runtime's metrics", url, heapInuseMetric)
	}
	return f, nil
}

// parseSeries picks the samples of the named metrics out of a Prometheus text exposition,
// summing the samples of a name (its series, whatever their labels).
func parseSeries(r io.Reader, names []string) (map[string]float64, error) {
	got := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end < 0 {
			end = len(line)
		}
		if !slices.Contains(names, line[:end]) {
			continue
		}
		rest := line[end:]
		if strings.HasPrefix(rest, "{") {
			// Label values may hold a brace; the value follows the last one.
			i := strings.LastIndexByte(rest, '}')
			if i < 0 {
				return nil, fmt.Errorf("%q: unterminated labels", line)
			}
			rest = rest[i+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("%q: no value", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		got[line[:end]] += v
	}
	return got, sc.Err()
}
