// Package capacity finds the admission capacity of a database by the method of incremental
// steps: run the workload through admission at several candidate capacities, measure the
// throughput of each, and keep the smallest capacity that reaches the peak (the throughput
// curve rises to a maximum and then falls or stays flat), judged on the curve smoothed over
// neighbouring steps.
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
// smoothed throughput is at least threshold times the highest smoothed throughput. A step's
// smoothed throughput is the median of its own and its two neighbours' (by capacity; at
// either end, the mean of the two), so that one lucky step does not become the choice: the
// curve is flat past its knee, and single steps are off by several percent. Steps need not
// be sorted.
func Choose(steps []Step, threshold float64) int {
	if len(steps) == 0 {
		return -1
	}
	smooth := Smoothed(steps)
	peak := slices.Max(smooth)
	best := -1
	for i, s := range steps {
		if smooth[i] >= threshold*peak && (best < 0 || s.Capacity < steps[best].Capacity) {
			best = i
		}
	}
	return best
}

// Smoothed returns the smoothed throughput of each step, in the order of steps.
func Smoothed(steps []Step) []float64 {
	order := byCapacity(steps)
	out := make([]float64, len(steps))
	for k, i := range order {
		var near []float64
		for j := max(k-1, 0); j <= min(k+1, len(order)-1); j++ {
			near = append(near, steps[order[j]].Throughput)
		}
		slices.Sort(near)
		if len(near) == 3 {
			out[i] = near[1]
		} else {
			out[i] = (near[0] + near[len(near)-1]) / 2
		}
	}
	return out
}

// byCapacity returns the indexes of steps in order of capacity.
func byCapacity(steps []Step) []int {
	order := make([]int, len(steps))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(steps[a].Capacity - steps[b].Capacity) })
	return order
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

// Round rounds a capacity for showing and for the configuration: to the millisecond from
// 10 ms up, to 10 µs below, so that a capacity under half a millisecond, which the sweep
// tries when the learned costs are that small, does not become 0s.
func Round(c time.Duration) time.Duration {
	if c >= 10*time.Millisecond {
		return c.Round(time.Millisecond)
	}
	return max(c.Round(10*time.Microsecond), time.Microsecond)
}

// Print writes the throughput curve as a table, marking the chosen step, in order of
// capacity; unit names what the throughput counts.
func Print(w io.Writer, steps []Step, chosen int, unit string) {
	order := byCapacity(steps)
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
		fmt.Fprintf(w, "%12s %14.1f %10.2f %10.2f %8d  %-40s%s\n", Round(s.Capacity),
			s.Throughput, ms(s.Mean), ms(s.P95), s.Errors, bar, mark)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
