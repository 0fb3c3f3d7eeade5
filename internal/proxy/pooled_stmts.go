package proxy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// clientStmt is a prepared statement as a pooled client sees it. The client knows it by the
// proxy's id; on a connection it is the statement of the same text, prepared there again
// when missing. The parameter types the client last sent are kept: a later execution that
// sends none must send them to a connection where they were never bound.
type clientStmt struct {
	text            []byte
	params, columns uint16
	types           []byte
	// snap is the session state the client prepared it in, which gives its text its
	// meaning wherever it is prepared again.
	snap backend.Snapshot
	// connIDOnly: the statement is SELECT CONNECTION_ID(), which the proxy answers, with
	// connIDName as its column's name.
	connIDOnly bool
	connIDName string
	// cursor: an execution opened a cursor that COM_STMT_FETCH reads; longData: data was
	// sent for its next execution. Both keep the session on its connection.
	cursor, longData bool
}

// stmtIDOf returns the statement id of a COM_STMT_* command.
func stmtIDOf(p []byte) (uint32, bool) {
	if len(p) < 5 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(p[1:]), true
}

// localPooled answers the commands that pooled mode handles in the proxy, wholly or in
// part, before a unit starts. handled tells that the command was dealt with; keep that the
// session goes on.
func (s *session) localPooled(cmd byte) (handled, keep bool) {
	pl := s.pl
	switch cmd {
	case mysql.COM_QUIT:
		return true, false // the connection goes back to the pool, not to the server's goodbye
	case mysql.COM_PING:
		if pl.lease == nil {
			return true, s.writeLocalOK()
		}
	case mysql.COM_RESET_CONNECTION:
		s.resetPooled()
		s.publish()
		return true, s.writeLocalOK()
	case mysql.COM_CHANGE_USER:
		keep := s.changeUserPooled()
		s.publish()
		return true, keep
	case mysql.COM_STMT_PREPARE:
		switch {
		case len(pl.stmts) >= pl.pooling.maxStmts:
			s.sendError(&clientError{code: codeMaxPreparedStmts, state: "42000", msg: fmt.Sprintf(
				"Can't create more than max_prepared_stmt_count statements (current value: %d)", pl.pooling.maxStmts)})
			return true, s.client.IOErr() == nil
		case pl.stmtBytes+len(s.cmd.Payload) > pl.pooling.maxStmtBytes || !s.cmd.Complete():
			if err := s.client.DiscardCommand(&s.cmd); err != nil {
				return true, false
			}
			s.sendError(&clientError{code: codeMaxPreparedStmts, state: "42000", msg: fmt.Sprintf(
				"gatekeeper: this connection's prepared statements would hold more than %d bytes of text, what the proxy keeps per connection to prepare them again; close statements no longer used",
				pl.pooling.maxStmtBytes)})
			return true, s.client.IOErr() == nil
		}
	case mysql.COM_STMT_CLOSE:
		if id, ok := stmtIDOf(s.cmd.Payload); ok {
			if cs := pl.stmts[id]; cs != nil {
				s.stmtDone(cs)
				pl.stmtBytes -= len(cs.text)
				delete(pl.stmts, id)
				delete(s.stmts, id)
			}
		}
		s.setPinned(pl.pins.bits != 0)
		return true, true // no answer, as from the server
	case mysql.COM_STMT_RESET:
		id, _ := stmtIDOf(s.cmd.Payload)
		cs := pl.stmts[id]
		if cs == nil {
			return true, s.unknownStmt(id, "mysqld_stmt_reset")
		}
		if !(cs.cursor || cs.longData) || pl.lease == nil {
			return true, s.writeLocalOK() // nothing of it lives on a connection
		}
	case mysql.COM_STMT_EXECUTE, mysql.COM_STMT_FETCH, mysql.COM_STMT_SEND_LONG_DATA:
		id, _ := stmtIDOf(s.cmd.Payload)
		if pl.stmts[id] == nil {
			if cmd == mysql.COM_STMT_SEND_LONG_DATA {
				return true, true // the server ignores it too, and answers nothing
			}
			return true, s.unknownStmt(id, "mysqld_stmt_"+map[byte]string{mysql.COM_STMT_EXECUTE: "execute", mysql.COM_STMT_FETCH: "fetch"}[cmd])
		}
		if cs := pl.stmts[id]; cmd == mysql.COM_STMT_EXECUTE && cs.connIDOnly {
			return true, s.answerConnectionID(cs.connIDName, true)
		}
		if cmd == mysql.COM_STMT_FETCH && (pl.lease == nil || !pl.stmts[id].cursor) {
			s.sendError(&clientError{code: 1421, state: stateGeneral,
				msg: "The statement (" + strconv.FormatUint(uint64(id), 10) + ") has no open cursor"})
			return true, s.client.IOErr() == nil
		}
	case mysql.COM_QUERY:
		st := &s.stmt
		if !st.valid {
			break
		}
		if st.connIDOnly {
			return true, s.answerConnectionID(string(st.connIDName), false)
		}
		if st.uses&classify.UsesKill != 0 && st.killID > 0 {
			return true, s.killPooled(st.killID, st.killQuery)
		}
	case mysql.COM_PROCESS_KILL:
		if id, ok := stmtIDOf(s.cmd.Payload); ok {
			return true, s.killPooled(uint64(id), false)
		}
	}
	return false, true
}

