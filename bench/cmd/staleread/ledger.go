package main

import "sync/atomic"

// row names one row a read is checked on: table is a table index (see tableName) and id
// counts from 1.
type row struct{ table, id int }

// ledger holds, for every row that writes go to, the highest version whose write has been
// acknowledged. Versions are unique and only grow, and a row's value never goes down (the
// UPDATE keeps the greater of the two), so the highest acknowledged version is a lower bound
// on what any read sent after the acknowledgement must return. Safe for concurrent use.
type ledger struct {
	rows int
	// versions is indexed by table*rows + id-1; zero: nothing acknowledged yet.
	versions []atomic.Int64
}

// newLedger returns a ledger of tables tables of rows rows each.
func newLedger(tables, rows int) *ledger {
	return &ledger{rows: rows, versions: make([]atomic.Int64, tables*rows)}
}

// acked is the highest version acknowledged for r so far; zero when none was.
func (l *ledger) acked(r row) int64 {
	return l.versions[l.index(r)].Load()
}

// record notes that a write of version v to r was acknowledged.
func (l *ledger) record(r row, v int64) {
	slot := &l.versions[l.index(r)]
	for {
		old := slot.Load()
		if v <= old || slot.CompareAndSwap(old, v) {
			return
		}
	}
}

func (l *ledger) index(r row) int { return r.table*l.rows + r.id - 1 }

// expectation is what one version that a read returns is held to.
type expectation struct {
	// acked is the highest version acknowledged for the row before the read was sent;
	// zero: none.
	acked int64
	// own is a write of the reader's own session (its connection or its pair) that the read
	// must see; zero: none.
	own int64
	// seen is the newest version this connection read of the row before, when haveSeen.
	seen     int64
	haveSeen bool
}

// verdict is what one returned version says. The three are independent: a read that misses
// its own write is stale as well, since that write was acknowledged before it was sent.
type verdict struct {
	stale     bool // older than a version acknowledged before the read was sent
	ownMiss   bool // older than the session's own acknowledged write
	backwards bool // older than what the same connection read of the row before
}

// judge holds the version a read returned to what it must be at least.
func judge(got int64, e expectation) verdict {
	return verdict{
		stale:     e.acked > 0 && got < e.acked,
		ownMiss:   e.own > 0 && got < e.own,
		backwards: e.haveSeen && got < e.seen,
	}
}

// or is true where either verdict is.
func (v verdict) or(w verdict) verdict {
	return verdict{stale: v.stale || w.stale, ownMiss: v.ownMiss || w.ownMiss, backwards: v.backwards || w.backwards}
}
