package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"time"

	"github.com/gatekeeperdb/gatekeeper/bench/plot"
)

// The classes shown apart: a short interaction and a heavy one.
const (
	ShortClass = "Execute Search"
	HeavyClass = "Best Seller"
)

// Chart is a chart and the file it is written to.
type Chart struct {
	File string
	plot.Chart
}

// policy returns the index of the named policy, or -1.
func (r *Results) policy(name string) int {
	for i, p := range r.Policies {
		if p.Name == name {
			return i
		}
	}
	return -1
}

func msOf(d time.Duration) float64 { return d.Seconds() * 1000 }

// Charts returns the charts of the experiments.
func (r *Results) Charts() []Chart {
	s := r.Setup
	clients := func(i int) float64 { return float64(s.Clients[i]) }
	series := func(name string, rs []Result, y func(Result) float64, x func(int) float64) plot.Series {
		out := plot.Series{Name: name, Style: r.policy(name) + 1}
		for i, res := range rs {
			out.Points = append(out.Points, [2]float64{x(i), y(res)})
		}
		return out
	}
	throughput := func(res Result) float64 { return res.Throughput }
	mean := func(res Result) float64 { return msOf(res.All.Mean()) }
	classMean := func(c int) func(Result) float64 {
		return func(res Result) float64 { return msOf(res.Classes[c].Mean()) }
	}

	capacity := Chart{File: "capacity.png", Chart: plot.Chart{
		Title: fmt.Sprintf("Capacity by incremental steps: fifo, %d closed-loop clients", s.CapacityClients),
		X:     "capacity (s of concurrent estimated work)", Y: "interactions/s",
	}}
	capacity.Series = append(capacity.Series, series("fifo", r.Capacity, throughput, func(i int) float64 { return s.Capacities[i].Seconds() }))

	tput := Chart{File: "throughput.png", Chart: plot.Chart{
		Title: "Throughput, closed loop", X: "clients", Y: "interactions/s",
	}}
	closedMean := Chart{File: "response-time-closed.png", Chart: plot.Chart{
		Title: "Mean response time, closed loop", X: "clients", Y: "ms", LogY: true,
	}}
	openMean := Chart{File: "response-time.png", Chart: plot.Chart{
		Title: fmt.Sprintf("Mean response time, open loop (queue timeout %s)", s.OpenTimeout),
		X:     "clients (Poisson rate N/(think + mean demand))", Y: "ms", LogY: true,
	}}
	perClass := Chart{File: "per-class.png", Chart: plot.Chart{
		Title: "Mean response time of a short and a heavy class, closed loop",
		X:     "clients", Y: "ms", LogY: true,
	}}
	short, heavy := r.Mix.Index(ShortClass), r.Mix.Index(HeavyClass)
	for p, pol := range r.Policies {
		if pol.Name == "direct" || pol.Name == "fifo" || pol.Name == "sjf" {
			tput.Series = append(tput.Series, series(pol.Name, r.Closed[p], throughput, clients))
		}
		closedMean.Series = append(closedMean.Series, series(pol.Name, r.Closed[p], mean, clients))
		openMean.Series = append(openMean.Series, series(pol.Name, r.Open[p], mean, clients))
	}
	for _, dashed := range []bool{false, true} {
		c := short
		if dashed {
			c = heavy
		}
		for p, pol := range r.Policies {
			if pol.Direct {
				continue
			}
			ser := series(pol.Name, r.Closed[p], classMean(c), clients)
			ser.Name = r.Mix.Classes()[c].Name + ", " + pol.Name
			ser.Dashed = dashed
			perClass.Series = append(perClass.Series, ser)
		}
	}

	aborted := Chart{File: "await-aborted.png", Chart: plot.Chart{
		Title: fmt.Sprintf("AWAIT: accepted sessions aborted (A=%d)", s.ActiveLimit),
		X:     "blocking queue B", Y: "% of accepted sessions aborted",
	}}
	rejected := Chart{File: "await-rejected.png", Chart: plot.Chart{
		Title: fmt.Sprintf("AWAIT: new sessions refused (A=%d)", s.ActiveLimit),
		X:     "blocking queue B", Y: "% of sessions refused",
	}}
	bx := func(i int) float64 { return float64(s.BlockingQueues[i]) }
	for v, variant := range []string{"conservative", "aggressive"} {
		for l, lv := range r.Levels {
			name := fmt.Sprintf("%s, %s burstiness", variant, lv.Name)
			a := series(name, r.Await[l][v], func(res Result) float64 { return 100 * res.Sessions.AbortedRatio() }, bx)
			j := series(name, r.Await[l][v], func(res Result) float64 { return 100 * res.Sessions.RejectedRatio() }, bx)
			a.Dashed, j.Dashed = v == 1, v == 1
			a.Style, j.Style = l+1, l+1
			aborted.Series = append(aborted.Series, a)
			rejected.Series = append(rejected.Series, j)
		}
	}
	return append([]Chart{capacity, tput, closedMean, openMean, perClass, aborted, rejected}, append(r.trackingCharts(), r.lawCharts()...)...)
}

