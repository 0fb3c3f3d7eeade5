package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gatekeeperdb/gatekeeper/bench/plot"
)

// A fleet is a mode run as several gatekeeper processes in front of the one database, as in
// sjf@auto*3: each proxy adapts its own capacity to what it sees, unless +fleet has them
// share one through etcd. What the database is asked to hold at once is then the sum of
// the proxies' capacities, which this file sets beside the capacity one proxy alone
// settles at under the same load.

// single is the mode that runs m as one proxy without a fleet, among modes: m's
// baseline, as sjf@auto is sjf@auto*3+fleet's; false when none is listed.
func single(modes []mode, m mode) (mode, bool) {
	alone := func(x mode) mode {
		x.Name, x.Proxies, x.Fleet = "", 0, false
		if x.Calibrated {
			x.Capacity = 0 // each mode's own calibration
		}
		return x
	}
	for _, x := range modes {
		if x.proxies() == 1 && !x.Fleet && alone(x) == alone(m) {
			return x, true
		}
	}
	return mode{}, false
}

// clientsPerProxy is how many of a closed loop's clients each of n proxies serves, client
// i going to proxy i mod n.
func clientsPerProxy(clients, n int) []int {
	out := make([]int, n)
	for i := range clients {
		out[i%n]++
	}
	return out
}

// summary is the run's line of fleet figures on the progress output.
func (f fleetFigures) summary() string {
	var admitted float64
	for _, a := range f.Admitted {
		admitted += a
	}
	return fmt.Sprintf("capacity medians %s ms, sum %.0f ms; admitted %s/s, %.1f/s in all",
		joinFigures(f.Capacity, "%.0f"), f.Sum, joinFigures(f.Admitted, "%.1f"), admitted)
}

// joinFigures writes each of v in format, "-" for an unknown (negative) one, separated by
// slashes.
func joinFigures(v []float64, format string) string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = "-"
		if x >= 0 {
			out[i] = fmt.Sprintf(format, x)
		}
	}
	return strings.Join(out, " / ")
}

// cellFigures is the median over a cell's runs of each of their fleet figures; false when
// no run of the cell has a trace.
func cellFigures(all []runResult, c cell) (fleetFigures, bool) {
	var each []fleetFigures
	for _, r := range all {
		if r.cell() != c {
			continue
		}
		if f, ok := figuresOf(r.Capacity); ok {
			each = append(each, f)
		}
	}
	if len(each) == 0 {
		return fleetFigures{}, false
	}
	pick := func(f func(fleetFigures) float64) float64 {
		v := make([]float64, len(each))
		for i, x := range each {
			v[i] = f(x)
		}
		return middle(v)
	}
	out := fleetFigures{Sum: pick(func(f fleetFigures) float64 { return f.Sum })}
	for p := range len(each[0].Capacity) {
		at := func(v []float64) float64 {
			if p < len(v) {
				return v[p]
			}
			return -1
		}
		out.Capacity = append(out.Capacity, pick(func(f fleetFigures) float64 { return at(f.Capacity) }))
		out.Admitted = append(out.Admitted, pick(func(f fleetFigures) float64 { return at(f.Admitted) }))
	}
	return out, true
}

// fleetModes are the modes of the fleet section: those of several proxies or a fleet, and
// the single-proxy modes that they are set beside.
func fleetModes(modes []mode) []mode {
	var out []mode
	for _, m := range modes {
		base := slices.ContainsFunc(modes, func(x mode) bool {
			b, ok := single(modes, x)
			return ok && b.Name == m.Name && x.Name != m.Name
		})
		if m.proxies() > 1 || m.Fleet || base {
			out = append(out, m)
		}
	}
	return out
}

// writeFleets is the report's section on fleets of proxies: each cell's throughput and
// short-interaction mean beside each proxy's capacity, their sum, and what one proxy alone
// held; runs are the medians, all every run.
func writeFleets(w io.Writer, o options, runs, all []runResult) {
	if !slices.ContainsFunc(o.modes, func(m mode) bool { return m.proxies() > 1 || m.Fleet }) {
		return
	}
	modes := fleetModes(o.modes)
	fmt.Fprintf(w, "## Fleets of proxies\n\n")
	fmt.Fprintf(w, "A mode with `*N` ran N gatekeeper processes configured alike, each with its own ports and\n")
	fmt.Fprintf(w, "directory, closed-loop client i connecting to proxy i mod N (the open loop's arrivals in turn);\n")
	fmt.Fprintf(w, "`+fleet` had them coordinate through etcd (`fleet:`, a key prefix of each run's own). Without it, each\n")
	fmt.Fprintf(w, "proxy adapts its capacity to what it alone sees, and the database holds the sum of theirs. Capacity\n")
	fmt.Fprintf(w, "figures are medians over the measured period, sampled a second: each proxy's, and the median over\n")
	fmt.Fprintf(w, "the seconds of their sum, against the median of the same mode run as one proxy in the same cell;\n")
	fmt.Fprintf(w, "admitted is the units each proxy admitted a second (`gatekeeper_admission_admitted_total`). Only\n")
	fmt.Fprintf(w, "modes that adapt their capacity (@auto) are traced; repeated cells give the median of each figure.\n\n")
	fmt.Fprintf(w, "| mode | proxies | clients or rate | interactions/s | short mean ms | capacity, each proxy ms | sum ms | one proxy ms | sum / one | admitted/s, each proxy | admitted/s, sum |\n")
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|---|---:|---:|---:|---|---:|\n")
	var cells []cell
	for _, r := range runs {
		if !slices.ContainsFunc(cells, func(c cell) bool { return c.Loop == r.Loop && c.Clients == r.Clients && c.Rate == r.Rate }) {
			cells = append(cells, cell{Loop: r.Loop, Clients: r.Clients, Rate: r.Rate})
		}
	}
	for _, c := range cells {
		for _, m := range modes {
			c.Mode = m.Name
			i := slices.IndexFunc(runs, func(r runResult) bool { return r.cell() == c })
			if i < 0 {
				continue
			}
			r := runs[i]
			capacity, sum, one, ratio, admitted, total := "-", "-", "-", "-", "-", "-"
			if f, ok := cellFigures(all, c); ok {
				capacity, sum = joinFigures(f.Capacity, "%.0f"), fmt.Sprintf("%.0f", f.Sum)
				admitted = joinFigures(f.Admitted, "%.1f")
				if !slices.ContainsFunc(f.Admitted, func(a float64) bool { return a < 0 }) {
					var t float64
					for _, a := range f.Admitted {
						t += a
					}
					total = fmt.Sprintf("%.1f", t)
				}
				if b, ok := single(o.modes, m); ok && b.Name != m.Name {
					bc := c
					bc.Mode = b.Name
					if bf, ok := cellFigures(all, bc); ok && bf.Sum > 0 {
						one, ratio = fmt.Sprintf("%.0f", bf.Sum), fmt.Sprintf("%.2f", f.Sum/bf.Sum)
					}
				}
			}
			fmt.Fprintf(w, "| %s | %d | %s | %.1f | %.1f | %s | %s | %s | %s | %s | %s |\n", m.Name, m.proxies(), c.load(),
				r.Result.Total.Throughput, shortMean(r.Result), capacity, sum, one, ratio, admitted, total)
		}
	}
	fmt.Fprintln(w)
	if names := capacityPlotNames(o, all); len(names) > 0 {
		fmt.Fprintf(w, "Each proxy's capacity and their sum through the first round's run of each cell, warm-up included,\n")
		fmt.Fprintf(w, "beside one proxy's (dashed), are drawn in %s (`make plots` draws them again from `capacity.csv`).\n\n",
			"`"+strings.Join(names, "`, `")+"`")
	}
}

