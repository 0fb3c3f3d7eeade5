package sim

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gatekeeperdb/gatekeeper/bench/plot"
)

// PointReadClass is the cheap point read the balance report follows: a product by its key.
const PointReadClass = "Product Detail"

// policy returns the index of b in the setup's policies, or -1.
func (b *BalanceResults) policy(p Balance) int { return slices.Index(b.Setup.Policies, p) }

// BalanceHeadlines are the numbers the load-balancing experiment is about, without the
// per-backend limit.
type BalanceHeadlines struct {
	// Peak[p][r] is policy p's peak throughput over the loads with Replicas[r], and
	// PeakWork[p][r] the work rate there.
	Peak, PeakWork [][]float64
	// Largest is the index of the largest cluster; Detail the index of the detailed load.
	Largest, Detail int
	// DetailThroughput[p] and DetailPointRead[p] are policy p's throughput and mean
	// PointReadClass response time at the detailed load on the largest cluster.
	DetailThroughput []float64
	DetailPointRead  []time.Duration
	// SELFvsSQF[l] and SELFvsRR[l] are the least and the most of SELF's throughput over
	// SQF's (RR's), less 1, over every load and cluster with a replica, under limit index l;
	// zero when a policy is not run.
	SELFvsSQF, SELFvsRR [][2]float64
	// SQFCount[l] and RRCount[l] count the loads and clusters with a replica where SELF's
	// throughput is more than TieBand ahead of SQF's (RR's), more than TieBand behind, and
	// within it, under limit index l.
	SQFCount, RRCount [][3]int
}

// TieBand is how close two throughputs count as a tie in the headlines: about the spread
// of one point's throughput over seeds near saturation.
const TieBand = 0.02

// Headlines computes the headline numbers.
func (b *BalanceResults) Headlines() BalanceHeadlines {
	s := b.Setup
	h := BalanceHeadlines{Largest: len(s.Replicas) - 1, Detail: s.detail()}
	for p := range s.Policies {
		var peak, work []float64
		for r := range s.Replicas {
			_, pt := b.Peak(0, r, p)
			peak = append(peak, pt.Throughput)
			work = append(work, pt.WorkRate)
		}
		h.Peak = append(h.Peak, peak)
		h.PeakWork = append(h.PeakWork, work)
		pt := b.Point(0, h.Detail, h.Largest, p)
		h.DetailThroughput = append(h.DetailThroughput, pt.Throughput)
		h.DetailPointRead = append(h.DetailPointRead, pt.Classes[b.Mix.Index(PointReadClass)].Mean())
	}
	for l := range s.Limits() {
		h.SELFvsSQF = append(h.SELFvsSQF, b.gainRange(l, BalanceSELF, BalanceSQF))
		h.SELFvsRR = append(h.SELFvsRR, b.gainRange(l, BalanceSELF, BalanceRR))
		h.SQFCount = append(h.SQFCount, b.gainCount(l, BalanceSELF, BalanceSQF))
		h.RRCount = append(h.RRCount, b.gainCount(l, BalanceSELF, BalanceRR))
	}
	return h
}

// gainRange is the least and the most of a's mean throughput over o's, less 1, over every
// load and cluster with a replica, under limit index l.
func (b *BalanceResults) gainRange(l int, a, o Balance) [2]float64 {
	pa, po := b.policy(a), b.policy(o)
	if pa < 0 || po < 0 {
		return [2]float64{}
	}
	out, first := [2]float64{}, true
	for c := range b.Setup.ClientsPerBackend {
		for r, n := range b.Setup.Replicas {
			if n == 0 {
				continue
			}
			g := b.Point(l, c, r, pa).Throughput/b.Point(l, c, r, po).Throughput - 1
			if first {
				out, first = [2]float64{g, g}, false
			}
			out[0], out[1] = min(out[0], g), max(out[1], g)
		}
	}
	return out
}

