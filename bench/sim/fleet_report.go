package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gatekeeperdb/gatekeeper/bench/plot"
	"github.com/gatekeeperdb/gatekeeper/internal/admission"
	"github.com/gatekeeperdb/gatekeeper/internal/fleet"
)

// coordName names Coordinations()[k] for the report, short the rule and the interval alone.
func (r *FleetResults) coordName(k int) string {
	c := r.Setup.Coordinations()[k]
	return fmt.Sprintf("%s, every %s, lease %s", c.Rule, c.Timing.Interval, c.Timing.TTL)
}

func (r *FleetResults) coordShort(k int) string {
	c := r.Setup.Coordinations()[k]
	return fmt.Sprintf("%s, every %s", c.Rule, c.Timing.Interval)
}

// windows is a time in adaptive windows, the charts' x axis.
func (r *FleetResults) windows(at time.Duration) float64 {
	return float64(at) / float64(r.Setup.AutoInterval)
}

// chartEvery is how far apart the charts' points of the long runs are, churnEvery those of
// the churn run (the runs have a point an interval); the churn charts begin churnLead
// windows before the join.
const (
	chartEvery = 20 * time.Second
	churnEvery = 5 * time.Second
	churnLead  = 4
)

// series is f over res's points from from on, every every (and every point, where they are
// further apart).
func (r *FleetResults) series(name string, style int, res Result, from, every time.Duration, f func(*FleetPoint) float64) plot.Series {
	sr := plot.Series{Name: name, Style: style}
	for i := range res.Fleet {
		p := &res.Fleet[i]
		if p.At < from || p.At%every != 0 && i > 0 && p.At-res.Fleet[i-1].At < every {
			continue
		}
		sr.Points = append(sr.Points, [2]float64{r.windows(p.At), f(p)})
	}
	return sr
}

// level is a horizontal line at y over res's run.
func (r *FleetResults) level(name string, style int, res Result, y float64) plot.Series {
	end := r.windows(res.Fleet[len(res.Fleet)-1].At)
	return plot.Series{Name: name, Style: style, Dashed: true, Points: [][2]float64{{0, y}, {end, y}}}
}

// FleetCharts returns the experiment's charts.
func (r *FleetResults) FleetCharts() []Chart {
	s := r.Setup
	single := r.Settled().Seconds()
	capacity := func(p *FleetPoint) float64 { return p.SumCapacity().Seconds() }
	var out []Chart
	running := func(p *FleetPoint) float64 { return p.Running }
	for k := range s.Coordinations() {
		sum := Chart{File: fmt.Sprintf("sum-%d.png", k), Chart: plot.Chart{
			Title: fmt.Sprintf("Capacities added up: alone (dashed), coordinated %s", r.coordName(k)),
			X:     "time (windows)", Y: "capacity (s)", LogY: true}}
		run := Chart{File: fmt.Sprintf("running-%d.png", k), Chart: plot.Chart{
			Title: fmt.Sprintf("Requests running: alone (dashed), coordinated %s", r.coordName(k)),
			X:     "time (windows)", Y: "requests running (mean of an interval)", LogY: true}}
		for i, n := range s.Sizes {
			for _, c := range []struct {
				chart *Chart
				f     func(*FleetPoint) float64
			}{{&sum, capacity}, {&run, running}} {
				a := r.series(fmt.Sprintf("%d alone", n), i+1, r.Alone[i], 0, chartEvery, c.f)
				a.Dashed = true
				c.chart.Series = append(c.chart.Series, a, r.series(fmt.Sprintf("%d coordinated", n), i+1, r.Coordinated[k][i], 0, chartEvery, c.f))
			}
		}
		sum.Series = append(sum.Series, r.level("single controller, settled", len(s.Sizes)+1, r.Alone[0], single))
		run.Series = append(run.Series, r.level(fmt.Sprintf("the database's knee (%d)", s.Database.Knee), len(s.Sizes)+1, r.Alone[0], float64(s.Database.Knee)))
		out = append(out, sum, run)
	}
	for i, n := range s.Sizes {
		if n == 1 {
			continue
		}
		runs := []struct {
			file, what string
			res        Result
		}{{fmt.Sprintf("members-%d-alone.png", n), "alone", r.Alone[i]}}
		for k := range s.Coordinations() {
			runs = append(runs, struct {
				file, what string
				res        Result
			}{fmt.Sprintf("members-%d-coordinated-%d.png", n, k), "coordinated " + r.coordName(k), r.Coordinated[k][i]})
		}
		for _, run := range runs {
			c := Chart{File: run.file, Chart: plot.Chart{
				Title: fmt.Sprintf("Each of %d members' capacity, %s", n, run.what), X: "time (windows)", Y: "capacity (s)", LogY: true}}
			for m := range n {
				c.Series = append(c.Series, r.series(fmt.Sprintf("member %d", m), m+1, run.res, 0, chartEvery,
					func(p *FleetPoint) float64 { return p.Capacity[m].Seconds() }))
			}
			sum := r.series("sum", n+1, run.res, 0, chartEvery, capacity)
			c.Series = append(c.Series, sum, r.level("single controller, settled", n+2, run.res, single))
			out = append(out, c)
		}
	}
	for k := range r.Churn {
		res := r.Churn[k]
		members := len(res.Fleet[0].Share)
		from := max(s.JoinAt-churnLead*s.AutoInterval, 0)
		shares := Chart{File: fmt.Sprintf("churn-shares-%d.png", k), Chart: plot.Chart{
			Title: fmt.Sprintf("Churn, %s: shares (%d joins, %d and 0 leave)", r.coordName(k), s.ChurnSize, s.ChurnSize/2),
			X:     "time (windows)", Y: "share of the fleet capacity"}}
		for m := range members {
			sr := r.series(fmt.Sprintf("member %d", m), m+1, res, from, churnEvery, func(p *FleetPoint) float64 {
				if p.Capacity[m] == 0 {
					return math.NaN() // not in the fleet
				}
				return p.Share[m]
			})
			sr.Dashed = m == s.ChurnSize // the one that joins
			shares.Series = append(shares.Series, sr)
		}
		capacities := Chart{File: fmt.Sprintf("churn-capacity-%d.png", k), Chart: plot.Chart{
			Title: fmt.Sprintf("Churn, %s: the fleet capacity and the work running", r.coordName(k)),
			X:     "time (windows)", Y: "seconds of estimated work"}}
		capacities.Series = append(capacities.Series,
			r.series("fleet capacity (the adjuster's)", 1, res, from, churnEvery, func(p *FleetPoint) float64 { return p.Fleet.Seconds() }),
			r.series("members' capacities added up", 2, res, from, churnEvery, capacity),
			r.series("estimated work running, most in the interval", 3, res, from, churnEvery, func(p *FleetPoint) float64 { return p.MaxLoad.Seconds() }))
		out = append(out, shares, capacities)
	}
	return out
}

