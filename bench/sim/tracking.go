package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/gatekeeperdb/gatekeeper/bench/plot"
	"github.com/gatekeeperdb/gatekeeper/internal/admission"
)

// Tracking is the adaptive capacity's experiment: closed-loop clients in front of a
// database whose speed steps through Setup.TrackSpeeds, one phase each, under sjf with the
// capacity adapting, and under sjf at each static capacity of Setup.Capacities for
// comparison.
type Tracking struct {
	Auto   Result
	Static []Result // by Setup.Capacities
}

// trackingRuns adds the experiment's runs.
func (s Setup) trackingRuns(mix *Mix, seed uint64, t *Tracking, add func(Config, *Result)) {
	if len(s.TrackSpeeds) == 0 {
		return
	}
	auto := s.autoConfig(lawNames[0])
	add(s.trackingRun(mix, seed, auto), &t.Auto)
	t.Static = make([]Result, len(s.Capacities))
	for i, c := range s.Capacities {
		st := *auto
		st.Capacity, st.Auto = c, admission.AutoConfig{}
		add(s.trackingRun(mix, seed, &st), &t.Static[i])
	}
}

// trackingRun is the tracking experiment's run under a: its clients, in front of the
// database whose speed steps through the phases.
func (s Setup) trackingRun(mix *Mix, seed uint64, a *admission.Config) Config {
	db := s.Database
	for i, v := range s.TrackSpeeds[1:] {
		db.Changes = append(db.Changes, SpeedChange{At: time.Duration(i+1) * s.TrackPhase, Speed: v})
	}
	if v := s.TrackSpeeds[0]; v != 1 {
		db.Changes = append([]SpeedChange{{At: 0, Speed: v}}, db.Changes...)
	}
	return Config{Seed: seed, Database: db, Mix: mix, Admission: a, Trace: true,
		Closed:   &ClosedLoop{Clients: s.TrackClients, Think: s.Think, ThinkMax: s.ThinkMax},
		Duration: time.Duration(len(s.TrackSpeeds)) * s.TrackPhase}
}

// Phase is one phase of the tracking experiment, as measured.
type Phase struct {
	Speed float64
	// Best is the static capacity with the most completions in the phase's second half, and
	// BestRate its completions a second there; AutoRate is the adaptive capacity's.
	Best               time.Duration
	BestRate, AutoRate float64
	// Settled is the adaptive capacity's median over the phase's second half, and SettledIn
	// how long after the phase began it first came within a quarter of it.
	Settled   time.Duration
	SettledIn time.Duration
}

// Phases measures each phase of the experiment.
func (r *Results) Phases() []Phase {
	s := r.Setup
	var out []Phase
	for i, v := range s.TrackSpeeds {
		from, to := time.Duration(i)*s.TrackPhase, time.Duration(i+1)*s.TrackPhase
		half := from + s.TrackPhase/2
		p := Phase{Speed: v, AutoRate: rateIn(r.Tracking.Auto.Trace, half, to)}
		for c, res := range r.Tracking.Static {
			if rate := rateIn(res.Trace, half, to); rate > p.BestRate {
				p.BestRate, p.Best = rate, s.Capacities[c]
			}
		}
		var caps []time.Duration
		for _, tp := range r.Tracking.Auto.Trace {
			if tp.At > half && tp.At <= to {
				caps = append(caps, tp.Capacity)
			}
		}
		if len(caps) == 0 {
			continue
		}
		slices.Sort(caps)
		p.Settled = caps[len(caps)/2]
		for _, tp := range r.Tracking.Auto.Trace {
			if tp.At > from && tp.At <= to && tp.Capacity >= p.Settled*3/4 && tp.Capacity <= p.Settled*5/4 {
				p.SettledIn = tp.At - from
				break
			}
		}
		out = append(out, p)
	}
	return out
}

