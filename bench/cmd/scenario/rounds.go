package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gatekeeperdb/gatekeeper/internal/bookstore"
)

// openRound is one round of the open loop: the run of each mode, all driven by the round's
// seed, so that every mode saw the same arrivals.
type openRound struct {
	n    int
	runs map[string]*runResult
}

// openRounds are the open loop's rounds in order.
func openRounds(all []runResult) []openRound {
	var out []openRound
	for i, r := range all {
		if r.Loop != "open" {
			continue
		}
		k := slices.IndexFunc(out, func(x openRound) bool { return x.n == r.Round })
		if k < 0 {
			out = append(out, openRound{n: r.Round, runs: map[string]*runResult{}})
			k = len(out) - 1
		}
		out[k].runs[r.Mode] = &all[i]
	}
	slices.SortFunc(out, func(a, b openRound) int { return a.n - b.n })
	return out
}

// ratio is num's mean response time over den's in the round; false unless both ran.
func (r openRound) ratio(num, den string) (float64, bool) {
	a, b := r.runs[num], r.runs[den]
	if a == nil || b == nil || b.Result.Total.Mean <= 0 {
		return 0, false
	}
	return float64(a.Result.Total.Mean) / float64(b.Result.Total.Mean), true
}

// heavyArrivals counts the heavy interactions that arrived in the round's measured period:
// completed or not, and those that found too many outstanding. Every mode of the round
// counts the same.
func (r openRound) heavyArrivals() int {
	n := 0
	for _, run := range r.runs {
		n = max(n, arrivals(run.Result, heavy))
	}
	return n
}

// arrivals counts the interactions of the classes keep selects, whatever became of them.
func arrivals(r *bookstore.Result, keep func(name string) bool) int {
	n := 0
	for _, c := range r.Classes {
		if keep(c.Name) {
			n += c.Completed + lost(c) + c.Overflow
		}
	}
	return n
}

// pairs are the ratios the open loop is judged by: fifo and direct over each other admission
// mode, those of them that ran.
func pairs(o options, all []runResult) [][2]string {
	ran := func(name string) bool {
		return slices.ContainsFunc(all, func(r runResult) bool { return r.Loop == "open" && r.Mode == name })
	}
	var out [][2]string
	for _, m := range o.modes {
		if !m.Admission || m.Name == "fifo" || !ran(m.Name) {
			continue
		}
		for _, base := range []string{"fifo", "direct"} {
			if ran(base) {
				out = append(out, [2]string{base, m.Name})
			}
		}
	}
	return out
}

// ratios are pair p's ratios, num over den, taken within each round that ran both.
func ratios(rounds []openRound, p [2]string) []float64 {
	var v []float64
	for _, r := range rounds {
		if x, ok := r.ratio(p[0], p[1]); ok {
			v = append(v, x)
		}
	}
	return v
}

// withinRounds is the median over the rounds of each pair's ratio taken within its round, as
// "fifo / sjf = 4.33"; empty with fewer than two rounds.
func withinRounds(o options, all []runResult) []string {
	rounds := openRounds(all)
	if len(rounds) < 2 {
		return nil
	}
	var out []string
	for _, p := range pairs(o, all) {
		if v := ratios(rounds, p); len(v) > 0 {
			out = append(out, fmt.Sprintf("%s / %s = %.2f", prose(p[0]), prose(p[1]), middle(v)))
		}
	}
	return out
}

// writeOpenRounds lists the repeated open loop round by round, with the ratios taken within
// each round and their medians.
func writeOpenRounds(w io.Writer, o options, all []runResult) {
	rounds := openRounds(all)
	if len(rounds) < 2 {
		return
	}
	var modes []string
	for _, m := range o.modes {
		if slices.ContainsFunc(rounds, func(r openRound) bool { return r.runs[m.Name] != nil }) {
			modes = append(modes, m.Name)
		}
	}
	ps := pairs(o, all)
	fmt.Fprintf(w, "## Open loop, round by round\n\n")
	fmt.Fprintf(w, "The modes of a round saw the same arrivals (the round's seed); the rounds differ in what arrived.\n")
	fmt.Fprintf(w, "Heavy arrivals are the heavy interactions that arrived in the measured period, which carry most of\n")
	fmt.Fprintf(w, "the database's work. Mean response time in ms over all interactions, and the ratios of the means\n")
	fmt.Fprintf(w, "within the round; the last row holds the medians of each column.\n\n")
	fmt.Fprintf(w, "| round | heavy arrivals |")
	for _, m := range modes {
		fmt.Fprintf(w, " %s ms |", m)
	}
	for _, p := range ps {
		fmt.Fprintf(w, " %s / %s |", p[0], p[1])
	}
	fmt.Fprintf(w, "\n|---:|---:|%s\n", strings.Repeat("---:|", len(modes)+len(ps)))
	heavies := make([]int, 0, len(rounds))
	means := make([][]float64, len(modes))
	for _, r := range rounds {
		h := r.heavyArrivals()
		heavies = append(heavies, h)
		fmt.Fprintf(w, "| %d | %d |", r.n, h)
		for i, m := range modes {
			if run := r.runs[m]; run != nil {
				v := ms(run.Result.Total.Mean)
				means[i] = append(means[i], v)
				fmt.Fprintf(w, " %.1f |", v)
			} else {
				fmt.Fprintf(w, " - |")
			}
		}
		for _, p := range ps {
			if x, ok := r.ratio(p[0], p[1]); ok {
				fmt.Fprintf(w, " %.2f |", x)
			} else {
				fmt.Fprintf(w, " - |")
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "| median | %d |", middle(heavies))
	for _, v := range means {
		fmt.Fprintf(w, " %.1f |", middle(v))
	}
	for _, p := range ps {
		v := ratios(rounds, p)
		if len(v) == 0 {
			fmt.Fprintf(w, " - |")
			continue
		}
		fmt.Fprintf(w, " %.2f |", middle(v))
	}
	fmt.Fprintf(w, "\n\n")
}
