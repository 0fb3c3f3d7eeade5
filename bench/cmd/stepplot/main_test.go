package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// traceCSV writes a trace of two rounds of auto and one of a static capacity, 30 seconds
// each, completing rate units a second (auto's round 2 twice as many), with the capacity
// at 10 ms times the round.
func traceCSV(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("second,state,capacity_s,units,running,queued,decision,stretch,db_cpu_s,refused,checks,alone_s,size_floor_s,max_running,cpu_speed,policy,round\n")
	for _, run := range []struct {
		policy string
		round  int
		rate   int
	}{{"auto", 1, 100}, {"auto", 2, 200}, {"50ms", 1, 150}} {
		for s := range 30 {
			fmt.Fprintf(&b, "%d,full,%g,%d,1,0,hold,2,0,0,0,0,0,0,300,%s,%d\n", s, 0.01*float64(run.round), s*run.rate, run.policy, run.round)
		}
	}
	path := filepath.Join(t.TempDir(), "trace.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSeries(t *testing.T) {
	f, err := os.Open(traceCSV(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs, err := readTrace(f)
	if err != nil {
		t.Fatal(err)
	}
	caps := capacitySeries(runs)
	if len(caps) != 2 || caps[1].Name != "round 2" || caps[1].Points[0][1] != 20 {
		t.Fatalf("capacity series %+v, want a line a round of auto, round 2 at 20 ms", caps)
	}
	tput := throughputSeries(runs)
	if len(tput) != 2 || tput[0].Name != "capacity auto" || tput[1].Name != "capacity 50ms" {
		t.Fatalf("throughput series named %+v, want auto then 50ms", tput)
	}
	// Auto's median of 100 and 200 units a second is 150; its first point is at the 10th second.
	if got := tput[0].Points[0]; got != [2]float64{rollSeconds, 150} {
		t.Errorf("auto's first point %v, want [%d 150]", got, rollSeconds)
	}
	if got := tput[1].Points[len(tput[1].Points)-1][1]; got != 150 {
		t.Errorf("50ms's last rate %v, want 150", got)
	}
}

func TestRunWritesCharts(t *testing.T) {
	path := traceCSV(t)
	if err := run([]string{"-trace", path, "-phase", "10"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"capacity.png", "throughput.png"} {
		if st, err := os.Stat(filepath.Join(filepath.Dir(path), name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v, want a chart", name, err)
		}
	}
}

func TestRunRefuses(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "trace.csv")
	if err := os.WriteFile(bad, []byte("second,units\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{}, {"-trace", bad}, {"-trace", filepath.Join(t.TempDir(), "none.csv")}} {
		if err := run(args); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}
