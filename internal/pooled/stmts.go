package pooled

import (
	"bytes"
	"context"
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// Stmt is a prepared statement as a pooled client sees it. The client knows it by the
// proxy's id; on a connection it is the statement of the same text, prepared there again
// when missing. The parameter types the client last sent are kept: a later execution that
// sends none must send them to a connection where they were never bound.
type Stmt struct {
	text            []byte
	params, columns uint16
	types           []byte
	// snap is the session state the client prepared it in, which gives its text its
	// meaning wherever it is prepared again.
	snap backend.Snapshot
	// ConnIDOnly: the statement is SELECT CONNECTION_ID(), which the proxy answers, with
	// ConnIDName as its column's name.
	ConnIDOnly bool
	ConnIDName string
	// Cursor: an execution opened a cursor that COM_STMT_FETCH reads; LongData: data was
	// sent for its next execution. Both keep the session on its connection.
	Cursor, LongData bool
}

// Text returns the statement's text; Params the number of its parameters; Snapshot the
// session state it was prepared in.
func (s *Stmt) Text() []byte               { return s.text }
func (s *Stmt) Params() int                { return int(s.params) }
func (s *Stmt) Snapshot() backend.Snapshot { return s.snap }

// StmtID returns the statement id of a COM_STMT_* command.
func StmtID(p []byte) (uint32, bool) {
	if len(p) < 5 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(p[1:]), true
}

// Stmt returns the client's statement id, or nil.
func (s *Session) Stmt(id uint32) *Stmt { return s.stmts[id] }

// Stmts returns how many statements the client has prepared, and the bytes of their texts.
func (s *Session) Stmts() (n, bytes int) { return len(s.stmts), s.stmtBytes }

// CloseStmt forgets the client's statement id, as COM_STMT_CLOSE does.
func (s *Session) CloseStmt(id uint32) {
	if cs := s.stmts[id]; cs != nil {
		s.stmtDone(cs)
		s.stmtBytes -= len(cs.text)
		delete(s.stmts, id)
	}
	s.SyncGauge()
}

// stmtDone forgets what a statement held on the connection.
func (s *Session) stmtDone(cs *Stmt) {
	if cs.Cursor {
		cs.Cursor = false
		s.cursors--
	}
	if cs.LongData {
		cs.LongData = false
		s.longData--
	}
	if s.cursors == 0 {
		s.unpin(PinCursor)
	}
	if s.longData == 0 {
		s.unpin(PinLongData)
	}
}

// NextID picks the id the client will know the statement being prepared by: the next one
// not in use, never 0.
func (s *Session) NextID() uint32 {
	s.nextID++
	for s.nextID == 0 || s.stmts[s.nextID] != nil {
		s.nextID++
	}
	return s.nextID
}

// Prepare maps the client's statement id in cmd, a COM_STMT_EXECUTE, FETCH, RESET or
// SEND_LONG_DATA of a statement the client has, to the statement of the same text on the
// leased connection, preparing it there first when it is missing. An error from the
// server (a *protocol.ServerError: the statement no longer prepares, its table dropped) is
// the answer to the command; any other leaves the connection broken.
func (s *Session) Prepare(ctx context.Context, cmd *protocol.Command) error {
	id, _ := StmtID(cmd.Payload)
	cs := s.stmts[id]
	c := s.lease.Conn()
	st := c.Stmt(cs.text, cs.snap.Key())
	if st == nil {
		var err error
		if st, err = c.PrepareUnder(ctx, &s.Want, cs.text, cs.snap, s.State); err != nil {
			return err
		}
	}
	binary.LittleEndian.PutUint32(cmd.Payload[1:], st.ID)
	if cmd.Byte() == mysql.COM_STMT_EXECUTE && cs.params > 0 && cmd.Complete() {
		bindTypes(cmd, cs, st)
	}
	return nil
}

// bindTypes keeps the parameter types an execution sends, and sends them again for an
// execution that sends none to a statement on which other types were bound since.
func bindTypes(cmd *protocol.Command, cs *Stmt, st *backend.Stmt) {
	p := cmd.Payload
	flagAt := 1 + 4 + 1 + 4 + (int(cs.params)+7)/8
	if len(p) <= flagAt {
		return // malformed: the server says so
	}
	typesEnd := flagAt + 1 + 2*int(cs.params)
	switch {
	case p[flagAt] == 1 && len(p) >= typesEnd:
		cs.types = append(cs.types[:0], p[flagAt+1:typesEnd]...)
		st.Types = append(st.Types[:0], cs.types...)
	case p[flagAt] == 0 && cs.types != nil && !bytes.Equal(st.Types, cs.types):
		q := make([]byte, 0, len(p)+len(cs.types))
		q = append(q, p[:flagAt]...)
		q = append(q, 1)
		q = append(q, cs.types...)
		q = append(q, p[flagAt+1:]...)
		cmd.Replace(q)
		st.Types = append(st.Types[:0], cs.types...)
	}
}

// NoteStmt records what a statement command cmd did, answered by res: a statement
// prepared (text, under the client's id; res.StmtID becomes that id, and the statement is
// returned), data sent for an execution, a cursor opened or read to its end. clientID is
// the id the command named.
func (s *Session) NoteStmt(cmd byte, clientID uint32, text []byte, complete bool, res *protocol.Response) *Stmt {
	switch cmd {
	case mysql.COM_STMT_PREPARE:
		if res.Err != nil || !complete {
			return nil
		}
		text = bytes.Clone(text)
		snap := s.State.Snapshot()
		s.lease.Conn().Remember(text, snap.Key(), res.StmtID, res.Params, res.Columns)
		cs := &Stmt{text: text, params: res.Params, columns: res.Columns, snap: snap}
		s.stmts[s.nextID] = cs
		s.stmtBytes += len(text)
		res.StmtID = s.nextID
		return cs
	case mysql.COM_STMT_SEND_LONG_DATA:
		if cs := s.stmts[clientID]; cs != nil && !cs.LongData {
			cs.LongData = true
			s.longData++
			s.pin(PinLongData)
		}
	case mysql.COM_STMT_EXECUTE:
		if cs := s.stmts[clientID]; cs != nil {
			s.executed(cs, res)
		}
	case mysql.COM_STMT_FETCH:
		cs := s.stmts[clientID]
		if cs != nil && cs.Cursor && (res.Err != nil || res.Status&mysql.SERVER_STATUS_LAST_ROW_SEND != 0) {
			s.stmtDone(cs)
		}
	case mysql.COM_STMT_RESET:
		if cs := s.stmts[clientID]; cs != nil {
			s.stmtDone(cs)
		}
	}
	return nil
}

// executed records an execution of cs: the data sent for it is used up, and a cursor it
// opens keeps the session on its connection.
func (s *Session) executed(cs *Stmt, res *protocol.Response) {
	if cs.LongData {
		cs.LongData = false
		if s.longData--; s.longData == 0 {
			s.unpin(PinLongData)
		}
	}
	if cs.Cursor {
		cs.Cursor = false
		s.cursors--
	}
	if res.Err == nil && res.HasStatus && res.Status&mysql.SERVER_STATUS_CURSOR_EXISTS != 0 {
		cs.Cursor = true
		s.cursors++
		s.pin(PinCursor)
	} else if s.cursors == 0 {
		s.unpin(PinCursor)
	}
}
