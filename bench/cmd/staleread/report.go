package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// result is a run's outcome, as --json writes it.
type result struct {
	// Flags is every flag's value, passwords in DSNs masked.
	Flags     map[string]string `json:"flags"`
	DurationS float64           `json:"duration_s"`
	// counts are of the whole run, every arm's together.
	counts

	LagInjections int `json:"lag_injections"`
	// Switches counts the moves from one arm to the next; LateCatchUps those at which a
	// replica had not applied the primary's position in time.
	Switches     int `json:"switches"`
	LateCatchUps int `json:"late_catch_ups"`

	Examples []example `json:"examples"`
	// Interrupted is set when a signal ended the run early.
	Interrupted bool `json:"interrupted,omitempty"`
	// Arms is each proxy the clients went through, in --dsn's order, and what was counted
	// there; one arm when the run compared none.
	Arms []armResult `json:"arms"`
}

// counts are what the clients and a proxy counted, over a run or over one arm's phases.
type counts struct {
	Reads        int64 `json:"reads"`
	Writes       int64 `json:"writes"`
	Transactions int64 `json:"transactions"`
	// Stale counts reads that returned a version older than one acknowledged before they
	// were sent.
	Stale int64 `json:"stale"`
	// OwnWriteMisses counts reads of the session's own write (own: the same connection;
	// session: the pair partner's, with the session key) that returned an older version, of
	// OwnWriteChecks such reads.
	OwnWriteMisses int64 `json:"own_write_misses"`
	OwnWriteChecks int64 `json:"own_write_checks"`
	// MonotonicViolations counts reads that returned an older version of a row than the
	// same connection had read before.
	MonotonicViolations int64                `json:"monotonic_violations"`
	ByKind              map[string]kindCount `json:"reads_by_kind"`
	// Latency is how long reads took at the client, from sending to the last row read, by
	// kind and for "all" reads.
	Latency map[string]quantiles `json:"latency"`

	// Errors counts failed operations by MySQL error number, or "other"; ErrorMessages has
	// the first message of each. WriteRetries counts writes tried again after 1213 or 1205.
	Errors        map[string]int64  `json:"errors"`
	ErrorMessages map[string]string `json:"error_messages,omitempty"`
	ErrorsTotal   int64             `json:"errors_total"`
	ErrorShare    float64           `json:"error_share"`
	WriteRetries  map[string]int64  `json:"write_retries"`

	// ReplicaShare is the share of the proxy's reads (its units other than writes) served by
	// backends other than the primary; null when not measured (MetricsNote says why).
	ReplicaShare   *float64                      `json:"replica_share"`
	ReadsByBackend map[string]map[string]float64 `json:"reads_by_backend,omitempty"`
	MetricsNote    string                        `json:"metrics_note,omitempty"`
}

// armResult is one arm: a proxy the clients read through (and wrote through, unless
// --write-dsn), during its phases.
type armResult struct {
	Name string `json:"name"`
	DSN  string `json:"dsn"`
	// Phases is how many turns the arm had, ActiveS how long they lasted together, and
	// ReadsPerSecond the reads over that time.
	Phases         int     `json:"phases"`
	ActiveS        float64 `json:"active_s"`
	ReadsPerSecond float64 `json:"reads_per_second"`
	counts
	// Strong is what the proxy counted of its strong reads' horizon, when it has the
	// series (a proxy whose strong rule counts every writer); nil otherwise.
	Strong *horizonCounts `json:"strong,omitempty"`
}

// horizonCounts is what a proxy that counts every writer did to learn, for each strong
// read, what the primary had committed when it arrived.
type horizonCounts struct {
	// PositionReads are the reads of the primary's position, Statements the strong reads
	// they served, ReadsPerPositionRead the ratio.
	PositionReads        float64 `json:"position_reads"`
	Statements           float64 `json:"position_read_statements"`
	ReadsPerPositionRead float64 `json:"reads_per_position_read"`
	// Unvouched counts strong reads sent to the primary because that was not learnt in
	// time.
	Unvouched float64 `json:"unvouched"`
	// WaitMeanMs is the mean time to learn it (gatekeeper_causal_wait_follower_seconds).
	WaitMeanMs float64 `json:"wait_mean_ms"`
	// CacheHits are the reads the result cache answered, with the cache on.
	CacheHits float64 `json:"cache_hits,omitempty"`
}