// WriteCharts writes the charts as PNG files into dir.
func (r *FleetResults) WriteCharts(dir string) error {
	for _, c := range r.FleetCharts() {
		if err := plot.Lines(filepath.Join(dir, c.File), c.Chart); err != nil {
			return err
		}
	}
	return nil
}

// FleetHeadlines are the numbers the experiment is about: at the largest fleet, alone and
// coordinated (in each coordination), against the single controller.
type FleetHeadlines struct {
	Largest int
	// Settled is the single controller's settled capacity.
	Settled time.Duration
	// Single, Alone, Coordinated and Split are the cells of the single controller and of the
	// largest fleet; Coordinated by coordination.
	Single, Alone, Split FleetCell
	Coordinated          []FleetCell
}

// Headlines computes the headline numbers.
func (r *FleetResults) Headlines() FleetHeadlines {
	last := len(r.Setup.Sizes) - 1
	h := FleetHeadlines{Largest: r.Setup.Sizes[last], Settled: r.Settled(),
		Single: r.Cell(r.Alone[0]), Alone: r.Cell(r.Alone[last]), Split: r.Cell(r.Split[last])}
	for k := range r.Setup.Coordinations() {
		h.Coordinated = append(h.Coordinated, r.Cell(r.Coordinated[k][last]))
	}
	return h
}

// WriteMarkdown writes the report.
func (r *FleetResults) WriteMarkdown(w io.Writer, m Meta) error {
	b := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }

	p("# Simulator: a fleet of proxies in front of one database\n\n")
	p("N proxies, each with its own adaptive controller (`capacity: auto`, sjf), each taking an equal\n")
	p("share of the clients, in front of one model database: alone, and coordinated by the fleet's rule\n")
	p("(`internal/fleet`: every interval each member publishes its demand, capacity and fleet capacity;\n")
	p("the lowest-index member adjusts the fleet capacity with its own adaptive capacity, the others take\n")
	p("their share of it): as the proxy does it (*react*), a stricter rule tried in it and set aside (*drain*), and\n")
	p("the proxy's first (*interval*); see\n")
	p("[Setup](#setup). Generated by `go run ./bench/cmd/sim fleet`; do not edit by hand.\n\n")
	p("- Command: `%s`\n", m.Command)
	p("- Machine: %s; %s\n", m.Machine, m.GoVersion)
	p("- Wall time: %s\n", m.Elapsed.Round(10*time.Millisecond))
	p("- Seed: %d\n\n", r.Seed)

	r.writeShows(p)
	r.writeSetup(p)
	r.writeOutcome(p)
	r.writeDynamics(p)
	r.writeChecks(p)
	if len(r.Repeats) > 0 {
		r.writeSeeds(p)
	}
	if len(r.Churn) > 0 {
		r.writeChurn(p)
	}
	return b.Flush()
}

