package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/procstat"
)

// sampleEvery is how often the proxy's memory is read during a flood.
const sampleEvery = time.Second

// statement appends statement i of the flood to b: a point select of cf_t that no other i
// sends.
func statement(b []byte, i int64, rows int) []byte {
	b = append(b, "SELECT id, pad FROM cf_t WHERE id = "...)
	b = strconv.AppendInt(b, i%int64(rows)+1, 10)
	b = append(b, " AND "...)
	b = strconv.AppendInt(b, i, 10)
	b = append(b, " = "...)
	return strconv.AppendInt(b, i, 10)
}

// flood sends the statements through arm i, reading its memory as it goes and at the
// end.
func flood(ctx context.Context, o options, i int, stderr io.Writer) (armResult, error) {
	name, admin, pid := o.arms[i], o.admins[i], o.pids[i]
	db, conns, err := openConns(ctx, o.dsns[i], o.connections)
	if err != nil {
		return armResult{}, err
	}
	defer db.Close()
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var c counts
	floodCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	began := time.Now()
	for _, conn := range conns {
		wg.Go(func() { c.send(floodCtx, conn, o.statements, o.rows) }) // ends when the statements are sent or ctx is done
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }() // ends when the clients have

	r := armResult{Name: name}
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	lastLine := began
	for sending := true; sending; {
		select {
		case <-done:
			sending = false
		case <-ctx.Done():
			cancel()
			<-done
			return r, ctx.Err()
		case <-tick.C:
			s, err := sampleMemory(ctx, admin, pid)
			if err != nil {
				cancel()
				<-done
				return r, fmt.Errorf("during the flood: %w", err)
			}
			r.MaxSampledRSSBytes = max(r.MaxSampledRSSBytes, s.rss)
			r.MaxHeapInuseBytes = max(r.MaxHeapInuseBytes, s.series[heapInuseMetric])
			if time.Since(lastLine) >= o.progress {
				lastLine = time.Now()
				fmt.Fprintln(stderr, progressLine(name, c.sent.Load(), o.statements, c.errors.Load(), time.Since(began), s))
			}
		}
	}
	r.Seconds = time.Since(began).Seconds()
	r.Sent, r.Errors = c.sent.Load(), c.errors.Load()
	if p := c.firstError.Load(); p != nil {
		r.FirstError = *p
	}
	s, err := sampleMemory(ctx, admin, pid)
	if err != nil {
		return r, fmt.Errorf("after the flood: %w", err)
	}
	if r.PeakRSSBytes, err = procBytes(pid, "VmHWM"); err != nil {
		return r, err
	}
	r.setEnd(s)
	fmt.Fprintln(stderr, progressLine(name, r.Sent, o.statements, r.Errors, time.Since(began), s))
	return r, nil
}

// counts are what the clients of a flood did; they share them.
type counts struct {
	next, sent, errors atomic.Int64
	firstError         atomic.Pointer[string]
}

// send sends statements, taking the next number each time, until all n are taken or ctx
// is done, and keeps nothing of their results.
func (c *counts) send(ctx context.Context, conn *sql.Conn, n int64, rows int) {
	buf := make([]byte, 0, 96)
	var cols [2]sql.RawBytes
	for ctx.Err() == nil {
		i := c.next.Add(1) - 1
		if i >= n {
			return
		}
		buf = statement(buf[:0], i, rows)
		err := query(ctx, conn, string(buf), &cols)
		c.sent.Add(1)
		if err != nil && ctx.Err() == nil {
			c.errors.Add(1)
			msg := err.Error()
			c.firstError.CompareAndSwap(nil, &msg)
		}
	}
}

// query runs a text query of two columns and reads its rows through into cols.
func query(ctx context.Context, conn *sql.Conn, text string, cols *[2]sql.RawBytes) error {
	rows, err := conn.QueryContext(ctx, text)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(&cols[0], &cols[1]); err != nil {
			return err
		}
	}
	return rows.Err()
}

// memorySample is one reading of a proxy's memory: its VmRSS and its memorySeries.
type memorySample struct {
	rss    int64
	series map[string]float64
}

func sampleMemory(ctx context.Context, admin string, pid int) (memorySample, error) {
	rss, err := procBytes(pid, "VmRSS")
	if err != nil {
		return memorySample{}, err
	}
	series, err := scrape(ctx, admin)
	if err != nil {
		return memorySample{}, err
	}
	return memorySample{rss: rss, series: series}, nil
}

// progressLine says how far a flood is and what the proxy holds.
func progressLine(arm string, sent, total, errors int64, took time.Duration, s memorySample) string {
	line := fmt.Sprintf("cacheflood: %s: %d of %d statements (%.0f%%), %.0f/s, %d failed; RSS %.1f MiB, heap in use %.1f MiB",
		arm, sent, total, 100*float64(sent)/float64(total), float64(sent)/took.Seconds(), errors,
		float64(s.rss)/mib, s.series[heapInuseMetric]/mib)
	if b, ok := s.series[cacheBytesMetric]; ok {
		line += fmt.Sprintf(", cache %.1f MiB in %.0f entries, %.0f evicted", b/mib, s.series[cacheEntriesMetric], s.series[evictionsMetric])
	}
	return line
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