// kindCount is the reads of one kind and those that failed each check.
type kindCount struct {
	Reads     int64 `json:"reads"`
	Stale     int64 `json:"stale"`
	OwnMisses int64 `json:"own_write_misses"`
	Monotonic int64 `json:"monotonic_violations"`
}

// allKinds is the key of Latency for every read.
const allKinds = "all"

// setCounts fills in what the clients counted in t.
func (c *counts) setCounts(t *tally) {
	c.Reads, c.Stale, c.OwnWriteMisses, c.MonotonicViolations = t.totals()
	c.Writes, c.Transactions = t.writes.Load(), t.transactions.Load()
	c.OwnWriteChecks = t.reads[kindOwn].Load() + t.reads[kindSession].Load()
	c.ByKind = map[string]kindCount{}
	for k := range numKinds {
		c.ByKind[k.String()] = kindCount{Reads: t.reads[k].Load(), Stale: t.stale[k].Load(),
			OwnMisses: t.ownMisses[k].Load(), Monotonic: t.backwards[k].Load()}
	}
	byKind, all := t.latencies()
	c.Latency = map[string]quantiles{allKinds: all.summary()}
	for k := range numKinds {
		if byKind[k].total > 0 {
			c.Latency[k.String()] = byKind[k].summary()
		}
	}
	c.Errors, c.ErrorMessages, c.WriteRetries = t.errorsByKey()
	for _, n := range c.Errors {
		c.ErrorsTotal += n
	}
	if ops := c.Reads + c.Writes + c.ErrorsTotal; ops > 0 {
		c.ErrorShare = float64(c.ErrorsTotal) / float64(ops)
	}
}

// setCounts fills in what the clients did, over the whole run.
func (r *result) setCounts(t *tally, elapsed time.Duration) {
	r.DurationS = elapsed.Seconds()
	r.counts.setCounts(t)
	t.mu.Lock()
	r.Examples = slices.Clone(t.examples)
	t.mu.Unlock()
	if r.Examples == nil {
		r.Examples = []example{}
	}
}

// setReads fills in the proxy's reads by backend and reason, and the share that backends
// other than primary served.
func (c *counts) setReads(reads map[route]float64, primary string) {
	c.ReadsByBackend = map[string]map[string]float64{}
	for k, n := range reads {
		if c.ReadsByBackend[k.backend] == nil {
			c.ReadsByBackend[k.backend] = map[string]float64{}
		}
		c.ReadsByBackend[k.backend][k.reason] += n
	}
	if share, ok := elsewhere(reads, primary); ok {
		c.ReplicaShare = &share
	} else {
		c.MetricsNote = readsMetric + " counted no reads during the run"
	}
}

// newHorizonCounts is what the scalar series counted between two scrapes of one proxy; nil
// when the proxy has no position reads (its strong rule counts its own writes only).
func newHorizonCounts(before, after map[string]float64) *horizonCounts {
	if _, ok := after[positionReadsMetric]; !ok {
		return nil
	}
	d := func(name string) float64 { return after[name] - before[name] }
	h := &horizonCounts{PositionReads: d(positionReadsMetric), Statements: d(positionServedMetric),
		Unvouched: d(unvouchedMetric), CacheHits: d(cacheHitsMetric)}
	if h.PositionReads > 0 {
		h.ReadsPerPositionRead = h.Statements / h.PositionReads
	}
	if n := d(followerWaitCountMetric); n > 0 {
		h.WaitMeanMs = 1000 * d(followerWaitSumMetric) / n
	}
	return h
}

