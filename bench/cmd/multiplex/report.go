package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// result is a run's outcome, as --json writes it. Latencies are in milliseconds; errors,
// units and latencies are those of the measured period.
type result struct {
	Addr            string  `json:"addr"`
	Clients         int     `json:"clients"`
	Think           string  `json:"think"`
	ThinkSeconds    float64 `json:"think_seconds"`
	Workload        string  `json:"workload"`
	Tables          int     `json:"tables"`
	Rows            int     `json:"rows"`
	Seed            uint64  `json:"seed"`
	WarmupSeconds   float64 `json:"warmup_seconds"`
	RampSeconds     float64 `json:"ramp_seconds"`
	DurationSeconds float64 `json:"duration_seconds"`

	Units       int64     `json:"units"`
	UnitsPerSec float64   `json:"units_per_second"`
	LatencyMS   latencyMS `json:"latency_ms"`
	ErrorsTotal int64     `json:"errors_total"`
	// Errors counts the failed units by MySQL error number, or "other"; Messages has the
	// first message of each, and of the first failed connection attempt under "connect".
	Errors       map[string]int64  `json:"errors"`
	Messages     map[string]string `json:"error_messages"`
	ConnectedEnd int64             `json:"clients_connected_at_end"`
	// ConnectFailures and Reconnects count over the whole run, the clients' logins
	// included: connection attempts that failed, and connections given up after an error.
	ConnectFailures int64 `json:"connect_failures"`
	Reconnects      int64 `json:"reconnects"`

	ThreadsConnected *threadsResult `json:"threads_connected,omitempty"`
	MonitorFailures  int            `json:"monitor_failures,omitempty"`
	Proxy            *proxyResult   `json:"proxy,omitempty"`
	Intervals        []interval     `json:"intervals"`
}

type latencyMS struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// threadsResult is the primary's Threads_connected: before the clients connected, and the
// highest and median of the samples of the measured period.
type threadsResult struct {
	Baseline int `json:"baseline"`
	Max      int `json:"max"`
	Median   int `json:"median"`
	Samples  int `json:"samples"`
}

func (r *threadsResult) set(sorted []int) {
	r.Samples = len(sorted)
	if len(sorted) > 0 {
		r.Max = sorted[len(sorted)-1]
		r.Median = medianInt(sorted)
	}
}

// proxyResult is the processor time of --proxy-pid over the measured period and its
// resident memory at the end of it.
type proxyResult struct {
	PID                    int     `json:"pid"`
	CPUSeconds             float64 `json:"cpu_seconds"`
	CPUSecondsPer1000Units float64 `json:"cpu_seconds_per_1000_units"`
	RSSBytes               int64   `json:"rss_bytes"`
}

