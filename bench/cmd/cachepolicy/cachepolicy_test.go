package main

import (
	"bytes"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
)

var testShape = shape{rows: 20000, groups: 200, span: 40, width: 40, buckets: 20}

// The same seed draws the same trace, another seed another one; kinds come in about the
// shares of the mix, keys stay in their kind's range, and the first ranks are hot.
func TestTrace(t *testing.T) {
	kinds := testShape.kinds()
	weights, err := parseMix(defaultMix, kinds)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200000
	a := newTrace(kinds, weights, 1.1, n, 7)
	if b := newTrace(kinds, weights, 1.1, n, 7); !slices.Equal(a, b) {
		t.Fatal("two traces of the same seed differ")
	}
	if c := newTrace(kinds, weights, 1.1, n, 8); slices.Equal(a, c) {
		t.Fatal("traces of seeds 7 and 8 are the same")
	}
	counts := make([]int, len(kinds))
	perKey := make([]map[int32]int, len(kinds))
	for i := range perKey {
		perKey[i] = map[int32]int{}
	}
	for _, r := range a {
		if int(r.key) < 0 || int(r.key) >= kinds[r.kind].keys {
			t.Fatalf("key %d of %s, which has %d", r.key, kinds[r.kind].name, kinds[r.kind].keys)
		}
		counts[r.kind]++
		perKey[r.kind][r.key]++
	}
	for i, k := range kinds {
		want := float64(weights[i]) / 100
		if got := float64(counts[i]) / n; math.Abs(got-want) > 0.01 {
			t.Errorf("%s: share %.3f, want %.2f", k.name, got, want)
		}
		// Zipf: the hottest key takes far more than a uniform draw would give it.
		top := slices.Max(slices.Collect(maps.Values(perKey[i])))
		if uniform := float64(counts[i]) / float64(k.keys); float64(top) < 5*uniform {
			t.Errorf("%s: hottest key drawn %d times, a uniform draw gives %.1f: not skewed", k.name, top, uniform)
		}
	}
}

// A prefix of a longer trace is the shorter trace: the warm-up and the phases are the same
// requests whatever the number of phases.
func TestTracePrefix(t *testing.T) {
	kinds := testShape.kinds()
	weights, _ := parseMix(defaultMix, kinds)
	short := newTrace(kinds, weights, 1.2, 1000, 3)
	long := newTrace(kinds, weights, 1.2, 5000, 3)
	if !slices.Equal(short, long[:1000]) {
		t.Error("the first 1000 requests of a trace of 5000 differ from a trace of 1000")
	}
}

func TestKindsText(t *testing.T) {
	kinds := testShape.kinds()
	tests := []struct {
		kind, key int
		want      string
	}{
		{0, 0, "SELECT id, pad AS point_pad FROM cp_items WHERE id = 1"},
		{1, 2, "SELECT id, pad AS range_pad FROM cp_items WHERE id BETWEEN 81 AND 120"},
		{2, 160, "SELECT COUNT(*) AS report_rows, SUM(LENGTH(pad)), MAX(id) FROM cp_items WHERE grp BETWEEN 160 AND 199"},
		{3, 5, "SELECT grp, id DIV 1000 AS bigreport_bucket, COUNT(*), SUM(LENGTH(pad)), MAX(id) FROM cp_items " +
			"WHERE grp BETWEEN 5 AND 44 GROUP BY grp, bigreport_bucket"},
	}
	for _, tt := range tests {
		if got := kinds[tt.kind].text(tt.key); got != tt.want {
			t.Errorf("%s(%d) = %q, want %q", kinds[tt.kind].name, tt.key, got, tt.want)
		}
	}
	wantKeys := []int{20000, 500, 161, 161}
	for i, k := range kinds {
		if k.keys != wantKeys[i] {
			t.Errorf("%s has %d keys, want %d", k.name, k.keys, wantKeys[i])
		}
		// The last key's statement stays within the table and the groups.
		if i >= 2 && !strings.Contains(k.text(k.keys-1), "BETWEEN 160 AND 199") {
			t.Errorf("%s's last key reads %q, want groups 160 to 199", k.name, k.text(k.keys-1))
		}
	}
	// A digest (literals as ?) still tells each kind apart.
	for i, k := range kinds {
		digest := strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return '?'
			}
			return r
		}, strings.ToUpper(k.text(0)))
		if got := kindOf(kinds, digest); got != i {
			t.Errorf("kindOf(%q) = %d, want %d", digest, got, i)
		}
	}
	if got := kindOf(kinds, "SELECT 1"); got != -1 {
		t.Errorf("kindOf(SELECT 1) = %d, want -1", got)
	}
}