// gainCount counts the loads and clusters with a replica where a's mean throughput is more
// than TieBand over o's, more than TieBand under it, and within it, under limit index l.
func (b *BalanceResults) gainCount(l int, a, o Balance) [3]int {
	var out [3]int
	pa, po := b.policy(a), b.policy(o)
	if pa < 0 || po < 0 {
		return out
	}
	for c := range b.Setup.ClientsPerBackend {
		for r, n := range b.Setup.Replicas {
			if n == 0 {
				continue
			}
			switch g := b.Point(l, c, r, pa).Throughput/b.Point(l, c, r, po).Throughput - 1; {
			case g > TieBand:
				out[0]++
			case g < -TieBand:
				out[1]++
			default:
				out[2]++
			}
		}
	}
	return out
}

// limitName names limit index l for legends and headings.
func (b *BalanceResults) limitName(l int) string {
	if lim := b.Setup.Limits()[l]; lim > 0 {
		return fmt.Sprintf("limit %s", lim)
	}
	return "no limit"
}

// Charts returns the experiment's charts: peak throughput against replicas, throughput
// against load on the largest cluster, and the point read's response time against replicas.
func (b *BalanceResults) Charts() []Chart {
	s := b.Setup
	largest := len(s.Replicas) - 1
	peak := Chart{File: "peak-throughput.png", Chart: plot.Chart{
		Title: "Peak throughput over the loads, closed loop", X: "replicas", Y: "interactions/s", FromZero: true,
	}}
	load := Chart{File: "throughput.png", Chart: plot.Chart{
		Title: fmt.Sprintf("Throughput, primary + %d replicas", s.Replicas[largest]),
		X:     "closed-loop clients per database", Y: "interactions/s", FromZero: true,
	}}
	point := Chart{File: "point-read.png", Chart: plot.Chart{
		Title: fmt.Sprintf("Mean response time of %s, %d clients per database", PointReadClass, s.Detail),
		X:     "replicas", Y: "ms", LogY: true,
	}}
	pr := b.Mix.Index(PointReadClass)
	for l := range s.Limits() {
		for p, pol := range s.Policies {
			name := fmt.Sprintf("%s, %s", pol, b.limitName(l))
			pk := plot.Series{Name: name, Style: p + 1, Dashed: l > 0}
			pt := pk
			for r, n := range s.Replicas {
				_, best := b.Peak(l, r, p)
				pk.Points = append(pk.Points, [2]float64{float64(n), best.Throughput})
				d := b.Point(l, s.detail(), r, p)
				pt.Points = append(pt.Points, [2]float64{float64(n), msOf(d.Classes[pr].Mean())})
			}
			ld := plot.Series{Name: name, Style: p + 1, Dashed: l > 0}
			for c, n := range s.ClientsPerBackend {
				ld.Points = append(ld.Points, [2]float64{float64(n), b.Point(l, c, largest, p).Throughput})
			}
			peak.Series = append(peak.Series, pk)
			load.Series = append(load.Series, ld)
			point.Series = append(point.Series, pt)
		}
	}
	return []Chart{peak, load, point}
}

// WriteCharts writes the charts as PNG files into dir.
func (b *BalanceResults) WriteCharts(dir string) error {
	for _, c := range b.Charts() {
		if err := plot.Lines(filepath.Join(dir, c.File), c.Chart); err != nil {
			return err
		}
	}
	return nil
}

// WriteMarkdown writes the report: headlines, the model, and per limit the peak
// throughput, the detailed load and the response time of every class.
func (b *BalanceResults) WriteMarkdown(w io.Writer, m Meta) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	s := b.Setup

	p("# Simulator: balancing reads across replicas\n\n")
	p("`bench/sim` runs closed-loop clients of the TPC-W shopping mix against a primary and 0 to %d\n", slices.Max(s.Replicas))
	p("replicas, each a model database, and routes every read by one of four balance policies (Amza,\n")
	p("Cox and Zwaenepoel, *Conflict-aware scheduling for dynamic content applications*, section 5).\n")
	p("Generated by the command below; do not edit by hand.\n\n")
	p("- Command: `%s`\n", m.Command)
	p("- Machine: %s; %s\n", m.Machine, m.GoVersion)
	p("- Wall time: %s for %d simulations\n", m.Elapsed.Round(100*time.Millisecond), b.runs())
	p("- Seed: %d; %d seed(s) per point, pooled\n\n", b.Seed, s.seeds())

	b.writeHeadlines(p)
	b.writeModel(p)
	for l := range s.Limits() {
		b.writeLimit(p, l)
	}
	b.writeNotes(p)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// runs counts the simulations.
