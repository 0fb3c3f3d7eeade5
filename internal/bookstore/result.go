package bookstore

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Result is what a run measured.
type Result struct {
	// Config is the configuration the run used, with its defaults filled in.
	Config Config
	// Elapsed is the measured period actually run: Config.Duration, or less when the
	// run was cancelled.
	Elapsed time.Duration
	// Classes has one entry per interaction, in Interactions() order.
	Classes []ClassResult
	// Total is all interactions together; its Good counts each interaction against its
	// own class's SLO.
	Total ClassResult
	// Errors are the most frequent messages of failed, refused and timed-out
	// interactions, most frequent first.
	Errors []ErrorCount
	// Seconds, with Config.PerSecond, are the completed interactions of each second
	// from the run's start (the warm-up's) to its last completion, by the second they
	// ended in.
	Seconds []Second
}

// Second is what completed in one second of a run, per class.
type Second struct {
	// Start is the second's beginning.
	Start time.Time
	// Completed counts the interactions of each class, in Interactions() order, that
	// completed in the second, and Total sums their response times.
	Completed [numInteractions]int
	Total     [numInteractions]time.Duration
}

// ClassResult is what a run measured for one class of interaction. Every interaction
// that started (for the open loop: arrived) in the measured period is counted exactly
// once, as Completed, Failed, Refused or TimedOut.
type ClassResult struct {
	Name string
	// Completed interactions ran every statement without an error.
	Completed int
	// Failed ended with an error that is neither a refusal nor a timeout.
	Failed int
	// Refused were refused by gatekeeper (an error whose message starts with
	// "gatekeeper:"), or, in the open loop, arrived when Config.Clients interactions
	// were outstanding (Overflow).
	Refused int
	// Overflow is the part of Refused that the load generator refused itself.
	Overflow int
	// TimedOut passed Config.Timeout.
	TimedOut int
	// Good completed within the class's SLO.
	Good int
	// Throughput and Goodput are Completed and Good per second of Elapsed.
	Throughput, Goodput float64
	// Response times of the completed interactions: from the start of the interaction
	// (for the open loop: its arrival) to its end.
	Mean, P50, P95, P99, Max time.Duration
}

// ErrorCount is how often an error message ended interactions of a class.
type ErrorCount struct {
	Class   string
	Outcome string
	Message string
	Count   int
}

// classRecord accumulates one class on one goroutine.
type classRecord struct {
	completed, failed, refused, overflow, timedOut, good int
	samples                                              []time.Duration
}

// maxErrorKinds bounds the distinct error messages a recorder keeps; past it, new messages
// are counted under otherMessages.
const maxErrorKinds = 32

// otherMessages stands for the messages past maxErrorKinds.
const otherMessages = "(other messages, past the first 32 kinds)"

type errorKey struct {
	class   Interaction
	outcome outcome
	message string
}

// recorder accumulates outcomes on one goroutine; the recorders of a run are merged
// when it ends.
type recorder struct {
	classes [numInteractions]classRecord
	slo     [numInteractions]time.Duration
	errors  map[errorKey]int
	// seconds counts the completions of each second since the run's start, with
	// Config.PerSecond.
	seconds []secondCounts
}

// secondCounts is one second's completions per class and their response times summed.
type secondCounts struct {
	n   [numInteractions]int
	sum [numInteractions]time.Duration
}

// inSecond counts an interaction of class in that began at begin and took d in the second
// of r's run it ended in, if it completed and r counts seconds.
func (rec *recorder) inSecond(r *runner, in Interaction, begin time.Time, d time.Duration, o outcome) {
	end := begin.Add(d)
	if !r.cfg.PerSecond || o != completed || end.Before(r.start) {
		return
	}
	i := int(end.Sub(r.start) / time.Second)
	if i >= len(rec.seconds) {
		rec.seconds = append(rec.seconds, make([]secondCounts, i+1-len(rec.seconds))...)
	}
	rec.seconds[i].n[in]++
	rec.seconds[i].sum[in] += d
}

