package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// result is a run: the workload, each arm's totals over its measured phases, and each
// phase.
type result struct {
	Workload workload      `json:"workload"`
	Arms     []armResult   `json:"arms"`
	Phases   []phaseResult `json:"phases"`
}

// workload is what the trace was.
type workload struct {
	Rows    int        `json:"rows"`
	Groups  int        `json:"groups"`
	Kinds   []kindInfo `json:"kinds"`
	Zipf    float64    `json:"zipf"`
	Seed    uint64     `json:"seed"`
	Warmup  int        `json:"warmup_requests"`
	Phases  int        `json:"phases"`
	PerArm  int        `json:"requests_per_phase"`
	Clients int        `json:"clients"`
}

type kindInfo struct {
	Name   string `json:"name"`
	What   string `json:"what"`
	Keys   int    `json:"keys"`
	Weight int    `json:"weight"`
	Sample string `json:"sample"`
	// CalibratedMS is its mean time straight on the primary, one request at a time; 0
	// when not measured.
	CalibratedMS float64 `json:"calibrated_ms"`
}

func newResult(o options, kinds []kind, costs []time.Duration) *result {
	weights, _ := parseMix(o.mix, kinds)
	w := workload{Rows: o.shape.rows, Groups: o.shape.groups, Zipf: o.zipf, Seed: o.seed, Warmup: o.warmup,
		Phases: o.phases, PerArm: o.requests, Clients: o.clients}
	for i, k := range kinds {
		ki := kindInfo{Name: k.name, What: k.what, Keys: k.keys, Weight: weights[i], Sample: k.text(0)}
		if costs != nil {
			ki.CalibratedMS = costs[i].Seconds() * 1000
		}
		w.Kinds = append(w.Kinds, ki)
	}
	return &result{Workload: w}
}

// calibrated tells whether the kinds' costs were measured on their own.
func (w workload) calibrated() bool {
	for _, k := range w.Kinds {
		if k.CalibratedMS > 0 {
			return true
		}
	}
	return false
}

// calibratedSaved values an arm's hits of each kind at the kind's calibrated cost.
func (w workload) calibratedSaved(kinds []kindResult) float64 {
	var s float64
	for i, k := range w.Kinds {
		s += float64(kinds[i].Hits) * k.CalibratedMS / 1000
	}
	return s
}

// armResult is one arm over its measured phases. The cache's size, the heap and the
// process's memory are read at the end.
type armResult struct {
	Name          string  `json:"name"`
	Requests      int64   `json:"requests"`
	Errors        int64   `json:"errors"`
	FirstError    string  `json:"first_error,omitempty"`
	ActiveSeconds float64 `json:"active_seconds"`
	Hits          float64 `json:"hits"`
	Misses        float64 `json:"misses"`
	// SavedSeconds is the database time the hits saved (gatekeeper_cache_saved_seconds_total).
	SavedSeconds float64 `json:"saved_seconds"`
	// CalibratedSavedSeconds values the hits of each kind (from /api/v1/cache) at the
	// kind's calibrated cost; 0 when not measured.
	CalibratedSavedSeconds float64 `json:"calibrated_saved_seconds"`
	Evictions              float64 `json:"evictions_total"`
	CacheBytes             float64 `json:"cache_bytes"`
	CacheEntries           float64 `json:"cache_entries"`
	HeapInuseBytes         float64 `json:"heap_inuse_bytes"`
	// MaxBytes is the cache's bound, cache.max_bytes.
	MaxBytes int64 `json:"max_bytes"`
	// RSSBytes and PeakRSSBytes are the proxy's VmRSS and VmHWM; 0 when not read.
	RSSBytes     int64        `json:"rss_bytes"`
	PeakRSSBytes int64        `json:"peak_rss_bytes"`
	Kinds        []kindResult `json:"kinds"`
}

func (a armResult) hitRatio() float64 { return ratio(a.Hits, a.Hits+a.Misses) }

// savedPerSecond is the database time saved per second of the arm's measured phases.
func (a armResult) savedPerSecond() float64 { return ratio(a.SavedSeconds, a.ActiveSeconds) }
func (a armResult) calibratedPerSecond() float64 {
	return ratio(a.CalibratedSavedSeconds, a.ActiveSeconds)
}
func (a armResult) throughput() float64 { return ratio(float64(a.Requests), a.ActiveSeconds) }

