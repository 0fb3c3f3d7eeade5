package protocol

import (
	"encoding/binary"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Packet headers: the first byte of a payload.
const (
	headerOK          = mysql.OK_HEADER
	headerERR         = mysql.ERR_HEADER
	headerEOF         = mysql.EOF_HEADER
	headerLocalInfile = mysql.LocalInFile_HEADER
	headerAuthMore    = mysql.MORE_DATE_HEADER
	// eofMaxLen bounds the payload of a legacy EOF packet; a 0xFE-led packet at least this
	// long is something else (an OK in EOF position is longer, a row of 16 MiB longer still).
	eofMaxLen = 9
)

// readLenenc decodes a length-encoded integer at the start of b and returns it with the
// number of bytes it took; ok is false when b is too short or the encoding is invalid.
func readLenenc(b []byte) (v uint64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch b[0] {
	case 0xfb: // NULL
		return 0, 1, true
	case 0xfc:
		if len(b) < 3 {
			return 0, 0, false
		}
		return uint64(binary.LittleEndian.Uint16(b[1:])), 3, true
	case 0xfd:
		if len(b) < 4 {
			return 0, 0, false
		}
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, 4, true
	case 0xfe:
		if len(b) < 9 {
			return 0, 0, false
		}
		return binary.LittleEndian.Uint64(b[1:]), 9, true
	case 0xff:
		return 0, 0, false
	}
	return uint64(b[0]), 1, true
}

// readLenencString decodes a length-encoded string at the start of b.
func readLenencString(b []byte) (s []byte, n int, ok bool) {
	l, k, ok := readLenenc(b)
	if !ok || uint64(len(b)-k) < l {
		return nil, 0, false
	}
	end := k + int(l)
	return b[k:end:end], end, true
}

// readNulString decodes a NUL-terminated string at the start of b.
func readNulString(b []byte) (s []byte, n int, ok bool) {
	for i, c := range b {
		if c == 0 {
			return b[:i:i], i + 1, true
		}
	}
	return nil, 0, false
}

// OK is what the proxy reads from an OK packet (or an OK sent in place of an EOF).
type OK struct {
	AffectedRows uint64
	LastInsertID uint64
	Status       uint16
	Warnings     uint16
	// Schema is the new default schema when the server reported a change of it through
	// session-state tracking; nil when it did not. It points into the parsed packet.
	Schema []byte
	// StateChanges holds the raw session-state change records, or nil. It points into the
	// parsed packet.
	StateChanges []byte
}

// ParseOK decodes an OK packet (header 0x00, or 0xFE when it stands for an EOF under
// CLIENT_DEPRECATE_EOF). caps are the capabilities in effect on the connection.
func ParseOK(p []byte, caps uint32, ok *OK) error {
	*ok = OK{}
	if len(p) < 1 || (p[0] != headerOK && p[0] != headerEOF) {
		return fmt.Errorf("%w: not an OK packet", ErrMalformed)
	}
	b := p[1:]
	var n int
	var good bool
	if ok.AffectedRows, n, good = readLenenc(b); !good {
		return fmt.Errorf("%w: OK packet: affected rows", ErrMalformed)
	}
	b = b[n:]
	if ok.LastInsertID, n, good = readLenenc(b); !good {
		return fmt.Errorf("%w: OK packet: last insert id", ErrMalformed)
	}
	b = b[n:]
	if len(b) < 4 {
		return fmt.Errorf("%w: OK packet: status", ErrMalformed)
	}
	ok.Status = binary.LittleEndian.Uint16(b)
	ok.Warnings = binary.LittleEndian.Uint16(b[2:])
	b = b[4:]
	if caps&mysql.CLIENT_SESSION_TRACK == 0 || len(b) == 0 {
		return nil
	}
	if _, n, good = readLenencString(b); !good { // human-readable info
		return fmt.Errorf("%w: OK packet: info", ErrMalformed)
	}
	b = b[n:]
	if ok.Status&mysql.SERVER_SESSION_STATE_CHANGED == 0 {
		return nil
	}
	changes, _, good := readLenencString(b)
	if !good {
		return fmt.Errorf("%w: OK packet: session state", ErrMalformed)
	}
	ok.StateChanges = changes
	for rest := changes; len(rest) > 0; {
		typ := rest[0]
		data, n, good := readLenencString(rest[1:])
		if !good {
			return fmt.Errorf("%w: OK packet: session state record", ErrMalformed)
		}
		rest = rest[1+n:]
		if typ == mysql.SESSION_TRACK_SCHEMA {
			schema, _, good := readLenencString(data)
			if !good {
				return fmt.Errorf("%w: OK packet: schema record", ErrMalformed)
			}
			ok.Schema = schema
		}
	}
	return nil
}

// ParseEOF decodes a legacy EOF packet and returns its status flags.
func ParseEOF(p []byte) (status uint16, err error) {
	if len(p) < 5 || p[0] != headerEOF {
		return 0, fmt.Errorf("%w: not an EOF packet", ErrMalformed)
	}
	return binary.LittleEndian.Uint16(p[3:]), nil
}

// isEOF tells whether a packet with first byte first and a first frame of n bytes ends a
// sequence of rows or column definitions: a legacy EOF, or an OK in its place under
// CLIENT_DEPRECATE_EOF.
func isEOF(first byte, n int, deprecateEOF bool) bool {
	if first != headerEOF || n == 0 {
		return false
	}
	if deprecateEOF {
		return n < MaxFramePayload
	}
	return n < eofMaxLen
}

// ServerError is an ERR packet.
type ServerError struct {
	Code    uint16
	State   string
	Message string
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("ERROR %d (%s): %s", e.Code, e.State, e.Message)
}

// ParseError decodes an ERR packet.
func ParseError(p []byte) (*ServerError, error) {
	if len(p) < 3 || p[0] != headerERR {
		return nil, fmt.Errorf("%w: not an ERR packet", ErrMalformed)
	}
	e := &ServerError{Code: binary.LittleEndian.Uint16(p[1:]), State: "HY000"}
	msg := p[3:]
	if len(msg) >= 6 && msg[0] == '#' {
		e.State = string(msg[1:6])
		msg = msg[6:]
	}
	e.Message = string(msg)
	return e, nil
}

// AppendError appends the payload of an ERR packet to b.
func AppendError(b []byte, code uint16, state, msg string) []byte {
	b = append(b, headerERR, byte(code), byte(code>>8), '#')
	if len(state) != 5 {
		state = "HY000"
	}
	b = append(b, state...)
	return append(b, msg...)
}

// WriteError writes an ERR packet and flushes it.
func (c *Conn) WriteError(code uint16, state, msg string) error {
	if err := c.WritePacket(AppendError(nil, code, state, msg)); err != nil {
		return err
	}
	return c.Flush()
}

// ParseColumnCount decodes the first packet of a result set.
func ParseColumnCount(p []byte) (uint64, error) {
	n, _, ok := readLenenc(p)
	if !ok || n == 0 {
		return 0, fmt.Errorf("%w: column count", ErrMalformed)
	}
	return n, nil
}

// IsTerminator tells whether a whole packet p ends a sequence of rows: a legacy EOF, or
// under CLIENT_DEPRECATE_EOF an OK in its place.
func IsTerminator(p []byte, deprecateEOF bool) bool {
	return len(p) > 0 && isEOF(p[0], len(p), deprecateEOF)
}

// ParseTextRow decodes a row of the text protocol with the given number of columns; a
// NULL is "".
func ParseTextRow(p []byte, columns int) ([]string, error) {
	row := make([]string, 0, columns)
	for range columns {
		if len(p) > 0 && p[0] == 0xfb {
			row = append(row, "")
			p = p[1:]
			continue
		}
		v, n, ok := readLenencString(p)
		if !ok {
			return nil, fmt.Errorf("%w: text row", ErrMalformed)
		}
		row = append(row, string(v))
		p = p[n:]
	}
	return row, nil
}