// writeShows writes what the experiment shows: the largest fleet's numbers in each
// coordination, the summed capacity by N, and the lines that compare them.
func (r *FleetResults) writeShows(p func(string, ...any)) {
	s, h := r.Setup, r.Headlines()
	coords := s.Coordinations()
	last := len(s.Sizes) - 1
	p("## What it shows\n\n")
	r.writeLead(p, h)
	p("%d members against the single controller (seed %d; the columns as in [Outcome](#outcome),\n", h.Largest, r.Seed)
	p("[Dynamics](#dynamics) and [Solo checks](#solo-checks)):\n\n")
	p("| fleet | interactions/s | %s mean | sum / single | work / fleet, most | swing | at the floor | timed alone (beside others) | held |\n", ShortClass)
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	p("| single controller | %.2f | %s | 1.00 | - | %.2f | %.0f%% | %s | - |\n", h.Single.Throughput, fmtMS(h.Single.Short), h.Single.Swing,
		100*h.Single.AtFloor, timedOf(r.Cell(r.Coordinated[0][0])))
	p("| %d alone | %.2f | %s | %.2f | - | %.2f | %.0f%% | - | - |\n", h.Largest, h.Alone.Throughput, fmtMS(h.Alone.Short), h.Alone.SumRatio,
		h.Alone.Swing, 100*h.Alone.AtFloor)
	for k, c := range h.Coordinated {
		p("| %d coordinated, %s | %.2f | %s | %.2f | %.2f | %.2f | %.0f%% | %s | %.1f%% |\n", h.Largest, r.coordName(k), c.Throughput, fmtMS(c.Short),
			c.SumRatio, c.LoadOverFleet, c.Swing, 100*c.AtFloor, timedOf(c), 100*c.Held)
	}
	p("\nThe members' capacities added up over the single controller's settled %s, by N, and in\n", h.Settled.Round(time.Millisecond))
	p("brackets the sum's swing within %d windows (a limit cycle reads over 2):\n\n", lawSwingWindows)
	p("| fleet |")
	for _, n := range s.Sizes[1:] {
		p(" N = %d |", n)
	}
	p("\n|---|")
	for range s.Sizes[1:] {
		p("---:|")
	}
	p("\n")
	byN := func(name string, rs []Result) {
		p("| %s |", name)
		for i := range s.Sizes[1:] {
			c := r.Cell(rs[i+1])
			p(" %.2f (%.2f) |", c.SumRatio, c.Swing)
		}
		p("\n")
	}
	byN("alone", r.Alone)
	for k := range coords {
		byN("coordinated, "+r.coordName(k), r.Coordinated[k])
	}
	p("\n")

	list := func(f func(k int) string) string {
		parts := make([]string, len(coords))
		for k := range coords {
			parts[k] = fmt.Sprintf("%s %s", r.coordShort(k), f(k))
		}
		return strings.Join(parts, "; ")
	}
	if len(r.Repeats) > 0 {
		span := func(res func(alone []Result, coordinated [][]Result) Result) string {
			first := r.Cell(res(r.Alone, r.Coordinated)).SumRatio
			lo, hi := first, first
			for _, rep := range r.Repeats {
				v := r.cell(res(rep.Alone, rep.Coordinated), rep.Settled()).SumRatio
				lo, hi = min(lo, v), max(hi, v)
			}
			return fmt.Sprintf("%.1f to %.1f", lo, hi)
		}
		p("- **Over %d seeds** ([below](#other-seeds)), %d members' sum over the single controller's: alone\n", len(r.Repeats)+1, h.Largest)
		p("  %s; %s.\n", span(func(a []Result, _ [][]Result) Result { return a[last] }),
			list(func(k int) string { return span(func(_ []Result, c [][]Result) Result { return c[k][last] }) }))
	}
	p("- **Timed alone at %d**: the adjuster's units that its controller counted as run alone (its times\n", h.Largest)
	p("  alone come from them), and in brackets those of them that had another unit beside them in the\n")
	p("  database: %s; the single controller's %s.\n", list(func(k int) string { return timedOf(h.Coordinated[k]) }), timedOf(r.Cell(r.Coordinated[0][0])))
	p("  The adjuster's median time alone: %s; the single controller's %s.\n", list(func(k int) string { return fmtMS(h.Coordinated[k].Alone) }), fmtMS(h.Single.Alone))
	p("- **At the size floor** at %d, the part of the intervals in which the capacity the adaptive capacity\n", h.Largest)
	p("  moves sat at the least its size floor allows (the floor is twice the size of the units doing most\n")
	p("  of the work; under drain it holds the fleet's capacity): %s; the single controller %.0f%%.\n",
		list(func(k int) string { return fmt.Sprintf("%.0f%%", 100*h.Coordinated[k].AtFloor) }), 100*h.Single.AtFloor)
	p("- **Mean requests running** at %d (the knee is %d; the single controller %.1f): alone %.1f; %s.\n", h.Largest, s.Database.Knee,
		h.Single.Running, h.Alone.Running, list(func(k int) string { return fmt.Sprintf("%.1f", h.Coordinated[k].Running) }))
	p("- **Static split**: %d static controllers at %s each (the single controller's capacity over %d,\n", h.Largest, fmtMS(h.Settled/time.Duration(h.Largest)), h.Largest)
	p("  under the %s of a %s): %.2f interactions/s, %s mean %s. Direct (no admission): %s mean %s.\n", fmtMS(r.Mix.Mean(r.Mix.Index(HeavyClass))), HeavyClass,
		h.Split.Throughput, ShortClass, fmtMS(h.Split.Short), ShortClass, fmtMS(r.Cell(r.Direct).Short))
	if len(r.Churn) > 0 {
		p("- **Join and leave** at %d members ([below](#join-and-leave)): intervals until every member's share\n", s.ChurnSize)
		p("  was first within 10%% of its final one, for the join, a follower's leave and the adjuster's, and in\n")
		p("  brackets the part of the span's last quarter in which every member read within it:")
		for k := range r.Churn {
			var parts []string
			for _, e := range r.ChurnEvents(k) {
				n := "never"
				if e.Settled >= 0 {
					n = fmt.Sprint(e.Settled)
				}
				parts = append(parts, fmt.Sprintf("%s (%.0f%%)", n, 100*e.Steady))
			}
			sep := ";"
			if k == len(r.Churn)-1 {
				sep = "."
			}
			p("\n  %s %s%s", r.coordShort(k), strings.Join(parts, ", "), sep)
		}
		p("\n")
	}
	p("\n")
}

