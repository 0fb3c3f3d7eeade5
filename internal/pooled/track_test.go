package pooled

import (
	"bytes"
	"maps"
	"slices"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol/mysqltest"
)

// Session-state records, built by hand in the format of MySQL's OK packet (a type byte,
// then the record's data as a length-encoded string): package protocol decodes them
// (NextStateChange) and encodes length-encoded strings, but has no record encoder.

// sysVar is the record of a system variable set to value: its data is the name and the
// value, each a length-encoded string.
func sysVar(name, value string) []byte {
	data := protocol.AppendLenencString(protocol.AppendLenencString(nil, name), value)
	return protocol.AppendLenencString([]byte{mysql.SESSION_TRACK_SYSTEM_VARIABLES}, string(data))
}

// schema is the record of a change of the default schema: its data is the name, a
// length-encoded string.
func schema(name string) []byte {
	return protocol.AppendLenencString([]byte{mysql.SESSION_TRACK_SCHEMA}, string(protocol.AppendLenencString(nil, name)))
}

// stateFlag is the record that the session state changed: its data is the byte '1'.
func stateFlag() []byte {
	return protocol.AppendLenencString([]byte{mysql.SESSION_TRACK_STATE_CHANGE}, "1")
}

// changed is a response that reports the records rs.
func changed(rs ...[]byte) *protocol.Response {
	return &protocol.Response{StateChanged: true, StateChanges: bytes.Join(rs, nil)}
}

func TestRecordsApplied(t *testing.T) {
	set := Statement{Valid: true, Kind: classify.Session}
	read := Statement{Valid: true, Kind: classify.Read}
	tests := []struct {
		name       string
		cmd        byte
		st         Statement
		res        *protocol.Response
		wantVars   map[string]string
		wantSchema string
		wantPins   []string
		unflushed  bool
	}{
		{name: "variable", cmd: mysql.COM_QUERY, st: set, res: changed(sysVar("sql_mode", "ANSI"), stateFlag()),
			wantVars: map[string]string{"sql_mode": "ANSI"}},
		{name: "variable named in capitals", cmd: mysql.COM_QUERY, st: set, res: changed(sysVar("TIME_ZONE", "+01:00")),
			wantVars: map[string]string{"time_zone": "+01:00"}},
		{name: "variables of a prepared SET", cmd: mysql.COM_STMT_EXECUTE, st: set, res: changed(sysVar("sql_mode", "ANSI"), stateFlag()),
			wantVars: map[string]string{"sql_mode": "ANSI"}},
		{name: "timestamp", cmd: mysql.COM_QUERY, st: set, res: changed(sysVar("timestamp", "1700000000"), stateFlag()),
			wantPins: []string{"session_variable"}},
		{name: "insert_id", cmd: mysql.COM_QUERY, st: set, res: changed(sysVar("insert_id", "7"), stateFlag()),
			wantPins: []string{"session_variable"}},
		{name: "pseudo_thread_id", cmd: mysql.COM_QUERY, st: set, res: changed(sysVar("pseudo_thread_id", "7"), stateFlag()),
			wantPins: []string{"session_variable"}},
		{name: "a name SET cannot write", cmd: mysql.COM_QUERY, st: set, res: changed(sysVar("a-b", "1"), stateFlag()),
			wantPins: []string{"session_variable"}},
		{name: "sql_log_bin off", cmd: mysql.COM_QUERY, st: set, res: changed(sysVar("sql_log_bin", "OFF"), stateFlag()),
			wantPins: []string{"sql_log_bin"}},
		{name: "sql_log_bin 0", cmd: mysql.COM_QUERY, st: set, res: changed(sysVar("sql_log_bin", "0"), stateFlag()),
			wantPins: []string{"sql_log_bin"}},
		{name: "session tracking", cmd: mysql.COM_QUERY, st: set, res: changed(sysVar("session_track_schema", "OFF"), stateFlag()),
			wantPins: []string{"session_tracking"}},
		{name: "last_gtid", cmd: mysql.COM_QUERY, st: Statement{Valid: true, Kind: classify.Write}, res: changed(sysVar("last_gtid", "0-1-5"), stateFlag())},
		{name: "schema", cmd: mysql.COM_QUERY, st: set, res: changed(schema("shop"), stateFlag()),
			wantSchema: "shop"},
		{name: "schema of COM_INIT_DB", cmd: mysql.COM_INIT_DB,
			res:        &protocol.Response{StateChanged: true, StateChanges: schema("shop"), SchemaChanged: true, Schema: []byte("shop")},
			wantSchema: "shop"},
		{name: "schema of an execution", cmd: mysql.COM_STMT_EXECUTE, st: set, res: changed(sysVar("sql_mode", "ANSI"), schema("shop"), stateFlag()),
			wantVars: map[string]string{"sql_mode": "ANSI"}},
		{name: "unexplained change", cmd: mysql.COM_QUERY, st: Statement{Valid: true, Kind: classify.Write}, res: changed(stateFlag()),
			wantPins: []string{"session_state"}},
		{name: "change behind an opaque statement", cmd: mysql.COM_QUERY, st: Statement{Valid: true, Kind: classify.Write, Opaque: true},
			res: changed(sysVar("sql_mode", "ANSI"), stateFlag()), wantVars: map[string]string{"sql_mode": "ANSI"}, wantPins: []string{"session_state"}},
		{name: "change hidden by a user variable", cmd: mysql.COM_QUERY, st: Statement{Valid: true, Kind: classify.Session, Uses: classify.UsesUserVariable},
			res: changed(stateFlag()), wantPins: []string{"user_variable"}},
		{name: "malformed records", cmd: mysql.COM_QUERY, st: set, res: changed(sysVar("sql_mode", "ANSI")[:5]),
			wantPins: []string{"session_state"}},
		{name: "SET STATEMENT ... FOR", cmd: mysql.COM_QUERY, st: Statement{Valid: true, Kind: classify.Read, ForOne: true},
			res: changed(sysVar("sql_mode", "ANSI"), stateFlag())},
		{name: "prepared statement's own switch", cmd: mysql.COM_STMT_EXECUTE, st: read,
			res: changed(sysVar("sql_mode", "ANSI"), schema("shop"), stateFlag())},
		{name: "EOF-ended result set", cmd: mysql.COM_QUERY, st: read, res: changed(),
			wantPins: []string{"session_state"}, unflushed: true},
		{name: "EOF-ended execution", cmd: mysql.COM_STMT_EXECUTE, st: read, res: changed(), unflushed: true},
		{name: "no change", cmd: mysql.COM_QUERY, st: set, res: &protocol.Response{StateChanges: sysVar("sql_mode", "ANSI")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, mysqltest.Options{})
			f.unit(t)
			f.s.Note(tt.cmd, &tt.st, tt.res, nil, true)
			vars := map[string]string{}
			for _, v := range f.s.State.Vars() {
				vars[v.Name] = v.Value
			}
			if !maps.Equal(vars, tt.wantVars) {
				t.Errorf("variables = %v, want %v", vars, tt.wantVars)
			}
			if f.s.State.Schema != tt.wantSchema {
				t.Errorf("schema = %q, want %q", f.s.State.Schema, tt.wantSchema)
			}
			if got := Names(f.s.Pins.Bits); !slices.Equal(got, tt.wantPins) {
				t.Errorf("pins = %v, want %v", got, tt.wantPins)
			}
			if f.s.unflushed != tt.unflushed {
				t.Errorf("unflushed = %v, want %v", f.s.unflushed, tt.unflushed)
			}
		})
	}
}

