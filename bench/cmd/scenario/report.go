package main

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatekeeperdb/gatekeeper/bench/plot"
	"github.com/gatekeeperdb/gatekeeper/internal/bookstore"
)

// runResult is one measured run.
type runResult struct {
	Mode    string
	Loop    string // closed or open
	Clients int
	Rate    float64
	// Round numbers the repeats of a cell from 1; 0 marks a median of repeats.
	Round  int
	Result *bookstore.Result
	// ExecMS is the cost the proxy charged per interaction of each class (the backend busy
	// time, or under backend_cpus the processor share); -1 when unknown (direct).
	ExecMS map[string]float64
	// CPU is where the machine's processor time went in the measured period.
	CPU cpuUse
	// Capacity is an adaptive capacity's trace, a sample a second (nil for other modes).
	Capacity []capacitySample
}

// splitNames names the two parts of a response the proxy tells apart: what it charged, and
// the rest.
func (o options) splitNames() (charged, rest string) {
	if o.backendCPUs != 0 { // -1: the default, the database's processors
		return "cost", "rest"
	}
	return "execution", "wait"
}

// heavy reports whether the class is one of the heavy interactions.
func heavy(name string) bool {
	i, err := bookstore.ParseInteraction(name)
	return err == nil && i.Heavy()
}

// meanOf is the mean response time of the completed interactions of the classes keep
// selects, weighted by their counts, in milliseconds; -1 without any.
func meanOf(r *bookstore.Result, keep func(name string) bool) float64 {
	var sum float64
	var n int
	for _, c := range r.Classes {
		if keep(c.Name) && c.Completed > 0 {
			sum += ms(c.Mean) * float64(c.Completed)
			n += c.Completed
		}
	}
	if n == 0 {
		return -1
	}
	return sum / float64(n)
}

func shortMean(r *bookstore.Result) float64 {
	return meanOf(r, func(n string) bool { return !heavy(n) })
}

func heavyMean(r *bookstore.Result) float64 { return meanOf(r, heavy) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// lost counts the interactions that did not complete.
func lost(c bookstore.ClassResult) int { return c.Failed + c.Refused + c.TimedOut }

func (r runResult) summary() string {
	t := r.Result.Total
	s := fmt.Sprintf("%7.1f/s  mean %8.1f ms  p95 %8.1f ms  short %8.1f ms  heavy %8.1f ms  failed %d refused %d timed out %d",
		t.Throughput, ms(t.Mean), ms(t.P95), shortMean(r.Result), heavyMean(r.Result), t.Failed, t.Refused, t.TimedOut)
	if e := errorRows([]runResult{r}, 1); len(e) > 0 {
		s += fmt.Sprintf("; most often (%d, %s): %s", e[0].Count, e[0].Class, e[0].Message)
	}
	return s
}

// unsettled is the X(R+Z)/N above which a closed-loop run had not settled.
const unsettled = 1.05

// littleRatio is X(R+Z)/N of a closed-loop run: its throughput times the mean response of
// its completed interactions plus the mean think time, over its clients; 0 when unknown.
func littleRatio(r runResult, think time.Duration) float64 {
	if r.Clients <= 0 {
		return 0
	}
	t := r.Result.Total
	return t.Throughput * (t.Mean + think).Seconds() / float64(r.Clients)
}

// held is where a closed-loop run's clients were on average, by Little's law applied to each
// part: thinking (every interaction, completed or not, follows a think time), in completed
// short and heavy interactions, and the rest of the client count: in interactions that did not
// complete, or, when the run had not settled, negative.
type held struct{ thinking, short, heavy, rest float64 }

func clientsHeld(r runResult, think, elapsed time.Duration) held {
	var h held
	var started float64
	for _, c := range r.Result.Classes {
		inside := c.Throughput * c.Mean.Seconds()
		if heavy(c.Name) {
			h.heavy += inside
		} else {
			h.short += inside
		}
		started += c.Throughput + float64(lost(c))/elapsed.Seconds()
	}
	h.thinking = started * think.Seconds()
	h.rest = float64(r.Clients) - h.thinking - h.short - h.heavy
	return h
}

// peakOf is the closed-loop run of mode with the highest throughput.
func peakOf(runs []runResult, mode string) runResult {
	var best runResult
	for _, r := range runs {
		if r.Mode == mode && r.Loop == "closed" && (best.Result == nil || r.Result.Total.Throughput > best.Result.Total.Throughput) {
			best = r
		}
	}
	return best
}

func find(runs []runResult, mode, loop string, clients int) *runResult {
	for i, r := range runs {
		if r.Mode == mode && r.Loop == loop && (loop == "open" || r.Clients == clients) {
			return &runs[i]
		}
	}
	return nil
}

// environment describes where and how the results were made.
type environment struct {
	Date, Commit, CPU, DB, Go, Kernel string
	CPUs                              int
	Elapsed                           time.Duration
	// DBPID is the database server's process when it runs on this machine (0: not).
	DBPID int
	// DBCPUs and OwnCPUs are the processors the database server and this program (with
	// the proxies it starts) may run on, as Linux lists them ("0-1"); empty when unknown.
	DBCPUs, OwnCPUs string
}

func machine(ctx context.Context, o options) (environment, error) {
	e := environment{Date: time.Now().UTC().Format("2006-01-02"), CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		e.Commit = strings.TrimSpace(string(out))
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		e.CPU, e.CPUs = parseCPUInfo(string(data), e.CPUs)
	}
	e.OwnCPUs = cpusAllowed(os.Getpid())
	if out, err := exec.Command("uname", "-r").Output(); err == nil {
		e.Kernel = strings.TrimSpace(string(out))
	}
	db, err := sql.Open("mysql", o.dsn(o.primary))
	if err != nil {
		return e, err
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&e.DB); err != nil {
		return e, fmt.Errorf("cannot reach the bookstore database at %s: %w", o.primary, err)
	}
	e.DBPID, err = serverPID(ctx, db)
	if e.DBPID > 0 {
		e.DBCPUs = cpusAllowed(e.DBPID)
	}
	return e, err
}

// parseCPUInfo returns the model name of the first processor in /proc/cpuinfo and the
// number of processors it lists (n when it lists none): the machine's, where
// runtime.NumCPU counts only those this program may run on.
func parseCPUInfo(cpuinfo string, n int) (model string, cpus int) {
	for line := range strings.SplitSeq(cpuinfo, "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "model name":
			if model == "" {
				model = strings.TrimSpace(value)
			}
		case "processor":
			cpus++
		}
	}
	if cpus == 0 {
		cpus = n
	}
	return model, cpus
}

