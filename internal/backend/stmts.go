package backend

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// MaxStatementsPerConn bounds the prepared statements kept on one connection; past it the
// least recently used is closed. With the default pools.max_open of 64 that keeps the
// proxy's statements on a server under half of MySQL's default max_prepared_stmt_count.
const MaxStatementsPerConn = 128

// Stmt is a server-side prepared statement on one connection.
type Stmt struct {
	// ID is the server's id of the statement on the connection.
	ID              uint32
	Params, Columns uint16
	// Types are the parameter types sent last with an execution of the statement: a later
	// execution that sends none runs with them, so a client whose own types differ (bound
	// by another client, or by itself on another connection since) must send them again.
	// Nil: none bound.
	Types []byte

	text string
	// ctx is the key of the Snapshot the statement was prepared under: the same text
	// means another statement in another schema or SQL mode.
	ctx uint64
	// sameText chains the statements of one text prepared under other snapshots.
	sameText   *Stmt
	prev, next *Stmt // in the cache's recency list, most recent first
}

// stmtCache keeps a connection's prepared statements by text and snapshot, most recently
// used first.
type stmtCache struct {
	byText     map[string]*Stmt
	n          int
	head, tail *Stmt
	// closing are the ids of evicted statements, closed before the next command.
	closing []uint32
}

func (sc *stmtCache) clear() {
	clear(sc.byText)
	sc.n, sc.head, sc.tail, sc.closing = 0, nil, nil, sc.closing[:0]
}

func (sc *stmtCache) unlink(st *Stmt) {
	if st.prev != nil {
		st.prev.next = st.next
	} else {
		sc.head = st.next
	}
	if st.next != nil {
		st.next.prev = st.prev
	} else {
		sc.tail = st.prev
	}
	st.prev, st.next = nil, nil
}

func (sc *stmtCache) pushFront(st *Stmt) {
	st.next = sc.head
	if sc.head != nil {
		sc.head.prev = st
	}
	sc.head = st
	if sc.tail == nil {
		sc.tail = st
	}
}

// remove takes st out of the cache; its id is closed before the next command.
func (sc *stmtCache) remove(st *Stmt) {
	sc.unlink(st)
	first := sc.byText[st.text]
	if first == st {
		if st.sameText == nil {
			delete(sc.byText, st.text)
		} else {
			sc.byText[st.text] = st.sameText
		}
	} else {
		for p := first; p != nil; p = p.sameText {
			if p.sameText == st {
				p.sameText = st.sameText
				break
			}
		}
	}
	st.sameText = nil
	sc.n--
}

// Stmt returns the statement prepared on c for text under the snapshot ctx (Snapshot.Key),
// or nil.
func (c *Conn) Stmt(text []byte, ctx uint64) *Stmt {
	st := c.stmts.byText[string(text)]
	for st != nil && st.ctx != ctx {
		st = st.sameText
	}
	if st != nil && st != c.stmts.head {
		c.stmts.unlink(st)
		c.stmts.pushFront(st)
	}
	return st
}

// Statements returns how many prepared statements c keeps.
func (c *Conn) Statements() int { return c.stmts.n }

// Remember records a statement the server prepared on c for text under the snapshot ctx
// (a client's COM_STMT_PREPARE relayed on it). An older statement of the same text and
// snapshot, and the least recently used one past MaxStatementsPerConn, are closed before
// the next command.
func (c *Conn) Remember(text []byte, ctx uint64, id uint32, params, columns uint16) *Stmt {
	sc := &c.stmts
	if sc.byText == nil {
		sc.byText = map[string]*Stmt{}
	}
	if old := c.Stmt(text, ctx); old != nil {
		sc.remove(old)
		if old.ID != id {
			sc.closing = append(sc.closing, old.ID)
		}
	}
	st := &Stmt{ID: id, Params: params, Columns: columns, text: string(text), ctx: ctx}
	st.sameText = sc.byText[st.text]
	sc.byText[st.text] = st
	sc.n++
	sc.pushFront(st)
	for sc.n > MaxStatementsPerConn {
		lru := sc.tail
		sc.remove(lru)
		sc.closing = append(sc.closing, lru.ID)
	}
	return st
}

// pendingCloses writes the COM_STMT_CLOSE of evicted statements, which get no answer, to go
// out with the next command.
func (c *Conn) pendingCloses() {
	for _, id := range c.stmts.closing {
		c.pc.ResetSequence()
		var p [5]byte
		p[0] = mysql.COM_STMT_CLOSE
		binary.LittleEndian.PutUint32(p[1:], id)
		_ = c.pc.WritePacket(p[:]) // a write error shows at the next flush
	}
	c.stmts.closing = c.stmts.closing[:0]
}

// BeforeCommand writes what must precede the next command on c; call it before relaying
// a client's command.
func (c *Conn) BeforeCommand() { c.pendingCloses() }

// PrepareUnder prepares text on c as the client prepared it: under the snapshot of its
// session state then, which may differ from its state now (another schema, another SQL
// mode), and leaves c in the session state s. A server error (a statement that does not
// parse, a table that is gone) is returned as a *protocol.ServerError and leaves c usable.
func (c *Conn) PrepareUnder(ctx context.Context, w *Want, text []byte, snap Snapshot, s *State) (*Stmt, error) {
	if snap.Of(s) {
		return c.Prepare(text, snap.key)
	}
	then := &State{Schema: snap.schema, Charset: s.Charset, LastInsertID: c.lastInsertID, vars: snap.vars}
	if err := c.Sync(ctx, w, then, false); err != nil {
		return nil, err
	}
	st, perr := c.Prepare(text, snap.key)
	if err := c.Sync(ctx, w, s, false); err != nil {
		return nil, err
	}
	return st, perr
}

// Prepare prepares text on c, in the state c is in, and keeps it under the snapshot key
// ctx, reading the server's metadata without relaying it. A server error is returned as a
// *protocol.ServerError and leaves c usable.
func (c *Conn) Prepare(text []byte, ctx uint64) (*Stmt, error) {
	p, err := c.request(mysql.COM_STMT_PREPARE, text)
	if err != nil {
		return nil, err
	}
	if len(p) < 12 || p[0] != mysql.OK_HEADER {
		c.broken = true
		return nil, fmt.Errorf("backend %s: %w: response to COM_STMT_PREPARE", c.addr, protocol.ErrMalformed)
	}
	id := binary.LittleEndian.Uint32(p[1:])
	columns, params := binary.LittleEndian.Uint16(p[5:]), binary.LittleEndian.Uint16(p[7:])
	for _, n := range [2]uint16{params, columns} {
		if n == 0 {
			continue
		}
		skip := int(n)
		if c.caps&mysql.CLIENT_DEPRECATE_EOF == 0 {
			skip++
		}
		for range skip {
			if _, err := c.pc.ReadPacket(); err != nil {
				c.broken = true
				return nil, fmt.Errorf("backend %s: prepare: %w", c.addr, err)
			}
		}
	}
	return c.Remember(text, ctx, id, params, columns), nil
}