// writeLead writes the lead of what the experiment shows: under RuleDrain at the largest
// fleet, the units timed alone against the database, where the capacity went, what the
// checks cost and what the clients saw.
func (r *FleetResults) writeLead(p func(string, ...any), h FleetHeadlines) {
	s := r.Setup
	if !slices.Contains(s.Rules, RuleDrain) {
		return
	}
	coords := s.Coordinations()
	// of lists f of the largest fleet's cells in rule's coordinations, by timing.
	of := func(rule FleetRule, f func(c FleetCell) string) string {
		var parts []string
		for k, co := range coords {
			if co.Rule == rule {
				parts = append(parts, f(h.Coordinated[k]))
			}
		}
		return strings.Join(parts, " and ")
	}
	ratio := func(c FleetCell) string { return fmt.Sprintf("%.2f", c.SumRatio) }
	timings := make([]string, len(s.Timings))
	for t, tm := range s.Timings {
		timings[t] = "every " + tm.Interval.String()
	}
	timed, beside, floor := 0, 0, 1.0
	var drain FleetCell
	for k, co := range coords {
		if co.Rule == RuleDrain {
			c := h.Coordinated[k]
			timed, beside, floor = timed+c.TimedAlone, beside+c.TimedBeside, min(floor, c.AtFloor)
			drain = c
		}
	}
	p("Under *drain*, the rule tried in the proxy and set aside for *react*, at %d members (%s):\n\n", h.Largest, strings.Join(timings, " and "))
	if beside == 0 {
		p("- **The times alone are the database's.** None of the %s units the adjuster's controller\n", of(RuleDrain, func(c FleetCell) string { return fmt.Sprint(c.TimedAlone) }))
		p("  counted as alone had another unit beside it in the database")
	} else {
		p("- **Times alone.** %d of the %d units the adjuster's controller counted as alone had another\n", beside, timed)
		p("  unit beside them in the database")
	}
	if slices.Contains(s.Rules, RuleReact) {
		p(" (under *react* %s did)", of(RuleReact, func(c FleetCell) string { return fmt.Sprintf("%d of %d", c.TimedBeside, c.TimedAlone) }))
	}
	p("; the adjuster's median\n  time alone is %s, the single controller's %s.\n", of(RuleDrain, func(c FleetCell) string { return fmtMS(c.Alone) }), fmtMS(h.Single.Alone))
	if floor > 0.5 {
		p("- **The capacity fell to its size floor.** ")
	} else {
		p("- **The capacity.** ")
	}
	p("The capacities added up to %s times the single controller's", of(RuleDrain, ratio))
	var others []string
	for _, rule := range s.Rules {
		if rule != RuleDrain {
			others = append(others, fmt.Sprintf("%s %s", rule, of(rule, ratio)))
		}
	}
	if len(others) > 0 {
		p("\n  (%s)", strings.Join(others, "; "))
	}
	p(", at the size floor in %s of the intervals.", of(RuleDrain, func(c FleetCell) string { return fmt.Sprintf("%.0f%%", 100*c.AtFloor) }))
	heavy := r.Mix.Mean(r.Mix.Index(HeavyClass))
	if share := drain.Fleet / time.Duration(h.Largest); share > 0 && share < heavy {
		p(" Each member's\n  share, about %s, is under a %s's %s: such a unit runs alone in its member, past the\n", fmtMS(share), HeavyClass, fmtMS(heavy))
		p("  share, while that member's quick units wait; the work running reached %s times the fleet\n", of(RuleDrain, func(c FleetCell) string { return fmt.Sprintf("%.2f", c.LoadOverFleet) }))
		p("  capacity, and %s requests ran on average (the single controller %.1f).", of(RuleDrain, func(c FleetCell) string { return fmt.Sprintf("%.1f", c.Running) }), h.Single.Running)
	}
	p("\n- **The checks hold the fleet.** The adjuster ran %s solo checks a window (the single\n", of(RuleDrain, func(c FleetCell) string { return fmt.Sprintf("%.2f", c.Checks) }))
	p("  controller %.2f); the others drained for %s of them, %s after the check began on average,\n", r.Cell(r.Alone[0]).Checks,
		of(RuleDrain, func(c FleetCell) string { return fmt.Sprintf("%d of %d", c.Drained, c.Drained+c.Undrained) }),
		of(RuleDrain, func(c FleetCell) string { return c.DrainWait.Round(10 * time.Millisecond).String() }))
	p("  and the followers were held %s of the time.\n", of(RuleDrain, func(c FleetCell) string { return fmt.Sprintf("%.1f%%", 100*c.Held) }))
	p("- **What the clients saw**: %s interactions/s, %s mean %s, against the single\n", of(RuleDrain, func(c FleetCell) string { return fmt.Sprintf("%.2f", c.Throughput) }),
		ShortClass, of(RuleDrain, func(c FleetCell) string { return fmtMS(c.Short) }))
	p("  controller's %.2f and %s", h.Single.Throughput, fmtMS(h.Single.Short))
	if slices.Contains(s.Rules, RuleReact) {
		p(" and react's %s, %s", of(RuleReact, func(c FleetCell) string { return fmt.Sprintf("%.2f", c.Throughput) }),
			of(RuleReact, func(c FleetCell) string { return fmtMS(c.Short) }))
	}
	p(".\n\n")
}

