package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// ErrUnsupportedCommand reports a command the relay does not carry (replication streams,
// bulk execution, commands no server implements any more).
var ErrUnsupportedCommand = errors.New("command not supported")

// Shape is the shape of the response a command gets.
type Shape uint8

const (
	// ShapeUnsupported: the relay refuses the command.
	ShapeUnsupported Shape = iota
	// ShapeNone: the server sends nothing back (COM_QUIT, COM_STMT_CLOSE, COM_STMT_SEND_LONG_DATA).
	ShapeNone
	// ShapeSingle: one packet, OK, ERR, EOF or (COM_STATISTICS) a string.
	ShapeSingle
	// ShapeResults: OK, ERR, LOCAL INFILE or result sets, possibly several.
	ShapeResults
	// ShapeRows: rows or column definitions up to an EOF (COM_STMT_FETCH, COM_FIELD_LIST).
	ShapeRows
	// ShapePrepare: a prepared statement's OK and metadata.
	ShapePrepare
	// ShapeAuth: an authentication exchange (COM_CHANGE_USER).
	ShapeAuth
)

// ShapeOf returns the shape of the response to cmd.
func ShapeOf(cmd byte) Shape {
	switch cmd {
	case mysql.COM_QUIT, mysql.COM_STMT_CLOSE, mysql.COM_STMT_SEND_LONG_DATA:
		return ShapeNone
	case mysql.COM_INIT_DB, mysql.COM_PING, mysql.COM_REFRESH, mysql.COM_SHUTDOWN,
		mysql.COM_PROCESS_KILL, mysql.COM_DEBUG, mysql.COM_STMT_RESET, mysql.COM_SET_OPTION,
		mysql.COM_RESET_CONNECTION, mysql.COM_STATISTICS, mysql.COM_CREATE_DB, mysql.COM_DROP_DB:
		return ShapeSingle
	case mysql.COM_QUERY, mysql.COM_STMT_EXECUTE, mysql.COM_PROCESS_INFO:
		return ShapeResults
	case mysql.COM_STMT_FETCH, mysql.COM_FIELD_LIST:
		return ShapeRows
	case mysql.COM_STMT_PREPARE:
		return ShapePrepare
	case mysql.COM_CHANGE_USER:
		return ShapeAuth
	}
	return ShapeUnsupported
}

// Response is what the proxy learns from relaying one response. It is reused between
// commands; ForwardResponse resets it.
type Response struct {
	// Status is the server status of the last OK or EOF packet; valid when HasStatus.
	Status    uint16
	HasStatus bool
	// Err is the ERR packet that ended the response, or nil.
	Err *ServerError
	// Schema is the default schema the server reported through session-state tracking, or
	// nil. It is a copy, owned by the Response.
	Schema []byte
	// SchemaChanged tells that Schema was reported by this response.
	SchemaChanged bool
	// StmtID is the id of the statement a successful COM_STMT_PREPARE created, as the
	// backend numbered it; Params and Columns are its counts.
	StmtID          uint32
	Params, Columns uint16
	// Warnings sums the warning counts of the response's OK and EOF packets.
	Warnings int
	// Results counts the results (OK packets and result sets) relayed.
	Results int
	// Rows counts the row packets relayed.
	Rows int
	// Cursor tells that COM_STMT_EXECUTE opened a cursor: the result set's rows come with
	// COM_STMT_FETCH.
	Cursor bool
	// AuthSwitch is set when the server switched authentication methods during an
	// exchange that ForwardAuth relayed: AuthPlugin and AuthData are its method and
	// challenge, AuthReply the client's answer. They are copies.
	AuthSwitch          bool
	AuthPlugin          string
	AuthData, AuthReply []byte
	// LastInsertID is the last non-zero insert id an OK packet reported; AffectedRows
	// the sum of the rows the OK packets of the response reported changed.
	LastInsertID uint64
	AffectedRows uint64
	// StateChanged tells that a terminal packet had SERVER_SESSION_STATE_CHANGED set;
	// StateChanges holds the session-state records of every OK of the response, one after
	// the other, owned by the Response (see NextStateChange).
	StateChanged bool
	StateChanges []byte
	// Resumable, when ForwardResponse fails, tells that the backend failed between two
	// packets where an ERR packet may end the response (among rows, or between results):
	// every packet relayed reached the client whole, so an ERR written to the client now
	// ends the response and its connection stays usable.
	Resumable bool
	ok        OK
}

