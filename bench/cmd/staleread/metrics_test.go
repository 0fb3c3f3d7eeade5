package main

import (
	"maps"
	"math"
	"strings"
	"testing"
)

const sample = `# HELP gatekeeper_reads_total Reads by the backend that served them and why.
# TYPE gatekeeper_reads_total counter
gatekeeper_reads_total{backend="127.0.0.1:13306",reason="strong"} 40
gatekeeper_reads_total{reason="replica", backend="127.0.0.1:13307"} 50 1700000000000
gatekeeper_reads_total{backend="127.0.0.1:13308",reason="odd \"name\"\\x"} 1e1
gatekeeper_reads_total_created{backend="127.0.0.1:13306",reason="strong"} 1.7e9
gatekeeper_queries_total{backend="127.0.0.1:13306"} 99
`

func TestParseReads(t *testing.T) {
	got, found, err := parseReads(strings.NewReader(sample))
	if err != nil || !found {
		t.Fatalf("parseReads: found %v, err %v", found, err)
	}
	want := map[route]float64{
		{"127.0.0.1:13306", "strong"}:       40,
		{"127.0.0.1:13307", "replica"}:      50,
		{"127.0.0.1:13308", `odd "name"\x`}: 10,
	}
	if !maps.Equal(got, want) {
		t.Errorf("parseReads = %v, want %v", got, want)
	}
}

func TestParseReadsAbsentOrBroken(t *testing.T) {
	_, found, err := parseReads(strings.NewReader("gatekeeper_queries_total 3\n"))
	if err != nil || found {
		t.Errorf("without the metric: found %v, err %v; want false, nil", found, err)
	}
	for _, line := range []string{
		`gatekeeper_reads_total{backend="a",reason="b"}`,
		`gatekeeper_reads_total{backend="a} 3`,
		`gatekeeper_reads_total{backend} 3`,
		`gatekeeper_reads_total{backend="a"} many`,
	} {
		if _, _, err := parseReads(strings.NewReader(line)); err == nil {
			t.Errorf("parseReads(%q) took it, want an error", line)
		}
	}
}

func TestReplicaShareOverTheRun(t *testing.T) {
	before := map[route]float64{{"p", "strong"}: 10, {"r1", "replica"}: 5}
	after := map[route]float64{{"p", "strong"}: 30, {"r1", "replica"}: 35, {"r2", "replica"}: 20}
	d := readsSince(after, before)
	want := map[route]float64{{"p", "strong"}: 20, {"r1", "replica"}: 30, {"r2", "replica"}: 20}
	if !maps.Equal(d, want) {
		t.Fatalf("readsSince = %v, want %v", d, want)
	}
	share, ok := elsewhere(d, "p")
	if !ok || math.Abs(share-50.0/70) > 1e-9 {
		t.Errorf("elsewhere = %v, %v; want %v, true", share, ok, 50.0/70)
	}
	d[route{"p", writeReason}] = 1000
	if again, _ := elsewhere(d, "p"); again != share {
		t.Errorf("elsewhere with writes on the primary = %v, want %v: writes are not reads", again, share)
	}
	if _, ok := elsewhere(map[route]float64{{"p", writeReason}: 3}, "p"); ok {
		t.Error("elsewhere of writes only is ok, want not: there were no reads")
	}
}

const horizonSample = `# HELP gatekeeper_binlog_position_reads_total Reads of the primary's position.
# TYPE gatekeeper_binlog_position_reads_total counter
gatekeeper_binlog_position_reads_total 200
gatekeeper_binlog_position_read_statements_total 1000
gatekeeper_binlog_position_reads_in_flight 1
gatekeeper_reads_unvouched_total 3
gatekeeper_causal_wait_follower_seconds_bucket{le="0.001"} 900
gatekeeper_causal_wait_follower_seconds_sum 0.5
gatekeeper_causal_wait_follower_seconds_count 1000
gatekeeper_reads_total{backend="p",reason="routed"} 7
`

func TestParseExpositionScalars(t *testing.T) {
	e, err := parseExposition(strings.NewReader(horizonSample))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{positionReadsMetric: 200, positionServedMetric: 1000, unvouchedMetric: 3,
		followerWaitSumMetric: 0.5, followerWaitCountMetric: 1000}
	if !maps.Equal(e.scalars, want) {
		t.Errorf("scalars = %v, want %v (the in-flight gauge and the buckets left out)", e.scalars, want)
	}
	if !e.readsFound || e.reads[route{"p", "routed"}] != 7 {
		t.Errorf("reads = %v (found %v), want p routed 7", e.reads, e.readsFound)
	}
}

func TestHorizonCountsOverTheRun(t *testing.T) {
	before := map[string]float64{positionReadsMetric: 100, positionServedMetric: 400, unvouchedMetric: 1,
		followerWaitSumMetric: 0.2, followerWaitCountMetric: 400}
	after := map[string]float64{positionReadsMetric: 300, positionServedMetric: 2400, unvouchedMetric: 4,
		followerWaitSumMetric: 1.2, followerWaitCountMetric: 2400}
	got := newHorizonCounts(before, after)
	want := horizonCounts{PositionReads: 200, Statements: 2000, ReadsPerPositionRead: 10, Unvouched: 3, WaitMeanMs: 0.5}
	if got == nil || math.Abs(got.WaitMeanMs-want.WaitMeanMs) > 1e-9 {
		t.Fatalf("newHorizonCounts = %+v, want %+v", got, want)
	}
	got.WaitMeanMs = want.WaitMeanMs
	if *got != want {
		t.Errorf("newHorizonCounts = %+v, want %+v", *got, want)
	}
	if h := newHorizonCounts(map[string]float64{}, map[string]float64{unvouchedMetric: 2}); h != nil {
		t.Errorf("a proxy without position reads (proxy_local) = %+v, want nil", h)
	}
}
