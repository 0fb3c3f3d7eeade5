package main

import (
	"database/sql"
	"testing"
)

// testClient is a client of a workload on schema s, on one arm with no connections: for
// drawing reads and writes.
func testClient(s schema) *client {
	w := &workload{schema: s, ledger: newLedger(s.written(), s.rows), tally: newTally(), txFraction: 0.5}
	w.byArm = []tallies{{w.tally}}
	return newClient(w, []handles{{write: (*sql.DB)(nil)}}, newRand(1, 0), nil, 0)
}

func TestHotTableTakesEveryWriteAndNoRead(t *testing.T) {
	s := schema{tables: 4, rows: 10, hotWrites: true}
	hot := s.hot()
	if hot != 3 {
		t.Fatalf("hot = %d, want 3, the last sr_tN (sr_t0 has a trigger)", hot)
	}
	c := testClient(s)
	for range 1000 {
		for _, w := range c.drawWrites() {
			if w.row.table != hot {
				t.Fatalf("a write to %s, want every write to the hot table %s", s.name(w.row.table), s.name(hot))
			}
		}
		c.pending = write{row{hot, 1}, 5} // an own write not to be read back
		p := c.nextProbe()
		if p.kind == kindOwn || p.kind == kindSession || p.own != 0 {
			t.Fatalf("a %s read back a write of the hot table", p.kind)
		}
		for _, col := range p.cols {
			if col.read.table == hot || col.source.table == hot {
				t.Fatalf("a %s read of the hot table: %q", p.kind, p.query)
			}
		}
		if len(p.cols) == 2 && p.cols[0].read.table == p.cols[1].read.table {
			t.Fatalf("a join of a table with itself: %q", p.query)
		}
	}
}

func TestWithoutHotTableEveryTableIsReadAndWritten(t *testing.T) {
	s := schema{tables: 4, rows: 10}
	if s.hot() != -1 {
		t.Fatalf("hot = %d, want -1 (none)", s.hot())
	}
	c := testClient(s)
	read, written := map[int]bool{}, map[int]bool{}
	for range 2000 {
		for _, w := range c.drawWrites() {
			written[w.row.table] = true
		}
		for _, col := range c.drawProbe().cols {
			read[col.read.table] = true
		}
	}
	for tbl := range s.all() {
		if !read[tbl] {
			t.Errorf("%s never read", s.name(tbl))
		}
	}
	for tbl := range s.written() {
		if !written[tbl] {
			t.Errorf("%s never written", s.name(tbl))
		}
	}
}
