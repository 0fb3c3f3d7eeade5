package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Backoff between a client's attempts to connect: doubled after each failure up to the
// most, with jitter, so that clients refused together do not come back together.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// workload is the unit of work every client repeats.
type workload struct {
	readOnly bool
	rows     int
	// selects and updates hold each table's statements, built once.
	selects, updates []string
}

func newWorkload(tables, rows int, readOnly bool) workload {
	w := workload{readOnly: readOnly, rows: rows}
	for t := range tables {
		name := tableName(t)
		w.selects = append(w.selects, "SELECT v FROM "+name+" WHERE id=?")
		w.updates = append(w.updates, "UPDATE "+name+" SET v=v+1 WHERE id=?")
	}
	return w
}

// client is one application connection: it connects once and keeps its connection for the
// whole run, thinking between units as an application's pooled connection would sit idle
// between requests.
type client struct {
	db    *sql.DB
	w     workload
	think time.Duration
	rng   *rand.Rand
	tally *tally
	timer *time.Timer
}

// run connects, then thinks and runs a unit, again and again, until ctx is done. A failed
// connection attempt is counted and tried again after a backoff; a connection that breaks
// is closed and opened again.
func (c *client) run(ctx context.Context) {
	c.timer = time.NewTimer(time.Hour)
	c.timer.Stop()
	var conn *sql.Conn
	defer func() {
		if conn != nil {
			conn.Close()
			c.tally.connected.Add(-1)
		}
	}()
	backoff := minBackoff
	for ctx.Err() == nil {
		if conn == nil {
			var err error
			if conn, err = c.db.Conn(ctx); err != nil {
				conn = nil
				if ctx.Err() != nil {
					return
				}
				c.tally.connectFailed(err.Error())
				if !c.sleep(ctx, backoff/2+rand.N(backoff/2+1)) {
					return
				}
				backoff = min(2*backoff, maxBackoff)
				continue
			}
			backoff = minBackoff
			c.tally.connected.Add(1)
		}
		if !c.sleep(ctx, thinkTime(c.rng, c.think)) {
			return
		}
		start := time.Now()
		err := c.unit(ctx, conn)
		if ctx.Err() != nil {
			return // the run ended during the unit, which is not counted
		}
		if err == nil {
			c.tally.done(time.Since(start))
			continue
		}
		key, message, serverSaid := classify(err)
		c.tally.failed(key, message)
		// The server answered with an error: the connection is sound, once whatever is left
		// of the transaction is rolled back (or the server answers the rollback with an
		// error too). Anything else leaves it in no known state.
		if serverSaid && (c.w.readOnly || c.rollback(ctx, conn)) {
			continue
		}
		conn.Close()
		conn = nil
		c.tally.connected.Add(-1)
		c.tally.reconnects.Add(1)
	}
}

// unit runs one unit of work on a random row of a random table: a short transaction that
// reads the row and updates it, or with --read-only one autocommit point select.
func (c *client) unit(ctx context.Context, conn *sql.Conn) error {
	t := c.rng.IntN(len(c.w.selects))
	id := 1 + c.rng.IntN(c.w.rows)
	var v int64
	if c.w.readOnly {
		return conn.QueryRowContext(ctx, c.w.selects[t], id).Scan(&v)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return err
	}
	if err := conn.QueryRowContext(ctx, c.w.selects[t], id).Scan(&v); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, c.w.updates[t], id); err != nil {
		return err
	}
	_, err := conn.ExecContext(ctx, "COMMIT")
	return err
}

// rollback ends whatever is left of a failed unit's transaction; it reports whether the
// connection is still sound: the server answered, with OK or with an error.
func (c *client) rollback(ctx context.Context, conn *sql.Conn) bool {
	_, err := conn.ExecContext(ctx, "ROLLBACK")
	var me *mysql.MySQLError
	return err == nil || errors.As(err, &me)
}

// sleep waits d, or less if ctx is done first; it reports whether ctx is still live.
func (c *client) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	c.timer.Reset(d)
	select {
	case <-c.timer.C:
		return true
	case <-ctx.Done():
		c.timer.Stop()
		return false
	}
}

// classify names an error by its MySQL error number, or "other" when the server did not
// send one (a broken connection, a missing row); serverSaid reports the former.
func classify(err error) (key, message string, serverSaid bool) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return strconv.Itoa(int(me.Number)), me.Message, true
	}
	if errors.Is(err, sql.ErrNoRows) {
		return "other", fmt.Sprintf("%v (were the tables prepared with these --tables and --rows?)", err), true
	}
	return "other", err.Error(), false
}
