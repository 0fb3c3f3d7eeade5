package pooled

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol/mysqltest"
)

// prepare prepares text on the session's connection as a client's COM_STMT_PREPARE, and
// returns the id the client knows it by.
func prepare(t *testing.T, f *fixture, text string) uint32 {
	t.Helper()
	id := f.s.NextID()
	res := f.send(t, append([]byte{mysql.COM_STMT_PREPARE}, text...))
	if res.Err != nil {
		t.Fatalf("prepare %q: %v", text, res.Err)
	}
	if f.s.NoteStmt(mysql.COM_STMT_PREPARE, 0, []byte(text), true, res) == nil || res.StmtID != id {
		t.Fatalf("prepare %q: not recorded under the client's id %d (res.StmtID %d)", text, id, res.StmtID)
	}
	return id
}

// Parameter types of an execution: two bytes a parameter, its type and 0x80 for unsigned.
var (
	varString = []byte{mysql.MYSQL_TYPE_VAR_STRING, 0}
	longLong  = []byte{mysql.MYSQL_TYPE_LONGLONG, 0}
)

// execute is a client's COM_STMT_EXECUTE of statement id with one parameter, which sends
// the parameter's type when types is not nil.
func execute(id uint32, types []byte) *protocol.Command {
	p := binary.LittleEndian.AppendUint32([]byte{mysql.COM_STMT_EXECUTE}, id)
	p = append(p, 0, 1, 0, 0, 0) // no cursor, one iteration
	p = append(p, 0)             // the NULL bitmap of one parameter
	if types != nil {
		p = append(append(p, 1), types...)
	} else {
		p = append(p, 0)
	}
	p = protocol.AppendLenencString(p, "7")
	return &protocol.Command{Payload: p}
}

// run maps cmd, a client's execution of its statement, to the session's connection and
// sends it there; it returns the server's answer.
func run(t *testing.T, f *fixture, cmd *protocol.Command) *protocol.Response {
	t.Helper()
	clientID, _ := StmtID(cmd.Payload)
	if err := f.s.Prepare(context.Background(), cmd); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	res := f.send(t, cmd.Payload)
	f.s.NoteStmt(mysql.COM_STMT_EXECUTE, clientID, nil, true, res)
	return res
}

