package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// firstInjection is when, after the run starts, the first lag is injected: soon, so that a
// short run has writes for the held replica to miss.
const firstInjection = time.Second

// controlTimeout bounds each statement that stops or starts replication.
const controlTimeout = 10 * time.Second

// replica is a replica reached directly, to wait for the setup and to hold it back.
type replica struct {
	addr string // for messages: the DSN's address
	db   *sql.DB
}

// replicaSet is the replicas of --replica-dsn and what was done to their replication, so
// that it can be undone. Its methods are called from one goroutine at a time, except that
// injectLag runs beside nothing but the clients.
type replicaSet struct {
	replicas []replica
	log      io.Writer
	// injected is set once a SQL thread may have been stopped; delayed once the first
	// replica's MASTER_DELAY was changed.
	injected, delayed bool
}

// injectLag stops one replica's SQL thread (round robin) for lag every period, the first
// time firstInjection into the run, until ctx is done; it returns how many times it did.
// A replica it stopped is started again before it goes on or returns, whatever ctx says.
// The caller sets injected before it starts injectLag on its own goroutine.
func (rs *replicaSet) injectLag(ctx context.Context, lag, every time.Duration) int {
	timer := time.NewTimer(firstInjection)
	defer timer.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return n
		case <-timer.C:
		}
		timer.Reset(every)
		r := rs.replicas[n%len(rs.replicas)]
		n++
		if err := rs.control(r, "STOP SLAVE SQL_THREAD"); err != nil {
			fmt.Fprintf(rs.log, "staleread: replica %s: %v; no lag injected\n", r.addr, err)
			continue
		}
		fmt.Fprintf(rs.log, "staleread: replica %s: SQL thread stopped for %s\n", r.addr, lag)
		hold := time.NewTimer(lag)
		select {
		case <-ctx.Done():
		case <-hold.C:
		}
		hold.Stop()
		if err := rs.control(r, "START SLAVE SQL_THREAD"); err != nil {
			fmt.Fprintf(rs.log, "staleread: replica %s: %v\n", r.addr, err)
		}
	}
}

// setDelay makes the first replica apply each event seconds after the primary wrote it
// (MASTER_DELAY), restarting its replication.
func (rs *replicaSet) setDelay(seconds int) error {
	rs.delayed = true
	r := rs.replicas[0]
	for _, stmt := range []string{"STOP SLAVE", "CHANGE MASTER TO MASTER_DELAY = " + strconv.Itoa(seconds), "START SLAVE"} {
		if err := rs.control(r, stmt); err != nil {
			return fmt.Errorf("replica %s: %w", r.addr, err)
		}
	}
	return nil
}

// restore undoes what was done to replication: MASTER_DELAY back to 0, and replication
// started on every replica that a lag injection may have stopped. It tries every step and
// returns every error.
func (rs *replicaSet) restore() error {
	var errs []error
	if rs.delayed {
		if err := rs.setDelay(0); err != nil {
			errs = append(errs, err)
		}
	}
	if rs.injected {
		for _, r := range rs.replicas {
			// Running threads stay as they are (a note, not an error).
			if err := rs.control(r, "START SLAVE"); err != nil {
				errs = append(errs, fmt.Errorf("replica %s: %w", r.addr, err))
			}
		}
	}
	return errors.Join(errs...)
}

// control runs a replication statement on r with its own deadline, so that it runs even
// after the run was cancelled.
func (rs *replicaSet) control(r replica, stmt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
	defer cancel()
	if _, err := r.db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

// close closes the replicas' handles.
func (rs *replicaSet) close() {
	for _, r := range rs.replicas {
		r.db.Close()
	}
}