// timedOf is c's units timed alone, with those of them that ran beside another in brackets.
func timedOf(c FleetCell) string {
	return fmt.Sprintf("%d (%d)", c.TimedAlone, c.TimedBeside)
}

// besideOf is c's mean of the other units running as the adjuster started one in a check,
// or a dash where it started none.
func besideOf(c FleetCell) string {
	if c.CheckUnits == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", c.Beside)
}

// writeSetup writes the setup: the model, the members and the rules.
func (r *FleetResults) writeSetup(p func(string, ...any)) {
	s := r.Setup
	clients := s.Clients(r.Mix)
	scale := modelScale(s.AutoInterval)
	p("## Setup\n\n")
	p("- **Database and workload**: `make sim`'s ([the model](../sim/README.md#the-model)): processor sharing over\n")
	p("  K=%d cores, thrashing past %d running requests; the TPC-W shopping mix, mean demand %s.\n", s.Database.Cores, s.Database.Knee, fmtMS(r.Mix.MeanDemand()))
	p("- **Clients**: %d closed-loop clients, think time %s (capped at %s): %g times the %.0f that saturate\n", clients, s.Think, s.ThinkMax, s.Overload, float64(clients)/s.Overload)
	p("  the database, K (think + D) / D. Each member takes an equal share (the lower indexes one more).\n")
	p("- **Each member**: sjf, `capacity: auto` from a cold start at %s (up to %s), windows of %s (the\n", s.AutoMin, s.AutoMax, s.AutoInterval)
	p("  model's interactions last about a hundred times the bookstore's, so a window of %s stands for the\n", s.AutoInterval)
	p("  proxy's %s; a solo check lasts at most an eighth of a window), queue timeout %s (nothing is shed).\n", proxyWindow, s.QueueTimeout)
	p("- **Coordinated**: each member samples its controller's demand at every tick (%s); at each interval\n", tickEvery)
	p("  it takes `fleet.Next` of the records published at the interval before (its own fresh), applies it\n")
	p("  with `Controller.Share`, and publishes its record. The adjuster is the lowest-index member whose\n")
	p("  record is held: a record is held for the lease after it was published. Share of the fleet\n")
	p("  capacity: %.0f%% evenly, the rest by demand. A member elected after following starts its adaptive\n", 100*fleet.IdleShare)
	p("  capacity settled (`Controller.Share`, in every rule). The rules:\n")
	p("  - *drain*, the proxy's now (`internal/fleet/react.go`, 0ab1a44): *react*'s, and the adjuster times\n")
	p("    units alone only once the others drained. Each member calls `Controller.SetShare` with its share\n")
	p("    before `Controller.Share` at every interval (and `SetShare(0)` when it leaves): in a fleet a unit\n")
	p("    with none of its controller's own beside it no longer counts as alone, and the size floor and\n")
	p("    the bounds hold the fleet's capacity, not the adjuster's share. A follower held for a check whose\n")
	p("    own units there ended (`Controller.Running` is 0, looked at every latency) says so, and the word\n")
	p("    reaches the adjuster a latency later; once every other member its last interval saw has said so,\n")
	p("    the adjuster calls `Controller.Drained` and tells the check's new end, which the followers hold\n")
	p("    until (bounded by %s, the proxy's %s on the model's time scale). The controller waits for the\n", scale*RuleDrain.maxHold(), RuleDrain.maxHold())
	p("    drain `admission.DrainWait` (%s), a constant of the product, on the model's clock: unscaled, it\n", admission.DrainWait)
	p("    is under the check's length (%s), so a check the others have not drained for ends after %s,\n", s.AutoInterval/8, s.AutoInterval/8)
	p("    where the proxy's %s would be %s on the model's scale.\n", admission.DrainWait, scale*admission.DrainWait)
	p("  - *react*, the rule before it (1e58b09): the demand published is %.1f times the interval's mean\n", demandWeight)
	p("    plus %.1f times the last published. Between intervals the adjuster is looked at every *latency*,\n", 1-demandWeight)
	p("    and what it tells acts at the followers a latency after the look (etcd's put and watch): when its\n")
	p("    controller starts a solo check the followers call `Controller.Hold` until the check's end (bounded\n")
	p("    by %s, the proxy's %s on the model's time scale), and end the hold when it ends; when its fleet\n", scale*RuleReact.maxHold(), RuleReact.maxHold())
	p("    capacity moved by more than %.0f%% since it last told it, the followers take their share of it at\n", 100*toldMove)
	p("    once (`Controller.Share`), and at an interval a follower takes the last one told for the\n")
	p("    adjuster's record. No member calls `SetShare` (aba2dc3, after this rule): a unit with none of its\n")
	p("    controller's own beside it counts as alone, and the bounds hold the adjuster's own capacity.\n")
	p("  - *interval*, the rule before that: the demand published is the interval's mean; nothing between\n")
	p("    intervals: a follower takes the adjuster's fleet capacity from its record, published an interval\n")
	p("    before, and the followers' units start as they fit through the adjuster's solo checks.\n")
	p("- **Timings**:")
	for t, tm := range s.Timings {
		p(" every %s, lease %s, latency %s", tm.Interval, tm.TTL, tm.Latency)
		switch t {
		case 0:
			p(" (the proxy's)")
		case 1:
			p(" (the proxy's on the model's time scale, %.0f times: an interval is a quarter of a window, as in the proxy)", float64(s.Timings[1].Interval)/float64(s.Timings[0].Interval))
		}
		if t < len(s.Timings)-1 {
			p(";")
		}
	}
	p(". Each rule runs at each timing.\n")
	p("- **References**: the database without admission (direct), and N static controllers at the single\n")
	p("  controller's settled capacity (%s) over N each: what a coordination that held the fleet at the\n", r.Settled().Round(time.Millisecond))
	p("  single controller's capacity would give.\n")
	p("- Each run lasts %d windows (%s); the second half is measured.\n\n", s.Windows, s.length())
}

