package main

import (
	"strings"
	"testing"

	"github.com/gatekeeperdb/gatekeeper/bench/plot"
)

func TestCharts(t *testing.T) {
	const in = `workload,threads,round,target,qps,avg_ms,p95_ms,queries,errors,cpu_us_per_query
ps,16,1,direct,100,1,1,1000,0,
ps,16,1,haproxy,90,1,1,900,0,4.00
ps,16,2,haproxy,90,1,1,900,0,6.00
ps,1,1,haproxy,90,1,1,900,0,9.00
ps,1,1,gatekeeper,90,1,1,900,0,12.50
rw,1,1,direct,100,1,1,1000,0,
rw,1,1,gatekeeper,90,1,1,900,0,20.00
rw,1,2,gatekeeper,90,1,1,900,0,22.00
rw,1,3,gatekeeper,90,1,1,900,0,30.00
`
	runs, err := readRuns(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	got := charts(runs)
	want := []plot.Chart{
		{Title: "ps", Series: []plot.Series{
			{Name: "haproxy", Style: 1, Points: [][2]float64{{1, 9}, {16, 5}}},
			{Name: "gatekeeper", Style: 2, Points: [][2]float64{{1, 12.5}}},
		}},
		{Title: "rw", Series: []plot.Series{
			{Name: "haproxy", Style: 1},
			{Name: "gatekeeper", Style: 2, Points: [][2]float64{{1, 22}}},
		}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d charts, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Title != want[i].Title || len(got[i].Series) != len(want[i].Series) {
			t.Fatalf("chart %d: got %q with %d series, want %q with %d", i, got[i].Title, len(got[i].Series), want[i].Title, len(want[i].Series))
		}
		for j, s := range want[i].Series {
			g := got[i].Series[j]
			if g.Name != s.Name || g.Style != s.Style || len(g.Points) != len(s.Points) {
				t.Fatalf("chart %s series %d: got %+v, want %+v", want[i].Title, j, g, s)
			}
			for k := range s.Points {
				if g.Points[k] != s.Points[k] {
					t.Errorf("chart %s series %s point %d: got %v, want %v", want[i].Title, s.Name, k, g.Points[k], s.Points[k])
				}
			}
		}
	}
}

func TestReadRunsNeedsColumns(t *testing.T) {
	if _, err := readRuns(strings.NewReader("workload,threads,target\nps,1,direct\n")); err == nil {
		t.Error("a CSV without cpu_us_per_query was read without error")
	}
}
