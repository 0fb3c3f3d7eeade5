package main

import (
	"database/sql"
	"errors"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// readKind is the shape of a read.
type readKind int

const (
	kindPoint       readKind = iota // point select by primary key, as a text query
	kindPrepared                    // the same through a prepared statement (COM_STMT_EXECUTE)
	kindJoin                        // a join of two tables on the same id, both versions checked
	kindAudit                       // sr_audit, which a trigger on sr_t0 writes
	kindChild                       // sr_child, which a cascade from sr_parent writes
	kindOwn                         // a point select of the connection's own last write
	kindSession                     // a point select of the pair partner's last write, with the session key
	kindReadOnlyTxn                 // a join of two tables inside START TRANSACTION READ ONLY
	numKinds
)

var kindNames = [numKinds]string{"point", "prepared", "join", "audit", "child", "own", "session", "read-only-txn"}

func (k readKind) String() string { return kindNames[k] }

// maxExamples is how many reads of each failed check the report shows.
const maxExamples = 5

// example is one read that failed a check, for the report.
type example struct {
	Check string `json:"check"`
	Kind  string `json:"kind"`
	Table string `json:"table"`
	ID    int    `json:"id"`
	Got   int64  `json:"got"`
	Acked int64  `json:"acked"`
	Own   int64  `json:"own,omitempty"`
	// Seen is the newest version the connection had read of the row before; nil: none.
	Seen *int64 `json:"seen,omitempty"`
}

// tally is what the clients did. Its methods may be called from any goroutine.
type tally struct {
	// Reads completed, and of them those that failed each check, by kind.
	reads, stale, ownMisses, backwards [numKinds]atomic.Int64
	writes, transactions               atomic.Int64
	// latency is how long the reads of each kind took, from sending to the last row read.
	latency [numKinds]histogram

	mu sync.Mutex
	// errs counts failed operations by MySQL error number, or "other"; messages has the
	// first message of each.
	errs     map[string]int64
	messages map[string]string
	// retries counts writes tried again after a deadlock or lock wait timeout, by number.
	retries  map[string]int64
	examples []example
}

func newTally() *tally {
	return &tally{errs: map[string]int64{}, messages: map[string]string{}, retries: map[string]int64{}}
}

// read records a completed read, how long it took and its verdict; ex describes the read in
// case it failed a check.
func (t *tally) read(k readKind, d time.Duration, v verdict, ex example) {
	t.reads[k].Add(1)
	t.latency[k].record(d)
	if v.stale {
		t.stale[k].Add(1)
		t.example("stale", ex)
	}
	if v.ownMiss {
		t.ownMisses[k].Add(1)
		t.example("own-write miss", ex)
	}
	if v.backwards {
		t.backwards[k].Add(1)
		t.example("monotonic", ex)
	}
}

// example keeps ex as an example of a failed check while there are few of that check.
func (t *tally) example(check string, ex example) {
	ex.Check = check
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, e := range t.examples {
		if e.Check == check {
			n++
		}
	}
	if n < maxExamples {
		t.examples = append(t.examples, ex)
	}
}

// wrote records an acknowledged write: one autocommit UPDATE, or a transaction of several.
func (t *tally) wrote(inTransaction bool) {
	t.writes.Add(1)
	if inTransaction {
		t.transactions.Add(1)
	}
}

// failed records an operation that ended in an error.
func (t *tally) failed(err error) {
	key, message := errorKey(err)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errs[key]++
	if _, ok := t.messages[key]; !ok {
		t.messages[key] = message
	}
}

// retried records a write tried again after err.
func (t *tally) retried(err error) {
	key, _ := errorKey(err)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.retries[key]++
}

// errorsByKey copies the failed operations by key, their first messages and the retries.
func (t *tally) errorsByKey() (errs map[string]int64, messages map[string]string, retries map[string]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.errs), maps.Clone(t.messages), maps.Clone(t.retries)
}

// totals sums the reads, and those that failed each check, over the kinds.
func (t *tally) totals() (reads, stale, ownMisses, backwards int64) {
	for k := range numKinds {
		reads += t.reads[k].Load()
		stale += t.stale[k].Load()
		ownMisses += t.ownMisses[k].Load()
		backwards += t.backwards[k].Load()
	}
	return reads, stale, ownMisses, backwards
}

// errorKey names an error by its MySQL error number, or "other" when the server sent none.
func errorKey(err error) (key, message string) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return strconv.Itoa(int(me.Number)), me.Message
	}
	if errors.Is(err, sql.ErrNoRows) {
		return "other", "a row the checker reads is missing (the setup did not reach this server?)"
	}
	return "other", err.Error()
}

// retryable reports whether a write that failed with err may be tried again: a deadlock
// (1213) or a lock wait timeout (1205), which roll the work back.
func retryable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// latencies returns the latencies of the reads of each kind, and of all reads.
func (t *tally) latencies() (byKind [numKinds]*latencies, all *latencies) {
	all = &latencies{}
	for k := range numKinds {
		byKind[k] = t.latency[k].snapshot()
		all.add(byKind[k])
	}
	return byKind, all
}

// tallies is where one client's operation is counted: the run's tally, and its arm's when
// the run has several.
type tallies []*tally

func (ts tallies) read(k readKind, d time.Duration, v verdict, ex example) {
	for _, t := range ts {
		t.read(k, d, v, ex)
	}
}

func (ts tallies) wrote(inTransaction bool) {
	for _, t := range ts {
		t.wrote(inTransaction)
	}
}

func (ts tallies) failed(err error) {
	for _, t := range ts {
		t.failed(err)
	}
}

func (ts tallies) retried(err error) {
	for _, t := range ts {
		t.retried(err)
	}
}