func TestGroupsCoverEveryValue(t *testing.T) {
	seen := map[int]int{}
	for id := 1; id <= testShape.rows; id++ {
		seen[testShape.grp(id)]++
	}
	if len(seen) != testShape.groups {
		t.Fatalf("%d groups have rows, want %d", len(seen), testShape.groups)
	}
	for g, n := range seen {
		if n < 50 || n > 150 {
			t.Errorf("group %d has %d rows, want about 100", g, n)
		}
	}
	for _, id := range []int{1, 57, 100, 199} {
		if n := len(pad(id)); n != 100+id%100 {
			t.Errorf("pad(%d) has %d characters, want %d", id, n, 100+id%100)
		}
	}
}

func TestParseMix(t *testing.T) {
	kinds := testShape.kinds()
	got, err := parseMix("point=3, report=1", kinds)
	if err != nil || !slices.Equal(got, []int{3, 0, 1, 0}) {
		t.Errorf("parseMix = %v, %v; want [3 0 1 0]", got, err)
	}
	for _, bad := range []string{"", "point", "point=-1", "point=0", "scan=1", "point=x"} {
		if _, err := parseMix(bad, kinds); err == nil {
			t.Errorf("parseMix(%q) took it, want an error", bad)
		}
	}
}

func TestTypesSince(t *testing.T) {
	kinds := testShape.kinds()
	first := []admin.CacheTypeStats{
		{Type: "a", Sample: "SELECT id, pad AS point_pad FROM cp_items WHERE id = ?", Lookups: 10, Hits: 2, SavedSeconds: 1},
	}
	last := []admin.CacheTypeStats{
		{Type: "a", Sample: "SELECT id, pad AS point_pad FROM cp_items WHERE id = ?", Lookups: 30, Hits: 12, SavedSeconds: 1.5},
		{Type: "b", Sample: "SELECT COUNT(*) AS REPORT_ROWS ...", Lookups: 5, Hits: 4, SavedSeconds: 2},
		{Type: "c", Sample: "SELECT 1", Lookups: 99, Hits: 99, SavedSeconds: 99},
	}
	got := typesSince(kinds, last, first)
	want := []typeCounts{{20, 10, 0.5}, {}, {5, 4, 2}, {}}
	if !slices.Equal(got, want) {
		t.Errorf("typesSince = %v, want %v", got, want)
	}
}

func TestPhaseOrder(t *testing.T) {
	if got := phaseOrder(2, 0); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("phase 0: %v, want [0 1]", got)
	}
	if got := phaseOrder(2, 1); !slices.Equal(got, []int{1, 0}) {
		t.Errorf("phase 1: %v, want [1 0]", got)
	}
}

