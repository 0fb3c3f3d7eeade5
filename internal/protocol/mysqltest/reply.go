package mysqltest

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// Reply is a Handler's answer to a statement: an ERR packet when Err is set, else a result
// set when Columns is not empty, else an OK.
type Reply struct {
	// Err is sent as an ERR packet.
	Err *protocol.ServerError
	// Columns and Rows make a result set. Every column is a VAR_STRING. A nil value is
	// NULL; a string or []byte is sent as it is; anything else as fmt.Sprint writes it.
	// A statement run through COM_STMT_EXECUTE gets the same rows in the binary protocol.
	Columns []string
	Rows    [][]any
	// AffectedRows and LastInsertID go into the OK.
	AffectedRows, LastInsertID uint64
	// Delay holds the answer back, as a statement that runs for that long. KILL QUERY from
	// another connection ends it early with ERR 1317.
	Delay time.Duration
}

// Error returns a Reply that answers ERR code with message; the SQL state is the one MySQL
// uses for code, or HY000.
func Error(code uint16, format string, args ...any) Reply {
	return Reply{Err: serverError(code, format, args...)}
}

func serverError(code uint16, format string, args ...any) *protocol.ServerError {
	state, ok := mysql.MySQLState[code]
	if !ok {
		state = mysql.DEFAULT_MYSQL_STATE
	}
	return &protocol.ServerError{Code: code, State: state, Message: fmt.Sprintf(format, args...)}
}

// Error codes the server answers with that the mysql package does not name.
const (
	errConnectionKilled = 1927 // MariaDB's ER_CONNECTION_KILLED
	stateInterrupted    = "70100"
)

// effects is what a statement changed, as session-state tracking reports it.
type effects struct {
	// vars are the system variables set, in order.
	vars []assignment
	// schema marks a change of the default schema.
	schema bool
	// state marks any other change of session state (user variables, temporary tables,
	// SQL-level prepared statements).
	state bool
}

func (fx *effects) changed() bool { return len(fx.vars) > 0 || fx.schema || fx.state }

// tracking is what session-state tracking reports on a connection.
type tracking struct {
	// allVars tracks every system variable; otherwise vars lists the tracked ones.
	allVars bool
	vars    map[string]bool
	state   bool
	schema  bool
}

// defaultTracking is MariaDB's default as far as this server models it: the schema only.
func defaultTracking() tracking { return tracking{schema: true} }

// setVars applies a value of session_track_system_variables.
func (t *tracking) setVars(v string) {
	t.allVars, t.vars = false, nil
	for _, name := range splitTop(v, ',') {
		switch name = strings.ToLower(strings.TrimSpace(name)); name {
		case "":
		case "*":
			t.allVars = true
		default:
			if t.vars == nil {
				t.vars = make(map[string]bool)
			}
			t.vars[name] = true
		}
	}
}

func (t *tracking) tracks(name string) bool { return t.allVars || t.vars[name] }

// appendStateLocked appends the session-state records for fx, or nothing when tracking
// reports none of it.
func (c *Conn) appendStateLocked(b []byte, fx *effects) []byte {
	for _, a := range fx.vars {
		if c.track.tracks(a.name) {
			var data []byte
			data = protocol.AppendLenencString(data, a.name)
			data = protocol.AppendLenencString(data, a.value)
			b = append(b, mysql.SESSION_TRACK_SYSTEM_VARIABLES)
			b = protocol.AppendLenencString(b, string(data))
		}
	}
	if fx.schema && c.track.schema {
		b = append(b, mysql.SESSION_TRACK_SCHEMA)
		b = protocol.AppendLenencString(b, string(protocol.AppendLenencString(nil, c.schema)))
	}
	if fx.changed() && c.track.state {
		// A one-byte flag, not a length-encoded string, as servers send it.
		b = append(b, mysql.SESSION_TRACK_STATE_CHANGE)
		b = protocol.AppendLenencString(b, "1")
	}
	return b
}

// statusLocked returns the status flags of the connection.
func (c *Conn) statusLocked() uint16 {
	var s uint16
	if c.autocommit {
		s |= mysql.SERVER_STATUS_AUTOCOMMIT
	}
	if c.inTrans {
		s |= mysql.SERVER_STATUS_IN_TRANS
	}
	return s
}

// appendOK appends an OK packet led by header (0x00, or 0xFE where it ends a result set
// under CLIENT_DEPRECATE_EOF) that reports fx through session tracking when the
// connection has it.
func (c *Conn) appendOK(b []byte, header byte, affected, insertID uint64, fx *effects, more bool) []byte {
	c.mu.Lock()
	status := c.statusLocked()
	var records []byte
	if c.caps&mysql.CLIENT_SESSION_TRACK != 0 && fx != nil {
		records = c.appendStateLocked(nil, fx)
	}
	c.mu.Unlock()
	if more {
		status |= mysql.SERVER_MORE_RESULTS_EXISTS
	}
	if len(records) > 0 {
		status |= mysql.SERVER_SESSION_STATE_CHANGED
	}
	start := len(b)
	b = protocol.AppendOK(b, affected, insertID, status, 0)
	b[start] = header
	if len(records) > 0 {
		b = protocol.AppendLenencString(b, "") // info
		b = protocol.AppendLenencString(b, string(records))
	}
	return b
}

