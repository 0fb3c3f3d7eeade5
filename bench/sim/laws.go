package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/gatekeeperdb/gatekeeper/bench/plot"
	"github.com/gatekeeperdb/gatekeeper/internal/admission"
)

// Laws is the experiment that compares the adaptive capacity's control laws with the best
// static capacity: closed-loop clients (Setup.LawClients) under sjf from a cold start at
// Setup.AutoMin, for Setup.LawIntervals windows of Setup.AutoInterval, and the step
// change of the tracking experiment under each law. The static capacities are those of
// Setup.Capacities; the best is the knee: the least of them within kneeShare of the most
// completions over the run's second half (past it the throughput is flat, and responses
// only grow).
type Laws struct {
	Names  []string
	Auto   [][]Result // [law][clients]
	Static [][]Result // [clients][capacity]
	Step   []Result   // [law], on the tracking experiment's database
}

// lawNames are the laws compared, the default first.
var lawNames = []string{admission.LawGradient.String(), admission.LawRules.String()}

// autoConfig is the adaptive capacity under law from a cold start.
func (s Setup) autoConfig(law string) *admission.Config {
	return &admission.Config{Capacity: s.AutoMin, Discipline: admission.SJF, QueueTimeout: s.ClosedTimeout,
		MaxQueue: 1 << 20, Auto: admission.AutoConfig{Enabled: true, Min: s.AutoMin, Max: s.AutoMax,
			Interval: s.AutoInterval, Law: admission.Laws[law]}}
}

// lawRuns adds the experiment's runs.
func (s Setup) lawRuns(mix *Mix, seed uint64, l *Laws, add func(Config, *Result)) {
	if len(s.LawClients) == 0 {
		return
	}
	l.Names = lawNames
	length := time.Duration(s.LawIntervals) * s.AutoInterval
	run := func(a *admission.Config, n int) Config {
		// Measured over the second half: the first is the cold start.
		return Config{Seed: seed, Database: s.Database, Mix: mix, Admission: a, Trace: true,
			Closed: &ClosedLoop{Clients: n, Think: s.Think, ThinkMax: s.ThinkMax},
			Warmup: length / 2, Duration: length / 2}
	}
	l.Auto = make([][]Result, len(l.Names))
	for i, name := range l.Names {
		l.Auto[i] = make([]Result, len(s.LawClients))
		for j, n := range s.LawClients {
			add(run(s.autoConfig(name), n), &l.Auto[i][j])
		}
	}
	l.Static = make([][]Result, len(s.LawClients))
	for j, n := range s.LawClients {
		l.Static[j] = make([]Result, len(s.Capacities))
		for c, capacity := range s.Capacities {
			st := s.autoConfig(l.Names[0])
			st.Capacity, st.Auto = capacity, admission.AutoConfig{}
			add(run(st, n), &l.Static[j][c])
		}
	}
	if len(s.TrackSpeeds) == 0 {
		return
	}
	l.Step = make([]Result, len(l.Names))
	for i, name := range l.Names {
		add(s.trackingRun(mix, seed, s.autoConfig(name)), &l.Step[i])
	}
}

// LawCell is one law at one number of clients, as measured.
type LawCell struct {
	Clients int
	// Best is the best static capacity; Rate and Short the law's completions a second and
	// mean response of ShortClass over the second half, as ratios to the best static's.
	Best        time.Duration
	Rate, Short float64
	// Settled is when the capacity came within 1.5x of Best for good (-1: never), Median
	// the capacity's median over the second half, and Swing the largest ratio of its
	// highest to its lowest within any lawSwingWindows windows of the second half.
	Settled time.Duration
	Median  time.Duration
	Swing   float64
}

// kneeShare: the best static capacity is the least within this share of the most
// completions.
const kneeShare = 0.98

// knee is the index of the least capacity whose rate is within kneeShare of the most.
func knee(rates []float64) int {
	top := 0.0
	for _, r := range rates {
		top = max(top, r)
	}
	for k, r := range rates {
		if r >= kneeShare*top {
			return k
		}
	}
	return 0
}

// lawSwingWindows is the span a limit cycle is looked for in: 15 windows, 30 s at the
// proxy's default interval.
const lawSwingWindows = 15