// perSecond merges the recorders' seconds, from start.
func perSecond(start time.Time, recs []*recorder) []Second {
	var out []Second
	for _, rec := range recs {
		for i, c := range rec.seconds {
			for len(out) <= i {
				out = append(out, Second{Start: start.Add(time.Duration(len(out)) * time.Second)})
			}
			for in := range c.n {
				out[i].Completed[in] += c.n[in]
				out[i].Total[in] += c.sum[in]
			}
		}
	}
	return out
}

func newRecorder(slo [numInteractions]time.Duration) *recorder {
	return &recorder{slo: slo}
}

// add records an interaction of class in that took d and ended with o (err for the
// failures).
func (r *recorder) add(in Interaction, d time.Duration, o outcome, err error) {
	c := &r.classes[in]
	switch o {
	case completed:
		c.completed++
		c.samples = append(c.samples, d)
		if d <= r.slo[in] {
			c.good++
		}
		return
	case failed:
		c.failed++
	case refused:
		c.refused++
	case overflow:
		c.refused++
		c.overflow++
	case timedOut:
		c.timedOut++
	}
	if err == nil {
		return
	}
	k := errorKey{class: in, outcome: o, message: errorMessage(err)}
	if r.errors == nil {
		r.errors = make(map[errorKey]int)
	}
	if _, ok := r.errors[k]; !ok && len(r.errors) >= maxErrorKinds {
		k.message = otherMessages
	}
	r.errors[k]++
}

// numbers matches the numbers in a server's message, such as the wait in the proxy's
// "waited 301 ms" or the queue length in its "queue full": they differ from one refusal to
// the next while the cause does not.
var numbers = regexp.MustCompile(`\b\d+(\.\d+)?\b`)

// errorMessage is err's text, shortened: for an error packet, the server's message with its
// numbers as N.
func errorMessage(err error) string {
	var me *mysql.MySQLError
	msg := err.Error()
	if errors.As(err, &me) {
		msg = fmt.Sprintf("Error %d: %s", me.Number, numbers.ReplaceAllString(me.Message, "N"))
	}
	const limit = 200
	if len(msg) > limit {
		msg = msg[:limit] + "..."
	}
	return msg
}

// result merges recorders into a Result over elapsed.
func result(cfg Config, elapsed time.Duration, recs []*recorder) *Result {
	res := &Result{Config: cfg, Elapsed: elapsed, Classes: make([]ClassResult, numInteractions)}
	var all []time.Duration
	total := classRecord{}
	errs := map[errorKey]int{}
	for i := range Interaction(numInteractions) {
		var c classRecord
		n := 0
		for _, r := range recs {
			n += len(r.classes[i].samples)
		}
		c.samples = make([]time.Duration, 0, n)
		for _, r := range recs {
			rc := &r.classes[i]
			c.completed += rc.completed
			c.failed += rc.failed
			c.refused += rc.refused
			c.overflow += rc.overflow
			c.timedOut += rc.timedOut
			c.good += rc.good
			c.samples = append(c.samples, rc.samples...)
		}
		slices.Sort(c.samples)
		res.Classes[i] = c.summary(i.String(), elapsed)
		total.completed += c.completed
		total.failed += c.failed
		total.refused += c.refused
		total.overflow += c.overflow
		total.timedOut += c.timedOut
		total.good += c.good
		all = append(all, c.samples...)
	}
	for _, r := range recs {
		for k, n := range r.errors {
			errs[k] += n
		}
	}
	// The classes' samples are sorted runs; one more sort of their concatenation.
	slices.Sort(all)
	total.samples = all
	res.Total = total.summary("total", elapsed)
	for k, n := range errs {
		res.Errors = append(res.Errors, ErrorCount{Class: k.class.String(), Outcome: k.outcome.String(), Message: k.message, Count: n})
	}
	slices.SortFunc(res.Errors, func(a, b ErrorCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Class, b.Class), cmp.Compare(a.Message, b.Message))
	})
	return res
}