func (b *BalanceResults) runs() int {
	s := b.Setup
	return len(s.Limits()) * len(s.ClientsPerBackend) * len(s.Replicas) * len(s.Policies) * s.seeds()
}

func sumOf(n [3]int) int { return n[0] + n[1] + n[2] }

func pct(v float64) string { return fmt.Sprintf("%+.1f%%", 100*v) }

func (b *BalanceResults) writeHeadlines(p func(string, ...any)) {
	s, h := b.Setup, b.Headlines()
	l := h.Largest
	p("## Headlines\n\n")
	p("Peak throughput is the highest mean over the loads of %s closed-loop clients per\n", joinInts(s.ClientsPerBackend))
	p("database, as the paper reports the peak of a client sweep; no per-backend limit unless said.\n\n")
	p("- **Throughput scales with replicas.** Peak interactions/s (estimated work/s) by replicas:\n")
	for pi, pol := range s.Policies {
		p("  %s", pol)
		for r, n := range s.Replicas {
			p(" %d: %.1f (%.2f)", n, h.Peak[pi][r], h.PeakWork[pi][r])
			if r < len(s.Replicas)-1 {
				p(",")
			}
		}
		p("; %.2fx from %d to %d replicas", h.Peak[pi][l]/h.Peak[pi][0], s.Replicas[0], s.Replicas[l])
		if s.Replicas[0] == 0 {
			p(" (%d databases: %.2fx per database)", 1+s.Replicas[l], h.Peak[pi][l]/h.Peak[pi][0]/float64(1+s.Replicas[l]))
		}
		p(".\n")
	}
	self, sqf, rr := b.policy(BalanceSELF), b.policy(BalanceSQF), b.policy(BalanceRR)
	if self < 0 || sqf < 0 || rr < 0 {
		p("\n")
		return
	}
	p("- **SELF against SQF and RR.** Of the %d points (load, cluster with a replica) without the\n", sumOf(h.SQFCount[0]))
	p("  limit, self's throughput is more than %.0f%% ahead of / behind / within %.0f%% of sqf's at\n", 100*TieBand, 100*TieBand)
	p("  %d / %d / %d and of rr's at %d / %d / %d.\n", h.SQFCount[0][0], h.SQFCount[0][1], h.SQFCount[0][2], h.RRCount[0][0], h.RRCount[0][1], h.RRCount[0][2])
	p("  Peak on %d replicas: self %.1f, sqf %.1f (self %s),\n", s.Replicas[l], h.Peak[self][l], h.Peak[sqf][l], pct(h.Peak[self][l]/h.Peak[sqf][l]-1))
	p("  rr %.1f (self %s). Over every load and cluster with a replica, self's throughput\n", h.Peak[rr][l], pct(h.Peak[self][l]/h.Peak[rr][l]-1))
	for li := range s.Limits() {
		p("  against sqf's ranges from %s to %s and against rr's from %s to %s (%s)", pct(h.SELFvsSQF[li][0]), pct(h.SELFvsSQF[li][1]),
			pct(h.SELFvsRR[li][0]), pct(h.SELFvsRR[li][1]), b.limitName(li))
		if li < len(s.Limits())-1 {
			p(";\n")
		}
	}
	p(".\n  At %d clients per database on %d replicas: ", s.Detail, s.Replicas[l])
	for pi, pol := range s.Policies {
		sep := ", "
		if pi == len(s.Policies)-1 {
			sep = ".\n"
		}
		p("%s %.1f/s with %s at %s%s", pol, h.DetailThroughput[pi], PointReadClass, fmtMS(h.DetailPointRead[pi]), sep)
	}
	p("\n")
}

