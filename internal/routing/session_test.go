package routing_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
)

// cost is what a read costs without an estimator table.
const cost = time.Millisecond

func TestRouteDecisions(t *testing.T) {
	f := newFixture(t, routing.Config{ReadOnlyTransactions: true}, 1)
	primary, replica := f.router.Primary(), f.replica(1)
	s := f.policy.NewSession()
	tables := read(s, "SELECT * FROM a").Tables
	type st = routing.Statement
	const rd, wr, txn = classify.Read, classify.Write, classify.Transaction
	readOnly := &st{Kind: txn, Tables: tables, StartsTxn: true, ReadOnly: true}
	begin := &st{Kind: txn, Tables: tables, StartsTxn: true}
	cases := []struct {
		name string
		unit routing.Unit
		want routing.Reason
		// to is where the unit runs as a read; nil: the primary, not as a read.
		to *replicas.Backend
	}{
		{"write", routing.Unit{Stmt: &st{Kind: wr, Tables: tables}, Autocommit: true}, routing.Write, nil},
		{"locking read", routing.Unit{Stmt: &st{Kind: classify.LockingRead, Tables: tables}, Autocommit: true}, routing.Write, nil},
		{"DDL", routing.Unit{Stmt: &st{Kind: classify.DDL, Tables: tables}, Autocommit: true}, routing.Write, nil},
		{"opaque write", routing.Unit{Stmt: &st{Kind: wr, Tables: tables, Opaque: true}, Autocommit: true}, routing.Write, nil},
		{"BEGIN", routing.Unit{Stmt: begin, Autocommit: true}, routing.ReasonNone, nil},
		{"COMMIT", routing.Unit{Stmt: &st{Kind: txn, Tables: tables}, InTxn: true, Autocommit: true}, routing.ReasonNone, nil},
		{"session statement", routing.Unit{Stmt: &st{Kind: classify.Session, Tables: tables}, Autocommit: true}, routing.ReasonNone, nil},
		{"SHOW", routing.Unit{Stmt: &st{Kind: classify.Other, Tables: tables}, Autocommit: true}, routing.ReasonNone, nil},
		{"opaque read", routing.Unit{Stmt: &st{Kind: rd, Tables: tables, Opaque: true}, Autocommit: true}, routing.Unsure, nil},
		{"several statements", routing.Unit{Stmt: &st{Kind: rd, Tables: tables, Multi: true}, Autocommit: true}, routing.Unsure, nil},
		{"read in a transaction", routing.Unit{Stmt: &st{Kind: rd, Tables: tables}, InTxn: true, Autocommit: true}, routing.Transaction, nil},
		{"read with autocommit off", routing.Unit{Stmt: &st{Kind: rd, Tables: tables}}, routing.Transaction, nil},
		{"read of a user variable", routing.Unit{Stmt: &st{Kind: rd, Tables: tables, Uses: classify.UsesUserVariable}, Autocommit: true}, routing.Pinned, nil},
		{"execute opening a cursor", routing.Unit{Stmt: &st{Kind: rd, Tables: tables}, Cursor: true, Autocommit: true}, routing.Pinned, nil},
		{"autocommit read", routing.Unit{Stmt: &st{Kind: rd, Tables: tables}, Autocommit: true}, routing.Routed, replica},
		{"no statement", routing.Unit{Autocommit: true}, routing.ReasonNone, nil},
		{"no tables", routing.Unit{Stmt: &st{Kind: rd}, Autocommit: true}, routing.ReasonNone, nil},
		{"START TRANSACTION READ ONLY", routing.Unit{Stmt: readOnly, Autocommit: true}, routing.Routed, replica},
		{"BEGIN, session read only", routing.Unit{Stmt: begin, Autocommit: true, SessionReadOnly: true}, routing.Routed, replica},
		{"START TRANSACTION READ WRITE, session read only", routing.Unit{Stmt: &st{Kind: txn, Tables: tables, StartsTxn: true, ReadWrite: true},
			Autocommit: true, SessionReadOnly: true}, routing.ReasonNone, nil},
		{"BEGIN using a user variable, session read only", routing.Unit{Stmt: &st{Kind: txn, Tables: tables, StartsTxn: true, Uses: classify.UsesUserVariable},
			Autocommit: true, SessionReadOnly: true}, routing.ReasonNone, nil},
		{"READ ONLY in a transaction", routing.Unit{Stmt: readOnly, InTxn: true, Autocommit: true}, routing.ReasonNone, nil},
		{"READ ONLY with autocommit off", routing.Unit{Stmt: readOnly}, routing.ReasonNone, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			counted := primary // where Leased counts the unit
			if tc.to != nil {
				counted = tc.to
			}
			total, here := f.readsTotal(), f.reads(counted, tc.want)

			d := s.Route(context.Background(), &tc.unit)
			assert.Equal(t, tc.want, d.Reason)
			assert.Same(t, tc.to, d.To)
			assert.Equal(t, d, s.Current())
			if tc.to != nil {
				assertOutstanding(t, tc.to, cost, 1)
			}
			assertOutstanding(t, primary, 0, 0)

			s.Leased()
			n := 1.0
			if tc.want == routing.ReasonNone {
				n = 0
			}
			assert.Equal(t, total+n, f.readsTotal(), "reads counted")
			assert.Equal(t, here+n, f.reads(counted, tc.want), "reads counted on %s", counted.Addr)

			s.Done()
			assertOutstanding(t, replica, 0, 0)
		})
	}
}

