package main

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// capacitySample is the proxy's adaptive capacity at one second of a run.
type capacitySample struct {
	At       time.Duration // since the run began, warm-up included
	Measured bool          // in the measured period
	Capacity float64       // seconds
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
}

// traceCapacity samples the capacity that the proxy whose admin listener is at admin
// reports, once a second from now until stop closes, and then sends the samples; measured
// holds when the measured period began (Unix nanoseconds; 0: not yet), and period is its
// length: the seconds after it, while the clients finish what they began, are not
// measured (the queue drains, and what is left of it is heavy units). A sample that
// cannot be read is left out: the trace shows where an adaptive capacity went, and a
// second missing from it loses nothing the report counts.
func traceCapacity(admin string, measured *atomic.Int64, period time.Duration, stop <-chan struct{}) <-chan []capacitySample {
	out := make(chan []capacitySample, 1)
	go func() { // ends when stop closes
		var samples []capacitySample
		start := time.Now()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				out <- samples
				return
			case <-tick.C:
			}
			if s, ok := scrape(admin); ok {
				from := measured.Load()
				s.At = time.Since(start).Round(time.Second)
				s.Measured = from > 0 && time.Since(time.Unix(0, from)) <= period
				samples = append(samples, s)
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
	records := [][]string{{"mode", "loop", "clients", "rate", "round", "second", "measured", "capacity_s", "stretch", "alone_s", "decision", "running", "load_s", "queued", "open_transactions", "max_running", "phase"}}
	for _, r := range runs {
		for _, s := range r.Capacity {
			records = append(records, []string{r.Mode, r.Loop, strconv.Itoa(r.Clients), strconv.FormatFloat(r.Rate, 'f', 3, 64),
				strconv.Itoa(r.Round), strconv.Itoa(int(s.At / time.Second)), strconv.FormatBool(s.Measured),
				strconv.FormatFloat(s.Capacity, 'f', 4, 64), strconv.FormatFloat(s.Stretch, 'f', 3, 64),
				strconv.FormatFloat(s.Alone, 'f', 6, 64), s.Decision, strconv.Itoa(s.Running),
				strconv.FormatFloat(s.Load, 'f', 4, 64), strconv.Itoa(s.Queued), strconv.Itoa(s.Open), strconv.Itoa(s.MaxRunning), s.Phase})
		}
	}
	return writeCSVFile(path, records)
}

// writeCapacityTrace tells where each run of an adaptive capacity held it through its
// measured period, beside the run's short interactions: a median that differs between the
// runs of a cell says which capacity each run's figures came from.
func writeCapacityTrace(w io.Writer, all []runResult) {
	if !slices.ContainsFunc(all, func(r runResult) bool { return r.Capacity != nil }) {
		return
	}
	fmt.Fprintf(w, "## The adaptive capacity\n\nThe capacity over each run's measured period, sampled a second (`capacity.csv` has every second,\nwarm-up included): median, and lowest-highest.\n\n")
	fmt.Fprintf(w, "| mode | loop | round | capacity, median ms | lowest-highest ms | interactions/s | short mean ms |\n|---|---|---:|---:|---|---:|---:|\n")
	for _, r := range all {
		var caps []float64
		for _, s := range r.Capacity {
			if s.Measured {
				caps = append(caps, 1000*s.Capacity)
			}
		}
		if len(caps) == 0 {
			continue
		}
		slices.Sort(caps)
		loop := fmt.Sprintf("closed %d", r.Clients)
		if r.Loop == "open" {
			loop = fmt.Sprintf("open %.1f/s", r.Rate)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %.0f | %.0f-%.0f | %.1f | %.1f |\n", r.Mode, loop, r.Round, caps[len(caps)/2],
			caps[0], caps[len(caps)-1], r.Result.Total.Throughput, shortMean(r.Result))
	}
	fmt.Fprintln(w)
}
