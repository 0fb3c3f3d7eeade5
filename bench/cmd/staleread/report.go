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

	// Errors counts failed operations by MySQL error number, or "other"; ErrorMessages has
	// the first message of each. WriteRetries counts writes tried again after 1213 or 1205.
	Errors        map[string]int64  `json:"errors"`
	ErrorMessages map[string]string `json:"error_messages,omitempty"`
	ErrorsTotal   int64             `json:"errors_total"`
	ErrorShare    float64           `json:"error_share"`
	WriteRetries  map[string]int64  `json:"write_retries"`

	LagInjections int `json:"lag_injections"`
	// ReplicaShare is the share of the proxy's reads (its units other than writes) served by
	// backends other than the primary over the run; null when not measured (MetricsNote
	// says why).
	ReplicaShare   *float64                      `json:"replica_share"`
	ReadsByBackend map[string]map[string]float64 `json:"reads_by_backend,omitempty"`
	MetricsNote    string                        `json:"metrics_note,omitempty"`

	Examples []example `json:"examples"`
	// Interrupted is set when a signal ended the run early.
	Interrupted bool `json:"interrupted,omitempty"`
}

// kindCount is the reads of one kind and those that failed each check.
type kindCount struct {
	Reads     int64 `json:"reads"`
	Stale     int64 `json:"stale"`
	OwnMisses int64 `json:"own_write_misses"`
	Monotonic int64 `json:"monotonic_violations"`
}

// setCounts fills in what the clients did.
func (r *result) setCounts(t *tally, elapsed time.Duration) {
	r.DurationS = elapsed.Seconds()
	r.Reads, r.Stale, r.OwnWriteMisses, r.MonotonicViolations = t.totals()
	r.Writes, r.Transactions = t.writes.Load(), t.transactions.Load()
	r.OwnWriteChecks = t.reads[kindOwn].Load() + t.reads[kindSession].Load()
	r.ByKind = map[string]kindCount{}
	for k := range numKinds {
		r.ByKind[k.String()] = kindCount{Reads: t.reads[k].Load(), Stale: t.stale[k].Load(),
			OwnMisses: t.ownMisses[k].Load(), Monotonic: t.backwards[k].Load()}
	}
	r.Errors, r.ErrorMessages, r.WriteRetries = t.errorsByKey()
	for _, n := range r.Errors {
		r.ErrorsTotal += n
	}
	if ops := r.Reads + r.Writes + r.ErrorsTotal; ops > 0 {
		r.ErrorShare = float64(r.ErrorsTotal) / float64(ops)
	}
	t.mu.Lock()
	r.Examples = slices.Clone(t.examples)
	t.mu.Unlock()
	if r.Examples == nil {
		r.Examples = []example{}
	}
}

// setReads fills in the proxy's reads by backend and reason, and the share that backends
// other than primary served.
func (r *result) setReads(reads map[route]float64, primary string) {
	r.ReadsByBackend = map[string]map[string]float64{}
	for k, n := range reads {
		if r.ReadsByBackend[k.backend] == nil {
			r.ReadsByBackend[k.backend] = map[string]float64{}
		}
		r.ReadsByBackend[k.backend][k.reason] += n
	}
	if share, ok := elsewhere(reads, primary); ok {
		r.ReplicaShare = &share
	} else {
		r.MetricsNote = readsMetric + " counted no reads during the run"
	}
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