// writeOutcome writes each run's throughput, response times and capacity.
func (r *FleetResults) writeOutcome(p func(string, ...any)) {
	s := r.Setup
	settled := r.Settled()
	p("## Outcome\n\n")
	p("Measured over each run's second half. *Sum / single*: the members' capacities added up (median) over\n")
	p("the single controller's settled capacity. *Running*: mean requests running at the database (its\n")
	p("knee is %d). *Work / single*: mean estimated work running over the single controller's settled\n", s.Database.Knee)
	p("capacity.\n\n")
	p("| N | fleet | interactions/s | %s mean | %s mean | sum of capacities | sum / single | running | work / single |\n", ShortClass, HeavyClass)
	p("|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	row := func(n string, name string, c FleetCell) {
		p("| %s | %s | %.2f | %s | %s | %s | %.2f | %.1f | %.2f |\n", n, name, c.Throughput, fmtMS(c.Short), fmtMS(c.Heavy),
			c.Sum.Round(10*time.Millisecond), c.SumRatio, c.Running, c.LoadRatio)
	}
	dc := r.Cell(r.Direct)
	p("| 1 | direct (no admission) | %.2f | %s | %s | - | - | - | - |\n", dc.Throughput, fmtMS(dc.Short), fmtMS(dc.Heavy))
	for i, n := range s.Sizes {
		ns := fmt.Sprint(n)
		row(ns, "alone", r.Cell(r.Alone[i]))
		for k := range s.Coordinations() {
			row(ns, "coordinated, "+r.coordName(k), r.Cell(r.Coordinated[k][i]))
		}
		row(ns, fmt.Sprintf("static, %s each", fmtMS(max(settled/time.Duration(n), time.Millisecond))), r.Cell(r.Split[i]))
	}
	p("\n")
	for k := range s.Coordinations() {
		p("![sum of capacities, %s](sum-%d.png)\n", r.coordName(k), k)
	}
	for k := range s.Coordinations() {
		p("![requests running, %s](running-%d.png)\n", r.coordName(k), k)
	}
	p("\n")
}

