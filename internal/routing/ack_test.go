package routing_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
)

// ack is one response Ack reads: to a statement of kind over the tables of sql, with the
// GTIDs of gtids.
type ack struct {
	kind   classify.Kind
	sql    string
	opaque bool
	gtids  string
	r      routing.Response
}

func TestAck(t *testing.T) {
	insert := func(r routing.Response, gtids string) ack {
		return ack{kind: classify.Write, sql: "INSERT INTO a VALUES (1)", r: r, gtids: gtids}
	}
	txn := func(sql string, r routing.Response, gtids string) ack {
		return ack{kind: classify.Transaction, sql: sql, r: r, gtids: gtids}
	}
	cases := []struct {
		name string
		acks []ack
		// needA and needB are what strong reads of db.a and db.b need after them; known
		// false: what they need cannot be told yet.
		needA, needB string
		known        bool
	}{
		{"write", []ack{insert(routing.Response{AffectedRows: 1}, "0-1-5")}, "0-1-5", "", true},
		{"write in two domains", []ack{insert(routing.Response{AffectedRows: 1}, "0-1-5,1-2-3")}, "0-1-5,1-2-3", "", true},
		{"failed write", []ack{insert(routing.Response{Err: true}, "")}, "", "", true},
		{"failed write, then a write to b", []ack{
			insert(routing.Response{Err: true}, ""),
			{kind: classify.Write, sql: "UPDATE b SET x = 1", r: routing.Response{AffectedRows: 1}, gtids: "0-1-8"},
		}, "", "0-1-8", true},
		{"failed read", []ack{{kind: classify.Read, sql: "SELECT * FROM a", r: routing.Response{Err: true}}}, "", "", true},
		{"write that changed nothing", []ack{insert(routing.Response{}, "")}, "", "", true},
		{"write without a position", []ack{insert(routing.Response{AffectedRows: 1}, "")}, "", "", false},
		{"write in a transaction", []ack{insert(routing.Response{InTxn: true, AffectedRows: 1}, "")}, "", "", true},
		{"write in a transaction, committed", []ack{
			insert(routing.Response{InTxn: true, AffectedRows: 1}, ""),
			{kind: classify.Read, sql: "SELECT * FROM b", r: routing.Response{InTxn: true}},
			txn("COMMIT", routing.Response{}, "0-1-7"),
		}, "0-1-7", "", true},
		{"write in a transaction, rolled back", []ack{
			insert(routing.Response{InTxn: true, AffectedRows: 1}, ""),
			txn("ROLLBACK", routing.Response{}, ""),
		}, "", "", true},
		{"write in a transaction, rolled back by an error", []ack{
			insert(routing.Response{InTxn: true, AffectedRows: 1}, ""),
			{kind: classify.Read, sql: "SELECT * FROM b", r: routing.Response{Err: true}},
			{kind: classify.Write, sql: "UPDATE b SET x = 1", r: routing.Response{AffectedRows: 1}, gtids: "0-1-8"},
		}, "", "0-1-8", true},
		{"opaque write", []ack{{kind: classify.Write, sql: "INSERT INTO a VALUES (1)", opaque: true, r: routing.Response{AffectedRows: 1}, gtids: "0-1-5"}}, "0-1-5", "0-1-5", true},
		{"opaque write without a position", []ack{{kind: classify.Write, sql: "CALL p()", opaque: true}}, "", "", false},
		{"DDL", []ack{{kind: classify.DDL, sql: "CREATE TABLE c (x int)", gtids: "0-1-5"}}, "0-1-5", "0-1-5", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, routing.Config{}, 1)
			s := f.policy.NewSession()
			for _, a := range tc.acks {
				st := statement(s, a.kind, a.sql)
				st.Opaque = a.opaque
				a.r.GTIDs = pos(t, a.gtids)
				s.Ack(st, &a.r)
			}
			needA, known := f.need("db.a")
			assert.Equal(t, tc.known, known, "known")
			if !tc.known {
				return
			}
			needB, _ := f.need("db.b")
			assert.Equal(t, tc.needA, needA, "db.a")
			assert.Equal(t, tc.needB, needB, "db.b")
		})
	}
}

// The primary's position read after a write without a position covers it: reads need
// that position from then on.
func TestAckWithoutPositionResolvedByPrimary(t *testing.T) {
	f := newFixture(t, routing.Config{}, 1)
	replica := f.replica(1)
	f.record(replica, pos(t, "0-1-9"))
	s := f.policy.NewSession()
	polled := time.Now() // a poll of the primary sent before the write was acknowledged
	s.Ack(write(s, "INSERT INTO a VALUES (1)"), &routing.Response{AffectedRows: 1})
	assert.Equal(t, routing.FellBack, route(s, read(s, "SELECT * FROM b")).Reason, "what the read needs is not known")

	f.router.Record(f.router.Primary(), pos(t, "0-1-8"), nil, polled)
	_, known := f.need("db.b")
	assert.False(t, known, "a poll sent before the write does not cover it")

	f.record(f.router.Primary(), pos(t, "0-1-9"))
	d := route(s, read(s, "SELECT * FROM b"))
	assert.Equal(t, routing.Routed, d.Reason)
	assert.Same(t, replica, d.To)
	assert.Equal(t, "0-1-9", d.Need.String(), "every table needs it: the write's are not known")
}

// Acknowledged DDL drops the closure, for the router to read it again; until it does,
// every write raises the floor. Failed DDL changed nothing.
func TestAckDDLReloadsClosure(t *testing.T) {
	cases := []struct {
		name   string
		r      routing.Response
		gtids  string
		reload bool
	}{
		{"acknowledged", routing.Response{}, "0-1-5", true},
		{"failed", routing.Response{Err: true}, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, routing.Config{}, 1)
			versions := f.router.Versions()
			gen := versions.Generation()
			s := f.policy.NewSession()
			tc.r.GTIDs = pos(t, tc.gtids)
			s.Ack(statement(s, classify.DDL, "CREATE TRIGGER t AFTER INSERT ON a FOR EACH ROW INSERT INTO b VALUES (1)"), &tc.r)
			if !tc.reload {
				assert.True(t, versions.ClosureLoaded())
				assert.Equal(t, gen, versions.Generation())
				return
			}
			assert.False(t, versions.ClosureLoaded())
			assert.Equal(t, gen+1, versions.Generation())

			commit(t, s, write(s, "INSERT INTO a VALUES (1)"), "0-1-6")
			need, known := f.need("db.b")
			require.True(t, known)
			assert.Equal(t, "0-1-6", need, "the trigger's write to db.b is not known until the closure is read")
		})
	}
}