// LawCells measures law i at every number of clients.
func (r *Results) LawCells(i int) []LawCell {
	s, l := r.Setup, &r.Laws
	short := max(r.Mix.Index(ShortClass), 0)
	out := make([]LawCell, len(s.LawClients))
	for j, n := range s.LawClients {
		c := LawCell{Clients: n, Settled: -1}
		rates := make([]float64, len(l.Static[j]))
		for k, st := range l.Static[j] {
			rates[k] = st.Throughput
		}
		k := knee(rates)
		best, bestRate := l.Static[j][k], l.Static[j][k].Throughput
		c.Best = s.Capacities[k]
		auto := l.Auto[i][j]
		c.Rate = auto.Throughput / bestRate
		if b := best.Classes[short].Mean(); b > 0 {
			c.Short = float64(auto.Classes[short].Mean()) / float64(b)
		}
		half := time.Duration(s.LawIntervals) * s.AutoInterval / 2
		c.Settled = settledWithin(auto.Trace, c.Best, 1.5, 0, time.Duration(1<<62))
		c.Swing = swing(auto.Trace, half, lawSwingWindows*s.AutoInterval)
		var caps []time.Duration
		for _, tp := range auto.Trace {
			if tp.At > half {
				caps = append(caps, tp.Capacity)
			}
		}
		if len(caps) > 0 {
			slices.Sort(caps)
			c.Median = caps[len(caps)/2]
		}
		out[j] = c
	}
	return out
}

// settledWithin is when, after from and up to to, a trace's capacity came within ratio of
// target and stayed there up to to (-1: it did not), counted from from.
func settledWithin(trace []TracePoint, target time.Duration, ratio float64, from, to time.Duration) time.Duration {
	at := time.Duration(-1)
	for _, tp := range trace {
		if tp.At <= from || tp.At > to {
			continue
		}
		in := float64(tp.Capacity) <= ratio*float64(target) && ratio*float64(tp.Capacity) >= float64(target)
		switch {
		case !in:
			at = -1
		case at < 0:
			at = tp.At - from
		}
	}
	return at
}

// swing is the largest ratio of a trace's highest capacity to its lowest within any span
// after from.
func swing(trace []TracePoint, from, span time.Duration) float64 {
	worst := 1.0
	for i, tp := range trace {
		if tp.At < from {
			continue
		}
		lo, hi := tp.Capacity, tp.Capacity
		for _, o := range trace[i:] {
			if o.At > tp.At+span {
				break
			}
			lo, hi = min(lo, o.Capacity), max(hi, o.Capacity)
		}
		if lo > 0 {
			worst = max(worst, float64(hi)/float64(lo))
		}
	}
	return worst
}

// StepSettled is, for law i on the step change, how long after each phase began its
// capacity came within 1.5x of the phase's best static capacity for the rest of the phase.
func (r *Results) StepSettled(i int) []time.Duration {
	s, l := r.Setup, &r.Laws
	if len(l.Step) == 0 {
		return nil
	}
	var out []time.Duration
	for k := range s.TrackSpeeds {
		from := time.Duration(k) * s.TrackPhase
		out = append(out, settledWithin(l.Step[i].Trace, r.phaseKnee(k), 1.5, from, from+s.TrackPhase))
	}
	return out
}

// phaseKnee is the best static capacity of phase k of the step change: the knee over its
// second half.
func (r *Results) phaseKnee(k int) time.Duration {
	s := r.Setup
	from := time.Duration(k)*s.TrackPhase + s.TrackPhase/2
	rates := make([]float64, len(r.Tracking.Static))
	for c, res := range r.Tracking.Static {
		rates[c] = rateIn(res.Trace, from, from+s.TrackPhase/2)
	}
	return s.Capacities[knee(rates)]
}