// rateIn is the completions a second of a trace in (from, to].
func rateIn(trace []TracePoint, from, to time.Duration) float64 {
	n, sum := 0, 0.0
	for _, tp := range trace {
		if tp.At > from && tp.At <= to {
			n++
			sum += tp.Throughput
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// trackingCharts draws the adaptive capacity over time against each phase's best static
// capacity, and its throughput against that capacity's.
func (r *Results) trackingCharts() []Chart {
	s := r.Setup
	if len(s.TrackSpeeds) == 0 {
		return nil
	}
	title := fmt.Sprintf("Adaptive capacity, sjf, %d closed-loop clients, database speed %v by phase", s.TrackClients, s.TrackSpeeds)
	caps := Chart{File: "tracking-capacity.png", Chart: plot.Chart{Title: title, X: "time (s)", Y: "capacity (s)", LogY: true}}
	tput := Chart{File: "tracking-throughput.png", Chart: plot.Chart{Title: title, X: "time (s)", Y: "interactions/s (mean of 60 s)"}}
	auto := plot.Series{Name: "capacity: auto", Style: 1}
	for _, tp := range r.Tracking.Auto.Trace {
		auto.Points = append(auto.Points, [2]float64{tp.At.Seconds(), tp.Capacity.Seconds()})
	}
	best := plot.Series{Name: "best static capacity of the phase", Style: 2, Dashed: true}
	autoRate := plot.Series{Name: "capacity: auto", Style: 1, Points: rolling(r.Tracking.Auto.Trace, time.Minute)}
	bestRate := plot.Series{Name: "best static capacity of the phase", Style: 2, Dashed: true}
	for i, p := range r.Phases() {
		from, to := time.Duration(i)*s.TrackPhase, time.Duration(i+1)*s.TrackPhase
		best.Points = append(best.Points, [2]float64{from.Seconds(), p.Best.Seconds()}, [2]float64{to.Seconds(), p.Best.Seconds()})
		c := slices.Index(s.Capacities, p.Best)
		for _, pt := range rolling(r.Tracking.Static[c].Trace, time.Minute) {
			if pt[0] > from.Seconds() && pt[0] <= to.Seconds() {
				bestRate.Points = append(bestRate.Points, pt)
			}
		}
	}
	caps.Series = []plot.Series{auto, best}
	tput.Series = []plot.Series{autoRate, bestRate}
	return []Chart{caps, tput}
}

// rolling is a trace's throughput as the mean of the last window, every window.
func rolling(trace []TracePoint, window time.Duration) [][2]float64 {
	var out [][2]float64
	n := int(window / time.Second)
	for i := n - 1; i < len(trace); i += n / 2 {
		sum := 0.0
		for _, tp := range trace[i-n+1 : i+1] {
			sum += tp.Throughput
		}
		out = append(out, [2]float64{trace[i].At.Seconds(), sum / float64(n)})
	}
	return out
}

// writeTracking writes the experiment's table.
func (r *Results) writeTracking(p func(string, ...any)) {
	s := r.Setup
	if len(s.TrackSpeeds) == 0 {
		return
	}
	p("\n## Adaptive capacity\n\n")
	p("%d closed-loop clients under sjf; the database's speed steps through %v, %s a phase. "+
		"The adaptive capacity (`capacity: auto`, from %s, window %s) against each static capacity of %v, "+
		"compared over each phase's second half. The window is %s because the model's interactions last "+
		"about a hundred times as long as the bookstore's on MariaDB: it holds about as many completions "+
		"as a second does there.\n\n",
		s.TrackClients, s.TrackSpeeds, s.TrackPhase, s.AutoMin, s.AutoInterval, s.Capacities, s.AutoInterval)
	p("| phase | speed | best static capacity | its interactions/s | auto's interactions/s | auto / best | auto's capacity (median) | within 25%% of it after |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, ph := range r.Phases() {
		p("| %d | %g | %s | %.2f | %.2f | %.3f | %s | %s |\n", i+1, ph.Speed, ph.Best, ph.BestRate, ph.AutoRate,
			ph.AutoRate/ph.BestRate, ph.Settled.Round(time.Millisecond), ph.SettledIn)
	}
	p("\n![capacity](tracking-capacity.png)\n![throughput](tracking-throughput.png)\n")
}
