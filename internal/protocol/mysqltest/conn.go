package mysqltest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// Command is one command a connection received after its login.
type Command struct {
	// Byte is the command byte (mysql.COM_QUERY, ...).
	Byte byte
	// Text is the SQL of COM_QUERY and COM_STMT_PREPARE, the schema of COM_INIT_DB, the
	// user of COM_CHANGE_USER, and the statement's SQL for the COM_STMT_* commands that
	// name a live statement.
	Text string
	// StmtID is the statement id of the COM_STMT_* commands that carry one.
	StmtID uint32
	// Payload is the whole command, command byte included.
	Payload []byte
}

// Conn is the server's side of one connection. Its methods may be called from any
// goroutine; the connection is served by a goroutine of its own.
type Conn struct {
	srv     *Server
	id      uint32
	netConn net.Conn
	// done is closed when the connection closes.
	done      chan struct{}
	closeOnce sync.Once

	// Owned by the connection's goroutine.
	pc  *protocol.Conn
	buf []byte

	mu sync.Mutex
	// user and schema are the logged-in user and the default schema.
	user, schema string
	// caps are the negotiated capabilities.
	caps uint32
	// vars and userVars are the session and user variables set, by lower-case name.
	vars, userVars map[string]string
	track          tracking
	autocommit     bool
	inTrans        bool
	commands       []Command
	stmts          map[uint32]*prepared
	lastStmtID     uint32
	lastExec       execution
	// interrupt is closed by KILL QUERY to end the running statement; nil between
	// statements.
	interrupt chan struct{}
	closed    bool
}

func newConn(s *Server, id uint32, nc net.Conn) *Conn {
	c := &Conn{
		srv:     s,
		id:      id,
		netConn: nc,
		done:    make(chan struct{}),
		pc:      protocol.NewConn(nc),
	}
	c.resetLocked()
	return c
}

// resetLocked returns the session to its state after a login, keeping the user and the
// schema, as COM_RESET_CONNECTION does.
func (c *Conn) resetLocked() {
	c.vars = make(map[string]string)
	c.userVars = make(map[string]string)
	c.track = defaultTracking()
	c.autocommit = true
	c.inTrans = false
	c.stmts = make(map[uint32]*prepared)
	c.lastExec = execution{}
}

// ID returns the thread id the greeting announced: 1, 2, 3, ... in accept order.
func (c *Conn) ID() uint32 { return c.id }

// User returns the logged-in user; empty before the login.
func (c *Conn) User() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.user
}

// Schema returns the default schema.
func (c *Conn) Schema() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.schema
}

// Capabilities returns the capabilities negotiated at login: those both sides have.
func (c *Conn) Capabilities() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.caps
}

// Vars returns the session system variables set on this connection, by lower-case name.
func (c *Conn) Vars() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.vars)
}

// UserVars returns the user variables set on this connection, by lower-case name.
func (c *Conn) UserVars() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.userVars)
}

// InTransaction tells whether a transaction is open.
func (c *Conn) InTransaction() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inTrans
}

// Commands returns every command received after the login, in order.
func (c *Conn) Commands() []Command {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.commands)
}

// Queries returns the SQL of every COM_QUERY received, in order.
func (c *Conn) Queries() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, cmd := range c.commands {
		if cmd.Byte == mysql.COM_QUERY {
			out = append(out, cmd.Text)
		}
	}
	return out
}

// Done returns a channel closed when the connection has closed, from either side.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Close closes the connection from the server's side. A statement it is running ends
// without an answer.
func (c *Conn) Close() {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		_ = c.netConn.Close()
		c.srv.connClosed()
		close(c.done) // last, so that a waiter sees the rest done
	})
}

// isOpen tells whether the connection is still open.
func (c *Conn) isOpen() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.closed
}

// errClose ends a connection's goroutine after an answer that closes it.
var errClose = errors.New("connection closed by the server")

// serve runs the connection: the login, then one command after another until either side
// closes.
func (c *Conn) serve() {
	defer c.Close()
	if err := c.login(); err != nil {
		return
	}
	for {
		p, err := c.pc.ReadPacket()
		if err != nil || len(p) == 0 {
			return
		}
		if err := c.command(bytes.Clone(p)); err != nil {
			return
		}
		c.pc.Trim()
	}
}