func TestSQLLogBinOnUnpins(t *testing.T) {
	f := newFixture(t, mysqltest.Options{})
	f.unit(t)
	set := &Statement{Valid: true, Kind: classify.Session}
	f.s.Note(mysql.COM_QUERY, set, changed(sysVar("sql_log_bin", "0")), nil, true)
	if !f.s.Pins.Has(PinSQLLogBin) || testutil.ToFloat64(f.sh.pinned) != 1 {
		t.Fatalf("pins %v with sql_log_bin off, want sql_log_bin", Names(f.s.Pins.Bits))
	}
	f.s.Note(mysql.COM_QUERY, set, changed(sysVar("sql_log_bin", "1")), nil, true)
	if f.s.Pinned() || testutil.ToFloat64(f.sh.pinned) != 0 {
		t.Errorf("pins %v after sql_log_bin back on, want none", Names(f.s.Pins.Bits))
	}
	if _, ok := f.s.State.Var("sql_log_bin"); ok {
		t.Error("sql_log_bin follows the session: another connection would get it")
	}
}

// COM_INIT_DB on a connection that does not report the schema moves the session's schema
// itself.
func TestInitDBMovesTheSchema(t *testing.T) {
	tests := []struct {
		name     string
		res      protocol.Response
		complete bool
		want     string
	}{
		{name: "untracked", complete: true, want: "shop"},
		{name: "refused", res: protocol.Response{Err: &protocol.ServerError{Code: mysql.ER_BAD_DB_ERROR}}, complete: true},
		{name: "not read whole", complete: false},
		{name: "reported", res: protocol.Response{SchemaChanged: true}, complete: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, mysqltest.Options{})
			f.unit(t)
			f.s.Note(mysql.COM_INIT_DB, &Statement{}, &tt.res, []byte("shop"), tt.complete)
			if f.s.State.Schema != tt.want {
				t.Errorf("schema = %q, want %q", f.s.State.Schema, tt.want)
			}
		})
	}
}

