package promtext

import (
	"maps"
	"strings"
	"testing"
)

// TestSums sums each named metric's series, whatever their labels, and ignores the rest.
func TestSums(t *testing.T) {
	const exposition = `# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 7.4866688e+07
gatekeeper_cache_bytes 6.7108e+07
gatekeeper_cache_evictions_total 750000
gatekeeper_cache_evictions_total_created 1.7e9
gatekeeper_cache_refusals_total{reason="too_large"} 2
gatekeeper_cache_refusals_total{reason="odd}name"} 3 1700000000000
`
	names := []string{"go_memstats_heap_inuse_bytes", "gatekeeper_cache_bytes", "gatekeeper_cache_evictions_total",
		"gatekeeper_cache_refusals_total", "gatekeeper_cache_entries"}
	got, err := Sums(strings.NewReader(exposition), names)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"go_memstats_heap_inuse_bytes": 7.4866688e7, "gatekeeper_cache_bytes": 6.7108e7,
		"gatekeeper_cache_evictions_total": 750000, "gatekeeper_cache_refusals_total": 5}
	if !maps.Equal(got, want) {
		t.Errorf("Sums = %v, want %v", got, want)
	}
	for _, bad := range []string{"go_memstats_heap_inuse_bytes", "go_memstats_heap_inuse_bytes x", `go_memstats_heap_inuse_bytes{a="b" 1`} {
		if _, err := Sums(strings.NewReader(bad), names); err == nil {
			t.Errorf("Sums(%q) took it, want an error", bad)
		}
	}
}