// A read-only transaction reads from one replica whatever tables it reads: one that has
// applied every acknowledged write, not only those to the tables of its first statement.
func TestReadOnlyTransactionNeedsEveryWrite(t *testing.T) {
	type st = routing.Statement
	const txn = classify.Transaction
	cases := []struct {
		name string
		// onReplicas is routing.read_only_transactions: replica.
		onReplicas bool
		unit       routing.Unit
		// routed: it goes to the replica that has every write; else to the primary.
		routed bool
	}{
		{"START TRANSACTION READ ONLY", true, routing.Unit{Stmt: &st{Kind: txn, StartsTxn: true, ReadOnly: true}, Autocommit: true}, true},
		{"BEGIN, session read only", true, routing.Unit{Stmt: &st{Kind: txn, StartsTxn: true}, Autocommit: true, SessionReadOnly: true}, true},
		{"START TRANSACTION READ WRITE, session read only", true, routing.Unit{Stmt: &st{Kind: txn, StartsTxn: true, ReadWrite: true},
			Autocommit: true, SessionReadOnly: true}, false},
		{"START TRANSACTION READ ONLY, on the primary", false, routing.Unit{Stmt: &st{Kind: txn, StartsTxn: true, ReadOnly: true}, Autocommit: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, routing.Config{ReadOnlyTransactions: tc.onReplicas}, 2)
			current, behind := f.replica(1), f.replica(2)
			s := f.policy.NewSession()
			commit(t, s, write(s, "INSERT INTO a VALUES (1)"), "0-1-5")
			f.record(current, pos(t, "0-1-5"))
			tc.unit.Stmt.Tables = read(s, "START TRANSACTION").Tables
			for range 4 { // ties between replicas go round: every turn must pick the same
				d := s.Route(context.Background(), &tc.unit)
				if !tc.routed {
					assert.Equal(t, routing.Decision{}, d)
					continue
				}
				assert.Equal(t, routing.Routed, d.Reason)
				assert.Same(t, current, d.To, "not %s, behind on table a", behind.Addr)
				assert.Equal(t, "0-1-5", d.Need.String())
				s.Done()
			}
		})
	}
}

func TestRouteCountsOutstandingUntilDone(t *testing.T) {
	f := newFixture(t, routing.Config{}, 2)
	s, other := f.policy.NewSession(), f.policy.NewSession()
	first := route(s, read(s, "SELECT * FROM a"))
	require.True(t, first.Replica())
	assertOutstanding(t, first.To, cost, 1)
	assert.Equal(t, cost, first.Cost)

	// The next read goes to the replica with less outstanding work (balance self).
	second := route(other, read(other, "SELECT * FROM a"))
	require.True(t, second.Replica())
	assert.NotSame(t, first.To, second.To)
	assertOutstanding(t, second.To, cost, 1)

	s.Done()
	assertOutstanding(t, first.To, 0, 0)
	assertOutstanding(t, second.To, cost, 1)
	assert.Equal(t, routing.Decision{}, s.Current())
	other.Done()
	assertOutstanding(t, second.To, 0, 0)
}

func TestFellBack(t *testing.T) {
	cause := errors.New("connection refused")
	cases := []struct {
		name string
		down bool
	}{
		{"replica stays up", false},
		{"replica marked down", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, routing.Config{}, 1)
			primary, replica := f.router.Primary(), f.replica(1)
			s := f.policy.NewSession()
			require.Same(t, replica, route(s, read(s, "SELECT * FROM a")).To)

			s.FellBack(cause, tc.down)
			assertOutstanding(t, replica, 0, 0)
			assert.Equal(t, routing.Decision{Reason: routing.FellBack}, s.Current())
			s.Leased()
			assert.Equal(t, 1.0, f.reads(primary, routing.FellBack))
			assert.Zero(t, f.reads(replica, routing.Routed))

			st := replica.Status()
			assert.Equal(t, !tc.down, st.Up)
			next := route(s, read(s, "SELECT * FROM a"))
			if tc.down {
				assert.Contains(t, st.Err, cause.Error())
				assert.Equal(t, routing.FellBack, next.Reason, "a replica marked down takes no reads")
				return
			}
			assert.Same(t, replica, next.To)
		})
	}
}

