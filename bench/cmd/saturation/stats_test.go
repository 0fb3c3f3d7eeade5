package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		var ds []time.Duration
		for _, v := range vs {
			ds = append(ds, time.Duration(v)*time.Millisecond)
		}
		return ds
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100 down to 1
	}
	for _, tc := range []struct {
		name string
		in   []time.Duration
		want summary
	}{
		{"none", nil, summary{}},
		{"one", ms(7), summary{Count: 1, Mean: 7 * time.Millisecond, P50: 7 * time.Millisecond, P95: 7 * time.Millisecond}},
		// Nearest rank: p50 of 1..4 is the 2nd, p95 the 4th.
		{"four unsorted", ms(4, 1, 3, 2), summary{Count: 4, Mean: 2500 * time.Microsecond, P50: 2 * time.Millisecond, P95: 4 * time.Millisecond}},
		{"hundred", ms(hundred...), summary{Count: 100, Mean: 50500 * time.Microsecond, P50: 50 * time.Millisecond, P95: 95 * time.Millisecond}},
		// One slow statement moves the mean, not the median.
		{"outlier", ms(1, 1, 1, 1, 96), summary{Count: 5, Mean: 20 * time.Millisecond, P50: time.Millisecond, P95: 96 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tc.in...)
			if got := summarize(in); got != tc.want {
				t.Errorf("summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
			}
			for i := range in {
				if in[i] != tc.in[i] {
					t.Fatalf("summarize reordered its input: %v", in)
				}
			}
		})
	}
}

// TestReportRoundTrip appends runs as saturation run does and reads them back into the
// report: medians per route over rounds, errors summed, the ratio to direct.
func TestReportRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.csv")
	add := func(route string, round int, shortMean time.Duration, scans int, errs map[string]int, cpu time.Duration) {
		t.Helper()
		r := result{
			Route: route, Round: round, Period: 10 * time.Second,
			Short:  summary{Count: 1000, Mean: shortMean, P50: shortMean / 2, P95: 3 * shortMean},
			Scans:  summary{Count: scans, Mean: time.Second},
			Errors: errs, ProxyCPU: cpu, HasProxy: route != "direct",
		}
		for _, n := range errs {
			r.ScanErrors += n
		}
		if err := appendRun(path, r); err != nil {
			t.Fatal(err)
		}
	}
	add("direct", 1, 20*time.Millisecond, 1000, nil, 0)
	add("admission-off", 1, 90*time.Millisecond, 900, nil, 2*time.Second)
	add("direct", 2, 30*time.Millisecond, 1200, nil, 0)
	add("admission-off", 2, 100*time.Millisecond, 800, map[string]int{"1205": 2}, 4*time.Second)
	add("admission-off", 3, 110*time.Millisecond, 700, map[string]int{"1205": 1, "connection": 1}, 3*time.Second)

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "route,round"); n != 1 {
		t.Errorf("the CSV has %d headers, want 1:\n%s", n, b)
	}
	if !strings.Contains(string(b), "1205:1 connection:1") {
		t.Errorf("the CSV does not list the errors by reason:\n%s", b)
	}
	runs, err := readRuns(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := writeReport(&out, runs); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"| direct | 2 | 25.00 | 12.50 | 75.00 | 1000 | 1.00x | 110.0 | 1000 | 0, 0 | — |",
		"| admission-off | 3 | 100.00 | 50.00 | 300.00 | 1000 | 4.00x | 80.0 | 1000 | 0, 4 | 0.30 |",
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("report has %d lines, want a header, a rule and 2 rows:\n%s", len(lines), out.String())
	}
	for i, w := range want {
		if lines[2+i] != w {
			t.Errorf("row %d:\n got %s\nwant %s", i+1, lines[2+i], w)
		}
	}
}
