package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// capacitySample is a proxy's adaptive capacity at one second of a run.
type capacitySample struct {
	At       time.Duration // since the run began, warm-up included
	Measured bool          // in the measured period
	// Proxy numbers the proxy of the run the sample is of, from 1 (a single proxy is 1).
	Proxy    int
	Capacity float64 // seconds
	// Stretch, Alone (seconds) and Decision are the last window's, as the proxy's
	// metrics give them.
	Stretch, Alone float64
	Decision       string
	// Phase is where the adaptive capacity stood: start, settle or probe.
	Phase string
	// Running and Load (seconds) are the units at the database and their estimated
	// costs, Queued the units waiting for capacity and Open the open transactions, at the
	// sample; MaxRunning is the most units the adaptive capacity lets run at once.
	Running, Queued, Open, MaxRunning int
	Load                              float64
	// Admitted counts the units the proxy admitted since it started; -1 when its metrics
	// do not say.
	Admitted float64
}

// traceCapacity samples the capacity that each proxy whose admin listener is in admins
// reports, all of them once a second from now until stop closes, and then sends the
// samples; measured holds when the measured period began (Unix nanoseconds; 0: not yet),
// and period is its length: the seconds after it, while the clients finish what they
// began, are not measured (the queue drains, and what is left of it is heavy units). A
// sample that cannot be read is left out: the trace shows where an adaptive capacity went,
// and a second missing from it loses nothing the report counts.
func traceCapacity(admins []string, measured *atomic.Int64, period time.Duration, stop <-chan struct{}) <-chan []capacitySample {
	out := make(chan []capacitySample, 1)
	go func() { // ends when stop closes
		var samples []capacitySample
		start := time.Now()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		got := make([]capacitySample, len(admins))
		ok := make([]bool, len(admins))
		for {
			select {
			case <-stop:
				out <- samples
				return
			case <-tick.C:
			}
			var wg sync.WaitGroup
			for i, admin := range admins {
				wg.Go(func() { got[i], ok[i] = scrape(admin) }) // ends within scrape's timeout
			}
			wg.Wait()
			from := measured.Load()
			at := time.Since(start).Round(time.Second)
			inPeriod := from > 0 && time.Since(time.Unix(0, from)) <= period
			for i, s := range got {
				if ok[i] {
					s.Proxy, s.At, s.Measured = i+1, at, inPeriod
					samples = append(samples, s)
				}
			}
		}
	}()
	return out
}

// scrape reads the adaptive capacity's figures from the proxy's metrics.
func scrape(admin string) (capacitySample, bool) {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + admin + "/metrics")
	if err != nil {
		return capacitySample{}, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return capacitySample{}, false
	}
	return sampleOf(string(b))
}

// sampleOf reads the adaptive capacity's figures out of metrics in the text format.
func sampleOf(metrics string) (capacitySample, bool) {
	var s capacitySample
	var ok bool
	s.Capacity, ok = metricOf(metrics, "gatekeeper_admission_capacity_seconds")
	s.Stretch, _ = metricOf(metrics, "gatekeeper_admission_capacity_stretch_ratio")
	s.Alone, _ = metricOf(metrics, "gatekeeper_admission_capacity_alone_seconds")
	s.Load, _ = metricOf(metrics, "gatekeeper_admission_load_seconds")
	if a, found := metricOf(metrics, "gatekeeper_admission_admitted_total"); found {
		s.Admitted = a
	} else {
		s.Admitted = -1
	}
	for name, v := range map[string]*int{"running": &s.Running, "queue_length": &s.Queued, "open_transactions": &s.Open, "capacity_max_running": &s.MaxRunning} {
		f, _ := metricOf(metrics, "gatekeeper_admission_"+name)
		*v = int(f)
	}
	for line := range strings.SplitSeq(metrics, "\n") {
		if d, found := strings.CutPrefix(line, `gatekeeper_admission_capacity_last_decision{decision="`); found && strings.HasSuffix(d, `"} 1`) {
			s.Decision = strings.TrimSuffix(d, `"} 1`)
		}
		if p, found := strings.CutPrefix(line, `gatekeeper_admission_capacity_phase{phase="`); found && strings.HasSuffix(p, `"} 1`) {
			s.Phase = strings.TrimSuffix(p, `"} 1`)
		}
	}
	return s, ok
}