// A variable the session sets follows it: the next unit on another connection finds it
// set there.
func TestTrackedVariableIsReplayedOnAnotherConnection(t *testing.T) {
	f := newFixture(t, mysqltest.Options{})
	first, second := f.acquire(t), f.acquire(t)
	f.take(t, first)
	f.query(t, Statement{Valid: true, Kind: classify.Session}, "SET SESSION time_zone='+01:00'")
	f.query(t, Statement{Valid: true, Kind: classify.Session}, "USE shop")
	if v, _ := f.s.State.Var("time_zone"); v != "+01:00" || f.s.State.Schema != "shop" {
		t.Fatalf("state after SET and USE: time_zone %q, schema %q", v, f.s.State.Schema)
	}
	if !f.s.Release(false, false) {
		t.Fatal("Release kept the connection of a session with its state tracked")
	}
	fc := f.server(f.take(t, second))
	if got := fc.Vars()["time_zone"]; got != "+01:00" || fc.Schema() != "shop" {
		t.Errorf("the other connection has time_zone %q in %q, want +01:00 in shop", got, fc.Schema())
	}
	if got := testutil.ToFloat64(f.sh.syncs); got != 1 {
		t.Errorf("syncs = %v, want 1", got)
	}
}

// SET NAMES without COLLATE reports the character sets but not the collation, which the
// session then reads from the connection.
func TestSetNamesReadsTheCollationBack(t *testing.T) {
	f := newFixture(t, mysqltest.Options{})
	c := f.unit(t)
	// The server's collation for the character set, which the session never saw set.
	f.send(t, append([]byte{mysql.COM_QUERY}, "SET SESSION collation_connection='latin1_german1_ci'"...))
	f.query(t, Statement{Valid: true, Kind: classify.Session}, "SET NAMES latin1")
	if v, _ := f.s.State.Var("collation_connection"); v != "latin1_german1_ci" {
		t.Errorf("collation_connection = %q, want the connection's latin1_german1_ci", v)
	}
	if v, _ := f.s.State.Var("character_set_connection"); v != "latin1" {
		t.Errorf("character_set_connection = %q, want latin1", v)
	}
	if q := f.server(c).Queries(); q[len(q)-1] != "SELECT @@SESSION.collation_connection" {
		t.Errorf("last query %q, want the collation read back", q[len(q)-1])
	}
	if f.s.Pinned() {
		t.Errorf("pins %v, want none", Names(f.s.Pins.Bits))
	}

	t.Run("with COLLATE", func(t *testing.T) {
		before := len(f.server(c).Commands())
		f.query(t, Statement{Valid: true, Kind: classify.Session}, "SET NAMES utf8mb4 COLLATE utf8mb4_bin")
		if v, _ := f.s.State.Var("collation_connection"); v != "utf8mb4_bin" {
			t.Errorf("collation_connection = %q, want utf8mb4_bin", v)
		}
		if n := len(f.server(c).Commands()) - before; n != 1 {
			t.Errorf("%d commands, want the SET NAMES alone", n)
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		f.server(c).Close()
		<-f.server(c).Done()
		f.s.Note(mysql.COM_QUERY, &Statement{Valid: true, Kind: classify.Session},
			changed(sysVar("character_set_connection", "latin2")), nil, true)
		if !f.s.Pins.Has(PinSessionVariable) {
			t.Errorf("pins %v, want session_variable for a collation it cannot know", Names(f.s.Pins.Bits))
		}
	})
}

// A result set ended by an EOF cannot carry the records of a change: the server keeps them
// for the next OK, which Release takes before the connection goes to another session.
func TestReleaseFlushesRecordsAnEOFCouldNotCarry(t *testing.T) {
	eofExecution := func(f *fixture) {
		f.s.Note(mysql.COM_STMT_EXECUTE, &Statement{Valid: true, Kind: classify.Read}, changed(), nil, true)
	}
	t.Run("flushed", func(t *testing.T) {
		f := newFixture(t, mysqltest.Options{})
		fc := f.server(f.unit(t))
		before := len(fc.Commands())
		eofExecution(f)
		if !f.s.Release(false, false) {
			t.Fatal("Release kept the connection")
		}
		if got := received(fc)[before:]; len(got) != 1 || got[0] != mysql.COM_PING {
			t.Errorf("the connection got %v, want one COM_PING", got)
		}
		if idle, _ := f.idle(); idle != 1 || f.s.unflushed {
			t.Errorf("idle = %d, unflushed %v; want the connection back, flushed", idle, f.s.unflushed)
		}
		fc2 := f.server(f.unit(t))
		f.s.Release(false, false)
		if fc2 != fc || len(received(fc)) != before+1 {
			t.Errorf("the next unit flushed again: %v", received(fc)[before:])
		}
	})
	t.Run("flush failed", func(t *testing.T) {
		f := newFixture(t, mysqltest.Options{})
		fc := f.server(f.unit(t))
		eofExecution(f)
		fc.Close()
		<-fc.Done()
		if !f.s.Release(false, false) {
			t.Fatal("Release kept the connection")
		}
		if idle, open := f.idle(); idle != 0 || open != 0 {
			t.Errorf("idle, open = %d, %d; want the connection closed", idle, open)
		}
	})
}