// placement says which processors the database and the clients with the proxy ran on.
func (e environment) placement() string {
	if e.DBCPUs == "" || e.OwnCPUs == "" || e.DBCPUs == e.OwnCPUs {
		return "Database, clients and proxy share the machine."
	}
	return fmt.Sprintf("The database ran on CPUs %s; the load generator and the proxy on CPUs %s (taskset).", e.DBCPUs, e.OwnCPUs)
}

func writeResults(o options, env environment, runs []runResult) error {
	if err := writeCSV(filepath.Join(o.out, "results.csv"), runs); err != nil {
		return err
	}
	if err := writeErrorsCSV(filepath.Join(o.out, "errors.csv"), runs); err != nil {
		return err
	}
	if slices.ContainsFunc(runs, func(r runResult) bool { return r.Capacity != nil }) {
		if err := writeCapacityCSV(filepath.Join(o.out, "capacity.csv"), runs); err != nil {
			return err
		}
	}
	if err := writePlots(o, medians(runs)); err != nil {
		return err
	}
	if _, err := writeCapacityPlots(o, runs); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(o.out, "README.md"))
	if err != nil {
		return err
	}
	defer f.Close()
	writeReport(f, o, env, runs)
	return f.Close()
}

func writeCSV(path string, runs []runResult) error {
	records := [][]string{{"mode", "loop", "clients", "rate", "class", "completed", "failed", "refused", "timed_out", "good",
		"throughput", "goodput", "mean_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms", "exec_ms", "round",
		"db_cpu", "proxy_cpu", "generator_cpu", "idle_cpu"}}
	f2 := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, r := range runs {
		rows := append(slices.Clone(r.Result.Classes), r.Result.Total)
		for _, c := range rows {
			exec, ok := r.ExecMS[c.Name]
			if !ok {
				exec = -1
			}
			records = append(records, []string{r.Mode, r.Loop, strconv.Itoa(r.Clients), f2(r.Rate), c.Name,
				strconv.Itoa(c.Completed), strconv.Itoa(c.Failed), strconv.Itoa(c.Refused), strconv.Itoa(c.TimedOut), strconv.Itoa(c.Good),
				f2(c.Throughput), f2(c.Goodput), f2(ms(c.Mean)), f2(ms(c.P50)), f2(ms(c.P95)), f2(ms(c.P99)), f2(ms(c.Max)), f2(exec), strconv.Itoa(r.Round),
				f2(r.CPU.DB), f2(r.CPU.Proxy), f2(r.CPU.Generator), f2(r.CPU.Idle)})
		}
	}
	return writeCSVFile(path, records)
}

