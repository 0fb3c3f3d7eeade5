package main

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestStatement(t *testing.T) {
	tests := []struct {
		i    int64
		rows int
		want string
	}{
		{0, 10000, "SELECT id, pad FROM cf_t WHERE id = 1 AND 0 = 0"},
		{10000, 10000, "SELECT id, pad FROM cf_t WHERE id = 1 AND 10000 = 10000"},
		{999999, 10000, "SELECT id, pad FROM cf_t WHERE id = 10000 AND 999999 = 999999"},
	}
	for _, tt := range tests {
		if got := string(statement(nil, tt.i, tt.rows)); got != tt.want {
			t.Errorf("statement(%d, %d) = %q, want %q", tt.i, tt.rows, got, tt.want)
		}
	}
	// Every statement's text is its own, though the rows repeat.
	seen := map[string]bool{}
	buf := make([]byte, 0, 96)
	for i := range int64(30000) {
		buf = statement(buf[:0], i, 100)
		if seen[string(buf)] {
			t.Fatalf("statement %d repeats an earlier one: %q", i, buf)
		}
		seen[string(buf)] = true
	}
}

// Building a statement into a buffer with room allocates nothing: the client's own
// memory stays small however long the flood.
func TestStatementAllocations(t *testing.T) {
	buf := make([]byte, 0, 96)
	i := int64(123456789)
	if n := testing.AllocsPerRun(100, func() { buf = statement(buf[:0], i, 10000) }); n != 0 {
		t.Errorf("statement allocates %.0f times, want 0", n)
	}
}

func TestProcBytes(t *testing.T) {
	rss, err := procBytes(os.Getpid(), "VmRSS")
	if err != nil {
		t.Skipf("no /proc/PID/status here: %v", err)
	}
	hwm, err := procBytes(os.Getpid(), "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	if rss <= 0 || hwm < rss {
		t.Errorf("VmRSS %d, VmHWM %d: want positive, the peak at least the current", rss, hwm)
	}
}

func TestMarkdown(t *testing.T) {
	r := &result{Statements: 1000, Connections: 16, Rows: 100, MaxBytes: 64 << 20, Arms: []armResult{
		{Name: "off", Sent: 1000, Seconds: 2, RSSBytes: 40 << 20, PeakRSSBytes: 44 << 20, MaxSampledRSSBytes: 42 << 20,
			HeapInuseBytes: 10 << 20, MaxHeapInuseBytes: 12 << 20, HeapAllocBytes: 9 << 20, GoSysBytes: 50 << 20},
		{Name: "on", Sent: 1000, Errors: 2, FirstError: "Error 1105: boom", Seconds: 4, RSSBytes: 100 << 20,
			PeakRSSBytes: 120 << 20, MaxSampledRSSBytes: 118 << 20, HeapInuseBytes: 74 << 20, MaxHeapInuseBytes: 90 << 20,
			HeapAllocBytes: 70 << 20, GoSysBytes: 150 << 20,
			CacheOn: true, CacheBytes: 63 << 20, CacheEntries: 250000, Fills: 1000, Evictions: 750},
	}}
	var b bytes.Buffer
	r.writeMarkdown(&b)
	out := b.String()
	for _, want := range []string{
		"| off | 1000 | 2.0 | 500 | 0 | off | — | — | — | 10.0 | 12.0 | 9.0 | 50.0 | 40.0 | 42.0 | 44.0 |",
		"| on | 1000 | 4.0 | 250 | 2 (Error 1105: boom) | 63.0 | 250000 | 1000 | 750 | 74.0 | 90.0 | 70.0 | 150.0 | 100.0 | 118.0 | 120.0 |",
		"- on, RSS at the end (VmRSS): 100.0 MiB, 60.0 MiB above the baseline's (off) 40.0 MiB; within max_bytes + 5% (67.2 MiB): 89% of it.",
		"- on, peak RSS (VmHWM): 120.0 MiB, 76.0 MiB above the baseline's (off) 44.0 MiB; OVER max_bytes + 5% (67.2 MiB) by 8.8 MiB.",
		"- on, Go heap in use at the end: 74.0 MiB, 64.0 MiB above",
		"- on: the cache counts 63.00 MiB held (gatekeeper_cache_bytes) of cache.max_bytes 64.00 MiB: within it.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q; it is:\n%s", want, out)
		}
	}
	lines := strings.Split(out, "\n")
	if n := strings.Count(lines[0], "|"); strings.Count(lines[2], "|") != n || strings.Count(lines[3], "|") != n {
		t.Errorf("rows and header differ in cells:\n%s", strings.Join(lines[:4], "\n"))
	}
	// Without a bound, the differences are said and not judged.
	r.MaxBytes = 0
	for _, line := range r.verdicts() {
		if strings.Contains(line, "max_bytes") {
			t.Errorf("without --max-bytes: %q judges against a bound", line)
		}
	}
}

func TestFlags(t *testing.T) {
	ok := []string{"--arm", "off", "--dsn", "x@tcp(h:1)/d", "--admin", "h:2", "--pid", "10",
		"--arm", "on", "--dsn", "y@tcp(h:3)/d", "--admin", "h:4", "--pid", "11"}
	if _, err := parseFlags(ok); err != nil {
		t.Errorf("parseFlags(%q): %v", ok, err)
	}
	for _, bad := range [][]string{
		{},
		{"--prepare"},
		ok[:6],
		append(slices.Clone(ok), "--statements", "0"),
		append(slices.Clone(ok), "--max-bytes", "-1"),
		{"--arm", "a", "--dsn", "x", "--admin", "h", "--pid", "1", "--arm", "a", "--dsn", "y", "--admin", "i", "--pid", "2"},
		{"--arm", "a", "--dsn", "x", "--admin", "h", "--pid", "0"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) took it, want an error", bad)
		}
	}
}