// summary computes the statistics of a class whose samples are sorted.
func (c *classRecord) summary(name string, elapsed time.Duration) ClassResult {
	r := ClassResult{
		Name: name, Completed: c.completed, Failed: c.failed, Refused: c.refused,
		Overflow: c.overflow, TimedOut: c.timedOut, Good: c.good,
	}
	if s := elapsed.Seconds(); s > 0 {
		r.Throughput = float64(c.completed) / s
		r.Goodput = float64(c.good) / s
	}
	if n := len(c.samples); n > 0 {
		var sum time.Duration
		for _, d := range c.samples {
			sum += d
		}
		r.Mean = sum / time.Duration(n)
		r.P50 = percentile(c.samples, 50)
		r.P95 = percentile(c.samples, 95)
		r.P99 = percentile(c.samples, 99)
		r.Max = c.samples[n-1]
	}
	return r
}

// percentile returns the p-th percentile (0 < p <= 100) of sorted samples by the
// nearest-rank method: the smallest sample with at least p percent of the samples at or
// below it. It is zero for no samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

func (o outcome) String() string {
	switch o {
	case completed:
		return "completed"
	case failed:
		return "failed"
	case refused:
		return "refused"
	case overflow:
		return "overflow"
	case timedOut:
		return "timed_out"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// ms is a duration in milliseconds, for JSON.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

type jsonClass struct {
	Name       string  `json:"name"`
	Completed  int     `json:"completed"`
	Failed     int     `json:"failed"`
	Refused    int     `json:"refused"`
	Overflow   int     `json:"overflow"`
	TimedOut   int     `json:"timed_out"`
	Good       int     `json:"good"`
	Throughput float64 `json:"throughput_per_second"`
	Goodput    float64 `json:"goodput_per_second"`
	Mean       float64 `json:"mean_ms"`
	P50        float64 `json:"p50_ms"`
	P95        float64 `json:"p95_ms"`
	P99        float64 `json:"p99_ms"`
	Max        float64 `json:"max_ms"`
	SLO        float64 `json:"slo_ms,omitempty"`
}

func (c ClassResult) json(slo time.Duration) jsonClass {
	return jsonClass{
		Name: c.Name, Completed: c.Completed, Failed: c.Failed, Refused: c.Refused,
		Overflow: c.Overflow, TimedOut: c.TimedOut, Good: c.Good,
		Throughput: c.Throughput, Goodput: c.Goodput,
		Mean: ms(c.Mean), P50: ms(c.P50), P95: ms(c.P95), P99: ms(c.P99), Max: ms(c.Max),
		SLO: ms(slo),
	}
}

type jsonBurst struct {
	HighFactor float64 `json:"high_factor"`
	MeanHigh   string  `json:"mean_high"`
	MeanLow    string  `json:"mean_low"`
}

type jsonConfig struct {
	DSN               string     `json:"dsn"`
	DSNs              []string   `json:"dsns,omitempty"`
	Mix               string     `json:"mix"`
	Clients           int        `json:"clients"`
	Think             string     `json:"think"`
	Rate              float64    `json:"rate"`
	Burst             *jsonBurst `json:"burst,omitempty"`
	Duration          string     `json:"duration"`
	Warmup            string     `json:"warmup"`
	Timeout           string     `json:"timeout"`
	Seed              int64      `json:"seed"`
	BestSellersWindow int        `json:"best_sellers_window"`
	RelatedWindow     int        `json:"related_window"`
}

type jsonResult struct {
	Config         jsonConfig   `json:"config"`
	ElapsedSeconds float64      `json:"elapsed_seconds"`
	Classes        []jsonClass  `json:"classes"`
	Total          jsonClass    `json:"total"`
	Errors         []ErrorCount `json:"errors"`
}

// WriteJSON writes the result as JSON: durations of the configuration as Go duration
// strings, response times in milliseconds, the DSN without its password.
func (r *Result) WriteJSON(w io.Writer) error {
	c := r.Config
	out := jsonResult{
		Config: jsonConfig{
			DSN: redactDSN(c.DSN), Mix: c.Mix, Clients: c.Clients, Think: c.Think.String(),
			Rate: c.Rate, Duration: c.Duration.String(), Warmup: c.Warmup.String(),
			Timeout: c.Timeout.String(), Seed: c.Seed,
			BestSellersWindow: c.BestSellersWindow, RelatedWindow: c.RelatedWindow,
		},
		ElapsedSeconds: r.Elapsed.Seconds(),
		Total:          r.Total.json(0),
		Errors:         r.Errors,
	}
	for _, dsn := range c.DSNs {
		out.Config.DSNs = append(out.Config.DSNs, redactDSN(dsn))
	}
	if c.Burst != nil {
		out.Config.Burst = &jsonBurst{HighFactor: c.Burst.HighFactor, MeanHigh: c.Burst.MeanHigh.String(), MeanLow: c.Burst.MeanLow.String()}
	}
	if out.Errors == nil {
		out.Errors = []ErrorCount{}
	}
	for _, cl := range r.Classes {
		in, err := ParseInteraction(cl.Name)
		var slo time.Duration
		if err == nil {
			slo = c.SLO[in]
		}
		out.Classes = append(out.Classes, cl.json(slo))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteSeconds writes Seconds as CSV: each second's start (Unix time, in seconds), a
// class, how many of its interactions completed in the second and their mean response
// time in milliseconds, for each class with any.
func (r *Result) WriteSeconds(w io.Writer) error {
	b := []byte("unix,class,completed,mean_ms\n")
	for _, s := range r.Seconds {
		for in, n := range s.Completed {
			if n > 0 {
				b = fmt.Appendf(b, "%.3f,%s,%d,%.3f\n", float64(s.Start.UnixMilli())/1000, Interaction(in), n, ms(s.Total[in])/float64(n))
			}
		}
	}
	_, err := w.Write(b)
	return err
}

// WriteTable writes the result as a markdown table: a row per class and a total row,
// with every count, then the error messages if there were any.
func (r *Result) WriteTable(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| interaction | completed | failed | refused | (overflow) | timed out | good | SLO ms | throughput/s | goodput/s | mean ms | p50 ms | p95 ms | p99 ms | max ms |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	row := func(c ClassResult, slo string) {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %s | %.2f | %.2f | %s | %s | %s | %s | %s |\n",
			c.Name, c.Completed, c.Failed, c.Refused, c.Overflow, c.TimedOut, c.Good, slo,
			c.Throughput, c.Goodput, msText(c.Mean), msText(c.P50), msText(c.P95), msText(c.P99), msText(c.Max))
	}
	for _, c := range r.Classes {
		slo := ""
		if in, err := ParseInteraction(c.Name); err == nil {
			slo = msText(r.Config.SLO[in])
		}
		row(c, slo)
	}
	t := r.Total
	t.Name = "**total**"
	row(t, "")
	if len(r.Errors) > 0 {
		b.WriteString("\n| interaction | outcome | count | message |\n|---|---|---:|---|\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "| %s | %s | %d | %s |\n", e.Class, e.Outcome, e.Count, strings.ReplaceAll(e.Message, "|", `\|`))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// msText formats a duration in milliseconds with three significant digits or more.
func msText(d time.Duration) string {
	v := ms(d)
	switch {
	case v == 0:
		return "0"
	case v < 1:
		return fmt.Sprintf("%.3f", v)
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// redactDSN returns dsn without its password, and an empty dsn (Config.DSNs given
// instead) as it is.
func redactDSN(dsn string) string {
	if dsn == "" {
		return ""
	}
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	if c.Passwd != "" {
		c.Passwd = "xxx"
	}
	return c.FormatDSN()
}