func (b *BalanceResults) writeModel(p func(string, ...any)) {
	s := b.Setup
	reads := "the replicas and the primary"
	if !s.PrimaryReads {
		reads = "the replicas only (the primary too when there is none)"
	}
	p("## The model\n\n")
	p("- **Backends**: a primary and R replicas, each the database of `make sim`: processor sharing\n")
	p("  over K=%d cores, thrashing past %d running requests (penalty %g). Database speed %.1f\n", s.Database.Cores, s.Database.Knee, s.Database.Penalty, float64(s.Database.Cores)/b.Mix.MeanDemand().Seconds())
	p("  interactions/s of the mix each.\n")
	p("- **Writes**: %s run whole on the primary; when the primary has answered one,\n", strings.Join(s.Writes, ", "))
	p("  every replica applies it at %g of its demand (replication work the proxy neither sends nor\n", s.ApplyShare)
	p("  counts). Replication is asynchronous; the model has no consistency, conflicts or caches.\n")
	p("- **Reads** run on %s, by policy:\n", reads)
	p("  - `self`: the least estimated work outstanding (sent, not yet answered). The estimate of a\n")
	p("    request is its class's true mean demand (the simulator has no learning estimator; the\n")
	p("    admission experiments charge the same number), as SELF's a-priori measured times;\n")
	p("  - `lard`: each class sticks to a backend, first the least loaded, and moves to the least\n")
	p("    loaded when its backend has over %s of estimated work outstanding while another has\n", s.LARDHigh)
	p("    under %s, or over %s in any case (LARD's 2 x high);\n", s.LARDLow, 2*s.LARDHigh)
	p("  - `sqf`: the fewest requests outstanding;\n")
	p("  - `rr`: each backend in turn.\n")
	p("  Ties go to the backends in turn.\n")
	p("- **Workload**: the TPC-W shopping mix of `make sim` (Table 1 No Load means, lognormal\n")
	p("  sigma %g): costs from %s (Search Request) to %s (Admin Response), %s on average. Clients\n", s.Sigma,
		fmtMS(b.Mix.Mean(b.Mix.Index("Search Request"))), fmtMS(b.Mix.Mean(b.Mix.Index("Admin Response"))), fmtMS(b.Mix.MeanDemand()))
	p("  think %s on average (capped at %s); %s of them per database, one load each. Runs last\n", s.Think, s.ThinkMax, joinInts(s.ClientsPerBackend))
	p("  %s after a", s.Duration)
	p(" %s warm-up. No admission controller.\n", s.Warmup)
	if s.Limit > 0 {
		p("- **Per-backend limit** (second part): while the estimated work running at a backend is %s or\n", s.Limit)
		p("  more, requests sent to it wait first come first served in front of it, as the paper's\n")
		p("  database proxies hold queries. %s is the admission experiments' capacity: a limit under the\n", s.Limit)
		p("  heaviest classes' cost (the paper's 1 s is under Best Seller's %s here) runs them alone\n", fmtMS(b.Mix.Mean(b.Mix.Index(HeavyClass))))
		p("  on two cores, as the capacity sweep of `bench/results/sim` shows.\n")
	}
	p("\n")
}

// writeLimit writes the tables of limit index l.
func (b *BalanceResults) writeLimit(p func(string, ...any), l int) {
	s := b.Setup
	if lim := s.Limits()[l]; lim > 0 {
		p("## With a per-backend limit of %s\n\n", lim)
	} else {
		p("## Without a per-backend limit\n\n")
	}
	p("### Peak throughput\n\n")
	if l == 0 {
		p("![peak throughput](peak-throughput.png)\n\n")
	}
	p("Interactions/s at the peak over the loads (clients per database there), estimated work/s,\n")
	p("and the speed-up over %d replicas.\n\n", s.Replicas[0])
	p("| replicas |")
	for _, pol := range s.Policies {
		p(" %s |", pol)
	}
	p("\n|---:|")
	for range s.Policies {
		p("---|")
	}
	p("\n")
	for r, n := range s.Replicas {
		p("| %d |", n)
		for pi := range s.Policies {
			c, pt := b.Peak(l, r, pi)
			_, base := b.Peak(l, 0, pi)
			p(" %.1f (%d), %.2f s/s, %.2fx |", pt.Throughput, s.ClientsPerBackend[c], pt.WorkRate, pt.Throughput/base.Throughput)
		}
		p("\n")
	}
	edge := false
	for r := range s.Replicas {
		for pi := range s.Policies {
			if c, _ := b.Peak(l, r, pi); c == len(s.ClientsPerBackend)-1 {
				edge = true
			}
		}
	}
	if edge {
		p("\nA peak at the largest load, %d clients per database, may lie beyond the sweep.\n", s.ClientsPerBackend[len(s.ClientsPerBackend)-1])
	}
	p("\n### Throughput against load\n\n")
	if l == 0 {
		p("![throughput](throughput.png)\n\n")
	}
	p("Interactions/s (mean over the seeds).\n\n| replicas | clients per database |")
	for _, pol := range s.Policies {
		p(" %s |", pol)
	}
	p("\n|---:|---:|")
	for range s.Policies {
		p("---:|")
	}
	p("\n")
	for r, n := range s.Replicas {
		for c, k := range s.ClientsPerBackend {
			p("| %d | %d |", n, k)
			for pi := range s.Policies {
				p(" %.1f |", b.Point(l, c, r, pi).Throughput)
			}
			p("\n")
		}
	}
	b.writeDetail(p, l)
	b.writeClasses(p, l)
}