// writeLocalOK answers the client with an OK of the proxy's own.
func (s *session) writeLocalOK() bool {
	if err := s.client.WritePacket(protocol.AppendOK(nil, 0, 0, s.status(), 0)); err != nil {
		return false
	}
	return s.client.Flush() == nil
}

// status is the server status the session is in, for the proxy's own answers.
func (s *session) status() uint16 {
	var st uint16
	if s.autocommit {
		st |= mysql.SERVER_STATUS_AUTOCOMMIT
	}
	if s.inTxn {
		st |= mysql.SERVER_STATUS_IN_TRANS
	}
	return st
}

func (s *session) unknownStmt(id uint32, where string) bool {
	s.sendError(&clientError{code: codeUnknownStmt, state: stateGeneral, msg: fmt.Sprintf(
		"Unknown prepared statement handler (%d) given to %s", id, where)})
	return s.client.IOErr() == nil
}

// stmtDone forgets what a statement held on the connection.
func (s *session) stmtDone(cs *clientStmt) {
	if cs.cursor {
		cs.cursor = false
		s.pl.cursors--
	}
	if cs.longData {
		cs.longData = false
		s.pl.longData--
	}
	if s.pl.cursors == 0 {
		s.unpin(pinCursor)
	}
	if s.pl.longData == 0 {
		s.unpin(pinLongData)
	}
}

// resetPooled forgets the session state, as COM_RESET_CONNECTION does on a server: the
// variables, the prepared statements, and the pins with the connection they held, which
// is reset before it goes back to the pool.
func (s *session) resetPooled() {
	pl := s.pl
	pl.state.Clear()
	clear(pl.stmts)
	clear(s.stmts)
	pl.cursors, pl.longData, pl.stmtBytes = 0, 0, 0
	pinned := pl.pins.bits != 0
	pl.pins = pins{}
	s.setPinned(false)
	s.inTxn, s.autocommit = false, true
	if pl.lease != nil {
		s.mu.Lock()
		lease := pl.lease
		pl.lease = nil
		s.mu.Unlock()
		c := lease.Conn()
		if pinned || s.unit.open {
			if err := c.Reset(); err != nil {
				lease.Discard()
				return
			}
			pl.pooling.resets.Inc()
		}
		c.Adopt(pl.state)
		lease.Release()
	}
}