// metricOf finds the unlabelled metric name in metrics in the text format.
func metricOf(metrics, name string) (float64, bool) {
	for line := range strings.SplitSeq(metrics, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// writeCapacityCSV writes the capacity traces of the runs that have one, a row a second.
func writeCapacityCSV(path string, runs []runResult) error {
	records := [][]string{capacityColumns}
	for _, r := range runs {
		for _, s := range r.Capacity {
			records = append(records, []string{r.Mode, r.Loop, strconv.Itoa(r.Clients), strconv.FormatFloat(r.Rate, 'f', 3, 64),
				strconv.Itoa(r.Round), strconv.Itoa(s.Proxy), strconv.Itoa(int(s.At / time.Second)), strconv.FormatBool(s.Measured),
				strconv.FormatFloat(s.Capacity, 'f', 4, 64), strconv.FormatFloat(s.Stretch, 'f', 3, 64),
				strconv.FormatFloat(s.Alone, 'f', 6, 64), s.Decision, strconv.Itoa(s.Running),
				strconv.FormatFloat(s.Load, 'f', 4, 64), strconv.Itoa(s.Queued), strconv.Itoa(s.Open), strconv.Itoa(s.MaxRunning), s.Phase,
				strconv.FormatFloat(s.Admitted, 'f', 0, 64)})
		}
	}
	return writeCSVFile(path, records)
}

// capacityColumns is capacity.csv's header: a row per proxy and second.
var capacityColumns = []string{"mode", "loop", "clients", "rate", "round", "proxy", "second", "measured", "capacity_s", "stretch",
	"alone_s", "decision", "running", "load_s", "queued", "open_transactions", "max_running", "phase", "admitted"}

// readCapacityCSV reads the traces of a capacity.csv that writeCapacityCSV wrote back into
// the runs they belong to (by cell and round), for drawing the plots again: the figures the
// plots use (proxy, second, measured, capacity, admitted). A file written before the proxy
// column had no fleets, and gives no trace.
func readCapacityCSV(path string, runs []runResult) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) < 2 || !slices.Contains(rows[0], "proxy") {
		return nil
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, name := range []string{"mode", "loop", "clients", "rate", "round", "second", "measured", "capacity_s", "admitted"} {
		if _, ok := col[name]; !ok {
			return fmt.Errorf("%s: no %s column", path, name)
		}
	}
	at := map[cell]map[int]int{} // the run of each cell and round, by its index in runs
	for i, r := range runs {
		if at[r.cell()] == nil {
			at[r.cell()] = map[int]int{}
		}
		at[r.cell()][r.Round] = i
	}
	for n, row := range rows[1:] {
		num := func(name string) float64 {
			v, perr := strconv.ParseFloat(row[col[name]], 64)
			if perr != nil && err == nil {
				err = fmt.Errorf("%s line %d, column %s: %q is not a number", path, n+2, name, row[col[name]])
			}
			return v
		}
		c := cell{row[col["mode"]], row[col["loop"]], int(num("clients")), num("rate")}
		s := capacitySample{Proxy: int(num("proxy")), At: time.Duration(num("second")) * time.Second,
			Measured: row[col["measured"]] == "true", Capacity: num("capacity_s"), Admitted: num("admitted")}
		if err != nil {
			return err
		}
		if i, ok := at[c][int(num("round"))]; ok {
			runs[i].Capacity = append(runs[i].Capacity, s)
		}
	}
	return err
}

// proxiesOf is the number of proxies a trace has samples of.
func proxiesOf(samples []capacitySample) int {
	n := 0
	for _, s := range samples {
		n = max(n, s.Proxy)
	}
	return n
}

// measuredCapacity is proxy p's capacity at each second of the measured period, in ms.
func measuredCapacity(samples []capacitySample, p int) []float64 {
	var out []float64
	for _, s := range samples {
		if s.Measured && s.Proxy == p {
			out = append(out, 1000*s.Capacity)
		}
	}
	return out
}

// summedCapacity is the sum of every proxy's capacity at each second of the trace that has
// a sample of each, in ms, in order; measured keeps only the measured period's.
func summedCapacity(samples []capacitySample, measured bool) (seconds []time.Duration, sums []float64) {
	n := proxiesOf(samples)
	type total struct {
		ms      float64
		proxies int
	}
	by := map[time.Duration]total{}
	for _, s := range samples {
		if measured && !s.Measured {
			continue
		}
		if _, ok := by[s.At]; !ok {
			seconds = append(seconds, s.At)
		}
		t := by[s.At]
		by[s.At] = total{t.ms + 1000*s.Capacity, t.proxies + 1}
	}
	seconds = slices.DeleteFunc(seconds, func(at time.Duration) bool { return by[at].proxies < n })
	slices.Sort(seconds)
	for _, at := range seconds {
		sums = append(sums, by[at].ms)
	}
	return seconds, sums
}

// admittedRate is the units proxy p admitted a second over the measured period, from the
// last sample before it (or its first) to its last; -1 when the trace cannot tell.
func admittedRate(samples []capacitySample, p int) float64 {
	var from, to *capacitySample
	for i, s := range samples {
		switch {
		case s.Proxy != p:
		case s.Measured:
			if from == nil {
				from = &samples[i]
			}
			to = &samples[i]
		case to == nil:
			from = &samples[i] // before the measured period
		}
	}
	if from == nil || to == nil || from.Admitted < 0 || to.At <= from.At {
		return -1
	}
	return (to.Admitted - from.Admitted) / (to.At - from.At).Seconds()
}

// fleetFigures are what one run's trace says of each proxy's capacity and of their sum
// over the measured period.
type fleetFigures struct {
	// Capacity is each proxy's median capacity, in ms, and Admitted the units it admitted
	// a second (-1: unknown).
	Capacity, Admitted []float64
	// Sum is the median over the seconds of the sum of the proxies' capacities, in ms.
	Sum float64
}

// figuresOf reads a run's fleet figures from its trace; false without a measured sample.
func figuresOf(samples []capacitySample) (fleetFigures, bool) {
	var f fleetFigures
	for p := 1; p <= proxiesOf(samples); p++ {
		caps := measuredCapacity(samples, p)
		if len(caps) == 0 {
			return f, false
		}
		f.Capacity = append(f.Capacity, middle(caps))
		f.Admitted = append(f.Admitted, admittedRate(samples, p))
	}
	_, sums := summedCapacity(samples, true)
	if len(sums) == 0 {
		return f, false
	}
	f.Sum = middle(sums)
	return f, true
}

// writeCapacityTrace tells where each run of an adaptive capacity held it through its
// measured period, beside the run's short interactions: a median that differs between the
// runs of a cell says which capacity each run's figures came from. A run of several
// proxies has a row for each, and one for the sum of their capacities.
func writeCapacityTrace(w io.Writer, all []runResult) {
	if !slices.ContainsFunc(all, func(r runResult) bool { return r.Capacity != nil }) {
		return
	}
	fmt.Fprintf(w, "## The adaptive capacity\n\nThe capacity over each run's measured period, sampled a second (`capacity.csv` has every second,\nwarm-up included, and a row for each proxy of a fleet): median, and lowest-highest; for a fleet, each\nproxy's and the sum of theirs at each second.\n\n")
	fmt.Fprintf(w, "| mode | loop | round | proxy | capacity, median ms | lowest-highest ms | interactions/s | short mean ms |\n|---|---|---:|---|---:|---|---:|---:|\n")
	row := func(r runResult, proxy string, caps []float64) {
		if len(caps) == 0 {
			return
		}
		slices.Sort(caps)
		loop := fmt.Sprintf("closed %d", r.Clients)
		if r.Loop == "open" {
			loop = fmt.Sprintf("open %.1f/s", r.Rate)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s | %.0f | %.0f-%.0f | %.1f | %.1f |\n", r.Mode, loop, r.Round, proxy, middle(caps),
			caps[0], caps[len(caps)-1], r.Result.Total.Throughput, shortMean(r.Result))
	}
	for _, r := range all {
		n := proxiesOf(r.Capacity)
		for p := 1; p <= n; p++ {
			row(r, strconv.Itoa(p), measuredCapacity(r.Capacity, p))
		}
		if n > 1 {
			_, sums := summedCapacity(r.Capacity, true)
			row(r, "sum", sums)
		}
	}
	fmt.Fprintln(w)
}