func TestMarkdown(t *testing.T) {
	o := options{shape: testShape, mix: "point=3,report=1", zipf: 1.1, phases: 2, requests: 100, clients: 8, seed: 1}
	r := newResult(o, testShape.kinds(), []time.Duration{800 * time.Microsecond, 0, 0, 0})
	r.Phases = []phaseResult{
		{Arm: "cost_aware", Phase: 1, Seconds: 1, Requests: 100, Hits: 60, Misses: 40, SavedSeconds: 0.5},
		{Arm: "lru", Phase: 1, Seconds: 2, Requests: 100, Hits: 70, Misses: 30, SavedSeconds: 0.4},
		{Arm: "lru", Phase: 2, Seconds: 1, Requests: 100, Hits: 50, Misses: 50, SavedSeconds: 0.3},
		{Arm: "cost_aware", Phase: 2, Seconds: 1, Requests: 100, Hits: 50, Misses: 50, SavedSeconds: 0.2},
	}
	kinds := make([]kindResult, 4)
	kinds[0] = kindResult{Name: "point", Requests: 150, MeanMS: 0.2, MeanBytes: 2048, Lookups: 150, Hits: 75, SavedSeconds: 0.03}
	r.Arms = []armResult{
		{Name: "cost_aware", Requests: 200, ActiveSeconds: 2, Hits: 110, Misses: 90, SavedSeconds: 0.7, Evictions: 5,
			CacheBytes: 1 << 20, CacheEntries: 300, MaxBytes: 1 << 20, HeapInuseBytes: 20 << 20, RSSBytes: 40 << 20, PeakRSSBytes: 41 << 20, Kinds: kinds},
		{Name: "lru", Requests: 200, Errors: 1, FirstError: "Error 1105: boom", ActiveSeconds: 3, Hits: 120, Misses: 80,
			SavedSeconds: 0.7, CacheBytes: 1 << 19, CacheEntries: 100, Kinds: kinds},
	}
	for i := range r.Arms {
		r.Arms[i].CalibratedSavedSeconds = r.Workload.calibratedSaved(r.Arms[i].Kinds)
	}
	if got := r.Arms[0].CalibratedSavedSeconds; math.Abs(got-0.06) > 1e-12 {
		t.Errorf("calibratedSaved = %v, want 75 hits × 0.8 ms = 0.06", got)
	}
	var b bytes.Buffer
	r.writeMarkdown(&b)
	out := b.String()
	for _, want := range []string{
		"| cost_aware | 200 | 100 | 55.0% | 110 | 90 | 0.70 | 0.350 | 0.030 | 5 | 1.00 | 300 | 20.0 | 40.0 | 41.0 | 0 |",
		"| lru | 200 | 67 | 60.0% | 120 | 80 | 0.70 | 0.233 | 0.020 | 0 | 0.50 | 100 | 0.0 | — | — | 1 (Error 1105: boom) |",
		"| point | 20000 | 75% | 0.800 | cost_aware | 150 | 2.00 | 0.200 | 50.0% | 0.03 | 0.400 |",
		"| report | 161 | 25% | — | lru | 0 | 0.00 | 0.000 | 0.0% | 0.00 | 0.000 |",
		"| phase | cost_aware saved s per s | cost_aware hit ratio | lru saved s per s | lru hit ratio |",
		"| 1 | 0.500 | 60.0% | 0.200 | 70.0% |",
		"| 2 | 0.200 | 50.0% | 0.300 | 50.0% |",
		"- cost_aware saved 0.350 s of database time per second against lru's 0.233 (1.50×), more in 1 of 2 phases;",
		"RSS 40.0 MiB against — MiB",
		"- At each kind's calibrated cost (its time alone on the primary), cost_aware's hits saved 0.030 s a second against lru's 0.020 (1.50×).",
		"- Working set: every key's result once, in column bytes, 39.1 MiB (point 39.1, range 0.0, report 0.0, bigreport 0.0), 39× cache.max_bytes (1.00 MiB).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q; it is:\n%s", want, out)
		}
	}
	// Every table row has as many cells as its header.
	var cells int
	for line := range strings.SplitSeq(out, "\n") {
		switch {
		case !strings.HasPrefix(line, "|"):
			cells = 0
		case cells == 0:
			cells = strings.Count(line, "|")
		case strings.Count(line, "|") != cells:
			t.Errorf("row %q has %d bars, its header %d", line, strings.Count(line, "|"), cells)
		}
	}
}

func TestFlags(t *testing.T) {
	ok := []string{"--arm", "a", "--dsn", "x@tcp(h:1)/d", "--admin", "h:2", "--arm", "b", "--dsn", "y@tcp(h:3)/d", "--admin", "h:4"}
	if _, err := parseFlags(ok); err != nil {
		t.Errorf("parseFlags(%q): %v", ok, err)
	}
	if _, err := parseFlags([]string{"--prepare", "--primary-dsn", "x@tcp(h:1)/d"}); err != nil {
		t.Errorf("--prepare: %v", err)
	}
	for _, bad := range [][]string{
		{},
		{"--prepare"},
		{"--arm", "a", "--dsn", "x@tcp(h:1)/d"},
		append(slices.Clone(ok), "--pid", "1"),
		append(slices.Clone(ok), "--zipf", "1"),
		append(slices.Clone(ok), "--width", "300"),
		{"--arm", "a", "--dsn", "x", "--admin", "h", "--arm", "a", "--dsn", "y", "--admin", "i"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) took it, want an error", bad)
		}
	}
}