func (r *Response) reset() {
	schema, changes := r.Schema[:0], r.StateChanges[:0]
	*r = Response{Schema: schema, StateChanges: changes}
}

// Relay relays the responses of one backend connection to one client connection.
type Relay struct {
	Client, Backend *Conn
	// Capabilities are the capabilities in effect on the backend connection. The client's
	// are the same, except that CLIENT_SESSION_TRACK may be the backend's alone.
	Capabilities uint32
	// StripSessionState rewrites OK packets for a client that did not ask for session
	// tracking, when the backend connection tracks it for the proxy.
	StripSessionState bool
	// StmtID, when not zero, is the statement id the client sees for the statement that the
	// next COM_STMT_PREPARE creates; the backend's own id is reported in Response.StmtID.
	StmtID uint32
	// BeforeAck, when set, is called with the response read whole, before its last
	// packets are flushed to the client: what it records is in place before the client
	// can act on the acknowledgement.
	BeforeAck func(res *Response)
	// scratch holds a rewritten packet.
	scratch []byte
}

func (x *Relay) deprecateEOF() bool {
	return x.Capabilities&mysql.CLIENT_DEPRECATE_EOF != 0
}

// ForwardResponse relays the backend's whole response to the command cmd, which has been
// sent, back to the client, and fills res with what it learned on the way. An error means
// the exchange broke (I/O or protocol): the caller must not reuse either connection. A
// MySQL error sent by the server is not an error here; it is relayed and reported in res.Err.
func (x *Relay) ForwardResponse(cmd byte, res *Response) error {
	res.reset()
	var err error
	switch ShapeOf(cmd) {
	case ShapeNone:
		return nil
	case ShapeSingle:
		err = x.forwardSingle(cmd, res)
	case ShapeResults:
		err = x.forwardResults(cmd, res)
	case ShapeRows:
		err = x.forwardRows(res)
	case ShapePrepare:
		err = x.forwardPrepare(res)
	case ShapeAuth:
		err = x.ForwardAuth(res)
	default:
		return fmt.Errorf("%w: %s", ErrUnsupportedCommand, CommandName(cmd))
	}
	if err != nil {
		return err
	}
	if x.BeforeAck != nil {
		x.BeforeAck(res)
	}
	return x.Client.Flush()
}

// readSmall reads the rest of a packet whose first frame header (n bytes) has been read,
// when it is small enough to be a terminal packet, and writes it to the client unchanged.
func (x *Relay) readSmall(n int) ([]byte, error) {
	p, err := x.readOnly(n)
	if err != nil {
		return nil, err
	}
	return p, x.writeClient(p)
}

// readOnly reads the rest of a small packet whose first frame header (n bytes) has been
// read, without relaying it.
func (x *Relay) readOnly(n int) ([]byte, error) {
	b := x.Backend
	b.buf = b.buf[:0]
	if err := b.appendPayload(n); err != nil {
		return nil, err
	}
	return b.buf, nil
}

// writeClient writes a packet read whole to the client.
func (x *Relay) writeClient(p []byte) error {
	if err := x.Client.writeHeader(len(p)); err != nil {
		return err
	}
	return x.Client.write(p)
}

// next reads the header of the next packet from the backend and peeks its first byte.
func (x *Relay) next() (n int, first byte, err error) {
	if n, err = x.Backend.readHeader(); err != nil || n == 0 {
		return n, 0, err
	}
	first, err = x.Backend.peekByte()
	return n, first, err
}

// terminal reads and relays an OK, EOF or ERR packet and records its status.
func (x *Relay) terminal(n int, first byte, res *Response) error {
	p, err := x.readOnly(n)
	if err != nil {
		return err
	}
	if err := x.record(p, first, res); err != nil {
		return err
	}
	if x.StripSessionState && first != headerERR && !(first == headerEOF && len(p) < eofMaxLen) {
		if x.scratch, err = StripSessionState(x.scratch[:0], p); err != nil {
			return err
		}
		p = x.scratch
	}
	return x.writeClient(p)
}

