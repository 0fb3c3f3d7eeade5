package main

import (
	"cmp"
	"slices"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/bookstore"
)

// cell names what repeated runs measure: a mode in a loop at a client count or rate.
type cell struct {
	Mode, Loop string
	Clients    int
	Rate       float64
}

func (r runResult) cell() cell { return cell{r.Mode, r.Loop, r.Clients, r.Rate} }

// medians gives one run per cell, in the order of the cells' first runs: a single run as it
// is, repeated runs as their median, figure by figure (each count, rate and response time of
// each class, and each charged cost). Figures derived from several of them, such as the
// short-interaction mean, are then computed from the medians.
func medians(runs []runResult) []runResult {
	var order []cell
	groups := map[cell][]runResult{}
	for _, r := range runs {
		c := r.cell()
		if _, ok := groups[c]; !ok {
			order = append(order, c)
		}
		groups[c] = append(groups[c], r)
	}
	out := make([]runResult, 0, len(order))
	for _, c := range order {
		g := groups[c]
		if len(g) == 1 {
			out = append(out, g[0])
			continue
		}
		m := runResult{Mode: c.Mode, Loop: c.Loop, Clients: c.Clients, Rate: c.Rate,
			Result: &bookstore.Result{}, ExecMS: map[string]float64{}}
		m.Result.Total = medianClass(g, func(r runResult) bookstore.ClassResult { return r.Result.Total })
		for i := range g[0].Result.Classes {
			m.Result.Classes = append(m.Result.Classes, medianClass(g, func(r runResult) bookstore.ClassResult { return r.Result.Classes[i] }))
		}
		for name := range g[0].ExecMS {
			m.ExecMS[name] = median(g, func(r runResult) float64 { return r.ExecMS[name] })
		}
		m.CPU = cpuUse{
			DB:        median(g, func(r runResult) float64 { return r.CPU.DB }),
			Proxy:     median(g, func(r runResult) float64 { return r.CPU.Proxy }),
			Generator: median(g, func(r runResult) float64 { return r.CPU.Generator }),
			Idle:      median(g, func(r runResult) float64 { return r.CPU.Idle }),
		}
		out = append(out, m)
	}
	return out
}

func medianClass(g []runResult, class func(runResult) bookstore.ClassResult) bookstore.ClassResult {
	return bookstore.ClassResult{
		Name:       class(g[0]).Name,
		Completed:  medianOf(g, class, func(c bookstore.ClassResult) int { return c.Completed }),
		Failed:     medianOf(g, class, func(c bookstore.ClassResult) int { return c.Failed }),
		Refused:    medianOf(g, class, func(c bookstore.ClassResult) int { return c.Refused }),
		Overflow:   medianOf(g, class, func(c bookstore.ClassResult) int { return c.Overflow }),
		TimedOut:   medianOf(g, class, func(c bookstore.ClassResult) int { return c.TimedOut }),
		Good:       medianOf(g, class, func(c bookstore.ClassResult) int { return c.Good }),
		Throughput: medianOf(g, class, func(c bookstore.ClassResult) float64 { return c.Throughput }),
		Goodput:    medianOf(g, class, func(c bookstore.ClassResult) float64 { return c.Goodput }),
		Mean:       medianOf(g, class, func(c bookstore.ClassResult) time.Duration { return c.Mean }),
		P50:        medianOf(g, class, func(c bookstore.ClassResult) time.Duration { return c.P50 }),
		P95:        medianOf(g, class, func(c bookstore.ClassResult) time.Duration { return c.P95 }),
		P99:        medianOf(g, class, func(c bookstore.ClassResult) time.Duration { return c.P99 }),
		Max:        medianOf(g, class, func(c bookstore.ClassResult) time.Duration { return c.Max }),
	}
}

// medianOf is the median of one figure f of the class that class picks from each run.
func medianOf[T int | float64 | time.Duration](g []runResult, class func(runResult) bookstore.ClassResult, f func(bookstore.ClassResult) T) T {
	return median(g, func(r runResult) T { return f(class(r)) })
}

// median is the median of f over the runs; of an even count, the mean of the middle two.
func median[T int | float64 | time.Duration](runs []runResult, f func(runResult) T) T {
	v := make([]T, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	return middle(v)
}

// middle is the median of v, which it sorts; of an even count, the mean of the middle two.
func middle[T int | float64 | time.Duration](v []T) T {
	slices.SortFunc(v, cmp.Compare[T])
	k := len(v) / 2
	if len(v)%2 == 1 {
		return v[k]
	}
	return (v[k-1] + v[k]) / 2
}

// spread is the lowest and highest of f over the runs of c.
func spread(runs []runResult, c cell, f func(runResult) float64) (lo, hi float64, n int) {
	for _, r := range runs {
		if r.cell() != c {
			continue
		}
		v := f(r)
		if n == 0 || v < lo {
			lo = v
		}
		if n == 0 || v > hi {
			hi = v
		}
		n++
	}
	return lo, hi, n
}