// writeOK sends an OK packet.
func (c *Conn) writeOK(affected, insertID uint64, fx *effects, more bool) error {
	c.buf = c.appendOK(c.buf[:0], mysql.OK_HEADER, affected, insertID, fx, more)
	if err := c.pc.WritePacket(c.buf); err != nil {
		return err
	}
	return c.pc.Flush()
}

// writeError sends an ERR packet.
func (c *Conn) writeError(e *protocol.ServerError) error {
	return c.pc.WriteError(e.Code, e.State, e.Message)
}

// writeEnd ends a group of column definitions or rows: an EOF, or under
// CLIENT_DEPRECATE_EOF nothing after definitions and a 0xFE-led OK after rows.
func (c *Conn) writeEnd(rows, more bool) error {
	if c.Capabilities()&mysql.CLIENT_DEPRECATE_EOF != 0 {
		if !rows {
			return nil
		}
		c.buf = c.appendOK(c.buf[:0], mysql.EOF_HEADER, 0, 0, &effects{}, more)
		return c.pc.WritePacket(c.buf)
	}
	c.mu.Lock()
	status := c.statusLocked()
	c.mu.Unlock()
	if more {
		status |= mysql.SERVER_MORE_RESULTS_EXISTS
	}
	c.buf = protocol.AppendEOF(c.buf[:0], 0, status)
	return c.pc.WritePacket(c.buf)
}

// columnLength is the display length every column definition declares.
const columnLength = 1024

// writeColumns sends column definitions, all VAR_STRING.
func (c *Conn) writeColumns(names []string) error {
	for _, name := range names {
		c.buf = protocol.AppendColumn(c.buf[:0], name, protocol.TypeVarString, 0, columnLength, 0)
		if err := c.pc.WritePacket(c.buf); err != nil {
			return err
		}
	}
	return nil
}

// writeResultSet sends a result set, its rows in the text protocol or, for a prepared
// statement, the binary one.
func (c *Conn) writeResultSet(columns []string, rows [][]any, binaryRows, more bool) error {
	for i, row := range rows {
		if len(row) != len(columns) {
			return c.writeError(serverError(mysql.ER_UNKNOWN_ERROR,
				"mysqltest: row %d has %d values for %d columns", i, len(row), len(columns)))
		}
	}
	c.buf = protocol.AppendLenenc(c.buf[:0], uint64(len(columns)))
	if err := c.pc.WritePacket(c.buf); err != nil {
		return err
	}
	if err := c.writeColumns(columns); err != nil {
		return err
	}
	if err := c.writeEnd(false, more); err != nil {
		return err
	}
	for _, row := range rows {
		if binaryRows {
			c.buf = appendBinaryRow(c.buf[:0], row)
		} else {
			c.buf = appendTextRow(c.buf[:0], row)
		}
		if err := c.pc.WritePacket(c.buf); err != nil {
			return err
		}
	}
	if err := c.writeEnd(true, more); err != nil {
		return err
	}
	return c.pc.Flush()
}

// appendTextRow appends a text-protocol row: a length-encoded string per value, 0xFB for
// NULL.
func appendTextRow(b []byte, row []any) []byte {
	for _, v := range row {
		if v == nil {
			b = append(b, 0xfb)
			continue
		}
		b = protocol.AppendLenencString(b, cell(v))
	}
	return b
}

// appendBinaryRow appends a binary-protocol row of VAR_STRING columns: a 0x00 header, the
// NULL bitmap (offset 2), then a length-encoded string per non-NULL value.
func appendBinaryRow(b []byte, row []any) []byte {
	b = append(b, 0x00)
	bitmap := len(b)
	b = append(b, make([]byte, (len(row)+7+2)/8)...)
	for i, v := range row {
		if v == nil {
			b[bitmap+(i+2)/8] |= 1 << ((i + 2) % 8)
		}
	}
	for _, v := range row {
		if v != nil {
			b = protocol.AppendLenencString(b, cell(v))
		}
	}
	return b
}

// cell formats a non-NULL value of a row.
func cell(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return fmt.Sprint(v)
}

// appendPrepareOK appends the first packet of a COM_STMT_PREPARE response.
func appendPrepareOK(b []byte, id uint32, columns, params int) []byte {
	b = append(b, mysql.OK_HEADER)
	b = binary.LittleEndian.AppendUint32(b, id)
	b = binary.LittleEndian.AppendUint16(b, uint16(columns))
	b = binary.LittleEndian.AppendUint16(b, uint16(params))
	b = append(b, 0)                              // filler
	return binary.LittleEndian.AppendUint16(b, 0) // warnings
}