func (x *Relay) record(p []byte, first byte, res *Response) error {
	switch {
	case first == headerERR:
		e, err := ParseError(p)
		if err != nil {
			return err
		}
		res.Err = e
	case first == headerEOF && len(p) < eofMaxLen:
		st, err := ParseEOF(p)
		if err != nil {
			return err
		}
		res.Status, res.HasStatus = st, true
		res.Warnings += int(binary.LittleEndian.Uint16(p[1:]))
		res.StateChanged = res.StateChanged || st&mysql.SERVER_SESSION_STATE_CHANGED != 0
	default:
		if err := ParseOK(p, x.Capabilities, &res.ok); err != nil {
			return err
		}
		res.Status, res.HasStatus = res.ok.Status, true
		res.Warnings += int(res.ok.Warnings)
		if res.ok.LastInsertID != 0 {
			res.LastInsertID = res.ok.LastInsertID
		}
		res.AffectedRows += res.ok.AffectedRows
		if res.ok.Status&mysql.SERVER_SESSION_STATE_CHANGED != 0 {
			res.StateChanged = true
			res.StateChanges = append(res.StateChanges, res.ok.StateChanges...)
		}
		if res.ok.Schema != nil {
			res.Schema = append(res.Schema[:0], res.ok.Schema...)
			res.SchemaChanged = true
		}
	}
	return nil
}

func (x *Relay) forwardSingle(cmd byte, res *Response) error {
	n, first, err := x.next()
	if err != nil {
		return err
	}
	if cmd == mysql.COM_STATISTICS || n >= MaxFramePayload ||
		(first != headerOK && first != headerERR && first != headerEOF) {
		// COM_STATISTICS answers with a bare string; anything else unexpected is relayed
		// as it is.
		return x.Backend.forwardFrames(x.Client, n)
	}
	return x.terminal(n, first, res)
}

func (x *Relay) forwardResults(cmd byte, res *Response) error {
	for {
		n, first, err := x.next()
		if err != nil {
			res.Resumable = res.Results > 0 // the next result may be an ERR
			return err
		}
		switch {
		case n == 0 || n >= MaxFramePayload:
			return fmt.Errorf("%w: response to %s starts with a packet of %d bytes",
				ErrMalformed, CommandName(cmd), n)
		case first == headerOK || first == headerERR:
			if err := x.terminal(n, first, res); err != nil {
				return err
			}
			res.Results++
		case first == headerLocalInfile && cmd == mysql.COM_QUERY:
			if err := x.forwardLocalInfile(n); err != nil {
				return err
			}
			continue // the server's OK or ERR for the load follows
		default:
			if err := x.forwardResultSet(cmd, n, res); err != nil {
				return err
			}
			res.Results++
		}
		if res.Err != nil || !res.HasStatus || res.Status&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
			return nil
		}
	}
}

// forwardResultSet relays one result set, the response to cmd, whose column-count packet
// header has been read.
func (x *Relay) forwardResultSet(cmd byte, n int, res *Response) error {
	p, err := x.readSmall(n)
	if err != nil {
		return err
	}
	columns, _, ok := readLenenc(p)
	if !ok || columns == 0 {
		return fmt.Errorf("%w: column count", ErrMalformed)
	}
	for range columns {
		if _, err := x.Backend.ForwardPacket(x.Client); err != nil {
			return err
		}
	}
	if x.deprecateEOF() {
		// No EOF after the column definitions: a cursor's status comes in the packet that
		// would end the rows, with no row before it.
		rows := res.Rows
		if err := x.forwardRows(res); err != nil {
			return err
		}
		res.Cursor = res.Rows == rows && res.Err == nil && opensCursor(cmd, res.Status)
		return nil
	}
	n, first, err := x.next()
	if err != nil {
		return err
	}
	if first == headerERR && n < MaxFramePayload {
		// A statement executed into a cursor that failed once its metadata was out: the
		// error takes the place of the EOF.
		return x.terminal(n, first, res)
	}
	if !isEOF(first, n, false) {
		return fmt.Errorf("%w: expected EOF after column definitions", ErrMalformed)
	}
	if err := x.terminal(n, first, res); err != nil {
		return err
	}
	if opensCursor(cmd, res.Status) {
		res.Cursor = true
		return nil // rows come with COM_STMT_FETCH
	}
	return x.forwardRows(res)
}

// opensCursor tells whether a result set whose column definitions ended with status is a
// cursor that COM_STMT_EXECUTE opened, whose rows come with COM_STMT_FETCH. The server sets
// SERVER_STATUS_CURSOR_EXISTS in more places than that: once a stored procedure has opened a
// cursor of its own, every result set the CALL sends carries the flag, text protocol or
// binary, with its rows following as usual. Those are always followed by more results (the
// CALL ends with an OK), while a cursor opened by COM_STMT_EXECUTE is the statement's only
// result.
func opensCursor(cmd byte, status uint16) bool {
	return cmd == mysql.COM_STMT_EXECUTE &&
		status&(mysql.SERVER_STATUS_CURSOR_EXISTS|mysql.SERVER_MORE_RESULTS_EXISTS) == mysql.SERVER_STATUS_CURSOR_EXISTS
}