// writeDynamics writes how each run's capacities moved.
func (r *FleetResults) writeDynamics(p func(string, ...any)) {
	s := r.Setup
	p("## Dynamics\n\n")
	p("*Fleet*: the adjuster's fleet capacity (median). *Sum / fleet* and *work / fleet*: the most, over the\n")
	p("intervals, of the members' capacities added up and of the estimated work running at once, over the\n")
	p("fleet capacity in force (the work may pass it where the capacity moved down under running units, or a\n")
	p("unit larger than a member's capacity ran alone in it). *Swing*: the largest ratio of the summed\n")
	p("capacity's highest to its lowest within any %d windows (a limit cycle shows as a swing over 2);\n", lawSwingWindows)
	p("*member swing* the same of any one member. *Spread*: the members' highest median capacity over their\n")
	p("lowest; *least / most*: the least-served member's completions over the most-served's. *Time alone*:\n")
	p("the median time alone of the adaptive capacity that moves (the first member's alone, the adjuster's\n")
	p("coordinated). *At the floor*: the part of the intervals in which that capacity sat at the least its\n")
	p("size floor allows (within %.0f%%; under drain the floor holds the fleet's capacity).\n\n", 100*atFloor)
	p("| N | fleet | fleet capacity | sum / fleet | work / fleet | swing | member swing | spread | least / most | time alone | at the floor |\n")
	p("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	dyn := func(n int, name string, c FleetCell) {
		fl, sf, lf := "-", "-", "-"
		if c.Fleet > 0 {
			fl, sf, lf = c.Fleet.Round(10*time.Millisecond).String(), fmt.Sprintf("%.2f", c.SumOverFleet), fmt.Sprintf("%.2f", c.LoadOverFleet)
		}
		p("| %d | %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %s | %.0f%% |\n", n, name, fl, sf, lf, c.Swing, c.MemberSwing,
			c.Spread, c.Starved, fmtMS(c.Alone), 100*c.AtFloor)
	}
	for i, n := range s.Sizes {
		dyn(n, "alone", r.Cell(r.Alone[i]))
		for k := range s.Coordinations() {
			dyn(n, "coordinated, "+r.coordName(k), r.Cell(r.Coordinated[k][i]))
		}
	}
	p("\n")
	for _, n := range s.Sizes {
		if n == 1 {
			continue
		}
		p("![%d members alone](members-%d-alone.png)\n", n, n)
		for k := range s.Coordinations() {
			p("![%d members coordinated, %s](members-%d-coordinated-%d.png)\n", n, r.coordName(k), n, k)
		}
	}
	p("\n")
}

// writeChecks writes the coordinated runs' solo checks: the holds, the units that ran
// through them, and the units timed alone against the database.
func (r *FleetResults) writeChecks(p func(string, ...any)) {
	s := r.Setup
	p("## Solo checks\n\n")
	p("Coordinated runs. *Held*: the part of the time the followers were held for the adjuster's solo\n")
	p("checks. *Started in checks*: the units the followers started while the adjuster's controller ran\n")
	p("one; *others at a checked start*: the mean of the other units running at the database as the\n")
	p("adjuster started a unit in a check (under drain, the units it started while the others drained\n")
	p("too). *Timed alone*: the adjuster's units that its controller counted as run alone, which its times\n")
	p("alone come from; *beside others*: those of them that had another unit running beside them in the\n")
	p("database at some time. *Checks*: the adjuster's solo checks a window (of %s). *Drained*: the checks\n", s.AutoInterval)
	p("the others drained for, and those that ended first; *drain wait*: the mean time from a check's\n")
	p("start until drained (drain).\n\n")
	p("| N | fleet | checks | held | started in checks | others at a checked start | timed alone | beside others | drained, not | drain wait |\n")
	p("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, n := range s.Sizes {
		for k, co := range s.Coordinations() {
			c := r.Cell(r.Coordinated[k][i])
			drained, wait := "-", "-"
			if co.Rule == RuleDrain {
				drained, wait = fmt.Sprintf("%d, %d", c.Drained, c.Undrained), "-"
				if c.Drained > 0 {
					wait = c.DrainWait.Round(10 * time.Millisecond).String()
				}
			}
			p("| %d | %s | %.2f | %.1f%% | %d | %s | %d | %d | %s | %s |\n", n, r.coordName(k), c.Checks, 100*c.Held, c.CheckStarts, besideOf(c),
				c.TimedAlone, c.TimedBeside, drained, wait)
		}
	}
	p("\n")
}