// interval is one progress line.
type interval struct {
	AtSeconds        float64 `json:"at_seconds"` // since the first client was started
	Measured         bool    `json:"measured"`
	UnitsPerSec      float64 `json:"units_per_second"`
	P50MS            float64 `json:"p50_ms"`
	P99MS            float64 `json:"p99_ms"`
	Errors           int64   `json:"errors"`
	Connected        int64   `json:"clients_connected"`
	ThreadsConnected int     `json:"threads_connected,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func per1000(seconds float64, units int64) float64 {
	if units == 0 {
		return 0
	}
	return seconds * 1000 / float64(units)
}

func (r *result) setPeriod(p period, maxLatency time.Duration, end snapshot) {
	r.DurationSeconds = p.elapsed.Seconds()
	r.Units = p.units()
	r.UnitsPerSec = p.rate()
	r.LatencyMS = latencyMS{
		P50: ms(p.latency.quantile(0.50)), P90: ms(p.latency.quantile(0.90)), P99: ms(p.latency.quantile(0.99)),
		Max: ms(maxLatency), Mean: ms(p.latency.mean()),
	}
	r.Errors = p.errs
	r.ErrorsTotal = p.errors()
	r.ConnectedEnd = end.connected
	r.ConnectFailures = end.connectFailures
	r.Reconnects = end.reconnects
}

func (r *result) setProxy(pid int, cpu time.Duration, rss int64) {
	r.Proxy = &proxyResult{PID: pid, CPUSeconds: cpu.Seconds(), RSSBytes: rss}
}

// progressLine writes one line of how the run went in p, and returns it as an interval.
func progressLine(w io.Writer, start time.Time, p period, now snapshot, measured bool, mon *monitor) interval {
	iv := interval{
		AtSeconds: now.at.Sub(start).Seconds(), Measured: measured,
		UnitsPerSec: p.rate(), P50MS: ms(p.latency.quantile(0.50)), P99MS: ms(p.latency.quantile(0.99)),
		Errors: p.errors(), Connected: now.connected,
	}
	phase := "warmup  "
	if measured {
		phase = "measured"
	}
	threads := ""
	if mon != nil {
		if n, ok := mon.latest(); ok {
			iv.ThreadsConnected = n
			threads = fmt.Sprintf("  Threads_connected %d", n)
		}
	}
	fmt.Fprintf(w, "%6.1fs %s  units/s %8.1f  p50 %7.2fms  p99 %7.2fms  errors %d  clients connected %d%s\n",
		iv.AtSeconds, phase, iv.UnitsPerSec, iv.P50MS, iv.P99MS, iv.Errors, iv.Connected, threads)
	return iv
}

// errorKeys are the keys of m: error numbers in order, then "other".
func errorKeys(m map[string]int64) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		na, errA := strconv.Atoi(a)
		nb, errB := strconv.Atoi(b)
		if errA != nil || errB != nil {
			return cmp.Or(cmp.Compare(boolInt(errA != nil), boolInt(errB != nil)), cmp.Compare(a, b))
		}
		return cmp.Compare(na, nb)
	})
	return keys
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (r *result) writeSummary(w io.Writer) {
	fmt.Fprintf(w, "multiplex: %d clients against %s, think %s (exponential), %s units, %.1fs measured after %.0fs (clients connected over %.0fs)\n",
		r.Clients, r.Addr, r.Think, r.Workload, r.DurationSeconds, r.WarmupSeconds, r.RampSeconds)
	fmt.Fprintf(w, "  units              %d, %.1f/s\n", r.Units, r.UnitsPerSec)
	l := r.LatencyMS
	fmt.Fprintf(w, "  latency ms         p50 %.3f  p90 %.3f  p99 %.3f  max %.3f  mean %.3f\n", l.P50, l.P90, l.P99, l.Max, l.Mean)
	if r.ErrorsTotal == 0 {
		fmt.Fprintf(w, "  errors             none\n")
	} else {
		var parts []string
		for _, k := range errorKeys(r.Errors) {
			parts = append(parts, fmt.Sprintf("%s: %d (%s)", k, r.Errors[k], oneLine(r.Messages[k])))
		}
		fmt.Fprintf(w, "  errors             %d; %s\n", r.ErrorsTotal, strings.Join(parts, "; "))
	}
	fmt.Fprintf(w, "  connections        %d of %d clients connected at the end; %d failed connection attempts, %d reconnections in the whole run\n",
		r.ConnectedEnd, r.Clients, r.ConnectFailures, r.Reconnects)
	if m, ok := r.Messages["connect"]; ok {
		fmt.Fprintf(w, "  connect error      %s (the first)\n", oneLine(m))
	}
	if t := r.ThreadsConnected; t != nil {
		fmt.Fprintf(w, "  Threads_connected  max %d, median %d (%d samples); %d before the clients connected\n",
			t.Max, t.Median, t.Samples, t.Baseline)
	}
	if p := r.Proxy; p != nil {
		fmt.Fprintf(w, "  proxy              CPU %.2fs, %.3fs per 1000 units; RSS %.1f MiB at the end (pid %d)\n",
			p.CPUSeconds, p.CPUSecondsPer1000Units, float64(p.RSSBytes)/(1<<20), p.PID)
	}
}

// oneLine shortens a message to one line of at most 120 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

func (r *result) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	return nil
}