// command records and answers one command.
func (c *Conn) command(p []byte) error {
	cmd := Command{Byte: p[0], Payload: p}
	switch cmd.Byte {
	case mysql.COM_QUERY, mysql.COM_STMT_PREPARE, mysql.COM_INIT_DB:
		cmd.Text = string(p[1:])
	case mysql.COM_STMT_EXECUTE, mysql.COM_STMT_CLOSE, mysql.COM_STMT_RESET,
		mysql.COM_STMT_SEND_LONG_DATA, mysql.COM_STMT_FETCH:
		if len(p) >= 5 {
			cmd.StmtID = binary.LittleEndian.Uint32(p[1:])
		}
	}
	var change *protocol.ChangeUser
	if cmd.Byte == mysql.COM_CHANGE_USER {
		if cu, err := protocol.ParseChangeUser(p, c.Capabilities()); err == nil {
			change, cmd.Text = cu, cu.User
		}
	}
	c.mu.Lock()
	if st := c.stmts[cmd.StmtID]; st != nil && cmd.StmtID != 0 {
		cmd.Text = st.text
	}
	c.commands = append(c.commands, cmd)
	c.mu.Unlock()

	switch cmd.Byte {
	case mysql.COM_QUIT:
		return errClose
	case mysql.COM_PING:
		return c.writeOK(0, 0, nil, false)
	case mysql.COM_QUERY:
		return c.query(cmd.Text)
	case mysql.COM_INIT_DB:
		_, err := c.useSchema(cmd.Text, false)
		return err
	case mysql.COM_RESET_CONNECTION:
		c.mu.Lock()
		c.resetLocked()
		c.mu.Unlock()
		return c.writeOK(0, 0, nil, false)
	case mysql.COM_CHANGE_USER:
		if change == nil {
			_ = c.writeError(serverError(mysql.ER_UNKNOWN_COM_ERROR, "Malformed COM_CHANGE_USER"))
			return errClose
		}
		return c.changeUser(change)
	case mysql.COM_STMT_PREPARE:
		return c.prepare(cmd.Text)
	case mysql.COM_STMT_EXECUTE:
		return c.execute(p)
	case mysql.COM_STMT_CLOSE:
		c.mu.Lock()
		delete(c.stmts, cmd.StmtID)
		c.mu.Unlock()
		return nil
	case mysql.COM_STMT_RESET:
		if c.statement(cmd.StmtID) == nil {
			return c.writeError(unknownStatement(cmd.StmtID, "mysqld_stmt_reset"))
		}
		return c.writeOK(0, 0, nil, false)
	case mysql.COM_STMT_SEND_LONG_DATA:
		return nil
	}
	return c.writeError(serverError(mysql.ER_UNKNOWN_COM_ERROR, "Unknown command"))
}

// query answers a COM_QUERY: its statements one after another when the connection has
// CLIENT_MULTI_STATEMENTS, until one fails.
func (c *Conn) query(text string) error {
	parts := splitStatements(text)
	if len(parts) > 1 && c.Capabilities()&mysql.CLIENT_MULTI_STATEMENTS == 0 {
		return c.writeError(serverError(mysql.ER_PARSE_ERROR,
			"You have an error in your SQL syntax: multiple statements without CLIENT_MULTI_STATEMENTS"))
	}
	for i, q := range parts {
		ok, err := c.run(trimStatement(q), false, i < len(parts)-1)
		if err != nil || !ok {
			return err
		}
	}
	return nil
}

// run answers one statement; binaryRows sends a result set in the binary protocol (the
// statement is a prepared one) and more marks a statement that others follow. ok is false
// when the answer was an ERR.
func (c *Conn) run(q string, binaryRows, more bool) (ok bool, err error) {
	if q == "" {
		return false, c.writeError(serverError(mysql.ER_EMPTY_QUERY, "Query was empty"))
	}
	st := parseStatement(q)
	switch st.kind {
	case kindSet:
		fx := c.set(st.sets)
		return true, c.writeOK(0, 0, fx, more)
	case kindUse:
		return c.useSchema(st.schema, more)
	case kindBegin, kindCommit, kindRollback:
		c.mu.Lock()
		c.inTrans = st.kind == kindBegin
		c.mu.Unlock()
		return true, c.writeOK(0, 0, nil, more)
	case kindSelect:
		return true, c.writeResultSet(itemColumns(st.items), [][]any{c.evaluate(st.items)}, binaryRows, more)
	case kindDo:
		return true, c.writeOK(0, 0, nil, more)
	case kindKill:
		return c.kill(st, more)
	}
	r, err := c.handle(q)
	if err != nil {
		return false, err
	}
	switch {
	case r.Err != nil:
		return false, c.writeError(r.Err)
	case len(r.Columns) > 0:
		return true, c.writeResultSet(r.Columns, r.Rows, binaryRows, more)
	}
	return true, c.writeOK(r.AffectedRows, r.LastInsertID, &effects{state: st.changesState}, more)
}

