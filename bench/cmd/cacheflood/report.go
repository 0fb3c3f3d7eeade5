package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// margin is the share of cache.max_bytes the process may hold above the baseline besides
// max_bytes itself.
const margin = 0.05

const mib = 1 << 20

// result is a run: the flood, and each arm's figures.
type result struct {
	Statements  int64 `json:"statements"`
	Connections int   `json:"connections"`
	Rows        int   `json:"rows"`
	// MaxBytes is the caching arms' cache.max_bytes; 0 when not given.
	MaxBytes int64       `json:"max_bytes"`
	Arms     []armResult `json:"arms"`
}

// armResult is one arm's flood and its proxy's memory: at the end unless said otherwise.
type armResult struct {
	Name       string  `json:"name"`
	Sent       int64   `json:"sent"`
	Errors     int64   `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	Seconds    float64 `json:"seconds"`
	// RSSBytes is VmRSS, PeakRSSBytes VmHWM (the most since the process started), and
	// MaxSampledRSSBytes the most VmRSS read during the flood, once a second.
	RSSBytes           int64 `json:"rss_bytes"`
	PeakRSSBytes       int64 `json:"peak_rss_bytes"`
	MaxSampledRSSBytes int64 `json:"max_sampled_rss_bytes"`
	// HeapInuseBytes, HeapAllocBytes and GoSysBytes are the Go runtime's
	// go_memstats_heap_inuse_bytes, _heap_alloc_bytes and _sys_bytes; MaxHeapInuseBytes
	// the most heap in use read during the flood.
	HeapInuseBytes    float64 `json:"heap_inuse_bytes"`
	HeapAllocBytes    float64 `json:"heap_alloc_bytes"`
	GoSysBytes        float64 `json:"go_sys_bytes"`
	MaxHeapInuseBytes float64 `json:"max_heap_inuse_bytes"`
	// CacheOn says that the proxy exports the result cache's series; the rest are theirs.
	CacheOn      bool    `json:"cache_on"`
	CacheBytes   float64 `json:"cache_bytes"`
	CacheEntries float64 `json:"cache_entries"`
	Fills        float64 `json:"fills_total"`
	Evictions    float64 `json:"evictions_total"`
}

// setEnd records the memory read at the end of the flood.
func (r *armResult) setEnd(s memorySample) {
	r.RSSBytes = s.rss
	r.MaxSampledRSSBytes = max(r.MaxSampledRSSBytes, s.rss)
	r.HeapInuseBytes, r.HeapAllocBytes, r.GoSysBytes = s.series[heapInuseMetric], s.series[heapAllocMetric], s.series[goSysMetric]
	r.MaxHeapInuseBytes = max(r.MaxHeapInuseBytes, r.HeapInuseBytes)
	_, r.CacheOn = s.series[cacheBytesMetric]
	r.CacheBytes, r.CacheEntries = s.series[cacheBytesMetric], s.series[cacheEntriesMetric]
	r.Fills, r.Evictions = s.series[fillsMetric], s.series[evictionsMetric]
}

func (r *result) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// writeMarkdown writes a row per arm, then each arm's memory above the first's against
// the bound.
func (r *result) writeMarkdown(w io.Writer) {
	fmt.Fprintln(w, "| arm | statements | seconds | statements/s | errors | cache MiB | entries | fills | evictions | "+
		"heap in use MiB | max heap in use MiB | heap alloc MiB | Go sys MiB | RSS MiB | max RSS MiB | peak RSS (VmHWM) MiB |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, a := range r.Arms {
		errs := fmt.Sprint(a.Errors)
		if a.Errors > 0 {
			errs += " (" + clip(a.FirstError, 60) + ")"
		}
		cache := "off | — | — | —"
		if a.CacheOn {
			cache = fmt.Sprintf("%.1f | %.0f | %.0f | %.0f", a.CacheBytes/mib, a.CacheEntries, a.Fills, a.Evictions)
		}
		fmt.Fprintf(w, "| %s | %d | %.1f | %.0f | %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n",
			a.Name, a.Sent, a.Seconds, ratio(float64(a.Sent), a.Seconds), errs, cache,
			a.HeapInuseBytes/mib, a.MaxHeapInuseBytes/mib, a.HeapAllocBytes/mib, a.GoSysBytes/mib,
			float64(a.RSSBytes)/mib, float64(a.MaxSampledRSSBytes)/mib, float64(a.PeakRSSBytes)/mib)
	}
	fmt.Fprintln(w)
	for _, line := range r.verdicts() {
		fmt.Fprintln(w, "- "+line)
	}
}

// verdicts compare each arm's memory with the first arm's (the baseline): VmRSS at the end,
// VmHWM and the Go heap in use, each above the baseline's against MaxBytes plus margin of
// it; and the cache's own count against MaxBytes.
func (r *result) verdicts() []string {
	if len(r.Arms) < 2 {
		return nil
	}
	base := r.Arms[0]
	bound := float64(r.MaxBytes) * (1 + margin)
	var lines []string
	for _, a := range r.Arms[1:] {
		for _, m := range []struct {
			what       string
			got, basis float64
		}{
			{"RSS at the end (VmRSS)", float64(a.RSSBytes), float64(base.RSSBytes)},
			{"peak RSS (VmHWM)", float64(a.PeakRSSBytes), float64(base.PeakRSSBytes)},
			{"Go heap in use at the end", a.HeapInuseBytes, base.HeapInuseBytes},
			{"most Go heap in use read during the flood", a.MaxHeapInuseBytes, base.MaxHeapInuseBytes},
		} {
			lines = append(lines, fmt.Sprintf("%s, %s: %.1f MiB, %s the baseline's (%s) %.1f MiB%s.",
				a.Name, m.what, m.got/mib, signedMiB(m.got-m.basis), base.Name, m.basis/mib, against(m.got-m.basis, bound)))
		}
		if a.CacheOn && r.MaxBytes > 0 {
			state := "within it"
			if a.CacheBytes > float64(r.MaxBytes) {
				state = "OVER it"
			}
			lines = append(lines, fmt.Sprintf("%s: the cache counts %.2f MiB held (gatekeeper_cache_bytes) of cache.max_bytes %.2f MiB: %s.",
				a.Name, a.CacheBytes/mib, float64(r.MaxBytes)/mib, state))
		}
	}
	return lines
}

// signedMiB says d bytes as "X MiB above" or "X MiB below".
func signedMiB(d float64) string {
	if d < 0 {
		return fmt.Sprintf("%.1f MiB below", -d/mib)
	}
	return fmt.Sprintf("%.1f MiB above", d/mib)
}

// against says how a difference stands against the bound; nothing without one.
func against(d, bound float64) string {
	if bound <= 0 {
		return ""
	}
	if d <= bound {
		return fmt.Sprintf("; within max_bytes + 5%% (%.1f MiB): %.0f%% of it", bound/mib, 100*d/bound)
	}
	return fmt.Sprintf("; OVER max_bytes + 5%% (%.1f MiB) by %.1f MiB", bound/mib, (d-bound)/mib)
}

// ratio is a/b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// clip shortens s to n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
