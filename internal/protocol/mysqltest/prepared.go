package mysqltest

import (
	"bytes"
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// prepared is a server-side prepared statement.
type prepared struct {
	text    string
	params  int
	columns []string
	// types are the parameter types last bound (two bytes a parameter), nil until an
	// execute sends them.
	types []byte
}

// execution is what the last COM_STMT_EXECUTE of a connection carried.
type execution struct {
	stmtID uint32
	// types are the parameter types in effect: those sent, or those bound before.
	types []byte
	// bound is the new-params-bound flag.
	bound bool
}

// Prepared returns the live prepared statements, id to SQL.
func (c *Conn) Prepared() map[uint32]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[uint32]string, len(c.stmts))
	for id, st := range c.stmts {
		out[id] = st.text
	}
	return out
}

// LastExecute returns what the last COM_STMT_EXECUTE the server ran carried: the statement
// id, the parameter types in effect (two bytes a parameter: type, then 0x80 for unsigned),
// and whether the execute sent them (the new-params-bound flag). All are zero before the
// first execute.
func (c *Conn) LastExecute() (stmtID uint32, types []byte, newParamsBound bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastExec.stmtID, bytes.Clone(c.lastExec.types), c.lastExec.bound
}

// statement returns the live prepared statement id, or nil.
func (c *Conn) statement(id uint32) *prepared {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stmts[id]
}

func unknownStatement(id uint32, where string) *protocol.ServerError {
	return serverError(mysql.ER_UNKNOWN_STMT_HANDLER,
		"Unknown prepared statement handler (%d) given to %s", id, where)
}

// prepare answers COM_STMT_PREPARE. Statement ids count from 1 on each connection and are
// never reused.
func (c *Conn) prepare(text string) error {
	q := trimStatement(text)
	if q == "" {
		return c.writeError(serverError(mysql.ER_EMPTY_QUERY, "Query was empty"))
	}
	st := &prepared{text: text, params: countParams(q), columns: c.describe(q)}
	c.mu.Lock()
	c.lastStmtID++
	id := c.lastStmtID
	c.stmts[id] = st
	c.mu.Unlock()

	c.buf = appendPrepareOK(c.buf[:0], id, len(st.columns), st.params)
	if err := c.pc.WritePacket(c.buf); err != nil {
		return err
	}
	if st.params > 0 {
		params := make([]string, st.params)
		for i := range params {
			params[i] = "?"
		}
		if err := c.writeColumns(params); err != nil {
			return err
		}
		if err := c.writeEnd(false, false); err != nil {
			return err
		}
	}
	if len(st.columns) > 0 {
		if err := c.writeColumns(st.columns); err != nil {
			return err
		}
		if err := c.writeEnd(false, false); err != nil {
			return err
		}
	}
	return c.pc.Flush()
}

// describe returns the columns a statement will return, for the answer to its prepare: the
// select list of a SELECT the server answers itself; for another statement that returns
// rows the Columns the Handler answers it with (its Delay is not waited for), or one
// column "c" without a Handler; for anything else none.
func (c *Conn) describe(q string) []string {
	if st := parseStatement(q); st.kind == kindSelect {
		return itemColumns(st.items)
	}
	if !returnsRows(q) {
		return nil
	}
	if h := c.srv.opts.Handler; h != nil {
		return h(c, q).Columns
	}
	return []string{"c"}
}

// execute answers COM_STMT_EXECUTE by running the statement's SQL, with a result set in
// the binary protocol. Parameter values are not decoded.
func (c *Conn) execute(p []byte) error {
	// id (4), flags (1), iteration count (4)
	const headLen = 1 + 4 + 1 + 4
	if len(p) < headLen {
		return c.writeError(serverError(mysql.ER_WRONG_ARGUMENTS, "Incorrect arguments to mysqld_stmt_execute"))
	}
	id := binary.LittleEndian.Uint32(p[1:])
	st := c.statement(id)
	if st == nil {
		return c.writeError(unknownStatement(id, "mysqld_stmt_execute"))
	}
	var sent []byte
	bound := false
	if st.params > 0 {
		at := headLen + (st.params+7)/8 // after the NULL bitmap
		if len(p) <= at {
			return c.writeError(serverError(mysql.ER_WRONG_ARGUMENTS, "Incorrect arguments to mysqld_stmt_execute"))
		}
		if bound = p[at] == 1; bound {
			if len(p) < at+1+2*st.params {
				return c.writeError(serverError(mysql.ER_WRONG_ARGUMENTS, "Incorrect arguments to mysqld_stmt_execute"))
			}
			sent = bytes.Clone(p[at+1 : at+1+2*st.params])
		}
	}
	c.mu.Lock()
	if bound {
		st.types = sent
	}
	missing := st.params > 0 && st.types == nil
	if !missing {
		c.lastExec = execution{stmtID: id, types: st.types, bound: bound}
	}
	c.mu.Unlock()
	if missing {
		// The statement's parameter types were never sent on this connection: what a
		// client gets when it re-prepares a statement elsewhere and forgets to bind again.
		return c.writeError(serverError(mysql.ER_WRONG_ARGUMENTS, "Incorrect arguments to mysqld_stmt_execute"))
	}
	_, err := c.run(trimStatement(st.text), true, false)
	return err
}