// WriteCharts writes the charts as PNG files into dir.
func (r *Results) WriteCharts(dir string) error {
	for _, c := range r.Charts() {
		if err := plot.Lines(filepath.Join(dir, c.File), c.Chart); err != nil {
			return err
		}
	}
	return nil
}

// Headlines are the numbers the experiments are about.
type Headlines struct {
	// Closed loop: the peak throughput of direct and fifo, and at the most clients.
	DirectPeak, FIFOPeak          float64
	DirectPeakAt, FIFOPeakAt      int
	DirectAtMost, FIFOAtMost      float64
	MostClients                   int
	SJFAtMost                     float64
	ShortFIFO, ShortSJF           time.Duration // closed loop, most clients
	HeavyFIFO, HeavySJF           time.Duration
	ShortAging, HeavyAging        []time.Duration // per Setup.Agings
	OpenAt                        int             // clients of the open-loop point shown
	OpenLoad                      float64         // offered share of the database's work capacity there
	OpenFIFO, OpenSJF             time.Duration
	OpenAging                     []time.Duration
	OpenFIFOAtMost, OpenSJFAtMost time.Duration
	// AWAIT, conservative: aborted share at the smallest and largest B, per level.
	AbortedSmallB, AbortedLargeB []float64
}

// OfferedLoad is the share of the database's full speed (K cores) that n clients' worth of
// open-loop requests ask for.
func (r *Results) OfferedLoad(n int) float64 {
	return r.Setup.OpenRate(r.Mix, n) * r.Mix.MeanDemand().Seconds() / float64(r.Setup.Database.Cores)
}

// Headlines computes the headline numbers.
func (r *Results) Headlines() Headlines {
	s := r.Setup
	var h Headlines
	last := len(s.Clients) - 1
	h.MostClients = s.Clients[last]
	direct, fifo, sjf := r.policy("direct"), r.policy("fifo"), r.policy("sjf")
	peak := func(rs []Result) (float64, int) {
		best, at := 0.0, 0
		for i, res := range rs {
			if res.Throughput > best {
				best, at = res.Throughput, s.Clients[i]
			}
		}
		return best, at
	}
	h.DirectPeak, h.DirectPeakAt = peak(r.Closed[direct])
	h.FIFOPeak, h.FIFOPeakAt = peak(r.Closed[fifo])
	h.DirectAtMost = r.Closed[direct][last].Throughput
	h.FIFOAtMost = r.Closed[fifo][last].Throughput
	h.SJFAtMost = r.Closed[sjf][last].Throughput
	short, heavy := r.Mix.Index(ShortClass), r.Mix.Index(HeavyClass)
	h.ShortFIFO, h.HeavyFIFO = r.Closed[fifo][last].Classes[short].Mean(), r.Closed[fifo][last].Classes[heavy].Mean()
	h.ShortSJF, h.HeavySJF = r.Closed[sjf][last].Classes[short].Mean(), r.Closed[sjf][last].Classes[heavy].Mean()
	// The open-loop point shown: the most clients whose offered load the database can
	// still carry.
	open := 0
	for i, n := range s.Clients {
		if r.OfferedLoad(n) < 1 {
			open = i
		}
	}
	h.OpenAt, h.OpenLoad = s.Clients[open], r.OfferedLoad(s.Clients[open])
	h.OpenFIFO, h.OpenSJF = r.Open[fifo][open].All.Mean(), r.Open[sjf][open].All.Mean()
	h.OpenFIFOAtMost, h.OpenSJFAtMost = r.Open[fifo][last].All.Mean(), r.Open[sjf][last].All.Mean()
	for _, x := range s.Agings {
		p := r.policy(fmt.Sprintf("sjf aging %g", x))
		h.ShortAging = append(h.ShortAging, r.Closed[p][last].Classes[short].Mean())
		h.HeavyAging = append(h.HeavyAging, r.Closed[p][last].Classes[heavy].Mean())
		h.OpenAging = append(h.OpenAging, r.Open[p][open].All.Mean())
	}
	for l := range r.Levels {
		rs := r.Await[l][0]
		h.AbortedSmallB = append(h.AbortedSmallB, rs[0].Sessions.AbortedRatio())
		h.AbortedLargeB = append(h.AbortedLargeB, rs[len(rs)-1].Sessions.AbortedRatio())
	}
	return h
}