func TestNextIDSkipsIDsInUseAndZero(t *testing.T) {
	tests := []struct {
		name  string
		last  uint32   // the id given last
		inUse []uint32 // the client's statements
		want  uint32
		bug   string // a known bug that fails the case, which is skipped until fixed
	}{
		{name: "first", last: 0, want: 1},
		{name: "next", last: 4, want: 5},
		{name: "skips ids in use", last: 1, inUse: []uint32{2, 3, 5}, want: 4},
		{name: "wraps past zero", last: math.MaxUint32, want: 1},
		{name: "wraps past zero and ids in use", last: math.MaxUint32, inUse: []uint32{1, 2}, want: 3},
		{name: "skips the last id into zero", last: math.MaxUint32 - 1, inUse: []uint32{math.MaxUint32}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			skipKnownBug(t, tt.bug)
			s := NewSession(nil, nil)
			s.nextID = tt.last
			for _, id := range tt.inUse {
				s.stmts[id] = &Stmt{}
			}
			if got := s.NextID(); got != tt.want {
				t.Errorf("NextID = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestStmtID(t *testing.T) {
	if id, ok := StmtID([]byte{mysql.COM_STMT_EXECUTE, 7, 1, 0, 0}); !ok || id != 263 {
		t.Errorf("StmtID = %d, %v; want 263, true", id, ok)
	}
	if _, ok := StmtID([]byte{mysql.COM_STMT_EXECUTE, 7, 1, 0}); ok {
		t.Error("StmtID of a truncated command says it has one")
	}
}

func TestPrepareRecordsTheStatementUnderTheClientsID(t *testing.T) {
	f := newFixture(t, mysqltest.Options{})
	c := f.unit(t)
	// Another statement on the connection first, so that the server's ids and the
	// client's differ.
	if _, err := c.Prepare([]byte("SELECT 1"), 0); err != nil {
		t.Fatal(err)
	}
	id := prepare(t, f, "SELECT ?")
	cs := f.s.Stmt(id)
	if cs == nil || cs.params != 1 {
		t.Fatalf("Stmt(%d) = %+v, want the statement with one parameter", id, cs)
	}
	if st := c.Stmt([]byte("SELECT ?"), f.s.State.Snapshot().Key()); st == nil || st.ID != 2 {
		t.Errorf("the connection keeps %+v, want the server's statement 2", st)
	}
	if n, size := f.s.Stmts(); n != 1 || size != len("SELECT ?") {
		t.Errorf("Stmts = %d, %d; want 1, %d", n, size, len("SELECT ?"))
	}
	for _, tt := range []struct {
		res      protocol.Response
		complete bool
	}{
		{res: protocol.Response{Err: &protocol.ServerError{Code: mysql.ER_PARSE_ERROR}}, complete: true},
		{res: protocol.Response{StmtID: 3}, complete: false}, // the text was not read whole
	} {
		f.s.NextID()
		if cs := f.s.NoteStmt(mysql.COM_STMT_PREPARE, 0, []byte("SELECT ?, ?"), tt.complete, &tt.res); cs != nil {
			t.Errorf("a prepare that failed or was not read whole recorded %+v", cs)
		}
	}
	if n, _ := f.s.Stmts(); n != 1 {
		t.Errorf("statements = %d, want 1", n)
	}
}

func TestPrepareMapsTheIDToAnotherConnection(t *testing.T) {
	f := newFixture(t, mysqltest.Options{})
	first, second := f.acquire(t), f.acquire(t)
	if _, err := second.Conn().Prepare([]byte("SELECT 1"), 0); err != nil {
		t.Fatal(err)
	}
	f.take(t, first)
	id := prepare(t, f, "SELECT ?")
	if res := run(t, f, execute(id, varString)); res.Err != nil {
		t.Fatalf("execute on the connection it was prepared on: %v", res.Err)
	}
	f.s.Release(false, false)

	fc := f.server(f.take(t, second))
	cmd := execute(id, varString)
	if err := f.s.Prepare(context.Background(), cmd); err != nil {
		t.Fatal(err)
	}
	if got, _ := StmtID(cmd.Payload); got != 2 {
		t.Errorf("the command names statement %d, want the second connection's 2", got)
	}
	if got := fc.Prepared()[2]; got != "SELECT ?" {
		t.Errorf("the second connection's statement 2 is %q, want SELECT ? prepared there", got)
	}
	prepares := func() int {
		return len(slices.DeleteFunc(received(fc), func(b byte) bool { return b != mysql.COM_STMT_PREPARE }))
	}
	before := prepares()
	if err := f.s.Prepare(context.Background(), execute(id, varString)); err != nil {
		t.Fatal(err)
	}
	if n := prepares() - before; n != 0 {
		t.Errorf("a second execution prepared the statement %d more times, want none", n)
	}
}

// A statement runs on another connection as it was prepared: in the schema of its
// prepare, whatever the session's schema is now.
func TestPrepareUnderTheSnapshotOfItsPrepare(t *testing.T) {
	f := newFixture(t, mysqltest.Options{})
	first, second := f.acquire(t), f.acquire(t)
	f.s.State.Schema = "a"
	f.take(t, first)
	id := prepare(t, f, "SELECT ?")
	f.query(t, Statement{Valid: true}, "USE b")
	f.s.Release(false, false)

	fc := f.server(f.take(t, second))
	before := len(fc.Commands())
	if err := f.s.Prepare(context.Background(), execute(id, varString)); err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "SELECT ?", "b"}
	if got := texts(fc)[before:]; !slices.Equal(got, want) {
		t.Errorf("the second connection got %q, want %q", got, want)
	}
	if fc.Schema() != "b" || f.s.State.Schema != "b" {
		t.Errorf("schema %q on the connection, %q in the session; want b", fc.Schema(), f.s.State.Schema)
	}
}

// A statement that no longer prepares (its table dropped) gives the server's error, and
// leaves the connection usable.
func TestPrepareGivesTheServersErrorForAStatementThatNoLongerPrepares(t *testing.T) {
	f := newFixture(t, mysqltest.Options{})
	first, second := f.acquire(t), f.acquire(t)
	f.take(t, first)
	// The fake prepares every text but an empty one: its Handler's errors do not reach
	// COM_STMT_PREPARE. The statement is an empty text that this test says prepared once,
	// which the fake refuses on another connection as a server refuses one whose table
	// was dropped.
	id := f.s.NextID()
	if f.s.NoteStmt(mysql.COM_STMT_PREPARE, 0, []byte(";"), true, &protocol.Response{StmtID: 9}) == nil {
		t.Fatal("the prepare was not recorded")
	}
	f.s.Release(false, false)

	f.take(t, second)
	cmd := execute(id, nil)
	err := f.s.Prepare(context.Background(), cmd)
	var se *protocol.ServerError
	if !errors.As(err, &se) || se.Code != mysql.ER_EMPTY_QUERY {
		t.Fatalf("Prepare = %v, want the server's error %d", err, mysql.ER_EMPTY_QUERY)
	}
	if got, _ := StmtID(cmd.Payload); got != id {
		t.Errorf("the refused command names statement %d, want the client's %d as it was", got, id)
	}
	if res := f.query(t, Statement{Valid: true}, "DO 1"); res.Err != nil {
		t.Errorf("the connection fails after the refusal: %v", res.Err)
	}
	if !f.s.Release(false, false) {
		t.Fatal("Release kept the connection")
	}
	if idle, open := f.idle(); idle != 2 || open != 2 {
		t.Errorf("idle, open = %d, %d; want both connections back", idle, open)
	}
}

func TestExecutionBindsTypesWhereTheClientNeverDid(t *testing.T) {
	tests := []struct {
		name string
		// on says, execution by execution, on which connection it runs (0 or 1) and which
		// types it sends (nil: none).
		on    []int
		types [][]byte
		// wantBound is whether the server got types with the last execution, wantTypes
		// the types in effect there.
		wantBound bool
		wantTypes []byte
		bug       string // a known bug that fails the case, which is skipped until fixed
	}{
		{name: "same connection", on: []int{0, 0}, types: [][]byte{varString, nil},
			wantBound: false, wantTypes: varString},
		{name: "another connection", on: []int{0, 1}, types: [][]byte{varString, nil},
			wantBound: true, wantTypes: varString},
		{name: "back on the first", on: []int{0, 1, 0}, types: [][]byte{varString, nil, nil},
			wantBound: false, wantTypes: varString},
		{name: "types sent again", on: []int{0, 1}, types: [][]byte{varString, longLong},
			wantBound: true, wantTypes: longLong},
		{name: "types changed elsewhere", on: []int{0, 1, 0}, types: [][]byte{varString, longLong, nil},
			wantBound: true, wantTypes: longLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			skipKnownBug(t, tt.bug)
			f := newFixture(t, mysqltest.Options{})
			first, second := f.acquire(t), f.acquire(t)
			conns := []*backend.Conn{first.Conn(), second.Conn()}
			second.Release()
			f.take(t, first)
			id := prepare(t, f, "SELECT ?")
			for i, on := range tt.on {
				if i > 0 {
					f.s.Release(false, false)
					f.takeConn(t, conns[on])
				}
				if res := run(t, f, execute(id, tt.types[i])); res.Err != nil {
					t.Fatalf("execution %d: %v", i, res.Err)
				}
			}
			fc := f.server(conns[tt.on[len(tt.on)-1]])
			_, types, bound := fc.LastExecute()
			if bound != tt.wantBound || !slices.Equal(types, tt.wantTypes) {
				t.Errorf("the server got types %v bound %v, want %v bound %v", types, bound, tt.wantTypes, tt.wantBound)
			}
		})
	}
}

// A statement of the same text is one statement on a connection, whichever client
// prepared it: the types another client bound there are not this client's.
func TestAnotherClientsBindingSendsTypesAgain(t *testing.T) {
	f := newFixture(t, mysqltest.Options{})
	c := f.unit(t)
	id := prepare(t, f, "SELECT ?")
	run(t, f, execute(id, varString))
	f.s.Release(false, false)

	g := f.neighbour()
	g.takeConn(t, c)
	run(t, g, execute(prepare(t, g, "SELECT ?"), longLong))
	g.s.Release(false, false)

	f.takeConn(t, c)
	if res := run(t, f, execute(id, nil)); res.Err != nil {
		t.Fatal(res.Err)
	}
	if _, types, bound := f.server(c).LastExecute(); !bound || !slices.Equal(types, varString) {
		t.Errorf("the server got types %v bound %v, want the client's own %v sent again", types, bound, varString)
	}
}

// step is one command of a client's prepared statement and the server's answer.
type step struct {
	cmd byte
	id  uint32
	res protocol.Response
}

func TestNoteStmtFollowsCursorsAndLongData(t *testing.T) {
	opened := protocol.Response{HasStatus: true, Status: mysql.SERVER_STATUS_CURSOR_EXISTS}
	lastRow := protocol.Response{HasStatus: true, Status: mysql.SERVER_STATUS_LAST_ROW_SEND}
	failed := protocol.Response{Err: &protocol.ServerError{Code: mysql.ER_UNKNOWN_ERROR}}
	tests := []struct {
		name  string
		steps []step
		want  []string // the pins after the steps
	}{
		{name: "cursor opened", steps: []step{{mysql.COM_STMT_EXECUTE, 1, opened}}, want: []string{"cursor"}},
		{name: "cursor read to its end", steps: []step{{mysql.COM_STMT_EXECUTE, 1, opened}, {mysql.COM_STMT_FETCH, 1, lastRow}}},
		{name: "cursor fetched in part", steps: []step{{mysql.COM_STMT_EXECUTE, 1, opened}, {mysql.COM_STMT_FETCH, 1, protocol.Response{HasStatus: true}}}, want: []string{"cursor"}},
		{name: "fetch failed", steps: []step{{mysql.COM_STMT_EXECUTE, 1, opened}, {mysql.COM_STMT_FETCH, 1, failed}}},
		{name: "cursor reset", steps: []step{{mysql.COM_STMT_EXECUTE, 1, opened}, {mysql.COM_STMT_RESET, 1, protocol.Response{}}}},
		{name: "executed again without one", steps: []step{{mysql.COM_STMT_EXECUTE, 1, opened}, {mysql.COM_STMT_EXECUTE, 1, protocol.Response{HasStatus: true}}}},
		{name: "another statement's cursor", steps: []step{{mysql.COM_STMT_EXECUTE, 1, opened}, {mysql.COM_STMT_EXECUTE, 2, opened}, {mysql.COM_STMT_FETCH, 1, lastRow}}, want: []string{"cursor"}},
		{name: "failed execution opens none", steps: []step{{mysql.COM_STMT_EXECUTE, 1, protocol.Response{Err: failed.Err, HasStatus: true, Status: mysql.SERVER_STATUS_CURSOR_EXISTS}}}},
		{name: "long data", steps: []step{{mysql.COM_STMT_SEND_LONG_DATA, 1, protocol.Response{}}, {mysql.COM_STMT_SEND_LONG_DATA, 1, protocol.Response{}}}, want: []string{"long_data"}},
		{name: "long data used", steps: []step{{mysql.COM_STMT_SEND_LONG_DATA, 1, protocol.Response{}}, {mysql.COM_STMT_EXECUTE, 1, protocol.Response{}}}},
		{name: "long data of another statement", steps: []step{{mysql.COM_STMT_SEND_LONG_DATA, 1, protocol.Response{}}, {mysql.COM_STMT_SEND_LONG_DATA, 2, protocol.Response{}}, {mysql.COM_STMT_EXECUTE, 1, protocol.Response{}}}, want: []string{"long_data"}},
		{name: "long data reset", steps: []step{{mysql.COM_STMT_SEND_LONG_DATA, 1, protocol.Response{}}, {mysql.COM_STMT_RESET, 1, protocol.Response{}}}},
		{name: "unknown statement", steps: []step{{mysql.COM_STMT_SEND_LONG_DATA, 9, protocol.Response{}}, {mysql.COM_STMT_EXECUTE, 9, opened}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, mysqltest.Options{})
			f.unit(t)
			prepare(t, f, "SELECT ?")
			prepare(t, f, "SELECT ?, ?")
			for _, st := range tt.steps {
				f.s.NoteStmt(st.cmd, st.id, nil, true, &st.res)
			}
			if got := Names(f.s.Pins.Bits); !slices.Equal(got, tt.want) {
				t.Errorf("pins = %v, want %v", got, tt.want)
			}
			f.s.CloseStmt(1)
			f.s.CloseStmt(2)
			if f.s.Pinned() || f.s.cursors != 0 || f.s.longData != 0 {
				t.Errorf("after the statements closed: pins %v, %d cursors, %d with long data; want none",
					Names(f.s.Pins.Bits), f.s.cursors, f.s.longData)
			}
		})
	}
}

func TestCloseStmtForgetsTheStatement(t *testing.T) {
	f := newFixture(t, mysqltest.Options{})
	f.unit(t)
	a := prepare(t, f, "SELECT ?")
	b := prepare(t, f, "SELECT ?, ?")
	f.s.NoteStmt(mysql.COM_STMT_EXECUTE, b, nil, true, &protocol.Response{HasStatus: true, Status: mysql.SERVER_STATUS_CURSOR_EXISTS})
	f.s.SyncGauge()
	if got := testutil.ToFloat64(f.sh.pinned); got != 1 {
		t.Fatalf("pinned sessions = %v with a cursor open, want 1", got)
	}
	f.s.CloseStmt(b)
	if n, size := f.s.Stmts(); n != 1 || size != len("SELECT ?") || f.s.Stmt(b) != nil || f.s.Stmt(a) == nil {
		t.Errorf("after closing %d: %d statements of %d bytes; want only %d, of %d bytes", b, n, size, a, len("SELECT ?"))
	}
	if f.s.Pinned() || testutil.ToFloat64(f.sh.pinned) != 0 {
		t.Errorf("pins %v, gauge %v after the statement with the cursor closed; want none",
			Names(f.s.Pins.Bits), testutil.ToFloat64(f.sh.pinned))
	}
	f.s.CloseStmt(b) // closing it again, or an id never given, is nothing
	f.s.CloseStmt(77)
	if n, size := f.s.Stmts(); n != 1 || size != len("SELECT ?") {
		t.Errorf("Stmts = %d, %d after closing unknown ids; want 1, %d", n, size, len("SELECT ?"))
	}
}
