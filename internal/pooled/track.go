package pooled

import (
	"bytes"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// Statement is what pooled mode reads of the statement a command carries: of a COM_QUERY,
// or the prepared statement a COM_STMT_EXECUTE runs.
type Statement struct {
	// Valid: the command carries a statement the classifier read; the rest is its.
	Valid bool
	Kind  classify.Kind
	Uses  classify.Uses
	// Opaque: it may do more than the classifier sees (a CALL, several statements).
	Opaque bool
	// ForOne: SET STATEMENT var=value FOR ..., whose variables are set for the one
	// statement.
	ForOne bool
}

// Note learns from the command cmd just run, with the response res, what the session
// state is now and whether the session must keep its connection. text is the command's
// argument (the schema of COM_INIT_DB) when complete is set.
func (s *Session) Note(cmd byte, st *Statement, res *protocol.Response, text []byte, complete bool) {
	if res.LastInsertID != 0 {
		s.State.LastInsertID = res.LastInsertID
		s.lease.Conn().SawLastInsertID(res.LastInsertID)
	}
	if (cmd == mysql.COM_QUERY || cmd == mysql.COM_STMT_EXECUTE) && st.Valid && res.Err == nil {
		s.pinsOfStatement(st.Kind, st.Uses)
	}
	if res.StateChanged {
		s.track(cmd, st, res)
	}
	if cmd == mysql.COM_INIT_DB && res.Err == nil && !res.SchemaChanged && complete {
		s.State.Schema = string(text)
	}
	if cmd == mysql.COM_SET_OPTION && res.Err == nil {
		s.pin(PinSetOption) // the connection's multi-statement setting differs from its key
	}
	s.SyncGauge()
}

// untracked are variables whose tracked value cannot be set again on another connection:
// they are fixed values of a moment (timestamp), one-shot values for the next statement,
// or ids that belong to one connection.
var untracked = map[string]bool{
	"timestamp": true, "insert_id": true, "last_insert_id": true, "identity": true,
	"rand_seed1": true, "rand_seed2": true, "pseudo_thread_id": true, "gtid_seq_no": true,
	"pseudo_slave_mode": true, "sql_log_bin": true,
}

// track applies the session-state records of a response: variables and schema follow
// the session; a change the records do not explain pins it.
func (s *Session) track(cmd byte, st *Statement, res *protocol.Response) {
	// Records that describe the statement's own doing, not the session's: SET STATEMENT
	// var=value FOR ... reports the variable it set for the one statement, and a prepared
	// statement run in the schema or SQL mode it was prepared in reports the switch. The
	// server has put the session's own values back already.
	borrowed := st.Valid && st.ForOne || cmd == mysql.COM_STMT_EXECUTE && !st.Opaque && st.Kind != classify.Session
	if len(res.StateChanges) == 0 {
		// An EOF-ended result set cannot carry the records: the server sends them with
		// the next OK, which must not reach another session.
		s.unflushed = true
		if !borrowed && !(cmd == mysql.COM_STMT_EXECUTE && !st.Opaque) && !s.hidesState() {
			s.pin(PinSessionState)
		}
		return
	}
	if borrowed {
		return
	}
	explained, changed, ok := s.applyRecords(res.StateChanges, cmd != mysql.COM_STMT_EXECUTE)
	if !ok {
		s.pin(PinSessionState)
		return
	}
	// A change the records explain is the whole change, unless the statement may do more
	// than the classifier sees (a CALL, several statements): then user variables or
	// temporary tables may hide behind it.
	if changed && (!explained || st.Opaque) && !s.hidesState() {
		s.pin(PinSessionState)
	}
}

// hidesState tells whether the session is pinned already by state that session tracking
// does not report (user variables, temporary tables, SQL prepared statements).
func (s *Session) hidesState() bool {
	return s.Pins.Has(PinUserVariable) || s.Pins.Has(PinTemporaryTable) || s.Pins.Has(PinPreparedSQL)
}

// lastGTID is the commit position's record, not a setting.
var lastGTID = []byte("last_gtid")

// applyRecords applies session-state records to the session state; schemas too when
// withSchema. explained says that a variable or the schema changed, changed that the
// server flagged a change of state; ok is false for records it cannot read.
func (s *Session) applyRecords(records []byte, withSchema bool) (explained, changed, ok bool) {
	charsetSet, collationSet := false, false
	for rest := records; len(rest) > 0; {
		sc, next, good := protocol.NextStateChange(rest)
		if !good {
			return explained, changed, false
		}
		rest = next
		switch sc.Type {
		case mysql.SESSION_TRACK_SYSTEM_VARIABLES:
			explained = true
			if bytes.EqualFold(sc.Name, lastGTID) {
				continue
			}
			name := strings.ToLower(string(sc.Name))
			if s.applyVariable(name, sc.Name, sc.Value) {
				charsetSet = charsetSet || name == "character_set_connection"
				collationSet = collationSet || name == "collation_connection"
			}
		case mysql.SESSION_TRACK_SCHEMA:
			if withSchema {
				explained = true
				s.State.Schema = string(sc.Value)
			}
		case mysql.SESSION_TRACK_STATE_CHANGE:
			changed = bytes.Equal(sc.Value, []byte("1"))
		}
	}
	if charsetSet && !collationSet {
		// SET NAMES cs COLLATE c reports the character sets but not the collation.
		s.trackCollation()
	}
	return explained, changed, true
}

// applyVariable applies a system variable's record, name being its name in lower case;
// it tells whether the variable now follows the session.
func (s *Session) applyVariable(name string, raw, value []byte) bool {
	switch {
	case name == "sql_log_bin":
		if v := string(value); v == "OFF" || v == "0" {
			s.pin(PinSQLLogBin)
		} else {
			s.unpin(PinSQLLogBin)
		}
	case strings.HasPrefix(name, "session_track_"):
		s.pin(PinSessionTracking)
	case untracked[name] || !backend.ValidVarName(raw):
		s.pin(PinSessionVariable)
	default:
		s.State.SetVar(name, string(value))
		return true
	}
	return false
}

// trackCollation reads the connection's collation after the character sets changed, since
// session tracking does not report it.
func (s *Session) trackCollation() {
	v, err := s.lease.Conn().Variable("collation_connection")
	if err != nil {
		s.pin(PinSessionVariable) // the collation cannot be known: keep the connection
		return
	}
	s.State.SetVar("collation_connection", v)
}