// preparePooled maps the statement ids of a command to the connection it runs on, and
// prepares the statement there first when it is missing. When the command cannot run, the
// client has been told why and ok is false.
func (s *session) preparePooled(cmd byte) (ok, keep bool) {
	pl := s.pl
	switch cmd {
	case mysql.COM_STMT_PREPARE:
		pl.nextID++
		if pl.nextID == 0 {
			pl.nextID = 1
		}
		for pl.stmts[pl.nextID] != nil {
			pl.nextID++
		}
		s.relay.StmtID = pl.nextID
		return true, true
	case mysql.COM_STMT_EXECUTE, mysql.COM_STMT_FETCH, mysql.COM_STMT_RESET, mysql.COM_STMT_SEND_LONG_DATA:
	default:
		return true, true
	}
	id, _ := stmtIDOf(s.cmd.Payload)
	cs := pl.stmts[id]
	c := pl.lease.Conn()
	st := c.Stmt(cs.text, cs.snap.Key())
	if st == nil {
		var err error
		if st, err = c.PrepareUnder(s.ctx, &pl.want, cs.text, cs.snap, pl.state); err != nil {
			var se *protocol.ServerError
			if errors.As(err, &se) {
				// The statement no longer prepares (a table dropped): the client gets the
				// server's reason as the answer to its command.
				if cmd != mysql.COM_STMT_SEND_LONG_DATA {
					s.relayError(se)
				}
				return false, s.client.IOErr() == nil
			}
			s.backendBroken = true
			s.fail(cmd, err, s.client.Written())
			return false, false
		}
	}
	p := s.cmd.Payload
	binary.LittleEndian.PutUint32(p[1:], st.ID)
	if cmd == mysql.COM_STMT_EXECUTE && cs.params > 0 && s.cmd.Complete() {
		s.bindTypes(cs, st, id)
	}
	return true, true
}

// bindTypes keeps the parameter types an execution sends, and sends them again for an
// execution that sends none to a statement whose types were bound by someone else.
func (s *session) bindTypes(cs *clientStmt, st *backend.Stmt, id uint32) {
	p := s.cmd.Payload
	flagAt := 1 + 4 + 1 + 4 + (int(cs.params)+7)/8
	if len(p) <= flagAt {
		return // malformed: the server says so
	}
	binder := s.id<<32 | uint64(id)
	typesEnd := flagAt + 1 + 2*int(cs.params)
	switch {
	case p[flagAt] == 1 && len(p) >= typesEnd:
		cs.types = append(cs.types[:0], p[flagAt+1:typesEnd]...)
		st.Binder = binder
	case p[flagAt] == 0 && st.Binder != binder && cs.types != nil:
		q := make([]byte, 0, len(p)+len(cs.types))
		q = append(q, p[:flagAt]...)
		q = append(q, 1)
		q = append(q, cs.types...)
		q = append(q, p[flagAt+1:]...)
		s.cmd.Replace(q)
		st.Binder = binder
	}
}

// notePooledStmt records what a statement command did.
func (s *session) notePooledStmt(cmd byte, clientID uint32) {
	pl := s.pl
	res := &s.res
	switch cmd {
	case mysql.COM_STMT_PREPARE:
		s.relay.StmtID = 0
		if res.Err != nil || !s.cmd.Complete() {
			return
		}
		text := bytes.Clone(s.cmd.Text())
		snap := pl.state.Snapshot()
		pl.lease.Conn().Remember(text, snap.Key(), res.StmtID, res.Params, res.Columns)
		cs := &clientStmt{text: text, params: res.Params, columns: res.Columns, snap: snap}
		if st := &s.stmt; st.valid && st.connIDOnly {
			cs.connIDOnly, cs.connIDName = true, string(st.connIDName)
		}
		pl.stmts[pl.nextID] = cs
		pl.stmtBytes += len(text)
		res.StmtID = pl.nextID // the session's classification is kept under the client's id
	case mysql.COM_STMT_SEND_LONG_DATA:
		if cs := pl.stmts[clientID]; cs != nil && !cs.longData {
			cs.longData = true
			pl.longData++
			s.pin(pinLongData)
		}
	case mysql.COM_STMT_EXECUTE:
		cs := pl.stmts[clientID]
		if cs == nil {
			return
		}
		if cs.longData {
			cs.longData = false
			if pl.longData--; pl.longData == 0 {
				s.unpin(pinLongData)
			}
		}
		if cs.cursor {
			cs.cursor = false
			pl.cursors--
		}
		if res.Err == nil && res.HasStatus && res.Status&mysql.SERVER_STATUS_CURSOR_EXISTS != 0 {
			cs.cursor = true
			pl.cursors++
			s.pin(pinCursor)
		} else if pl.cursors == 0 {
			s.unpin(pinCursor)
		}
	case mysql.COM_STMT_FETCH:
		cs := pl.stmts[clientID]
		if cs != nil && cs.cursor && (res.Err != nil || res.Status&mysql.SERVER_STATUS_LAST_ROW_SEND != 0) {
			s.stmtDone(cs)
		}
	case mysql.COM_STMT_RESET:
		if cs := pl.stmts[clientID]; cs != nil {
			s.stmtDone(cs)
		}
	}
}
