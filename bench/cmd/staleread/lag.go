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
// schedule runs beside nothing but the clients.
type replicaSet struct {
	replicas []replica
	// primary is where catchUp reads the position the replicas must reach.
	primary *sql.DB
	log     io.Writer
	// injected is set once a SQL thread may have been stopped; delayed once the first
	// replica's MASTER_DELAY was changed.
	injected, delayed bool
}

// catchUpTimeout bounds the wait, at a switch of arms, for the replicas to apply what the
// primary had logged.
const catchUpTimeout = 10 * time.Second

// timetable is what schedule did.
type timetable struct {
	injections, switches int
	// lateCatchUps counts switches at which a replica had not caught up with the primary
	// within catchUpTimeout.
	lateCatchUps int
}

// injection is how lag is injected: every period, one replica's SQL thread (the replicas
// in turn), or with all every replica's at once, is stopped for lag (0: never).
type injection struct {
	lag, period time.Duration
	all         bool
}

// turns is how a run that compares arms moves between them: ph switches the clients from
// one to the next, arms counts them, and enough tells, at a switch, that every arm has had
// its reads.
type turns struct {
	ph     *phases
	arms   int
	enough func() bool
}

// schedule runs the run's timetable until ctx is done, or (t not nil) until the switch at
// which every arm has had its reads, when it ends the run (phases.close): every period, the
// first time firstInjection into the run, the clients move to the next arm (from the second
// period on, when t is not nil), then one replica's SQL thread, or every replica's, is
// stopped for lag (when lag > 0) and started again. At a switch the replicas first apply everything the primary
// had logged, so that each phase begins with every replica holding the writes of the
// phases before it: a proxy that counts only its own writes (proxy_local) is then held to
// the writes made through it, not to those of the arm before it. The replicas are held back
// in turn, each arm seeing each of them (heldReplica). A replica it stopped is started again before it goes on or
// returns, whatever ctx says. The caller sets injected before it starts schedule on its own
// goroutine.
func (rs *replicaSet) schedule(ctx context.Context, inj injection, t *turns) timetable {
	var tt timetable
	arms := 1
	if t != nil {
		arms = t.arms
	}
	timer := time.NewTimer(firstInjection)
	defer timer.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return tt
		case <-timer.C:
		}
		timer.Reset(inj.period)
		if t != nil && n > 0 {
			if t.enough() {
				t.ph.close()
				return tt
			}
			t.ph.next(func() {
				if !rs.catchUp(ctx) {
					tt.lateCatchUps++
				}
			})
			tt.switches++
		}
		if inj.lag <= 0 || len(rs.replicas) == 0 {
			continue
		}
		held := rs.replicas
		if !inj.all {
			held = held[heldReplica(n, arms, len(held)):][:1]
		}
		if rs.hold(ctx, held, inj.lag) {
			tt.injections++
		}
	}
}

// heldReplica is the replica the n-th lag injection holds back, of replicas, in a run of
// arms arms taking a turn at each injection: every arm sees every replica held back in turn.
func heldReplica(n, arms, replicas int) int { return n / arms % replicas }

// hold stops the SQL threads of the held replicas for lag, or until ctx is done, and starts
// them again; it reports whether it stopped any.
func (rs *replicaSet) hold(ctx context.Context, held []replica, lag time.Duration) bool {
	var stopped []replica
	for _, r := range held {
		if err := rs.control(r, "STOP SLAVE SQL_THREAD"); err != nil {
			fmt.Fprintf(rs.log, "staleread: replica %s: %v; no lag injected\n", r.addr, err)
			continue
		}
		fmt.Fprintf(rs.log, "staleread: replica %s: SQL thread stopped for %s\n", r.addr, lag)
		stopped = append(stopped, r)
	}
	if len(stopped) == 0 {
		return false
	}
	t := time.NewTimer(lag)
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	t.Stop()
	for _, r := range stopped {
		if err := rs.control(r, "START SLAVE SQL_THREAD"); err != nil {
			fmt.Fprintf(rs.log, "staleread: replica %s: %v\n", r.addr, err)
		}
	}
	return true
}

// catchUp waits until every replica has applied what the primary had logged when it was
// called (MASTER_GTID_WAIT), for catchUpTimeout at most; it reports whether they all did,
// and says which did not.
func (rs *replicaSet) catchUp(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, catchUpTimeout)
	defer cancel()
	var pos string
	if err := rs.primary.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		fmt.Fprintf(rs.log, "staleread: switching arms: the primary's position: %v\n", err)
		return false
	}
	ok := true
	for _, r := range rs.replicas {
		var got sql.NullInt64 // 0: reached; -1: timed out
		err := r.db.QueryRowContext(ctx, "SELECT MASTER_GTID_WAIT(?, ?)", pos, catchUpTimeout.Seconds()).Scan(&got)
		if err != nil || got.Int64 != 0 {
			fmt.Fprintf(rs.log, "staleread: switching arms: replica %s did not reach %s (%d, %v)\n", r.addr, pos, got.Int64, err)
			ok = false
		}
	}
	return ok
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

// close closes the replicas' handles and the primary's.
func (rs *replicaSet) close() {
	for _, r := range rs.replicas {
		r.db.Close()
	}
	if rs.primary != nil {
		rs.primary.Close()
	}
}
