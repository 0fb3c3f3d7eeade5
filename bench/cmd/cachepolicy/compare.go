package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/procstat"
)

// compare runs the warm-up on each arm, then the measured phases, the arms taking turns,
// and returns what each did.
func compare(ctx context.Context, arms []*arm, kinds []kind, tr []request, costs []time.Duration, o options,
	stderr io.Writer) (*result, error) {
	res := newResult(o, kinds, costs)
	if o.warmup > 0 {
		for _, a := range arms {
			took, t := a.drive(ctx, kinds, tr[:o.warmup])
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			fmt.Fprintf(stderr, "cachepolicy: %s: warm-up, %d requests in %s (%d failed)\n",
				a.name, o.warmup, took.Round(time.Millisecond), sumErrors(t))
		}
	}
	first := make([][]admin.CacheTypeStats, len(arms))
	for i, a := range arms {
		c, err := cacheReport(ctx, a.admin)
		if err != nil {
			return nil, fmt.Errorf("arm %s: %w", a.name, err)
		}
		first[i] = c.Types
	}
	for p := range o.phases {
		seg := tr[o.warmup+p*o.requests : o.warmup+(p+1)*o.requests]
		for _, i := range phaseOrder(len(arms), p) {
			ph, err := runPhase(ctx, arms[i], kinds, seg, p+1)
			if err != nil {
				return nil, err
			}
			res.Phases = append(res.Phases, ph)
			fmt.Fprintf(stderr, "cachepolicy: phase %d/%d, %s: %d requests in %.1fs, hit ratio %.1f%%, %.3f s of database time saved a second\n",
				p+1, o.phases, ph.Arm, ph.Requests, ph.Seconds, 100*ph.hitRatio(), ph.savedPerSecond())
		}
	}
	for i, a := range arms {
		ar, err := a.result(ctx, kinds, first[i], res.Phases)
		if err != nil {
			return nil, err
		}
		ar.CalibratedSavedSeconds = res.Workload.calibratedSaved(ar.Kinds)
		res.Arms = append(res.Arms, ar)
	}
	return res, nil
}

// phaseOrder is the order in which the arms run phase p: as given in even phases,
// reversed in odd ones, so that no arm always runs first.
func phaseOrder(arms, p int) []int {
	order := make([]int, arms)
	for i := range order {
		order[i] = i
	}
	if p%2 == 1 {
		slices.Reverse(order)
	}
	return order
}

// runPhase runs one phase of the arm, reading its cache counters before and after.
func runPhase(ctx context.Context, a *arm, kinds []kind, seg []request, phase int) (phaseResult, error) {
	before, err := scrape(ctx, a.admin)
	if err != nil {
		return phaseResult{}, fmt.Errorf("arm %s: %w", a.name, err)
	}
	took, t := a.drive(ctx, kinds, seg)
	if err := ctx.Err(); err != nil {
		return phaseResult{}, err
	}
	after, err := scrape(ctx, a.admin)
	if err != nil {
		return phaseResult{}, fmt.Errorf("arm %s: %w", a.name, err)
	}
	a.active += took
	for k := range a.tally {
		a.tally[k].add(t[k])
	}
	return phaseResult{
		Arm: a.name, Phase: phase, Seconds: took.Seconds(), Requests: int64(len(seg)), Errors: sumErrors(t),
		Hits: after.since(before, hitsMetric), Misses: after.since(before, missesMetric),
		SavedSeconds: after.since(before, savedMetric),
	}, nil
}

func sumErrors(t []kindTally) int64 {
	var n int64
	for _, k := range t {
		n += k.errors
	}
	return n
}

// result sums the arm's measured phases, and reads its cache and memory at the end;
// first is its per-type figures when the measured phases began.
func (a *arm) result(ctx context.Context, kinds []kind, first []admin.CacheTypeStats, phases []phaseResult) (armResult, error) {
	r := armResult{Name: a.name, ActiveSeconds: a.active.Seconds()}
	for _, p := range phases {
		if p.Arm == a.name {
			r.Requests += p.Requests
			r.Errors += p.Errors
			r.Hits += p.Hits
			r.Misses += p.Misses
			r.SavedSeconds += p.SavedSeconds
		}
	}
	end, err := scrape(ctx, a.admin)
	if err != nil {
		return r, fmt.Errorf("arm %s: %w", a.name, err)
	}
	r.CacheBytes, r.CacheEntries, r.Evictions = end[bytesMetric], end[entriesMetric], end[evictionsMetric]
	r.HeapInuseBytes = end[heapInuseMetric]
	last, err := cacheReport(ctx, a.admin)
	if err != nil {
		return r, fmt.Errorf("arm %s: %w", a.name, err)
	}
	r.MaxBytes = last.MaxBytes
	r.Kinds = kindResults(kinds, a.tally, typesSince(kinds, last.Types, first))
	for _, k := range r.Kinds {
		if r.FirstError == "" {
			r.FirstError = k.FirstError
		}
	}
	if a.pid > 0 {
		if r.RSSBytes, err = procBytes(a.pid, "VmRSS"); err != nil {
			return r, fmt.Errorf("arm %s: --pid: %w", a.name, err)
		}
		if r.PeakRSSBytes, err = procBytes(a.pid, "VmHWM"); err != nil {
			return r, fmt.Errorf("arm %s: --pid: %w", a.name, err)
		}
	}
	return r, nil
}

// typeCounts is what the cache did for one kind's statements.
type typeCounts struct {
	lookups, hits uint64
	saved         float64
}

// typesSince sums, per kind, what /api/v1/cache's types counted between first and last,
// two reads of the same proxy; a type that is no kind's is left out.
func typesSince(kinds []kind, last, first []admin.CacheTypeStats) []typeCounts {
	before := map[string]admin.CacheTypeStats{}
	for _, t := range first {
		before[t.Type] = t
	}
	per := make([]typeCounts, len(kinds))
	for _, t := range last {
		k := kindOf(kinds, t.Sample)
		if k < 0 {
			continue
		}
		b := before[t.Type]
		per[k].lookups += t.Lookups - b.Lookups
		per[k].hits += t.Hits - b.Hits
		per[k].saved += t.SavedSeconds - b.SavedSeconds
	}
	return per
}

// procBytes reads a size line of /proc/PID/status, such as VmRSS or VmHWM, in bytes.
func procBytes(pid int, field string) (int64, error) {
	v, err := procstat.Status(pid, field)
	if err != nil {
		return 0, err
	}
	kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/status: %s %q: %w", pid, field, v, err)
	}
	return kb << 10, nil
}