// handle asks the Handler for the answer to q and holds it back for its Delay, which
// KILL QUERY cuts short.
func (c *Conn) handle(q string) (Reply, error) {
	interrupt := make(chan struct{})
	c.mu.Lock()
	c.interrupt = interrupt
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.interrupt = nil
		c.mu.Unlock()
	}()
	var r Reply
	if h := c.srv.opts.Handler; h != nil {
		r = h(c, q)
	}
	if r.Delay <= 0 {
		return r, nil
	}
	t := time.NewTimer(r.Delay)
	defer t.Stop()
	select {
	case <-t.C:
		return r, nil
	case <-interrupt:
		return Reply{Err: &protocol.ServerError{
			Code: mysql.ER_QUERY_INTERRUPTED, State: stateInterrupted,
			Message: "Query execution was interrupted",
		}}, nil
	case <-c.done:
		return Reply{}, errClose
	}
}

// killQuery ends the statement the connection is running, if any.
func (c *Conn) killQuery() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.interrupt != nil {
		close(c.interrupt)
		c.interrupt = nil
	}
}

// kill answers KILL [QUERY|CONNECTION] id.
func (c *Conn) kill(st statement, more bool) (bool, error) {
	target := c.srv.Conn(st.killID)
	if target == nil || !target.isOpen() {
		return false, c.writeError(serverError(mysql.ER_NO_SUCH_THREAD, "Unknown thread id: %d", st.killID))
	}
	switch {
	case st.killQuery:
		target.killQuery()
	case target == c:
		_ = c.pc.WriteError(errConnectionKilled, stateInterrupted, "Connection was killed")
		return false, errClose
	default:
		target.Close()
	}
	return true, c.writeOK(0, 0, nil, more)
}

// set applies the assignments of a SET statement and returns what it changed.
func (c *Conn) set(sets []assignment) *effects {
	fx := &effects{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range sets {
		if a.user {
			c.userVars[a.name] = a.value
			fx.state = true
			continue
		}
		c.vars[a.name] = a.value
		fx.vars = append(fx.vars, a)
		switch a.name {
		case "autocommit":
			switch a.value {
			case "ON":
				if !c.autocommit {
					c.inTrans = false // turning autocommit on commits
				}
				c.autocommit = true
			case "OFF":
				c.autocommit = false
			}
		case "session_track_system_variables":
			c.track.setVars(a.value)
		case "session_track_state_change":
			c.track.state = isOn(a.value)
		case "session_track_schema":
			c.track.schema = isOn(a.value)
		}
	}
	return fx
}

// isOn tells whether a boolean variable's value is true.
func isOn(v string) bool {
	switch strings.ToUpper(v) {
	case "ON", "1", "TRUE":
		return true
	}
	return false
}

// useSchema answers USE and COM_INIT_DB.
func (c *Conn) useSchema(name string, more bool) (bool, error) {
	if name == UnknownSchema {
		return false, c.writeError(serverError(mysql.ER_BAD_DB_ERROR, "Unknown database '%s'", name))
	}
	c.mu.Lock()
	c.schema = name
	c.mu.Unlock()
	return true, c.writeOK(0, 0, &effects{schema: true}, more)
}

// itemColumns returns the column names of a select list.
func itemColumns(items []selectItem) []string {
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = it.column
	}
	return names
}

// evaluate returns the row of a select list the server answers itself.
func (c *Conn) evaluate(items []selectItem) []any {
	row := make([]any, len(items))
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, it := range items {
		switch it.kind {
		case itemSysVar:
			row[i] = c.sysVarLocked(it.variable)
		case itemUserVar:
			if v, ok := c.userVars[it.variable]; ok {
				row[i] = v
			}
		case itemConnectionID:
			row[i] = strconv.FormatUint(uint64(c.id), 10)
		case itemDatabase:
			if c.schema != "" {
				row[i] = c.schema
			}
		}
	}
	return row
}

// sysVarLocked returns the value of a system variable: what was set, the few the server
// knows, or nil (NULL).
func (c *Conn) sysVarLocked(name string) any {
	switch name {
	case "autocommit":
		if c.autocommit {
			return "1"
		}
		return "0"
	case "version":
		return strings.TrimPrefix(c.srv.opts.Version, "5.5.5-")
	}
	if v, ok := c.vars[name]; ok {
		return v
	}
	return nil
}
