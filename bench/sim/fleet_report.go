package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/gatekeeperdb/gatekeeper/bench/plot"
	"github.com/gatekeeperdb/gatekeeper/internal/fleet"
)

// timingName names Timings[t] for the report.
func (r *FleetResults) timingName(t int) string {
	tm := r.Setup.Timings[t]
	return fmt.Sprintf("every %s, lease %s", tm.Interval, tm.TTL)
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
	for t := range s.Timings {
		c := Chart{File: fmt.Sprintf("sum-%d.png", t), Chart: plot.Chart{
			Title: fmt.Sprintf("Capacities added up: alone (dashed), coordinated %s", r.timingName(t)),
			X:     "time (windows)", Y: "capacity (s)", LogY: true}}
		for i, n := range s.Sizes {
			if t == 0 {
				a := r.series(fmt.Sprintf("%d alone", n), i+1, r.Alone[i], 0, chartEvery, capacity)
				a.Dashed = true
				c.Series = append(c.Series, a)
			}
			c.Series = append(c.Series, r.series(fmt.Sprintf("%d coordinated", n), i+1, r.Coordinated[t][i], 0, chartEvery, capacity))
		}
		c.Series = append(c.Series, r.level("single controller, settled", len(s.Sizes)+1, r.Alone[0], single))
		out = append(out, c)
	}
	running := Chart{File: "running.png", Chart: plot.Chart{
		Title: fmt.Sprintf("Requests running: alone (dashed), coordinated %s", r.timingName(0)),
		X:     "time (windows)", Y: "requests running (mean of an interval)", LogY: true}}
	for i, n := range s.Sizes {
		a := r.series(fmt.Sprintf("%d alone", n), i+1, r.Alone[i], 0, chartEvery, func(p *FleetPoint) float64 { return p.Running })
		a.Dashed = true
		running.Series = append(running.Series, a,
			r.series(fmt.Sprintf("%d coordinated", n), i+1, r.Coordinated[0][i], 0, chartEvery, func(p *FleetPoint) float64 { return p.Running }))
	}
	running.Series = append(running.Series, r.level(fmt.Sprintf("the database's knee (%d)", s.Database.Knee), len(s.Sizes)+1, r.Alone[0], float64(s.Database.Knee)))
	out = append(out, running)
	for i, n := range s.Sizes {
		if n == 1 {
			continue
		}
		runs := []struct {
			file, what string
			res        Result
		}{{fmt.Sprintf("members-%d-alone.png", n), "alone", r.Alone[i]}}
		for t := range s.Timings {
			runs = append(runs, struct {
				file, what string
				res        Result
			}{fmt.Sprintf("members-%d-coordinated-%d.png", n, t), "coordinated " + r.timingName(t), r.Coordinated[t][i]})
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
	for t := range r.Churn {
		res := r.Churn[t]
		members := len(res.Fleet[0].Share)
		from := max(s.JoinAt-churnLead*s.AutoInterval, 0)
		shares := Chart{File: fmt.Sprintf("churn-shares-%d.png", t), Chart: plot.Chart{
			Title: fmt.Sprintf("Churn, %s: shares (%d joins, %d and 0 leave)", r.timingName(t), s.ChurnSize, s.ChurnSize/2),
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
		capacities := Chart{File: fmt.Sprintf("churn-capacity-%d.png", t), Chart: plot.Chart{
			Title: fmt.Sprintf("Churn, %s: the fleet capacity and the work running", r.timingName(t)),
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
// coordinated (at each timing), against the single controller.
type FleetHeadlines struct {
	Largest int
	// Settled is the single controller's settled capacity.
	Settled time.Duration
	// Single, Alone, Coordinated and Split are the cells of the single controller and of the
	// largest fleet.
	Single, Alone, Split FleetCell
	Coordinated          []FleetCell
}

// Headlines computes the headline numbers.
func (r *FleetResults) Headlines() FleetHeadlines {
	last := len(r.Setup.Sizes) - 1
	h := FleetHeadlines{Largest: r.Setup.Sizes[last], Settled: r.Settled(),
		Single: r.Cell(r.Alone[0]), Alone: r.Cell(r.Alone[last]), Split: r.Cell(r.Split[last])}
	for t := range r.Setup.Timings {
		h.Coordinated = append(h.Coordinated, r.Cell(r.Coordinated[t][last]))
	}
	return h
}

// WriteMarkdown writes the report.
func (r *FleetResults) WriteMarkdown(w io.Writer, m Meta) error {
	b := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	s, h := r.Setup, r.Headlines()
	clients := s.Clients(r.Mix)
	scaled := len(s.Timings) > 1

	p("# Simulator: a fleet of proxies in front of one database\n\n")
	p("N proxies, each with its own adaptive controller (`capacity: auto`, sjf), each taking an equal\n")
	p("share of the clients, in front of one model database: alone, and coordinated by the fleet's rule\n")
	p("(`internal/fleet`: every interval each member publishes its demand, capacity and fleet capacity;\n")
	p("the lowest-index member adjusts the fleet capacity with its own adaptive capacity, the others take\n")
	p("their share of it). Generated by `go run ./bench/cmd/sim fleet`; do not edit by hand.\n\n")
	p("- Command: `%s`\n", m.Command)
	p("- Machine: %s; %s\n", m.Machine, m.GoVersion)
	p("- Wall time: %s\n", m.Elapsed.Round(10*time.Millisecond))
	p("- Seed: %d\n\n", r.Seed)

	p("## Setup\n\n")
	d := r.Mix.MeanDemand()
	p("- **Database and workload**: `make sim`'s ([the model](../sim/README.md#the-model)): processor sharing over\n")
	p("  K=%d cores, thrashing past %d running requests; the TPC-W shopping mix, mean demand %s.\n", s.Database.Cores, s.Database.Knee, fmtMS(d))
	p("- **Clients**: %d closed-loop clients, think time %s (capped at %s): %g times the %.0f that saturate\n", clients, s.Think, s.ThinkMax, s.Overload, float64(clients)/s.Overload)
	p("  the database, K (think + D) / D. Each member takes an equal share (the lower indexes one more).\n")
	p("- **Each member**: sjf, `capacity: auto` from a cold start at %s (up to %s), windows of %s (the\n", s.AutoMin, s.AutoMax, s.AutoInterval)
	p("  model's interactions last about a hundred times the bookstore's, so a window of %s stands for the\n", s.AutoInterval)
	p("  proxy's %s), queue timeout %s (nothing is shed).\n", proxyWindow, s.QueueTimeout)
	p("- **Coordinated**: each member samples its controller's demand at every tick (%s) and publishes\n", tickEvery)
	p("  the interval's mean; at each interval it takes `fleet.Next` of the records published at the interval\n")
	p("  before (its own demand fresh) and applies it with `Controller.Share`. The adjuster is the\n")
	p("  lowest-index member whose record is held: a record is held for the lease after it was published.\n")
	p("  Share of the fleet capacity: %.0f%% evenly, the rest by demand. Timings:", 100*fleet.IdleShare)
	for t := range s.Timings {
		p(" %s", r.timingName(t))
		if t == 0 {
			p(" (the proxy's defaults)")
		} else if t == 1 {
			p(" (the proxy's on the model's time scale, %.0f times: an interval is a quarter of a window, as in the proxy)", float64(s.Timings[1].Interval)/float64(s.Timings[0].Interval))
		}
		if t < len(s.Timings)-1 {
			p(";")
		}
	}
	p(".\n")
	p("- **References**: the database without admission (direct), and N static controllers at the single\n")
	p("  controller's settled capacity (%s) over N each: what a coordination that held the fleet at the\n", h.Settled.Round(time.Millisecond))
	p("  single controller's capacity would give.\n")
	p("- Each run lasts %d windows (%s); the second half is measured.\n\n", s.Windows, s.length())

	p("## Headlines\n\n")
	ratios := func(rs []Result) string {
		var parts []string
		for i, n := range s.Sizes {
			if n > 1 {
				parts = append(parts, fmt.Sprintf("%d: %.2f", n, r.Cell(rs[i]).SumRatio))
			}
		}
		return strings.Join(parts, ", ")
	}
	over := true
	for i, n := range s.Sizes {
		over = over && (n == 1 || r.Cell(r.Alone[i]).SumRatio > float64(n))
	}
	if over {
		p("- **Alone, N controllers add up to more than N times the single controller's capacity.** Over the\n")
	} else {
		p("- **Alone, N controllers add up to a multiple of the single controller's capacity.** Over the\n")
	}
	p("  single controller's settled %s, by N: %s. At %d the database ran %.1f requests on\n", h.Settled.Round(time.Millisecond), ratios(r.Alone), h.Largest, h.Alone.Running)
	p("  average (its knee is %d; %.1f under the single controller), and the members starved each other:\n", s.Database.Knee, h.Single.Running)
	p("  their median capacities %.1fx apart, the least-served member's clients completed %.0f%% as many\n", h.Alone.Spread, 100*h.Alone.Starved)
	p("  interactions as the most-served's. %s mean %s against the single controller's %s.\n", ShortClass, fmtMS(h.Alone.Short), fmtMS(h.Single.Short))
	p("- **Coordinated, the members' capacities add up to the fleet capacity, but the fleet capacity grows\n")
	p("  with N.** Sum of capacities over the single controller's, by N:")
	for t := range s.Timings {
		sep := ";"
		if t == len(s.Timings)-1 {
			sep = "."
		}
		p(" %s, %s%s", r.timingName(t), ratios(r.Coordinated[t]), sep)
	}
	p("\n  At %d:", h.Largest)
	for t, c := range h.Coordinated {
		p(" %s, the sum at most %.2f times the fleet capacity, %.1f requests running on average, %s mean\n  %s;", r.timingName(t), c.SumOverFleet, c.Running, ShortClass, fmtMS(c.Short))
	}
	p(" the members stayed together (least-served over most-served %.2f", h.Coordinated[0].Starved)
	for _, c := range h.Coordinated[1:] {
		p(", %.2f", c.Starved)
	}
	p(").\n")
	if len(r.Repeats) > 0 {
		last := len(s.Sizes) - 1
		span := func(res func(alone []Result, coordinated [][]Result) Result) string {
			first := r.Cell(res(r.Alone, r.Coordinated)).SumRatio
			lo, hi := first, first
			for _, rep := range r.Repeats {
				v := r.cell(res(rep.Alone, rep.Coordinated), rep.Settled()).SumRatio
				lo, hi = min(lo, v), max(hi, v)
			}
			return fmt.Sprintf("%.1f to %.1f", lo, hi)
		}
		p("  Over %d seeds ([below](#other-seeds)), %d members' sum over the single controller's: alone %s", len(r.Repeats)+1, h.Largest,
			span(func(a []Result, _ [][]Result) Result { return a[last] }))
		for t := range s.Timings {
			p(", coordinated %s %s", r.timingName(t), span(func(_ []Result, c [][]Result) Result { return c[t][last] }))
		}
		p(".\n")
	}
	p("- **Why: the adjuster times units \"alone\" while the others keep running.** Its solo check holds\n")
	p("  only its own units to one at a time; the other members' units run on, so the times alone it learns\n")
	p("  are the loaded database's. Median time alone: single controller %s, %d alone %s,", fmtMS(h.Single.Alone), h.Largest, fmtMS(h.Alone.Alone))
	for t, c := range h.Coordinated {
		p(" coordinated (%s) %s", r.timingName(t), fmtMS(c.Alone))
		if t < len(h.Coordinated)-1 {
			p(",")
		}
	}
	p(".\n  The stretch divides by them and reads the target where the database is far past it, so the\n")
	p("  capacity holds there. The rule adds the members up; what it adds up is measured wrong.\n")
	for t, c := range h.Coordinated {
		if c.Swing < 2 {
			continue
		}
		p("- **Coordinated %s, %d members cycle.** The summed capacity swung %.2fx within %d windows\n", r.timingName(t), h.Largest, c.Swing, lawSwingWindows)
		p("  (%.2f at %s). The adjuster's moves reach the others an interval later (the sum read up to\n", h.Coordinated[0].Swing, r.timingName(0))
		p("  %.2f times the fleet capacity, right after moves down): a delay inside its control loop that\n", c.SumOverFleet)
		p("  grows with the followers' part of the capacity. At this timing an interval is half of a settled\n")
		p("  window of the adaptive capacity, as in the proxy (500 ms against 1 s).\n")
	}
	p("- **SJF helps only while each member's capacity is large enough.** %d static controllers at %s each\n", h.Largest, fmtMS(h.Settled/time.Duration(h.Largest)))
	p("  (the single controller's capacity split evenly, under the %s of a %s) gave %s mean %s\n", fmtMS(r.Mix.Mean(r.Mix.Index(HeavyClass))), HeavyClass, ShortClass, fmtMS(h.Split.Short))
	p("  against the single controller's %s: a unit larger than a member's capacity runs alone in it, and\n", fmtMS(h.Single.Short))
	p("  the member's short units wait behind it. Direct (no admission): %s mean %s.\n", ShortClass, fmtMS(r.Cell(r.Direct).Short))
	if len(r.Churn) > 0 {
		p("- **Join and leave** ([below](#join-and-leave)): the rule's own part is quick: a member that joins\n")
		p("  holds a share at the first interval, one that leaves gives its share up when its lease runs out.\n")
		p("  The shares then follow the members' demands (their queues), which wander by more than 10%% on\n")
		p("  their own, so a fleet long settled reads within 10%% of its final shares only part of the time.\n")
		if evs := r.ChurnEvents(0); len(evs) == 3 {
			e := evs[2]
			p("  When the adjuster left (%s), its successor adapted from the state its controller kept from its\n", r.timingName(0))
			p("  own first interval: the fleet capacity went from %s to %s and back up to %s within the span.\n",
				e.Fleet.Round(10*time.Millisecond), e.Least.Round(10*time.Millisecond), e.Most.Round(10*time.Millisecond))
		}
	}
	p("\n")

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
		for t := range s.Timings {
			row(ns, "coordinated, "+r.timingName(t), r.Cell(r.Coordinated[t][i]))
		}
		row(ns, fmt.Sprintf("static, %s each", fmtMS(max(h.Settled/time.Duration(n), time.Millisecond))), r.Cell(r.Split[i]))
	}
	p("\n![sum of capacities](sum-0.png)\n")
	if scaled {
		p("![sum of capacities, the model's time scale](sum-1.png)\n")
	}
	p("![requests running](running.png)\n\n")

	p("## Dynamics\n\n")
	p("*Fleet*: the adjuster's fleet capacity (median). *Sum / fleet* and *work / fleet*: the most, over the\n")
	p("intervals, of the members' capacities added up and of the estimated work running at once, over the\n")
	p("fleet capacity in force (the work may pass it where the capacity moved down under running units, or a\n")
	p("unit larger than a member's capacity ran alone in it). *Swing*: the largest ratio of the summed\n")
	p("capacity's highest to its lowest within any %d windows (a limit cycle shows as a swing over 2);\n", lawSwingWindows)
	p("*member swing* the same of any one member. *Spread*: the members' highest median capacity over their\n")
	p("lowest; *least / most*: the least-served member's completions over the most-served's. *Time alone*:\n")
	p("the median time alone of the adaptive capacity that moves (the first member's alone, the adjuster's\n")
	p("coordinated).\n\n")
	p("| N | fleet | fleet capacity | sum / fleet | work / fleet | swing | member swing | spread | least / most | time alone |\n")
	p("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	dyn := func(n int, name string, c FleetCell) {
		fl, sf, lf := "-", "-", "-"
		if c.Fleet > 0 {
			fl, sf, lf = c.Fleet.Round(10*time.Millisecond).String(), fmt.Sprintf("%.2f", c.SumOverFleet), fmt.Sprintf("%.2f", c.LoadOverFleet)
		}
		p("| %d | %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %s |\n", n, name, fl, sf, lf, c.Swing, c.MemberSwing, c.Spread, c.Starved, fmtMS(c.Alone))
	}
	for i, n := range s.Sizes {
		dyn(n, "alone", r.Cell(r.Alone[i]))
		for t := range s.Timings {
			dyn(n, "coordinated, "+r.timingName(t), r.Cell(r.Coordinated[t][i]))
		}
	}
	p("\n")
	for _, n := range s.Sizes {
		if n == 1 {
			continue
		}
		p("![%d members alone](members-%d-alone.png)\n", n, n)
		for t := range s.Timings {
			p("![%d members coordinated, %s](members-%d-coordinated-%d.png)\n", n, r.timingName(t), n, t)
		}
	}
	p("\n")

	if len(r.Repeats) > 0 {
		r.writeSeeds(p)
	}
	if len(r.Churn) > 0 {
		r.writeChurn(p)
	}
	return b.Flush()
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
		for t := range s.Timings {
			cells(i, "coordinated, "+r.timingName(t), func(a seedRuns) Result { return a.coordinated[t][i] })
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
	p("| timing | change | seen | within 10%% | stayed | new member | steady | wander | sum / fleet | work / fleet | fleet capacity: at the change, least, most |\n")
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	count := func(n int) string {
		if n < 0 {
			return "never"
		}
		return fmt.Sprint(n)
	}
	for t := range r.Churn {
		for _, e := range r.ChurnEvents(t) {
			joiner := "-"
			if e.Joiner >= 0 || e.Name == fmt.Sprintf("member %d joins", s.ChurnSize) {
				joiner = count(e.Joiner)
			}
			p("| %s | %s at %s | %s | %s | %s | %s | %.0f%% | %.0f%% | %.2f | %.2f | %s, %s, %s |\n", r.timingName(t), e.Name, e.At,
				count(e.Seen), count(e.Settled), count(e.Stayed), joiner, 100*e.Steady, 100*e.Wander, e.SumOverFleet, e.LoadOverFleet,
				e.Fleet.Round(10*time.Millisecond), e.Least.Round(10*time.Millisecond), e.Most.Round(10*time.Millisecond))
		}
	}
	p("\n")
	for t := range r.Churn {
		c := r.Cell(r.Churn[t])
		p("Over the whole churn run (%s) from the join on: the members' capacities added up reached %.2f times the\n", r.timingName(t), c.SumOverFleet)
		p("fleet capacity at most, the estimated work running %.2f times it.\n\n", c.LoadOverFleet)
	}
	for t := range r.Churn {
		p("![shares, %s](churn-shares-%d.png)\n![capacity, %s](churn-capacity-%d.png)\n", r.timingName(t), t, r.timingName(t), t)
	}
}