// writeDetail writes the detailed load's table of limit index l.
func (b *BalanceResults) writeDetail(p func(string, ...any), l int) {
	s := b.Setup
	c := s.detail()
	p("\n### At %d clients per database\n\n", s.Detail)
	if l == 0 {
		p("![point read](point-read.png)\n\n")
	}
	p("Throughput (range over the seeds), estimated work/s, response time mean / p95 over all\n")
	p("interactions and for a cheap point read, a medium and a heavy class; the primary's share of\n")
	p("the reads; the most requests running on one database.\n\n")
	classes := []string{PointReadClass, ShortClass, HeavyClass}
	p("| replicas | policy | interactions/s | work/s | all |")
	for _, name := range classes {
		p(" %s (%s) |", name, fmtMS(b.Mix.Mean(b.Mix.Index(name))))
	}
	p(" reads on primary | most running |\n|---:|---|---:|---:|---:|")
	for range classes {
		p("---:|")
	}
	p("---:|---:|\n")
	for r, n := range s.Replicas {
		for pi, pol := range s.Policies {
			pt := b.Point(l, c, r, pi)
			p("| %d | %s | %.1f (%.1f-%.1f) | %.2f | %s |", n, pol, pt.Throughput, pt.MinThroughput, pt.MaxThroughput, pt.WorkRate, meanP95(&pt.All))
			for _, name := range classes {
				p(" %s |", meanP95(&pt.Classes[b.Mix.Index(name)]))
			}
			reads, most := 0, 0
			for _, bc := range pt.Backends {
				reads += bc.Reads
				most = max(most, bc.MaxRunning)
			}
			p(" %.0f%% | %d |\n", 100*ratio(pt.Backends[0].Reads, reads), most)
		}
	}
}

// writeClasses writes every class's response time at the detailed load, a table per
// cluster size.
func (b *BalanceResults) writeClasses(p func(string, ...any), l int) {
	s := b.Setup
	c := s.detail()
	p("\n### Per class at %d clients per database\n\n", s.Detail)
	p("Mean / p95 response time. Writes (%s) run on the primary whatever the policy.\n", strings.Join(s.Writes, ", "))
	for r, n := range s.Replicas {
		p("\n#### %d replicas\n\n| class | cost | share |", n)
		for _, pol := range s.Policies {
			p(" %s |", pol)
		}
		p("\n|---|---:|---:|")
		for range s.Policies {
			p("---:|")
		}
		p("\n")
		pts := make([]BalancePoint, len(s.Policies))
		for pi := range s.Policies {
			pts[pi] = b.Point(l, c, r, pi)
		}
		for ci, cl := range b.Mix.Classes() {
			if b.Mix.Mean(ci) == 0 {
				continue
			}
			p("| %s | %s | %g%% |", cl.Name, fmtMS(b.Mix.Mean(ci)), cl.Frequency)
			for pi := range s.Policies {
				p(" %s |", meanP95(&pts[pi].Classes[ci]))
			}
			p("\n")
		}
	}
	p("\n")
}

