package main

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// arm is one proxy compared: the clients' connections to it and where its figures are.
type arm struct {
	name  string
	db    *sql.DB
	conns []*sql.Conn
	admin string
	pid   int
	// tally is what its clients saw over the measured phases, per kind.
	tally []kindTally
	// active is how long its measured phases lasted, together.
	active time.Duration
}

// kindTally is what the clients saw of one kind of read.
type kindTally struct {
	requests, errors int64
	latency          time.Duration
	// bytes are the column bytes of the rows returned.
	bytes int64
	// firstError is the first failure's message.
	firstError string
}

func (t *kindTally) add(o kindTally) {
	t.requests += o.requests
	t.errors += o.errors
	t.latency += o.latency
	t.bytes += o.bytes
	if t.firstError == "" {
		t.firstError = o.firstError
	}
}

// openArm opens clients connections to the arm's proxy, each kept for the whole run.
func openArm(ctx context.Context, name, dsn, admin string, pid, clients, kinds int) (*arm, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("arm %s: --dsn: %w", name, err)
	}
	cfg.Timeout = 10 * time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("arm %s: %w", name, err)
	}
	a := &arm{name: name, db: sql.OpenDB(connector), admin: admin, pid: pid, tally: make([]kindTally, kinds)}
	a.db.SetMaxOpenConns(clients)
	a.db.SetMaxIdleConns(clients)
	a.db.SetConnMaxLifetime(0)
	for range clients {
		c, err := a.db.Conn(ctx)
		if err == nil {
			err = c.PingContext(ctx)
		}
		if err != nil {
			a.close()
			return nil, fmt.Errorf("arm %s: connect to %s: %w", name, cfg.Addr, err)
		}
		a.conns = append(a.conns, c)
	}
	return a, nil
}

func (a *arm) close() {
	for _, c := range a.conns {
		c.Close()
	}
	a.db.Close()
}

// drive sends the requests, each client taking the next one when its last is answered,
// and returns how long they took and what the clients saw, per kind.
func (a *arm) drive(ctx context.Context, kinds []kind, reqs []request) (time.Duration, []kindTally) {
	var next atomic.Int64
	tallies := make([][]kindTally, len(a.conns))
	var wg sync.WaitGroup
	began := time.Now()
	for i, c := range a.conns {
		tallies[i] = make([]kindTally, len(kinds))
		wg.Go(func() { // ends when the requests are taken or ctx is done
			var scan []any
			var cols []sql.RawBytes
			for ctx.Err() == nil {
				j := next.Add(1) - 1
				if j >= int64(len(reqs)) {
					return
				}
				r := reqs[j]
				t := &tallies[i][r.kind]
				start := time.Now()
				n, err := read(ctx, c, kinds[r.kind].text(int(r.key)), &scan, &cols)
				t.latency += time.Since(start)
				t.requests++
				t.bytes += n
				if err != nil {
					t.errors++
					if t.firstError == "" {
						t.firstError = err.Error()
					}
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(began)
	sum := make([]kindTally, len(kinds))
	for _, per := range tallies {
		for k := range sum {
			sum[k].add(per[k])
		}
	}
	return took, sum
}

// read runs a text query and reads its rows through, keeping nothing; it returns the
// bytes of the columns it read. scan and cols are reused between calls.
func read(ctx context.Context, c *sql.Conn, text string, scan *[]any, cols *[]sql.RawBytes) (int64, error) {
	rows, err := c.QueryContext(ctx, text)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	if len(*cols) != len(names) {
		*cols = make([]sql.RawBytes, len(names))
		*scan = make([]any, len(names))
		for i := range *cols {
			(*scan)[i] = &(*cols)[i]
		}
	}
	var n int64
	for rows.Next() {
		if err := rows.Scan(*scan...); err != nil {
			return n, err
		}
		for _, b := range *cols {
			n += int64(len(b))
		}
	}
	return n, rows.Err()
}