// writeCSVFile writes records to a new file at path.
func writeCSVFile(path string, records [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := csv.NewWriter(f).WriteAll(records); err != nil {
		return err
	}
	return f.Close()
}

// Interactions drawn in the per-class charts: a short one and a heavy one.
const (
	shortClass = "home"
	heavyClass = "best_sellers"
)

func classOf(r *bookstore.Result, name string) (bookstore.ClassResult, bool) {
	for _, c := range r.Classes {
		if c.Name == name {
			return c, true
		}
	}
	return bookstore.ClassResult{}, false
}

func writePlots(o options, runs []runResult) error {
	if !slices.ContainsFunc(runs, func(r runResult) bool { return r.Loop == "closed" }) {
		return nil // every plot is over the closed loop's client counts
	}
	type metric struct {
		file, title, y string
		log            bool
		value          func(r runResult) float64
	}
	metrics := []metric{
		{"throughput.png", "Throughput of completed interactions", "interactions/s", false, func(r runResult) float64 { return r.Result.Total.Throughput }},
		{"mean.png", "Mean response time, all interactions", "ms", true, func(r runResult) float64 { return ms(r.Result.Total.Mean) }},
		{"p95.png", "95th percentile response time, all interactions", "ms", true, func(r runResult) float64 { return ms(r.Result.Total.P95) }},
		{"short.png", "Mean response time, all but Best Sellers and Admin Confirm", "ms", true, func(r runResult) float64 { return shortMean(r.Result) }},
		{"class-" + shortClass + ".png", "Mean response time of " + shortClass, "ms", true, func(r runResult) float64 {
			c, _ := classOf(r.Result, shortClass)
			return ms(c.Mean)
		}},
		{"class-" + heavyClass + ".png", "Mean response time of " + heavyClass, "ms", true, func(r runResult) float64 {
			c, _ := classOf(r.Result, heavyClass)
			return ms(c.Mean)
		}},
	}
	for _, cls := range []string{shortClass, heavyClass} {
		// The paper's Figures 11-13: where the time of an interaction goes, per mode.
		execName, waitName := o.splitNames()
		chart := plot.Chart{Title: cls + ": " + execName + " (dashed) and " + waitName + " (solid), mean per interaction",
			X: "closed-loop clients", Y: "ms", LogY: true}
		for i, mode := range o.modes {
			if !mode.Proxy {
				continue
			}
			wait, exec := plot.Series{Name: mode.Name + " " + waitName, Style: i + 1}, plot.Series{Name: mode.Name + " " + execName, Style: i + 1, Dashed: true}
			for _, r := range runs {
				e, ok := r.ExecMS[cls]
				c, found := classOf(r.Result, cls)
				if r.Mode != mode.Name || r.Loop != "closed" || !ok || e < 0 || !found {
					continue
				}
				exec.Points = append(exec.Points, [2]float64{float64(r.Clients), e})
				wait.Points = append(wait.Points, [2]float64{float64(r.Clients), ms(c.Mean) - e})
			}
			chart.Series = append(chart.Series, wait, exec)
		}
		if err := plot.Lines(filepath.Join(o.out, "split-"+cls+".png"), chart); err != nil {
			return err
		}
	}
	for _, m := range metrics {
		chart := plot.Chart{Title: m.title, X: "closed-loop clients", Y: m.y, LogY: m.log}
		for _, mode := range o.modes {
			s := plot.Series{Name: mode.Name}
			for _, r := range runs {
				if r.Mode == mode.Name && r.Loop == "closed" {
					if v := m.value(r); v > 0 || !m.log {
						s.Points = append(s.Points, [2]float64{float64(r.Clients), v})
					}
				}
			}
			chart.Series = append(chart.Series, s)
		}
		if err := plot.Lines(filepath.Join(o.out, m.file), chart); err != nil {
			return err
		}
	}
	return nil
}

// capacities names the admission capacity: the common one, or each admission mode's, a
// calibrated one marked *.
func capacities(o options) string {
	if !slices.ContainsFunc(o.modes, func(m mode) bool { return m.Capacity > 0 || m.Auto }) {
		return fmt.Sprintf("capacity %s", o.capacity)
	}
	var each []string
	for _, m := range o.modes {
		switch {
		case !m.Admission:
		case m.Calibrated:
			each = append(each, fmt.Sprintf("%s %s*", prose(m.Name), m.Capacity))
		case m.Capacity > 0 || m.Auto:
			each = append(each, prose(m.Name)) // fifo@360ms and sjf@auto name their own
		default:
			each = append(each, fmt.Sprintf("%s %s", prose(m.Name), o.capacity))
		}
	}
	return "capacity " + strings.Join(each, ", ")
}

// calibrated links the calibration curves of the modes whose capacity calibrate chose.
func calibrated(modes []mode) string {
	var links []string
	for _, m := range modes {
		if m.Calibrated {
			links = append(links, fmt.Sprintf("[%s](calibrate-%s.txt)", prose(m.Name), m.Name))
		}
	}
	return strings.Join(links, ", ")
}

func writeReport(w io.Writer, o options, env environment, all []runResult) {
	runs := medians(all)
	fmt.Fprintf(w, "# Bookstore: direct, passthrough and admission modes\n\n")
	fmt.Fprintf(w, "The TPC-W-like bookstore (`internal/bookstore`, %s mix, %d items, %d customers) against MariaDB\n", o.mix, o.scale.Items, o.scale.Customers)
	fmt.Fprintf(w, "directly and through gatekeeper. Closed loop: each client a session with exponential think time\n")
	switch {
	case o.openRate > 0:
		fmt.Fprintf(w, "of mean %s. Open loop: Poisson arrivals at %.1f/s, at most %d outstanding.\n", o.think, o.openRate, o.openMax)
	case o.openFactor <= 0:
		fmt.Fprintf(w, "of mean %s. No open loop (`--open 0`).\n", o.think)
	default:
		fmt.Fprintf(w, "of mean %s. Open loop: Poisson arrivals at %.2f of fifo's highest closed-loop throughput (the database's\ncapacity for the mix under admission; direct's without a fifo run), at most %d outstanding.\n", o.think, o.openFactor, o.openMax)
	}
	fresh := ""
	if o.reload {
		fresh = "the bookstore loaded afresh, "
	}
	proxy := "a fresh proxy"
	if slices.ContainsFunc(o.modes, func(m mode) bool { return m.proxies() > 1 }) {
		proxy = "fresh proxies"
	}
	fmt.Fprintf(w, "Each run: %s%s, %s of warm-up (not counted; the proxy learns the costs), then %s measured as the clients carry on.\n", fresh, proxy, o.warmup, o.duration)
	reserve := ""
	if r := o.reserve; r.Floor > 0 {
		reserve = fmt.Sprintf(", a reserve of %s for units expected to cost under %s (lengthy lane %d)", r.Floor, r.QuickCutoff, r.LengthyLane)
		if r.LaneRate > 0 {
			reserve += fmt.Sprintf(", the lane's starts paced at %g a second", r.LaneRate)
		}
		if r.QuickWaitTarget > 0 {
			reserve += fmt.Sprintf(", the lane's starts paced to hold the quick units' mean queue wait at %s", r.QuickWaitTarget)
		}
		if slices.ContainsFunc(o.modes, func(m mode) bool { return m.Admission && !m.Reserve }) {
			reserve += " in the modes marked +reserve"
		}
	}
	key, typed := cmp.Or(o.typeKey, "tag"), "and share its type"
	if key == "tag_digest" {
		typed = "and each autocommit statement is typed by the tag and its digest"
	}
	fmt.Fprintf(w, "Admission: %s%s, queue timeout %s, type key `%s` (each interaction's statements carry\n", capacities(o), reserve, o.queueTimeout, key)
	fmt.Fprintf(w, "`/* gk:type=NAME */` %s), estimator weight %g, backend_cpus %d. Client timeout %s. Every interaction that failed,\n", typed, o.weight, o.backendCPUs, o.timeout)
	fmt.Fprintf(w, "was refused or timed out is counted in its class (CSV: `results.csv`); response times are of the\n")
	fmt.Fprintf(w, "completed ones.\n\n")
	if n := rounds(all); n > 1 {
		fmt.Fprintf(w, "Every cell ran %d times, the modes in alternating order, one client count or the open loop at a\ntime. Each figure below is the median of its cell's runs, figure by figure; the short and heavy\nmeans are computed from the median class figures. `results.csv` has every run.\n\n", n)
	}
	fmt.Fprintf(w, "Command: `%s` (%s, gatekeeper %s), %s in all.\n\n", o.command, env.Date, env.Commit, env.Elapsed)
	if cal := calibrated(o.modes); cal != "" {
		fmt.Fprintf(w, "Each capacity marked * is what `gatekeeper calibrate --workload bookstore:%s --clients %d --step-duration %s` chose\n", o.mix, o.calibrate.Clients, o.calibrate.Step)
		fmt.Fprintf(w, "before the runs, under the mode's own discipline and aging (its curve: %s).\n\n", cal)
	}
	fmt.Fprintf(w, "Machine: %d CPUs (%s); Linux %s; %s; %s. %s\n\n", env.CPUs, env.CPU, env.Kernel, env.DB, env.Go, env.placement())

	writeVerdict(w, o, runs, all)
	writeFleets(w, o, runs, all)

	if len(o.clients) > 0 {
		writeClosedLoop(w, o, runs)
	}
	if slices.ContainsFunc(runs, func(r runResult) bool { return r.Loop == "open" }) {
		fmt.Fprintf(w, "## Open loop\n\n| mode | arrivals/s | interactions/s | mean ms | p95 ms | short mean ms | heavy mean ms | failed | refused | timed out |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, m := range o.modes {
			if r := find(runs, m.Name, "open", 0); r != nil {
				t := r.Result.Total
				fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %d | %d | %d |\n", m.Name, r.Rate, t.Throughput,
					ms(t.Mean), ms(t.P95), shortMean(r.Result), heavyMean(r.Result), t.Failed, t.Refused, t.TimedOut)
			}
		}
		fmt.Fprintln(w)
		writeOpenRounds(w, o, all)
	}
	writeCPU(w, runs)
	writeCapacityTrace(w, all)
	writeErrors(w, all)
	fmt.Fprintf(w, "## Every class\n\nMean response time in ms of the completed interactions, and after it, when any, the count that\ndid not complete (failed + refused + timed out).\n\n")
	for _, sel := range classTables(o, runs) {
		fmt.Fprintf(w, "### %s\n\n| class |", sel.title)
		for _, r := range sel.runs {
			fmt.Fprintf(w, " %s |", r.Mode)
		}
		fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---:|", len(sel.runs)))
		for i, cls := range sel.runs[0].Result.Classes {
			fmt.Fprintf(w, "| %s |", cls.Name)
			for _, r := range sel.runs {
				c := r.Result.Classes[i]
				if l := lost(c); l > 0 {
					fmt.Fprintf(w, " %.1f (%d of %d lost) |", ms(c.Mean), l, c.Completed+l)
				} else {
					fmt.Fprintf(w, " %.1f |", ms(c.Mean))
				}
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
}

// writeCPU tells where the machine's processors went in each cell's measured period, when
// the runs could read it.
func writeCPU(w io.Writer, runs []runResult) {
	if !slices.ContainsFunc(runs, func(r runResult) bool { return r.CPU.Idle >= 0 }) {
		return
	}
	fmt.Fprintf(w, "## Where the processors went\n\nShares of all the machine's processor time in the measured period (`/proc`): the database server\n")
	fmt.Fprintf(w, "(MariaDB, found by its pid file), the proxy, the load generator, and idle; the rest is the\n")
	fmt.Fprintf(w, "kernel's own threads and other processes. While the database server is the bottleneck and idle is\n")
	fmt.Fprintf(w, "near zero, what the proxy and the generator take comes out of the database's share.\n\n")
	fmt.Fprintf(w, "| mode | loop | clients or rate | database | proxy | generator | idle |\n|---|---|---:|---:|---:|---:|---:|\n")
	pct := func(v float64) string {
		if v < 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*v)
	}
	for _, r := range runs {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Mode, r.Loop, r.cell().load(), pct(r.CPU.DB), pct(r.CPU.Proxy), pct(r.CPU.Generator), pct(r.CPU.Idle))
	}
	fmt.Fprintln(w)
}

type classTable struct {
	title string
	runs  []runResult
}

// classTables are the per-class tables: the direct peak and twice it, and the open loop.
func classTables(o options, runs []runResult) []classTable {
	var out []classTable
	var counts []int
	if peak := peakOf(runs, "direct"); peak.Result != nil {
		counts = []int{peak.Clients, 2 * peak.Clients}
	}
	for _, n := range counts {
		t := classTable{title: fmt.Sprintf("Closed loop, %d clients", n)}
		for _, m := range o.modes {
			if r := find(runs, m.Name, "closed", n); r != nil {
				t.runs = append(t.runs, *r)
			}
		}
		if len(t.runs) > 0 {
			out = append(out, t)
		}
	}
	t := classTable{title: "Open loop"}
	for _, m := range o.modes {
		if r := find(runs, m.Name, "open", 0); r != nil {
			t.runs = append(t.runs, *r)
		}
	}
	if len(t.runs) > 0 {
		out = append(out, t)
	}
	return out
}

// writeVerdict checks the figures the admission work is judged by.
// runs are the medians, all every run.
func writeVerdict(w io.Writer, o options, runs, all []runResult) {
	peak := peakOf(runs, "direct")
	open := openVerdict(o, runs, all)
	if peak.Result == nil && open == "" {
		return
	}
	fmt.Fprintf(w, "## Summary\n\n")
	if peak.Result != nil {
		writeClosedVerdict(w, o, runs, all, peak)
	}
	fmt.Fprint(w, open)
}

// writeClosedVerdict compares the closed-loop cells at direct's peak and at twice its clients.
func writeClosedVerdict(w io.Writer, o options, runs, all []runResult, peak runResult) {
	fmt.Fprintf(w, "Direct throughput peaks at %d clients (%.1f interactions/s).", peak.Clients, peak.Result.Total.Throughput)
	if find(runs, "direct", "closed", 2*peak.Clients) == nil {
		fmt.Fprintf(w, " Twice that, %d clients, was not measured.", 2*peak.Clients)
	}
	fmt.Fprintf(w, "\n\n")
	fmt.Fprintf(w, "| clients | mode | throughput / direct peak | its runs | short mean: fifo / mode | short mean: direct / mode | heavy mean: mode / fifo |\n|---:|---|---:|---:|---:|---:|---:|\n")
	ratio := func(a, b float64) string {
		if a <= 0 || b <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	peakTP := peak.Result.Total.Throughput
	for _, n := range []int{peak.Clients, 2 * peak.Clients} {
		fifo, direct := find(runs, "fifo", "closed", n), find(runs, "direct", "closed", n)
		for _, m := range o.modes {
			r := find(runs, m.Name, "closed", n)
			if r == nil || !m.Admission {
				continue
			}
			var fs, ds, fh float64
			if fifo != nil {
				fs, fh = shortMean(fifo.Result), heavyMean(fifo.Result)
			}
			if direct != nil {
				ds = shortMean(direct.Result)
			}
			lo, hi, k := spread(all, r.cell(), func(x runResult) float64 { return x.Result.Total.Throughput / peakTP })
			runsOf := fmt.Sprintf("%.2f", lo)
			if k > 1 {
				runsOf = fmt.Sprintf("%.2f-%.2f", lo, hi)
			}
			fmt.Fprintf(w, "| %d | %s | %.2f | %s | %s | %s | %s |\n", n, m.Name, r.Result.Total.Throughput/peakTP, runsOf,
				ratio(fs, shortMean(r.Result)), ratio(ds, shortMean(r.Result)), ratio(heavyMean(r.Result), fh))
		}
	}
	fmt.Fprintln(w)
	for _, n := range []int{peak.Clients, 2 * peak.Clients} {
		if r := find(runs, "direct", "closed", n); r != nil && littleRatio(*r, o.think) > unsettled {
			fmt.Fprintf(w, "Direct at %d clients had not settled (X(R+Z)/N = %.2f, see below): its throughput reads high, and\nthe ratios against it are unfavourable to the other modes. A longer --warmup settles it.\n\n", n, littleRatio(*r, o.think))
		}
	}
}

// openVerdict is the open loop's line of the summary: each admission mode's mean response time
// against fifo's and direct's, of the medians runs and, when repeated, within each round of
// all; empty without an open-loop run.
func openVerdict(o options, runs, all []runResult) string {
	fifo, direct := find(runs, "fifo", "open", 0), find(runs, "direct", "open", 0)
	var each []string
	rate := 0.0
	for _, m := range o.modes {
		r := find(runs, m.Name, "open", 0)
		if r == nil || !m.Admission || m.Name == "fifo" {
			continue
		}
		rate = r.Rate
		each = append(each, fmt.Sprintf("fifo / %s = %s, direct / %s = %s", prose(m.Name), ratioOf(fifo, r), prose(m.Name), ratioOf(direct, r)))
	}
	if len(each) == 0 {
		return ""
	}
	line := fmt.Sprintf("Open loop at %.1f arrivals/s, mean response time: %s.", rate, strings.Join(each, "; "))
	if within := withinRounds(o, all); len(within) > 0 {
		line += fmt.Sprintf(" Taken within each round, whose modes saw the same arrivals, the medians are %s.", strings.Join(within, ", "))
	}
	return line + "\n\n"
}

// rounds is how many times each cell ran.
func rounds(runs []runResult) int {
	n := 1
	for _, r := range runs {
		n = max(n, r.Round)
	}
	return n
}

func ratioOf(a, b *runResult) string {
	if a == nil || b == nil || b.Result.Total.Mean == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(a.Result.Total.Mean)/float64(b.Result.Total.Mean))
}

// readCSV reads the runs back from a results.csv that writeCSV wrote.
func readCSV(path string) ([]runResult, []mode, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	// Files written before repeats had no round column (each cell ran once), and before
	// the processor accounting no CPU columns.
	if len(rows) < 2 || !slices.Contains([]int{18, 19, 23}, len(rows[0])) || rows[0][0] != "mode" {
		return nil, nil, fmt.Errorf("%s: not a results.csv of this program (its header starts mode,loop,clients)", path)
	}
	var runs []runResult
	var names []string
	for i, row := range rows[1:] {
		num := func(j int) float64 {
			v, perr := strconv.ParseFloat(row[j], 64)
			if perr != nil && err == nil {
				err = fmt.Errorf("%s line %d, column %s: %q is not a number", path, i+2, rows[0][j], row[j])
			}
			return v
		}
		dur := func(j int) time.Duration { return time.Duration(num(j) * float64(time.Millisecond)) }
		clients, rate, round, cpu := int(num(2)), num(3), 1, unknownCPU
		if len(row) > 18 {
			round = int(num(18))
		}
		if len(row) > 19 {
			cpu = cpuUse{DB: num(19), Proxy: num(20), Generator: num(21), Idle: num(22)}
		}
		n := len(runs) - 1
		if n < 0 || runs[n].cell() != (cell{row[0], row[1], clients, rate}) || runs[n].Round != round {
			runs = append(runs, runResult{Mode: row[0], Loop: row[1], Clients: clients, Rate: rate, Round: round,
				Result: &bookstore.Result{}, ExecMS: map[string]float64{}, CPU: cpu})
			n++
			if !slices.Contains(names, row[0]) {
				names = append(names, row[0])
			}
		}
		c := bookstore.ClassResult{Name: row[4], Completed: int(num(5)), Failed: int(num(6)), Refused: int(num(7)),
			TimedOut: int(num(8)), Good: int(num(9)), Throughput: num(10), Goodput: num(11),
			Mean: dur(12), P50: dur(13), P95: dur(14), P99: dur(15), Max: dur(16)}
		if c.Name == "total" {
			runs[n].Result.Total = c
			continue
		}
		runs[n].Result.Classes = append(runs[n].Result.Classes, c)
		runs[n].ExecMS[c.Name] = num(17)
	}
	if err != nil {
		return nil, nil, err
	}
	modes, err := parseModes(strings.Join(names, ","))
	return runs, modes, err
}

// writeClosedLoop is the report's closed-loop section: the figures per mode and client count,
// Little's law, where the clients were, and each split class.
func writeClosedLoop(w io.Writer, o options, runs []runResult) {
	// The plots are named, not embedded: only a few headline plots are committed, and make
	// plots draws the rest from results.csv (bench/results/.gitignore).
	fmt.Fprintf(w, "## Closed loop\n\n`make plots` draws the plots from `results.csv` beside this report: `throughput.png`, `mean.png`,\n")
	fmt.Fprintf(w, "`short.png`, `p95.png`, `class-%s.png`, `class-%s.png`, `split-%s.png` and\n`split-%s.png`.\n\n", shortClass, heavyClass, shortClass, heavyClass)
	fmt.Fprintf(w, "| mode | clients | interactions/s | goodput/s | mean ms | p95 ms | short mean ms | heavy mean ms | failed | refused | timed out | X(R+Z)/N |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range o.clients {
		for _, m := range o.modes {
			if r := find(runs, m.Name, "closed", n); r != nil {
				t := r.Result.Total
				fmt.Fprintf(w, "| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %d | %d | %d | %.2f |\n", m.Name, n, t.Throughput, t.Goodput,
					ms(t.Mean), ms(t.P95), shortMean(r.Result), heavyMean(r.Result), t.Failed, t.Refused, t.TimedOut, littleRatio(*r, o.think))
			}
		}
	}
	fmt.Fprint(w, `
X(R+Z)/N checks Little's law: in a settled closed loop every client is either thinking (mean Z) or
waiting for an interaction, so throughput X times R+Z is the client count N. Above 1, the run had
not settled yet: fewer clients were held in long interactions than will be in the long run, so
more were free for short ones and the throughput reads high. Below 1, clients spent time that
neither the mean nor the think time holds, such as interactions that did not complete (refused or
timed out).

The same law, class by class, says where the clients were on average: thinking, in completed short
or heavy interactions (each class's throughput times its mean response), and the rest, in
interactions that did not complete. Past saturation the database is kept busy whatever the order,
so the short interactions' mean is the clients they hold over their throughput: an admission mode
makes it lower only by holding more clients elsewhere, in the heavy interactions' queue.

`)
	fmt.Fprintf(w, "| mode | clients | thinking | in short | in heavy | rest |\n|---|---:|---:|---:|---:|---:|\n")
	for _, n := range o.clients {
		for _, m := range o.modes {
			if r := find(runs, m.Name, "closed", n); r != nil {
				h := clientsHeld(*r, o.think, o.duration)
				fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %.0f | %.0f |\n", m.Name, n, h.thinking, h.short, h.heavy, h.rest)
			}
		}
	}
	fmt.Fprintln(w)
	for _, cls := range []string{shortClass, heavyClass} {
		execName, waitName := o.splitNames()
		fmt.Fprintf(w, "### %s: response, %s and %s (ms)\n\n", cls, execName, waitName)
		if o.backendCPUs > 0 {
			fmt.Fprintf(w, "Cost is what the proxy charged per interaction: its share of the database's %d processors while it\nran (`estimator.backend_cpus`); the rest of the response is queueing in the proxy, the hops, and\nwaiting for a processor in the database. Direct has no proxy to measure it.\n\n", o.backendCPUs)
		} else {
			fmt.Fprintf(w, "Execution is the backend busy time per interaction the proxy measured; wait is response minus\nexecution (queueing in the proxy and the hops); direct has no proxy to measure it.\n\n")
		}
		fmt.Fprintf(w, "| mode | clients | completed | lost | response | %s | %s |\n|---|---:|---:|---:|---:|---:|---:|\n", execName, waitName)
		for _, n := range o.clients {
			for _, m := range o.modes {
				r := find(runs, m.Name, "closed", n)
				if r == nil {
					continue
				}
				c, _ := classOf(r.Result, cls)
				exec, wait := "-", "-"
				if e := r.ExecMS[cls]; e >= 0 {
					exec, wait = fmt.Sprintf("%.1f", e), fmt.Sprintf("%.1f", ms(c.Mean)-e)
				}
				fmt.Fprintf(w, "| %s | %d | %d | %d | %.1f | %s | %s |\n", m.Name, n, c.Completed, lost(c), ms(c.Mean), exec, wait)
			}
		}
		fmt.Fprintln(w)
	}
}