// writeSeeds writes the alone and coordinated runs at every seed.
func (r *FleetResults) writeSeeds(p func(string, ...any)) {
	s := r.Setup
	type seedRuns struct {
		seed        uint64
		single      time.Duration
		alone       []Result
		coordinated [][]Result
	}
	all := []seedRuns{{r.Seed, r.Settled(), r.Alone, r.Coordinated}}
	for _, rep := range r.Repeats {
		all = append(all, seedRuns{rep.Seed, rep.Settled(), rep.Alone, rep.Coordinated})
	}
	p("## Other seeds\n\n")
	p("The alone and coordinated runs again with other seeds (other think times and demands): the members'\n")
	p("capacities added up over the same seed's single controller's settled capacity, and in brackets the\n")
	p("sum's swing within %d windows.\n\n", lawSwingWindows)
	p("| N | fleet |")
	for _, a := range all {
		p(" seed %d |", a.seed)
	}
	p("\n|---:|---|")
	for range all {
		p("---:|")
	}
	p("\n| 1 | single controller, settled capacity |")
	for _, a := range all {
		p(" %s |", a.single.Round(time.Millisecond))
	}
	p("\n")
	cells := func(i int, name string, res func(a seedRuns) Result) {
		p("| %d | %s |", s.Sizes[i], name)
		for _, a := range all {
			c := r.cell(res(a), a.single)
			p(" %.2f (%.2f) |", c.SumRatio, c.Swing)
		}
		p("\n")
	}
	for i, n := range s.Sizes {
		if n == 1 {
			continue
		}
		cells(i, "alone", func(a seedRuns) Result { return a.alone[i] })
		for k := range s.Coordinations() {
			cells(i, "coordinated, "+r.coordName(k), func(a seedRuns) Result { return a.coordinated[k][i] })
		}
	}
	p("\n")
}

// writeChurn writes the join and leave check.
func (r *FleetResults) writeChurn(p func(string, ...any)) {
	s := r.Setup
	p("## Join and leave\n\n")
	p("%d members coordinated from the start; at %s member %d joins (a fresh controller, cold) and takes\n", s.ChurnSize, s.JoinAt, s.ChurnSize)
	p("its share of the clients from the others, each client moving at its next request; at %s member %d\n", s.LeaveAt, s.ChurnSize/2)
	p("(a follower) leaves, and at %s member 0 (the adjuster). A member that leaves stops: its clients move\n", s.AdjusterLeaveAt)
	p("to the others, the requests waiting in it are handed at once to the members their clients moved to\n")
	p("(keeping their issue time), those running at the database finish there, and its record is held\n")
	p("until its lease runs out. Each change is measured up to the next (or the end, at %s); a member's\n", s.ChurnEnd)
	p("final share is its mean over the span's last quarter. Counts are intervals after the change.\n\n")
	p("- *Seen*: until the change showed in the shares (the new member held a share; the members in the\n")
	p("  fleet held 99%% of it between them, once the leaver's record ran out).\n")
	p("- *Within 10%%*: until every member's share was first within 10%% of its final one; *stayed*: from\n")
	p("  when it stayed there to the end of the span (never: it did not). *New member*: until the member\n")
	p("  that joined held a share within 10%% of its final one.\n")
	p("- *Steady*: the share of the span's last quarter's intervals in which every member read within\n")
	p("  10%% of its final share, and *wander* the furthest a share read from its final one there: how\n")
	p("  settled a fleet that has long settled looks.\n")
	p("- *Sum / fleet*, *work / fleet*: the most over the span, as in the dynamics table; *fleet\n")
	p("  capacity*: at the change, and its least and most over the span.\n\n")
	p("| fleet | change | seen | within 10%% | stayed | new member | steady | wander | sum / fleet | work / fleet | fleet capacity: at the change, least, most |\n")
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	count := func(n int) string {
		if n < 0 {
			return "never"
		}
		return fmt.Sprint(n)
	}
	for k := range r.Churn {
		for _, e := range r.ChurnEvents(k) {
			joiner := "-"
			if e.Joiner >= 0 || e.Name == fmt.Sprintf("member %d joins", s.ChurnSize) {
				joiner = count(e.Joiner)
			}
			p("| %s | %s at %s | %s | %s | %s | %s | %.0f%% | %.0f%% | %.2f | %.2f | %s, %s, %s |\n", r.coordName(k), e.Name, e.At,
				count(e.Seen), count(e.Settled), count(e.Stayed), joiner, 100*e.Steady, 100*e.Wander, e.SumOverFleet, e.LoadOverFleet,
				e.Fleet.Round(10*time.Millisecond), e.Least.Round(10*time.Millisecond), e.Most.Round(10*time.Millisecond))
		}
	}
	p("\n")
	for k := range r.Churn {
		c := r.Cell(r.Churn[k])
		p("Over the whole churn run (%s) from the join on: the members' capacities added up reached %.2f times the\n", r.coordName(k), c.SumOverFleet)
		p("fleet capacity at most, the estimated work running %.2f times it.\n\n", c.LoadOverFleet)
	}
	for k := range r.Churn {
		p("![shares, %s](churn-shares-%d.png)\n![capacity, %s](churn-capacity-%d.png)\n", r.coordName(k), k, r.coordName(k), k)
	}
}
