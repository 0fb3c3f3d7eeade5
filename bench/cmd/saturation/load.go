package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/procstat"
)

// errorBackoff is how long a client waits after a failed statement before its next, so that
// a route that refuses at once (a full queue, a broken proxy) is not asked in a tight loop.
const errorBackoff = 10 * time.Millisecond

// scanQuery reads every row of the table: k has no index, so the sum is a full scan (about
// 20 ms for 200000 rows on a 2-core EPYC), and its answer is one row whatever the size.
func scanQuery(table string) string {
	return "SELECT SUM(k) FROM " + table
}

// prepare creates the table afresh and fills it with rows rows of about 150 bytes.
func prepare(ctx context.Context, cfg *mysql.Config, table string, rows int) error {
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	for _, stmt := range []string{
		"DROP TABLE IF EXISTS " + table,
		"CREATE TABLE " + table + " (id INT PRIMARY KEY, k INT NOT NULL, pad CHAR(120) NOT NULL) ENGINE=InnoDB",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	const batch = 1000
	var b strings.Builder
	for first := 1; first <= rows; first += batch {
		b.Reset()
		b.WriteString("INSERT INTO " + table + " (id, k, pad) VALUES ")
		for id := first; id < first+batch && id <= rows; id++ {
			if id > first {
				b.WriteByte(',')
			}
			n := strconv.Itoa(id)
			fmt.Fprintf(&b, "(%s,%d,'%s')", n, id*7919%rows, strings.Repeat(n+"-", 120/(len(n)+1)))
		}
		if _, err := db.ExecContext(ctx, b.String()); err != nil {
			return fmt.Errorf("insert rows from %d: %w", first, err)
		}
	}
	return nil
}

// window is the measured period: what ends in [from, to) is counted.
type window struct{ from, to time.Time }

func (w window) contains(t time.Time) bool { return !t.Before(w.from) && t.Before(w.to) }

// client runs one statement in a loop on a connection of its own, and keeps the response
// times of those that end in the measured period. Only its own goroutine touches it until
// that goroutine has ended.
type client struct {
	db     *sql.DB
	conn   *sql.Conn
	query  string
	window window
	// every, when positive, paces the loop: a statement starts every every, on a fixed
	// schedule from the first; one that ends past its successor's start is followed at
	// once, and the schedule starts again from then.
	every time.Duration
	// latencies are the response times of the statements that succeeded in the window;
	// errors count those that failed in it, by reason.
	latencies []time.Duration
	errors    map[string]int
}

// loop runs the statement until the measured period is over, then returns once the one
// running has ended (or ctx, which bounds the drain, is done). A connection that breaks is
// opened again.
func (c *client) loop(ctx context.Context) {
	defer func() {
		if c.conn != nil {
			c.conn.Close()
		}
	}()
	var n int64
	var next time.Time
	for ctx.Err() == nil && time.Now().Before(c.window.to) {
		if c.every > 0 && !c.wait(ctx, &next) {
			return
		}
		if c.conn == nil {
			conn, err := c.db.Conn(ctx)
			if err != nil {
				c.failed(ctx, time.Now(), err)
				continue
			}
			c.conn = conn
		}
		began := time.Now()
		err := c.conn.QueryRowContext(ctx, c.query).Scan(&n)
		ended := time.Now()
		if err == nil {
			if c.window.contains(ended) {
				c.latencies = append(c.latencies, ended.Sub(began))
			}
			continue
		}
		var server *mysql.MySQLError
		if !errors.As(err, &server) { // not the server's or the proxy's answer: the connection is suspect
			c.conn.Close()
			c.conn = nil
		}
		c.failed(ctx, ended, err)
	}
}

// wait sleeps until *next, the start of the pacing schedule's next statement, and moves it
// on by c.every (from now, when the schedule has fallen behind). It reports false when ctx
// ended first.
func (c *client) wait(ctx context.Context, next *time.Time) bool {
	now := time.Now()
	if next.Before(now) {
		*next = now
	}
	start := *next
	*next = start.Add(c.every)
	if d := start.Sub(now); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// failed counts an error that ended at t, if in the window, and waits errorBackoff.
func (c *client) failed(ctx context.Context, t time.Time, err error) {
	if ctx.Err() != nil {
		return
	}
	if c.window.contains(t) {
		c.errors[reason(err)]++
	}
	select {
	case <-time.After(errorBackoff):
	case <-ctx.Done():
	}
}

// reason is a bounded name for an error: the MySQL error number, or its kind.
func reason(err error) string {
	var server *mysql.MySQLError
	switch {
	case errors.As(err, &server):
		return strconv.Itoa(int(server.Number))
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "cancelled"
	default:
		return "connection"
	}
}

// result is one run against one route.
type result struct {
	Route  string
	Round  int
	Short  summary // the quick statements that succeeded in the measured period
	Scans  summary // the scans that succeeded in it
	Period time.Duration
	// ShortErrors and ScanErrors count the statements that failed in it.
	ShortErrors, ScanErrors int
	Errors                  map[string]int // both kinds, by reason
	// ProxyCPU is the proxy's processor time over the period; HasProxy false when none
	// was named.
	ProxyCPU time.Duration
	HasProxy bool
}

// load connects the clients, runs them and returns what the measured period saw.
func load(ctx context.Context, o options, stderr io.Writer) (result, error) {
	res := result{Route: o.route, Round: o.round, Period: o.duration, Errors: map[string]int{}}
	if o.proxyPID > 0 {
		if _, err := procstat.CPU(o.proxyPID); err != nil {
			return res, fmt.Errorf("--proxy-pid: %w", err)
		}
		res.HasProxy = true
	}
	connector, err := mysql.NewConnector(o.config())
	if err != nil {
		return res, err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	db.SetMaxIdleConns(0) // a connection a client gives back is closed, not kept for another

	clients := make([]*client, o.scanClients+o.shortClients)
	for i := range clients {
		clients[i] = &client{db: db, query: o.scanQuery, errors: map[string]int{}}
		if i >= o.scanClients {
			clients[i].query, clients[i].every = o.shortQuery, o.shortInterval
		}
	}
	if err := connect(ctx, clients, o.connectAtOnce); err != nil {
		for _, c := range clients {
			if c.conn != nil {
				c.conn.Close()
			}
		}
		return res, err
	}
	start := time.Now()
	w := window{from: start.Add(o.warmup), to: start.Add(o.warmup + o.duration)}
	fmt.Fprintf(stderr, "saturation: %s: %d scan and %d short clients connected; measuring %s after %s\n",
		o.route, o.scanClients, o.shortClients, o.duration, o.warmup)

	// The clients' context ends when the drain does, or with ctx.
	runCtx, cancel := context.WithDeadline(ctx, w.to.Add(o.drain))
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range clients {
		c.window = w
		wg.Go(func() { c.loop(runCtx) }) // ends after the window, once its statement has
	}
	var cpu0, cpu1 time.Duration
	if res.HasProxy {
		if cpu0, err = cpuAt(ctx, o.proxyPID, w.from); err == nil {
			cpu1, err = cpuAt(ctx, o.proxyPID, w.to)
		}
		res.ProxyCPU = cpu1 - cpu0
	}
	wg.Wait()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if err != nil {
		return res, fmt.Errorf("--proxy-pid: %w", err)
	}

	var short, scans []time.Duration
	for i, c := range clients {
		n := 0
		for k, v := range c.errors {
			res.Errors[k] += v
			n += v
		}
		if i < o.scanClients {
			scans = append(scans, c.latencies...)
			res.ScanErrors += n
		} else {
			short = append(short, c.latencies...)
			res.ShortErrors += n
		}
	}
	res.Short, res.Scans = summarize(short), summarize(scans)
	fmt.Fprintf(stderr, "saturation: %s round %d: short %d, mean %s, p50 %s, p95 %s; scans %.1f/s, mean %s; errors %v\n",
		o.route, o.round, res.Short.Count, ms(res.Short.Mean), ms(res.Short.P50), ms(res.Short.P95),
		res.scansPerSecond(), ms(res.Scans.Mean), res.Errors)
	return res, nil
}

// connect opens every client's connection, at most atOnce at a time.
func connect(ctx context.Context, clients []*client, atOnce int) error {
	sem := make(chan struct{}, atOnce)
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		sem <- struct{}{}
		wg.Go(func() { // ends once connected or refused
			defer func() { <-sem }()
			c.conn, errs[i] = c.db.Conn(ctx)
			if errs[i] == nil {
				errs[i] = c.conn.PingContext(ctx)
			}
		})
	}
	wg.Wait()
	failed := 0
	var first error
	for _, err := range errs {
		if err != nil {
			failed++
			first = cmp.Or(first, err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d clients could not connect, the first: %w", failed, len(clients), first)
	}
	return nil
}

// cpuAt waits until t and reads the processor time of pid then.
func cpuAt(ctx context.Context, pid int, t time.Time) (time.Duration, error) {
	select {
	case <-time.After(time.Until(t)):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return procstat.CPU(pid)
}

func (r result) scansPerSecond() float64 { return float64(r.Scans.Count) / r.Period.Seconds() }

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/1e6) }
