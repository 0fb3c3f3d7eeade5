package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/bookstore"
	"github.com/gatekeeperdb/gatekeeper/internal/capacity"
)

// calibrationLoad is the workload calibrate drives through its proxy.
type calibrationLoad interface {
	fmt.Stringer
	// unit names what is counted: statements or interactions.
	unit() string
	// start connects to dsn, with clients concurrent clients.
	start(ctx context.Context, dsn string, clients int) error
	// measure runs the workload for settle, then measures it for d. The error is the
	// last one of the step, if any failed.
	measure(ctx context.Context, settle, d time.Duration) (capacity.Step, error)
	stop()
}

// newCalibrationLoad returns the workload --workload names: bookstore[:MIX], or a file of
// statements.
func newCalibrationLoad(o calibrateOptions) (calibrationLoad, error) {
	if name, mix, _ := strings.Cut(o.workload, ":"); name == "bookstore" {
		if mix == "" {
			mix = bookstore.DefaultMix
		}
		if _, err := bookstore.MixByName(mix); err != nil {
			return nil, fmt.Errorf("--workload %s: %w", o.workload, err)
		}
		return &bookstoreLoad{mix: mix}, nil
	}
	stmts, err := readWorkload(o.workload)
	if err != nil {
		return nil, err
	}
	return &statementLoad{stmts: stmts}, nil
}

// readWorkload reads statements separated by ; at line ends.
func readWorkload(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--workload: %w", err)
	}
	var out []string
	var cur strings.Builder
	for line := range strings.SplitSeq(string(data), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(t, ";") {
			if s := strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"); s != "" {
				out = append(out, s)
			}
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--workload: no statements found in %s; put one SQL statement per line, ending with ;", path)
	}
	return out, nil
}

// recorder collects the latencies of one step.
type recorder struct {
	mu     sync.Mutex
	lat    []time.Duration
	errs   int
	lastEr error
}

func (r *recorder) add(d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errs++
		r.lastEr = err
		return
	}
	r.lat = append(r.lat, d)
}

// take returns the step measured since the last take, over elapsed; the caller sets its
// capacity.
func (r *recorder) take(elapsed time.Duration) (capacity.Step, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := capacity.Step{Throughput: float64(len(r.lat)) / elapsed.Seconds(), Errors: r.errs}
	if n := len(r.lat); n > 0 {
		slices.Sort(r.lat)
		var sum time.Duration
		for _, d := range r.lat {
			sum += d
		}
		s.Mean, s.P95 = sum/time.Duration(n), r.lat[(n*95-1)/100]
	}
	err := r.lastEr
	r.lat, r.errs, r.lastEr = r.lat[:0], 0, nil
	return s, err
}

// statementLoad runs a file of statements: each client runs them in order from a random
// start, in a loop, without think time.
type statementLoad struct {
	stmts  []string
	db     *sql.DB
	rec    recorder
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (l *statementLoad) String() string { return fmt.Sprintf("%d statements", len(l.stmts)) }
func (l *statementLoad) unit() string   { return "statements" }

func (l *statementLoad) start(ctx context.Context, dsn string, clients int) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(clients)
	db.SetMaxIdleConns(clients)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return err
	}
	l.db = db
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel
	for range clients {
		l.wg.Go(func() { // ends when stop cancels runCtx
			i := rand.IntN(len(l.stmts))
			for runCtx.Err() == nil {
				start := time.Now()
				_, err := db.ExecContext(runCtx, l.stmts[i])
				if runCtx.Err() != nil {
					return
				}
				l.rec.add(time.Since(start), err)
				i = (i + 1) % len(l.stmts)
			}
		})
	}
	return nil
}

func (l *statementLoad) measure(ctx context.Context, settle, d time.Duration) (capacity.Step, error) {
	if err := sleep(ctx, settle); err != nil {
		return capacity.Step{}, err
	}
	_, _ = l.rec.take(settle)
	if err := sleep(ctx, d); err != nil {
		return capacity.Step{}, err
	}
	return l.rec.take(d)
}

func (l *statementLoad) stop() {
	if l.cancel != nil {
		l.cancel()
		l.wg.Wait()
		l.db.Close()
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// bookstoreLoad runs the bookstore benchmark's emulated customers (internal/bookstore) without
// think time, against a database where it is loaded.
type bookstoreLoad struct {
	mix     string
	dsn     string
	clients int
	seed    int64
}

func (l *bookstoreLoad) String() string { return "the bookstore, " + l.mix + " mix" }
func (l *bookstoreLoad) unit() string   { return "interactions" }

func (l *bookstoreLoad) start(ctx context.Context, dsn string, clients int) error {
	l.dsn, l.clients = dsn, clients
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM item").Scan(&n); err != nil || n == 0 {
		return fmt.Errorf("the bookstore is not loaded in the --dsn database (load it with go run ./bench/cmd/bookstore load): %v", err)
	}
	return nil
}

func (l *bookstoreLoad) measure(ctx context.Context, settle, d time.Duration) (capacity.Step, error) {
	l.seed++
	r, err := bookstore.Run(ctx, bookstore.Config{DSN: l.dsn, Mix: l.mix, Clients: l.clients,
		Duration: d, Warmup: settle, Seed: l.seed})
	if err != nil {
		return capacity.Step{}, err
	}
	t := r.Total
	s := capacity.Step{Throughput: t.Throughput, Mean: t.Mean, P95: t.P95, Errors: t.Failed + t.Refused + t.TimedOut}
	if s.Errors > 0 && len(r.Errors) > 0 {
		e := slices.MaxFunc(r.Errors, func(a, b bookstore.ErrorCount) int { return a.Count - b.Count })
		return s, errors.New(e.Class + ": " + e.Message)
	}
	return s, nil
}

func (l *bookstoreLoad) stop() {}