// kindResult is what one kind of read did on an arm: at the client, and in the cache (from
// /api/v1/cache's type of its statements).
type kindResult struct {
	Name       string  `json:"name"`
	Requests   int64   `json:"requests"`
	Errors     int64   `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	MeanMS     float64 `json:"mean_ms"`
	// MeanBytes are the column bytes of a result, on average.
	MeanBytes    float64 `json:"mean_result_bytes"`
	Lookups      uint64  `json:"lookups"`
	Hits         uint64  `json:"hits"`
	SavedSeconds float64 `json:"saved_seconds"`
}

func kindResults(kinds []kind, tally []kindTally, counts []typeCounts) []kindResult {
	out := make([]kindResult, len(kinds))
	for i, k := range kinds {
		t := tally[i]
		out[i] = kindResult{
			Name: k.name, Requests: t.requests, Errors: t.errors, FirstError: t.firstError,
			MeanMS:    ratio(t.latency.Seconds()*1000, float64(t.requests)),
			MeanBytes: ratio(float64(t.bytes), float64(t.requests)),
			Lookups:   counts[i].lookups, Hits: counts[i].hits, SavedSeconds: counts[i].saved,
		}
	}
	return out
}

// phaseResult is one phase of one arm.
type phaseResult struct {
	Arm          string  `json:"arm"`
	Phase        int     `json:"phase"`
	Seconds      float64 `json:"seconds"`
	Requests     int64   `json:"requests"`
	Errors       int64   `json:"errors"`
	Hits         float64 `json:"hits"`
	Misses       float64 `json:"misses"`
	SavedSeconds float64 `json:"saved_seconds"`
}

func (p phaseResult) hitRatio() float64       { return ratio(p.Hits, p.Hits+p.Misses) }
func (p phaseResult) savedPerSecond() float64 { return ratio(p.SavedSeconds, p.Seconds) }

// ratio is a/b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func (r *result) errorShare() float64 {
	var req, errs int64
	for _, a := range r.Arms {
		req += a.Requests
		errs += a.Errors
	}
	return ratio(float64(errs), float64(req))
}

func (r *result) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

const mib = 1 << 20

// writeMarkdown writes the arms' table, the kinds' table, each phase's figures and what
// the first arm did against each other.
func (r *result) writeMarkdown(w io.Writer) {
	fmt.Fprintln(w, "| arm | requests | requests/s | hit ratio | hits | misses | database s saved | saved s per s | "+
		"saved s per s at calibrated costs | evictions | cache MiB | entries | heap in use MiB | RSS MiB | peak RSS MiB | errors |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, a := range r.Arms {
		errs := fmt.Sprint(a.Errors)
		if a.Errors > 0 {
			errs += " (" + clip(a.FirstError, 60) + ")"
		}
		calibrated := "—"
		if r.Workload.calibrated() {
			calibrated = fmt.Sprintf("%.3f", a.calibratedPerSecond())
		}
		fmt.Fprintf(w, "| %s | %d | %.0f | %.1f%% | %.0f | %.0f | %.2f | %.3f | %s | %.0f | %.2f | %.0f | %.1f | %s | %s | %s |\n",
			a.Name, a.Requests, a.throughput(), 100*a.hitRatio(), a.Hits, a.Misses, a.SavedSeconds, a.savedPerSecond(),
			calibrated, a.Evictions, a.CacheBytes/mib, a.CacheEntries, a.HeapInuseBytes/mib, mibOrDash(a.RSSBytes), mibOrDash(a.PeakRSSBytes), errs)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "By kind of read (hit ratio and saved time from /api/v1/cache's type of the kind's statements; cost")
	fmt.Fprintln(w, "per hit: the saved time over the hits, the database time the proxy measured for those results;")
	fmt.Fprintln(w, "alone: the kind's mean time straight on the primary, one request at a time, before the run):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| kind | keys | share | alone ms | arm | requests | result KiB | client mean ms | hit ratio | database s saved | cost per hit ms |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
	total := 0
	for _, k := range r.Workload.Kinds {
		total += k.Weight
	}
	for i, k := range r.Workload.Kinds {
		for _, a := range r.Arms {
			kr := a.Kinds[i]
			alone := "—"
			if k.CalibratedMS > 0 {
				alone = fmt.Sprintf("%.3f", k.CalibratedMS)
			}
			fmt.Fprintf(w, "| %s | %d | %.0f%% | %s | %s | %d | %.2f | %.3f | %.1f%% | %.2f | %.3f |\n",
				k.Name, k.Keys, 100*ratio(float64(k.Weight), float64(total)), alone, a.Name, kr.Requests, kr.MeanBytes/1024,
				kr.MeanMS, 100*ratio(float64(kr.Hits), float64(kr.Lookups)), kr.SavedSeconds,
				1000*ratio(kr.SavedSeconds, float64(kr.Hits)))
		}
	}
	fmt.Fprintln(w)
	r.writePhases(w)
	fmt.Fprintln(w)
	for _, line := range r.verdicts() {
		fmt.Fprintln(w, "- "+line)
	}
}

// writePhases writes a row per phase: each arm's database time saved per second and hit
// ratio in it.
func (r *result) writePhases(w io.Writer) {
	var head, rule strings.Builder
	head.WriteString("| phase |")
	rule.WriteString("|---:|")
	for _, a := range r.Arms {
		fmt.Fprintf(&head, " %s saved s per s | %s hit ratio |", a.Name, a.Name)
		rule.WriteString("---:|---:|")
	}
	fmt.Fprintln(w, head.String())
	fmt.Fprintln(w, rule.String())
	for p := 1; p <= r.Workload.Phases; p++ {
		fmt.Fprintf(w, "| %d |", p)
		for _, a := range r.Arms {
			if ph, ok := r.phase(a.Name, p); ok {
				fmt.Fprintf(w, " %.3f | %.1f%% |", ph.savedPerSecond(), 100*ph.hitRatio())
			} else {
				fmt.Fprint(w, " | |")
			}
		}
		fmt.Fprintln(w)
	}
}

func (r *result) phase(arm string, p int) (phaseResult, bool) {
	for _, ph := range r.Phases {
		if ph.Arm == arm && ph.Phase == p {
			return ph, true
		}
	}
	return phaseResult{}, false
}

// verdicts compare the first arm with each other: database time saved per second, overall
// and phase by phase, and the memory each used.
func (r *result) verdicts() []string {
	if len(r.Arms) < 2 {
		return nil
	}
	a := r.Arms[0]
	lines := []string{r.workingSet()}
	for _, b := range r.Arms[1:] {
		more := 0
		for p := 1; p <= r.Workload.Phases; p++ {
			pa, okA := r.phase(a.Name, p)
			pb, okB := r.phase(b.Name, p)
			if okA && okB && pa.savedPerSecond() > pb.savedPerSecond() {
				more++
			}
		}
		times := timesOrDash(a.savedPerSecond(), b.savedPerSecond())
		lines = append(lines, fmt.Sprintf("%s saved %.3f s of database time per second against %s's %.3f (%s), "+
			"more in %d of %d phases; hit ratio %.1f%% against %.1f%%; %.0f requests/s against %.0f.",
			a.Name, a.savedPerSecond(), b.Name, b.savedPerSecond(), times, more, r.Workload.Phases,
			100*a.hitRatio(), 100*b.hitRatio(), a.throughput(), b.throughput()))
		if r.Workload.calibrated() {
			lines = append(lines, fmt.Sprintf("At each kind's calibrated cost (its time alone on the primary), %s's hits saved %.3f s a second "+
				"against %s's %.3f (%s).", a.Name, a.calibratedPerSecond(), b.Name, b.calibratedPerSecond(),
				timesOrDash(a.calibratedPerSecond(), b.calibratedPerSecond())))
		}
		lines = append(lines, fmt.Sprintf("Memory: %s's cache held %.2f MiB in %.0f entries, %s's %.2f MiB in %.0f; "+
			"RSS %s MiB against %s MiB (peak %s against %s).",
			a.Name, a.CacheBytes/mib, a.CacheEntries, b.Name, b.CacheBytes/mib, b.CacheEntries,
			mibOrDash(a.RSSBytes), mibOrDash(b.RSSBytes), mibOrDash(a.PeakRSSBytes), mibOrDash(b.PeakRSSBytes)))
	}
	return lines
}

// workingSet says how the reads' working set, each kind's keys times its mean result's
// column bytes (as the first arm's clients read them), compares with the first arm's
// cache.max_bytes.
func (r *result) workingSet() string {
	a := r.Arms[0]
	var all float64
	var parts []string
	for i, k := range r.Workload.Kinds {
		b := float64(k.Keys) * a.Kinds[i].MeanBytes
		all += b
		parts = append(parts, fmt.Sprintf("%s %.1f", k.Name, b/mib))
	}
	return fmt.Sprintf("Working set: every key's result once, in column bytes, %.1f MiB (%s), %.0f× cache.max_bytes (%.2f MiB).",
		all/mib, strings.Join(parts, ", "), ratio(all, float64(a.MaxBytes)), float64(a.MaxBytes)/mib)
}

// timesOrDash says a/b as a factor, or — when b is 0.
func timesOrDash(a, b float64) string {
	if b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// mibOrDash is n bytes in MiB, or — when it was not read.
func mibOrDash(n int64) string {
	if n <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f", float64(n)/mib)
}

// clip shortens s to n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