// capacityPlot is the chart of one fleet run's capacities: the run, and the single proxy's
// run of the same cell and round (nil without one).
type capacityPlot struct {
	file      string
	run, base *runResult
}

// capacityPlots are the charts of the fleets' capacities: for every adaptive mode of
// several proxies, the first round of each cell.
func capacityPlots(o options, all []runResult) []capacityPlot {
	var out []capacityPlot
	for _, m := range o.modes {
		if !m.Auto || m.proxies() < 2 {
			continue
		}
		b, hasBase := single(o.modes, m)
		for i, r := range all {
			if r.Mode != m.Name || r.Round != 1 || len(r.Capacity) == 0 {
				continue
			}
			p := capacityPlot{file: fmt.Sprintf("capacity-%s-%s.png", slug(m.Name), slug(r.Loop+"-"+r.cell().load())), run: &all[i]}
			if hasBase {
				k := slices.IndexFunc(all, func(x runResult) bool {
					return x.Mode == b.Name && x.Loop == r.Loop && x.Clients == r.Clients && x.Rate == r.Rate && x.Round == 1 && len(x.Capacity) > 0
				})
				if k >= 0 {
					p.base = &all[k]
				}
			}
			out = append(out, p)
		}
	}
	return out
}

// capacityPlotNames are the files writeCapacityPlots draws.
func capacityPlotNames(o options, all []runResult) []string {
	var out []string
	for _, p := range capacityPlots(o, all) {
		out = append(out, p.file)
	}
	return out
}

// writeCapacityPlots draws each fleet run's capacities over time (capacityPlots) into o.out
// and returns the files' names.
func writeCapacityPlots(o options, all []runResult) ([]string, error) {
	var names []string
	for _, p := range capacityPlots(o, all) {
		r := p.run
		chart := plot.Chart{Title: fmt.Sprintf("%s, %s %s, round 1: each proxy's capacity and their sum", r.Mode, r.Loop, r.cell().load()),
			X: "seconds since the run began (warm-up " + o.warmup.String() + ")", Y: "ms", FromZero: true}
		for n := 1; n <= proxiesOf(r.Capacity); n++ {
			s := plot.Series{Name: fmt.Sprintf("proxy %d", n)}
			for _, x := range r.Capacity {
				if x.Proxy == n {
					s.Points = append(s.Points, [2]float64{x.At.Seconds(), 1000 * x.Capacity})
				}
			}
			chart.Series = append(chart.Series, s)
		}
		seconds, sums := summedCapacity(r.Capacity, false)
		sum := plot.Series{Name: "sum"}
		for i, at := range seconds {
			sum.Points = append(sum.Points, [2]float64{at.Seconds(), sums[i]})
		}
		chart.Series = append(chart.Series, sum)
		if p.base != nil {
			one := plot.Series{Name: p.base.Mode + " (one proxy)", Dashed: true}
			for _, x := range p.base.Capacity {
				one.Points = append(one.Points, [2]float64{x.At.Seconds(), 1000 * x.Capacity})
			}
			chart.Series = append(chart.Series, one)
		}
		if err := plot.Lines(filepath.Join(o.out, p.file), chart); err != nil {
			return names, err
		}
		names = append(names, p.file)
	}
	return names, nil
}

// prose writes a mode's name for the report's running text, where the * of a fleet's
// (sjf@auto*3) would start emphasis: table cells do not need it.
func prose(name string) string { return strings.ReplaceAll(name, "*", `\*`) }

// slug makes a mode's name or a cell's load fit a file name: sjf@auto*3+fleet is
// sjf-auto-x3-fleet.
func slug(s string) string {
	return strings.NewReplacer("@", "-", "*", "-x", "+", "-", ":", "-", "/", "-", " ", "-").Replace(s)
}