// writeSummary writes the result for a person to read.
func (r *result) writeSummary(w io.Writer) {
	mode := r.Flags["consistency"]
	if mode == "" {
		mode = "none given"
	}
	fmt.Fprintf(w, "staleread: %d reads, %d writes (%d of them transactions of two rows) in %.1fs; consistency comment: %s\n",
		r.Reads, r.Writes, r.Transactions, r.DurationS, mode)
	if r.Interrupted {
		fmt.Fprintln(w, "  interrupted: these are the counts of the part that ran")
	}
	fmt.Fprintf(w, "  stale reads:                %d\n", r.Stale)
	fmt.Fprintf(w, "  own-write misses:           %d of %d reads of the session's own write (same connection %d, pair with session key %d)\n",
		r.OwnWriteMisses, r.OwnWriteChecks, r.ByKind[kindOwn.String()].OwnMisses, r.ByKind[kindSession.String()].OwnMisses)
	fmt.Fprintf(w, "  monotonic-read violations:  %d\n", r.MonotonicViolations)
	fmt.Fprintf(w, "  errors:                     %d (%.2f%% of operations)", r.ErrorsTotal, 100*r.ErrorShare)
	if len(r.Errors) > 0 {
		fmt.Fprintf(w, ", by error number: %s", listCounts(r.Errors))
	}
	fmt.Fprintln(w)
	if len(r.WriteRetries) > 0 {
		fmt.Fprintf(w, "  writes retried:             %s (deadlock 1213, lock wait timeout 1205)\n", listCounts(r.WriteRetries))
	}
	if r.LagInjections > 0 {
		fmt.Fprintf(w, "  lag injections:             %d\n", r.LagInjections)
	}
	switch {
	case r.ReplicaShare != nil:
		fmt.Fprintf(w, "  replica share:              %.1f%% of the proxy's reads served by backends other than %s\n",
			100**r.ReplicaShare, r.Flags["primary"])
	case r.MetricsNote != "":
		fmt.Fprintf(w, "  replica share:              not measured: %s\n", r.MetricsNote)
	}
	r.writeByBackend(w)
	if l, ok := r.Latency[allKinds]; ok && l.N > 0 {
		fmt.Fprintf(w, "  read latency:               p50 %.3f ms, p95 %.3f ms, p99 %.3f ms\n", l.P50ms, l.P95ms, l.P99ms)
	}
	if len(r.Arms) > 1 || (len(r.Arms) == 1 && r.Arms[0].Strong != nil) {
		for _, a := range r.Arms {
			a.write(w)
		}
	}
	r.writeByKind(w)
	for _, e := range r.Examples {
		e.write(w)
	}
	for _, k := range slices.Sorted(maps.Keys(r.ErrorMessages)) {
		fmt.Fprintf(w, "  first error %s: %s\n", k, r.ErrorMessages[k])
	}
}

// write is the example's line in the summary.
func (e example) write(w io.Writer) {
	fmt.Fprintf(w, "  example %s: %s read of %s id %d got %d; acknowledged before it was sent: %d",
		e.Check, e.Kind, e.Table, e.ID, e.Got, e.Acked)
	if e.Own > 0 {
		fmt.Fprintf(w, ", the session's own write: %d", e.Own)
	}
	if e.Seen != nil {
		fmt.Fprintf(w, ", read on this connection before: %d", *e.Seen)
	}
	fmt.Fprintln(w)
}

// write is the arm's line in the summary.
func (a armResult) write(w io.Writer) {
	share := "not measured"
	if a.ReplicaShare != nil {
		share = fmt.Sprintf("%.1f%%", 100**a.ReplicaShare)
	}
	l := a.Latency[allKinds]
	fmt.Fprintf(w, "  arm %s: %d phases, %.1fs, %d reads (%.0f/s), %d stale, replica share %s, read p50 %.3f ms p95 %.3f ms",
		a.Name, a.Phases, a.ActiveS, a.Reads, a.ReadsPerSecond, a.Stale, share, l.P50ms, l.P95ms)
	if h := a.Strong; h != nil {
		fmt.Fprintf(w, "; %.0f position reads served %.0f strong reads (%.2f each), %.0f unvouched, %.3f ms mean wait",
			h.PositionReads, h.Statements, h.ReadsPerPositionRead, h.Unvouched, h.WaitMeanMs)
		if h.CacheHits > 0 {
			fmt.Fprintf(w, "; %.0f answered from the result cache", h.CacheHits)
		}
	}
	fmt.Fprintln(w)
}

func (r *result) writeByKind(w io.Writer) {
	fmt.Fprintf(w, "  %-9s %9s %7s %9s %10s\n", "kind", "reads", "stale", "own-miss", "monotonic")
	for k := range numKinds {
		c := r.ByKind[k.String()]
		fmt.Fprintf(w, "  %-9s %9d %7d %9d %10d\n", k, c.Reads, c.Stale, c.OwnMisses, c.Monotonic)
	}
}

func (r *result) writeByBackend(w io.Writer) {
	for _, b := range slices.Sorted(maps.Keys(r.ReadsByBackend)) {
		reasons := r.ReadsByBackend[b]
		var parts []string
		for _, reason := range slices.Sorted(maps.Keys(reasons)) {
			parts = append(parts, fmt.Sprintf("%s %.0f", cmp.Or(reason, `""`), reasons[reason]))
		}
		fmt.Fprintf(w, "  reads on %s: %s\n", b, strings.Join(parts, ", "))
	}
}

// listCounts is "key: n, key: n" in key order.
func listCounts(m map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// writeJSON writes the result to path.
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