// forwardRows relays packets up to and including the EOF or ERR that ends them.
func (x *Relay) forwardRows(res *Response) error {
	deprecateEOF := x.deprecateEOF()
	for {
		n, first, err := x.next()
		if err != nil {
			res.Resumable = true // an ERR may end the rows
			return err
		}
		if n < MaxFramePayload && (first == headerERR || isEOF(first, n, deprecateEOF)) {
			return x.terminal(n, first, res)
		}
		if err := x.Backend.awaitPayload(n); err != nil {
			res.Resumable = true // nothing of the row was relayed
			return err
		}
		if err := x.Backend.forwardFrames(x.Client, n); err != nil {
			return err
		}
		res.Rows++
	}
}

// forwardLocalInfile relays a LOCAL INFILE request and then streams the client's file, packet
// by packet, to the backend up to the empty packet that ends it.
func (x *Relay) forwardLocalInfile(n int) error {
	if err := x.Backend.forwardFrames(x.Client, n); err != nil {
		return err
	}
	for {
		n, err := x.Client.ForwardPacket(x.Backend)
		if err != nil {
			return err
		}
		if n == 0 {
			return x.Backend.Flush()
		}
	}
}

// prepareOKLen is the length of the OK that answers a successful COM_STMT_PREPARE.
const prepareOKLen = 12

func (x *Relay) forwardPrepare(res *Response) error {
	n, first, err := x.next()
	if err != nil {
		return err
	}
	if first != headerOK || n < prepareOKLen || n >= MaxFramePayload {
		if first == headerERR && n < MaxFramePayload {
			return x.terminal(n, first, res)
		}
		return fmt.Errorf("%w: response to COM_STMT_PREPARE", ErrMalformed)
	}
	p, err := x.readOnly(n)
	if err != nil {
		return err
	}
	res.StmtID = binary.LittleEndian.Uint32(p[1:])
	res.Columns = binary.LittleEndian.Uint16(p[5:])
	res.Params = binary.LittleEndian.Uint16(p[7:])
	columns, params := int(res.Columns), int(res.Params)
	if x.StmtID != 0 {
		binary.LittleEndian.PutUint32(p[1:], x.StmtID)
	}
	if err := x.writeClient(p); err != nil {
		return err
	}
	for _, count := range [2]int{params, columns} {
		if count == 0 {
			continue
		}
		if !x.deprecateEOF() {
			count++ // the EOF after the definitions
		}
		for range count {
			if _, err := x.Backend.ForwardPacket(x.Client); err != nil {
				return err
			}
		}
	}
	return nil
}

// ForwardAuth relays an authentication exchange after the client's handshake response or
// COM_CHANGE_USER has been sent to the backend, until the backend accepts (OK) or refuses
// (ERR, reported in res.Err). Between the two, the server may switch the authentication
// method or ask for more rounds; each is relayed and answered by the client, except the
// fast-path success of caching_sha2_password, which the server's OK follows at once.
func (x *Relay) ForwardAuth(res *Response) error {
	for {
		p, err := x.Backend.ReadPacket()
		if err != nil {
			return err
		}
		if len(p) == 0 {
			return fmt.Errorf("%w: empty packet in authentication", ErrMalformed)
		}
		if err := x.Client.WritePacket(p); err != nil {
			return err
		}
		switch p[0] {
		case headerOK, headerERR:
			if err := x.record(p, p[0], res); err != nil {
				return err
			}
			return x.Client.Flush()
		case headerEOF: // switch to another method: the client answers the new challenge
			plugin, data, err := ParseAuthSwitch(p)
			if err != nil {
				return err
			}
			res.AuthSwitch, res.AuthPlugin, res.AuthData = true, plugin, bytes.Clone(data)
		case headerAuthMore:
			if len(p) == 2 && p[1] == mysql.CACHE_SHA2_FAST_AUTH {
				continue
			}
		default:
			return fmt.Errorf("%w: unexpected packet 0x%02x in authentication", ErrMalformed, p[0])
		}
		reply, err := x.Client.ReadPacket()
		if err != nil {
			return err
		}
		if res.AuthSwitch && res.AuthReply == nil {
			res.AuthReply = bytes.Clone(reply)
		}
		if err := x.Backend.WritePacket(reply); err != nil {
			return err
		}
		if err := x.Backend.Flush(); err != nil {
			return err
		}
	}
}