func TestMarkDown(t *testing.T) {
	f := newFixture(t, routing.Config{}, 1)
	s := f.policy.NewSession()
	route(s, write(s, "INSERT INTO a VALUES (1)"))
	s.MarkDown(errors.New("broken pipe"))
	assert.True(t, f.replica(1).Status().Up, "a unit on the primary marks nothing down")

	route(s, read(s, "SELECT * FROM a"))
	s.MarkDown(errors.New("broken pipe"))
	assert.False(t, f.replica(1).Status().Up)
}

func TestPinnedRead(t *testing.T) {
	f := newFixture(t, routing.Config{}, 1)
	s := f.policy.NewSession()
	cases := []struct {
		name  string
		st    *routing.Statement
		inTxn bool
		want  float64
	}{
		{"read", read(s, "SELECT * FROM a"), false, 1},
		{"read in a transaction", read(s, "SELECT * FROM a"), true, 0},
		{"write", write(s, "INSERT INTO a VALUES (1)"), false, 0},
		{"no statement", nil, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := f.readsTotal()
			s.PinnedRead(tc.st, tc.inTxn)
			assert.Equal(t, before+tc.want, f.readsTotal())
			assert.Equal(t, f.readsTotal(), f.reads(f.router.Primary(), routing.Pinned), "all on the primary, pinned")
		})
	}
}

func TestPinsReplica(t *testing.T) {
	f := newFixture(t, routing.Config{ReadOnlyTransactions: true}, 1)
	onReplica := f.policy.NewSession()
	begin := &routing.Statement{Kind: classify.Transaction, StartsTxn: true, ReadOnly: true, Tables: read(onReplica, "BEGIN").Tables}
	require.True(t, onReplica.Route(context.Background(), &routing.Unit{Stmt: begin, Autocommit: true}).Replica())
	onPrimary := f.policy.NewSession()
	route(onPrimary, write(onPrimary, "INSERT INTO a VALUES (1)"))

	pins := []classify.Uses{classify.UsesUserVariable, classify.UsesGetLock, classify.UsesLockTables,
		classify.UsesTemporaryTable, classify.UsesPrepare, classify.UsesSessionTracking, classify.UsesHandler,
		classify.UsesXAStart}
	others := []classify.Uses{0, classify.UsesReleaseLock, classify.UsesFoundRows, classify.UsesLastInsertID,
		classify.UsesConnectionID, classify.UsesNextTransaction, classify.UsesXAEnd}
	check := func(uses classify.Uses, want bool) {
		st := &routing.Statement{Kind: classify.Session, Uses: uses}
		assert.Equal(t, want, onReplica.PinsReplica(st, true), "uses %b, in the transaction on a replica", uses)
		assert.False(t, onReplica.PinsReplica(st, false), "uses %b, outside a transaction", uses)
		assert.False(t, onPrimary.PinsReplica(st, true), "uses %b, on the primary", uses)
	}
	for _, u := range pins {
		check(u, true)
	}
	for _, u := range others {
		check(u, false)
	}
	assert.False(t, onReplica.PinsReplica(nil, true), "a command without a statement")
}

// A nil Session is a proxy's without replicas: it routes nothing and counts nothing.
func TestNilSession(t *testing.T) {
	var s *routing.Session
	st := &routing.Statement{Kind: classify.Read}
	assert.Equal(t, routing.Decision{}, s.Route(context.Background(), &routing.Unit{Stmt: st, Autocommit: true}))
	assert.Equal(t, routing.Decision{}, s.Current())
	assert.Nil(t, s.Fill(classify.New().Classify([]byte("SELECT * FROM a")), schema))
	assert.False(t, s.PinsReplica(&routing.Statement{Uses: classify.UsesUserVariable}, true))
	assert.NotPanics(t, func() {
		s.SetConsistency("eventual")
		s.Leased()
		s.PinnedRead(st, false)
		s.MarkDown(errors.New("broken pipe"))
		s.FellBack(errors.New("broken pipe"), true)
		s.Done()
		s.Ack(st, &routing.Response{GTIDs: []replicas.GTID{{Seq: 1}}})
	})
}