// lawCharts draws each law's capacity over time at each number of clients, against the
// best static capacity.
func (r *Results) lawCharts() []Chart {
	s, l := r.Setup, &r.Laws
	var out []Chart
	for j, n := range s.LawClients {
		c := Chart{File: fmt.Sprintf("laws-capacity-%d.png", n), Chart: plot.Chart{
			Title: fmt.Sprintf("Adaptive capacity from a cold start, sjf, %d closed-loop clients", n),
			X:     "time (windows)", Y: "capacity (s)", LogY: true}}
		for i, name := range l.Names {
			c.Series = append(c.Series, capacitySeries(name, i+1, l.Auto[i][j].Trace, s.AutoInterval))
		}
		best := r.LawCells(0)[j].Best
		end := float64(s.LawIntervals)
		c.Series = append(c.Series, plot.Series{Name: "best static capacity", Style: len(l.Names) + 1, Dashed: true,
			Points: [][2]float64{{0, best.Seconds()}, {end, best.Seconds()}}})
		out = append(out, c)
	}
	if len(l.Step) > 0 {
		c := Chart{File: "laws-stepchange.png", Chart: plot.Chart{
			Title: fmt.Sprintf("Adaptive capacity, database speed %v by phase, %d clients", s.TrackSpeeds, s.TrackClients),
			X:     "time (windows)", Y: "capacity (s)", LogY: true}}
		for i, name := range l.Names {
			c.Series = append(c.Series, capacitySeries(name, i+1, l.Step[i].Trace, s.AutoInterval))
		}
		best := plot.Series{Name: "best static capacity of the phase (its knee)", Style: len(l.Names) + 1, Dashed: true}
		for k := range s.TrackSpeeds {
			from, to := float64(k)*float64(s.TrackPhase)/float64(s.AutoInterval), float64(k+1)*float64(s.TrackPhase)/float64(s.AutoInterval)
			knee := r.phaseKnee(k).Seconds()
			best.Points = append(best.Points, [2]float64{from, knee}, [2]float64{to, knee})
		}
		c.Series = append(c.Series, best)
		out = append(out, c)
	}
	return out
}

// capacitySeries is a trace's capacity over time, in windows of interval.
func capacitySeries(name string, style int, trace []TracePoint, interval time.Duration) plot.Series {
	sr := plot.Series{Name: name, Style: style}
	for _, tp := range trace {
		sr.Points = append(sr.Points, [2]float64{float64(tp.At) / float64(interval), tp.Capacity.Seconds()})
	}
	return sr
}

// writeLaws writes the experiment's tables.
func (r *Results) writeLaws(p func(string, ...any)) {
	s, l := r.Setup, &r.Laws
	if len(s.LawClients) == 0 {
		return
	}
	p("\n## Control laws of the adaptive capacity\n\n")
	p("Closed-loop clients under sjf, each law from a cold start at %s with windows of %s, for %d windows; "+
		"the second half is measured, against the best static capacity of %v: the least within 2%% of the most completions there (past it throughput is flat and responses only grow). "+
		"Time is in windows (a window is 2 s at the proxy's default). *Within 1.5x* is when the capacity came "+
		"within 1.5x of the best static one for the rest of the run (never, where the clients hold fewer units than "+
		"the knee, or where the target stretch sits further up the flat part); *swing* is the largest ratio of its "+
		"highest to its lowest within any %d windows of the second half (a limit cycle shows as a swing over 2).\n\n",
		s.AutoMin, s.AutoInterval, s.LawIntervals, s.Capacities, lawSwingWindows)
	p("| law | clients | best static | throughput / best | %s mean / best | capacity, median | within 1.5x of the best after (windows) | swing |\n", ShortClass)
	p("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, name := range l.Names {
		for _, c := range r.LawCells(i) {
			settled := "never"
			if c.Settled >= 0 {
				settled = fmt.Sprintf("%.1f", float64(c.Settled)/float64(s.AutoInterval))
			}
			p("| %s | %d | %s | %.3f | %.2f | %s | %s | %.2f |\n", name, c.Clients, c.Best, c.Rate, c.Short,
				c.Median.Round(10*time.Millisecond), settled, c.Swing)
		}
	}
	for _, n := range s.LawClients {
		p("\n![capacity at %d clients](laws-capacity-%d.png)", n, n)
	}
	p("\n")
	if len(l.Step) == 0 {
		return
	}
	p("\nThe step change of the tracking experiment (%d clients, speed %v, %s a phase) under each law: "+
		"windows from each phase's start until the capacity is within 1.5x of the phase's best static capacity "+
		"for the rest of the phase.\n\n", s.TrackClients, s.TrackSpeeds, s.TrackPhase)
	p("| law |")
	for k := range s.TrackSpeeds {
		p(" phase %d |", k+1)
	}
	p("\n|---|")
	for range s.TrackSpeeds {
		p("---:|")
	}
	p("\n")
	for i, name := range l.Names {
		p("| %s |", name)
		for _, d := range r.StepSettled(i) {
			if d < 0 {
				p(" never |")
			} else {
				p(" %.1f |", float64(d)/float64(s.AutoInterval))
			}
		}
		p("\n")
	}
	p("\n![step change](laws-stepchange.png)\n")
}