// Meta is how the results were made, for the report.
type Meta struct {
	Command   string
	Machine   string
	GoVersion string
	Elapsed   time.Duration
}

// WriteMarkdown writes the report: the model, and per experiment its chart and table.
func (r *Results) WriteMarkdown(w io.Writer, m Meta) error {
	b := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	s, h := r.Setup, r.Headlines()
	fifo, sjf := r.policy("fifo"), r.policy("sjf")

	p("# Simulator: the admission controller in front of a model database\n\n")
	p("`bench/sim` drives the real `internal/admission` controller with a virtual clock, in front of\n")
	p("a model database, under the TPC-W shopping mix of the Gatekeeper paper. Generated by `make sim`;\n")
	p("do not edit by hand.\n\n")
	p("- Command: `%s`\n", m.Command)
	p("- Machine: %s; %s\n", m.Machine, m.GoVersion)
	p("- Wall time: %s for %d simulations (%d sessions in the AWAIT runs)\n", m.Elapsed.Round(10*time.Millisecond), r.Runs, r.SessionsRun)
	p("- Seed: %d\n\n", r.Seed)

	p("## Headlines\n\n")
	p("- **Admission holds throughput past saturation.** Closed loop: without admission the throughput\n")
	p("  peaks at %.1f interactions/s (%d clients) and falls to %.1f at %d clients (%.0f%% of its peak); with\n",
		h.DirectPeak, h.DirectPeakAt, h.DirectAtMost, h.MostClients, 100*h.DirectAtMost/h.DirectPeak)
	p("  fifo admission it peaks at %.1f (%d clients, %+.0f%% on direct's peak) and stays at %.1f at %d\n",
		h.FIFOPeak, h.FIFOPeakAt, 100*(h.FIFOPeak/h.DirectPeak-1), h.FIFOAtMost, h.MostClients)
	p("  clients (%.0f%% of its peak).\n", 100*h.FIFOAtMost/h.FIFOPeak)
	p("- **SJF cuts the mean response time.** Open loop at the rate of %d clients (%.0f%% of the\n", h.OpenAt, 100*h.OpenLoad)
	p("  database's capacity): fifo %s, sjf %s (%.1fx lower)", fmtMS(h.OpenFIFO), fmtMS(h.OpenSJF), ratioOf(h.OpenFIFO, h.OpenSJF))
	for i, x := range s.Agings {
		p(", aging X=%g %s", x, fmtMS(h.OpenAging[i]))
	}
	p(".\n  Past saturation (%d clients' rate) fifo %s against sjf %s, counting only the answered ones\n", h.MostClients, fmtMS(h.OpenFIFOAtMost), fmtMS(h.OpenSJFAtMost))
	p("  (see the refusals in the table).\n")
	p("- **Heavy interactions pay for it.** Closed loop at %d clients: %s\n", h.MostClients, ShortClass)
	p("  fifo %s, sjf %s; %s fifo %s, sjf %s", fmtMS(h.ShortFIFO), fmtMS(h.ShortSJF), HeavyClass, fmtMS(h.HeavyFIFO), fmtMS(h.HeavySJF))
	for i, x := range s.Agings {
		p("; aging X=%g: %s %s, %s %s", x, ShortClass, fmtMS(h.ShortAging[i]), HeavyClass, fmtMS(h.HeavyAging[i]))
	}
	p(". The queue timeout is %s here, so no overdue unit's deadline is at risk and short units\n", s.ClosedTimeout)
	p("  pass overdue ones under aging as under sjf; the open loop, with its %s timeout, is where aging binds.\n", s.OpenTimeout)
	p("- **A blocking queue saves accepted sessions.** AWAIT (conservative): aborted accepted sessions at\n  B=%d against B=%d:", s.BlockingQueues[0], s.BlockingQueues[len(s.BlockingQueues)-1])
	for l, lv := range r.Levels {
		sep := ","
		if l == len(r.Levels)-1 {
			sep = "."
		}
		p(" %s burstiness %.1f%% to %.1f%%%s", lv.Name, 100*h.AbortedSmallB[l], 100*h.AbortedLargeB[l], sep)
	}
	p("\n\n")

	r.writeModel(p)

	p("## Capacity by incremental steps\n\n")
	p("FIFO admission, %d closed-loop clients (well past saturation), capacity swept. The capacity used\n", s.CapacityClients)
	p("below is %s. A capacity under the largest class cost (Admin Response, %s) makes that class\n", s.Capacity, fmtMS(r.Mix.Mean(r.Mix.Index("Admin Response"))))
	p("run alone: the controller admits a unit larger than the whole capacity only when nothing runs,\n")
	p("so under FIFO the database drains behind it.\n\n")
	p("![capacity](capacity.png)\n\n")
	p("| capacity | interactions/s | mean response | most running |\n|---:|---:|---:|---:|\n")
	for i, res := range r.Capacity {
		p("| %s | %.1f | %s | %d |\n", s.Capacities[i], res.Throughput, fmtMS(res.All.Mean()), res.MaxRunning)
	}
	p("\n")

	p("## 1. Throughput against clients (closed loop)\n\n")
	p("![throughput](throughput.png)\n\n")
	r.closedTable(p, func(res Result) string { return fmt.Sprintf("%.1f", res.Throughput) }, false)

	p("## 2. Response time against clients\n\n")
	p("### Open loop\n\n")
	p("Poisson arrivals at the rate N clients would offer if they never waited, N / (think + mean\n")
	p("demand); queue timeout %s. Past saturation (offered load over 100%%) the queue only stays\n", s.OpenTimeout)
	p("bounded because waiting units time out; the means count answered interactions only, and\n")
	p("the refused share is given. Direct has no queue and no timeout: past saturation its database\n")
	p("holds ever more requests and thrashes.\n\n")
	p("![response time, open loop](response-time.png)\n\n")
	p("| clients | offered load |")
	for _, pol := range r.Policies {
		p(" %s |", pol.Name)
	}
	p(" refused fifo | refused sjf |\n|---:|---:|")
	for range r.Policies {
		p("---:|")
	}
	p("---:|---:|\n")
	for i, n := range s.Clients {
		p("| %d | %.0f%% |", n, 100*r.OfferedLoad(n))
		for pi := range r.Policies {
			p(" %s |", fmtMS(r.Open[pi][i].All.Mean()))
		}
		p(" %.1f%% | %.1f%% |\n", refusedPct(r.Open[fifo][i]), refusedPct(r.Open[sjf][i]))
	}
	if rs := r.Open[fifo][len(s.Clients)-1]; rs.Refused > 0 {
		heavy, share := 0, 0.0
		for _, name := range []string{HeavyClass, "Admin Response"} {
			c := r.Mix.Index(name)
			heavy += rs.RefusedByClass[c]
			share += r.Mix.Classes()[c].Frequency
		}
		p("\nOf the interactions fifo refused at %d clients' rate, %.0f%% were Best Seller or Admin Response\n",
			s.Clients[len(s.Clients)-1], 100*float64(heavy)/float64(rs.Refused))
		p("(%.2f%% of the mix): a heavy unit at the head of the queue waits for room in the pool while\n", share)
		p("its deadline runs, so under fifo too the timeouts fall on heavy units and shed most of the\n")
		p("excess work with few refusals.\n")
	}
	p("\n### Closed loop\n\n")
	p("Once saturated, a closed loop's mean response time over all interactions is pinned by Little's\n")
	p("law, N = X (R + Z): with the throughput X held at its peak, R = N/X - Z whatever the order of the\n")
	p("queue. Scheduling shows per class. SJF's mean over the interactions answered in the window is\n")
	p("lower than N/X - Z because the heavy ones still waiting at its end are not counted. (Below\n")
	p("saturation N/X - Z is a small difference of large numbers, and noisy.)\n\n")
	p("![response time, closed loop](response-time-closed.png)\n\n")
	r.closedTable(p, func(res Result) string { return fmtMS(res.All.Mean()) }, true)

	p("### Per class (the paper's Figures 11-13)\n\n")
	p("![per class](per-class.png)\n\n")
	last := len(s.Clients) - 1
	p("Closed loop, %d clients: mean waiting time in the admission queue + time in the database.\n\n", s.Clients[last])
	p("| class | cost |")
	for _, pol := range r.Policies {
		p(" %s |", pol.Name)
	}
	p("\n|---|---:|")
	for range r.Policies {
		p("---:|")
	}
	p("\n")
	for _, name := range []string{ShortClass, HeavyClass, "Admin Response", "Home", "all interactions"} {
		c := r.Mix.Index(name)
		cost := "-"
		if c >= 0 {
			cost = fmtMS(r.Mix.Mean(c))
		}
		p("| %s | %s |", name, cost)
		for pi := range r.Policies {
			l := r.Closed[pi][last].All
			if c >= 0 {
				l = r.Closed[pi][last].Classes[c]
			}
			p(" %s + %s (n=%d) |", fmtMS(l.MeanWait()), fmtMS(l.MeanExec()), l.N)
		}
		p("\n")
	}
	p("\n")

	r.writeAwait(p)
	r.writeTracking(p)
	r.writeLaws(p)
	r.writeNotes(p)
	if err := b.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

func (r *Results) writeModel(p func(string, ...any)) {
	s := r.Setup
	row := "No Load"
	if s.HighLoad {
		row = "High Load"
	}
	p("## The model\n\n")
	p("- **Database**: processor sharing over K=%d cores with a thrashing penalty. With n requests\n", s.Database.Cores)
	p("  running, each is served at rate(n) = min(1, K/n) / (1 + %g * max(0, n - %d)) seconds of\n", s.Database.Penalty, s.Database.Knee)
	p("  demand per second: the database does K seconds of work per second from K to %d running\n", s.Database.Knee)
	p("  requests, and past that knee every extra request slows all of them: at %d running it does\n", 4*s.Database.Knee)
	p("  %.0f%% of that.\n", 100*float64(4*s.Database.Knee)*s.Database.Rate(4*s.Database.Knee)/float64(s.Database.Cores))
	p("- **Workload**: the TPC-W shopping mix, Table 1 of the Gatekeeper paper: a class drawn by its\n")
	p("  frequency, its demand lognormal (sigma %g) around the class's %s time; Customer\n", s.Sigma, row)
	p("  Registration (3%%) does not reach the database and is answered at once. Mean demand %s,\n", fmtMS(r.Mix.MeanDemand()))
	p("  so the database's full speed is %.1f interactions/s.\n", float64(s.Database.Cores)/r.Mix.MeanDemand().Seconds())
	p("- **Clients**: closed loop with exponential think time of mean %s capped at %s (TPC-W);\n", s.Think, s.ThinkMax)
	p("  open loop Poisson; sessions arriving by a two-state Markov-modulated Poisson process.\n")
	p("  Runs last %s after a %s warm-up.\n", s.Duration, s.Warmup)
	p("- **Admission**: the real controller (`internal/admission`) on a manual clock; each unit is\n")
	p("  charged its class's mean demand (the estimate a converged moving average would give),\n")
	p("  expected to run for the moving average (weight %g) of its class's time in the database, and\n", serviceWeight)
	p("  released with its time in the database. Capacity %s of concurrent estimated work, at most\n", s.Capacity)
	p("  %d running; queue timeout %s in the closed loop (nothing is shed, as in the paper) and %s\n", s.MaxConcurrency, s.ClosedTimeout, s.OpenTimeout)
	p("  in the open loop. Direct sends every request straight to the database.\n\n")
	p("| class | %s mean | frequency |\n|---|---:|---:|\n", row)
	for i, c := range r.Mix.Classes() {
		p("| %s | %s | %g%% |\n", c.Name, fmtMS(r.Mix.Mean(i)), c.Frequency)
	}
	p("\n")
}

// closedTable writes a table of the closed loop, a cell per policy and number of clients,
// with Little's law's N/X - Z for fifo and sjf when little.
func (r *Results) closedTable(p func(string, ...any), cell func(Result) string, little bool) {
	p("| clients |")
	for _, pol := range r.Policies {
		p(" %s |", pol.Name)
	}
	if little {
		p(" N/X - Z fifo | N/X - Z sjf |")
	}
	p("\n|---:|")
	for range r.Policies {
		p("---:|")
	}
	if little {
		p("---:|---:|")
	}
	p("\n")
	fifo, sjf := r.policy("fifo"), r.policy("sjf")
	residence := func(res Result, n int) string {
		return fmtMS(seconds(float64(n)/res.Throughput - r.Setup.Think.Seconds()))
	}
	for i, n := range r.Setup.Clients {
		p("| %d |", n)
		for pi := range r.Policies {
			p(" %s |", cell(r.Closed[pi][i]))
		}
		if little {
			p(" %s | %s |", residence(r.Closed[fifo][i], n), residence(r.Closed[sjf][i], n))
		}
		p("\n")
	}
	p("\n")
}

func (r *Results) writeAwait(p func(string, ...any)) {
	s := r.Setup
	p("## 3. AWAIT: aborted sessions against the blocking queue\n\n")
	p("%d sessions per run, arriving at %.2f per second on average; %.0f%% of them in bursts at %.0fx\n", s.Sessions, s.SessionRate, 100*s.BurstShare, s.BurstFactor)
	p("that rate. The levels differ only in how long a burst lasts (so in the index of dispersion I\n")
	p("of the arrival counts; Poisson has I=1). A session is %d to %d requests with think times;\n", s.MinLength, s.MaxLength)
	p("session gate A=%d (units waiting for capacity or running), fifo behind it, queue timeout %s.\n", s.ActiveLimit, s.SessionTimeout)
	p("Aborted: accepted sessions with a refused request (blocking queue full or timeout), as a share\n")
	p("of accepted sessions. Refused: sessions refused before being accepted, as a share of all.\n")
	p("Runs at one level share their arrivals.\n\n")
	p("![aborted](await-aborted.png) ![refused](await-rejected.png)\n\n")
	p("| level | mean burst | I | B | aborted (cons.) | refused (cons.) | p95 (cons.) | aborted (aggr.) | refused (aggr.) | p95 (aggr.) |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for l, lv := range r.Levels {
		row := func(b string, c, a Result) {
			p("| %s | %s | %.0f | %s | %.2f%% | %.2f%% | %s | %.2f%% | %.2f%% | %s |\n", lv.Name, lv.Arrivals.Stay[1], lv.Arrivals.Dispersion(), b,
				100*c.Sessions.AbortedRatio(), 100*c.Sessions.RejectedRatio(), fmtMS(c.All.Quantile(0.95)),
				100*a.Sessions.AbortedRatio(), 100*a.Sessions.RejectedRatio(), fmtMS(a.All.Quantile(0.95)))
		}
		for i, b := range s.BlockingQueues {
			row(fmt.Sprint(b), r.Await[l][0][i], r.Await[l][1][i])
		}
		c, a := r.Adaptive[l][0], r.Adaptive[l][1]
		row(fmt.Sprintf("adaptive (ends at %d / %d)", c.Admission.BlockingQueue, a.Admission.BlockingQueue), c, a)
	}
	p("\nAdaptive: B starts at 1 and moves every %d completed units to keep the p95 response time\n", s.AdaptEvery)
	p("under an SLO of %s (up to %d).\n", s.SLO, s.MaxBlocking)
}

// writeNotes says what the runs show about the controller's behaviour beyond the headlines.
func (r *Results) writeNotes(p func(string, ...any)) {
	s := r.Setup
	last := len(s.Clients) - 1
	fifo, sjf := r.policy("fifo"), r.policy("sjf")
	heavy, admin := r.Mix.Index(HeavyClass), r.Mix.Index("Admin Response")
	p("\n## What the runs show about the controller\n\n")
	p("- **SJF starves the heaviest class in a saturated closed loop.** At %d clients, %d Admin\n", s.Clients[last], r.Closed[sjf][last].Classes[admin].N)
	p("  Response interactions were answered in %s under sjf (%d under fifo): clients that draw one\n", s.Duration, r.Closed[fifo][last].Classes[admin].N)
	p("  wait behind every cheaper unit, and there always is one. Aging is what bounds it.\n")
	near := 0
	for j, n := range s.Clients {
		if r.OfferedLoad(n) < 1 {
			near = j
		}
	}
	p("- **Aging is relative to the expected service time.** A unit's bound is its arrival plus X\n")
	p("  times its class's expected time in the database, which is several times its demand while\n")
	p("  many requests share the processors. In the open loop at %d clients' rate, where waits stay\n", s.Clients[near])
	p("  short: fifo %s", fmtMS(r.Open[fifo][near].All.Mean()))
	for _, x := range s.Agings {
		p(", X=%g %s", x, fmtMS(r.Open[r.policy(fmt.Sprintf("sjf aging %g", x))][near].All.Mean()))
	}
	p(", sjf %s.\n", fmtMS(r.Open[sjf][near].All.Mean()))
	p("  Far past saturation in the closed loop every unit waits past its bound, and the controller\n")
	p("  then admits in the order of the bounds, while the cheapest waiting units fill the time the\n")
	p("  unit whose bound came is expected to wait for room (backfilling). Home, the cheapest class,\n")
	p("  waits far less than under fifo (the per-class table above); the units that fill the time\n")
	p("  run beside the running ones and stretch them, so the costlier classes wait longer: %s\n", HeavyClass)
	p("  at %d clients, fifo %s", s.Clients[last], fmtMS(r.Closed[fifo][last].Classes[heavy].Mean()))
	for _, x := range s.Agings {
		p(", X=%g %s", x, fmtMS(r.Closed[r.policy(fmt.Sprintf("sjf aging %g", x))][last].Classes[heavy].Mean()))
	}
	p(", sjf %s.\n", fmtMS(r.Closed[sjf][last].Classes[heavy].Mean()))
	p("- **The concurrency guard binds.** With %s of capacity and at most %d running, admission\n", s.Capacity, s.MaxConcurrency)
	p("  never let more than %d requests run at once; direct reached %d at %d clients.\n",
		r.Closed[fifo][last].MaxRunning, r.Closed[r.policy("direct")][last].MaxRunning, s.Clients[last])
	if len(r.Capacity) > 0 && s.Capacities[0] < r.Mix.Mean(r.Mix.Index("Admin Response")) {
		best := 0.0
		for _, res := range r.Capacity {
			best = max(best, res.Throughput)
		}
		p("- **A pool smaller than the largest cost drains the database.** With %s of capacity the\n", s.Capacities[0])
		p("  throughput was %.1f/s against %.1f/s at best in the capacity sweep.\n", r.Capacity[0].Throughput, best)
	}
}

func refusedPct(res Result) float64 {
	if res.Completed+res.Refused == 0 {
		return 0
	}
	return 100 * float64(res.Refused) / float64(res.Completed+res.Refused)
}

func ratioOf(a, b time.Duration) float64 {
	if b == 0 {
		return math.Inf(1)
	}
	return float64(a) / float64(b)
}

// fmtMS prints a duration in milliseconds, or in seconds from 10 s.
func fmtMS(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= 100*time.Millisecond:
		return fmt.Sprintf("%.0f ms", msOf(d))
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", msOf(d))
	}
	return fmt.Sprintf("%.2f ms", msOf(d))
}