// writeNotes explains what the runs show.
func (b *BalanceResults) writeNotes(p func(string, ...any)) {
	s := b.Setup
	rr, self, sqf := b.policy(BalanceRR), b.policy(BalanceSELF), b.policy(BalanceSQF)
	largest, c := len(s.Replicas)-1, s.detail()
	p("## What the runs show\n\n")
	if rr >= 0 && self >= 0 {
		last := len(s.ClientsPerBackend) - 1
		ptRR, ptSelf := b.Point(0, last, largest, rr), b.Point(0, last, largest, self)
		mostRR, mostSelf := 0, 0
		for i := range ptRR.Backends {
			mostRR = max(mostRR, ptRR.Backends[i].MaxRunning)
			mostSelf = max(mostSelf, ptSelf.Backends[i].MaxRunning)
		}
		p("- **RR is unstable near saturation.** It sends every backend the same share of reads\n")
		p("  whatever its load, so a backend that falls behind (a run of heavy requests, or the\n")
		p("  primary's writes) gets no relief, passes the thrashing knee and slows down further, while\n")
		p("  closed-loop clients pile up on it. At %d clients per database on %d replicas the most\n", s.ClientsPerBackend[last], s.Replicas[largest])
		p("  requests running on one database were %d under rr against %d under self. A load-aware\n", mostRR, mostSelf)
		p("  policy keeps it in hand; the per-backend limit stops the thrashing, but rr still queues\n")
		p("  more in front of the busiest backend.\n")
	}
	if self >= 0 && sqf >= 0 {
		heavy, point := b.Mix.Index(HeavyClass), b.Mix.Index(PointReadClass)
		p("- **SELF against SQF, class by class.** At %d clients per database, mean\n", s.Detail)
		p("  response time self against sqf, by replicas:")
		sep := ""
		for r, n := range s.Replicas {
			if n == 0 {
				continue
			}
			a, o := b.Point(0, c, r, self), b.Point(0, c, r, sqf)
			p("%s %d: %s %s against %s, %s %s against %s", sep, n, HeavyClass, fmtMS(a.Classes[heavy].Mean()), fmtMS(o.Classes[heavy].Mean()),
				PointReadClass, fmtMS(a.Classes[point].Mean()), fmtMS(o.Classes[point].Mean()))
			sep = ";"
		}
		p(".\n  SELF counts the primary's heavy writes (Admin Response) and a backend's heavy reads at\n")
		p("  their cost and steers work away from them; SQF counts requests, and the model's databases\n")
		p("  share their processors among the running requests, so a request's speed depends on how\n")
		p("  many run beside it, which is what SQF balances, and thrashing too grows with that count.\n")
		p("  The paper's case for SELF is requests queued behind long ones in order; the model's\n")
		p("  databases run everything at once, and a synchronous write waiting for the slowest replica\n")
		p("  is not modelled. Compare differences with the range over the seeds in the tables.\n")
	}
	p("- **LARD gains nothing from locality here**, because the model has no cache: sticking a class\n")
	p("  to a backend can only cost balance. The paper found the same with memory-resident data.\n")
	if s.Replicas[largest] > 0 {
		pt := b.Point(0, c, largest, max(self, 0))
		var work, apply time.Duration
		for _, bc := range pt.Backends[1:] {
			work += bc.Work
			apply += bc.ApplyWork
		}
		p("- **Writes do not scale.** The primary runs every write whole and each replica applies %g of\n", s.ApplyShare)
		p("  it, so every replica added applies all the writes again. Writes are %.1f%% of the mix's\n", 100*b.writeShare())
		p("  estimated work (Admin Response most of it), so here that costs little: at %d clients per\n", s.Detail)
		p("  database on %d replicas, applying writes was %.1f%% of the replicas' estimated work.\n",
			s.Replicas[largest], 100*ratioF(apply.Seconds(), (work+apply).Seconds()))
	}
}

// meanP95 prints a latency's mean and p95.
func meanP95(l *Latency) string {
	if l.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%s / %s", fmtMS(l.Mean()), fmtMS(l.Quantile(0.95)))
}

// writeShare is the share of the mix's work that is in writing classes.
func (b *BalanceResults) writeShare() float64 {
	total, writes := 0.0, 0.0
	for i, c := range b.Mix.Classes() {
		w := c.Frequency * b.Mix.Mean(i).Seconds()
		total += w
		if slices.Contains(b.Setup.Writes, c.Name) {
			writes += w
		}
	}
	return ratioF(writes, total)
}

func ratioF(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}
