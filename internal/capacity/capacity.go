// Package capacity finds the admission capacity of a database by the method of incremental
// steps: run the workload through admission at several candidate capacities, measure the
// throughput of each, and keep the smallest capacity that reaches the peak (the throughput
// curve rises to a maximum and then falls or stays flat).
package capacity

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// Step is the measurement at one candidate capacity.
type Step struct {
	Capacity time.Duration
	// Throughput is completed statements per second.
	Throughput float64
	Mean, P95  time.Duration
	Errors     int
}

// Choose returns the index of the chosen step: the one with the smallest capacity whose
// throughput is at least threshold times the highest measured. Steps need not be sorted.
func Choose(steps []Step, threshold float64) int {
	if len(steps) == 0 {
		return -1
	}
	peak := 0.0
	for _, s := range steps {
		peak = max(peak, s.Throughput)
	}
	best := -1
	for i, s := range steps {
		if s.Throughput >= threshold*peak && (best < 0 || s.Capacity < steps[best].Capacity) {
			best = i
		}
	}
	return best
}

// Candidates returns the first capacities to try: base times 1, 2, 4, ... up to limit
// times base.
func Candidates(base time.Duration, limit int) []time.Duration {
	var out []time.Duration
	for f := 1; f <= limit; f *= 2 {
		out = append(out, base*time.Duration(f))
	}
	return out
}

// Refine returns the capacities to try next around the chosen step: the midpoints between
// it and its neighbours (by capacity) that were not measured yet, at least min apart.
func Refine(steps []Step, chosen int, minGap time.Duration) []time.Duration {
	caps := make([]time.Duration, len(steps))
	for i, s := range steps {
		caps[i] = s.Capacity
	}
	slices.Sort(caps)
	c := steps[chosen].Capacity
	i := sort.Search(len(caps), func(i int) bool { return caps[i] >= c })
	var out []time.Duration
	if i > 0 && c-caps[i-1] > 2*minGap {
		out = append(out, (caps[i-1]+c)/2)
	}
	if i+1 < len(caps) && caps[i+1]-c > 2*minGap {
		out = append(out, (c+caps[i+1])/2)
	}
	return out
}

// Print writes the throughput curve as a table, marking the chosen step, in order of
// capacity; unit names what the throughput counts.
func Print(w io.Writer, steps []Step, chosen int, unit string) {
	order := make([]int, len(steps))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(steps[a].Capacity - steps[b].Capacity) })
	peak := 0.0
	for _, s := range steps {
		peak = max(peak, s.Throughput)
	}
	fmt.Fprintf(w, "%12s %14s %10s %10s %8s  %s\n", "CAPACITY", strings.ToUpper(unit)+"/s", "MEAN ms", "P95 ms", "ERRORS", "")
	for _, i := range order {
		s := steps[i]
		bar := strings.Repeat("#", int(40*s.Throughput/max(peak, 1e-9)))
		mark := ""
		if i == chosen {
			mark = "  <- chosen"
		}
		fmt.Fprintf(w, "%12s %14.1f %10.2f %10.2f %8d  %-40s%s\n", s.Capacity.Round(time.Millisecond),
			s.Throughput, ms(s.Mean), ms(s.P95), s.Errors, bar, mark)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
