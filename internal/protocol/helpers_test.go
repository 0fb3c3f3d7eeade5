package protocol

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// memConn is a net.Conn that reads a fixed byte stream and records what is written.
type memConn struct {
	r io.Reader
	w bytes.Buffer
}

func newMemConn(in []byte) *memConn { return &memConn{r: bytes.NewReader(in)} }

func (m *memConn) Read(p []byte) (int, error)       { return m.r.Read(p) }
func (m *memConn) Write(p []byte) (int, error)      { return m.w.Write(p) }
func (m *memConn) Close() error                     { return nil }
func (m *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (m *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (m *memConn) SetDeadline(time.Time) error      { return nil }
func (m *memConn) SetReadDeadline(time.Time) error  { return nil }
func (m *memConn) SetWriteDeadline(time.Time) error { return nil }

// stream builds a sequence of packets as a server or client would send them.
type stream struct {
	b   []byte
	seq uint8
}

// packet appends one packet, split into frames as the protocol requires.
func (s *stream) packet(payload []byte) *stream {
	for {
		n := min(len(payload), MaxFramePayload)
		s.b = append(s.b, byte(n), byte(n>>8), byte(n>>16), s.seq)
		s.seq++
		s.b = append(s.b, payload[:n]...)
		payload = payload[n:]
		if n < MaxFramePayload {
			return s
		}
	}
}

func okPacket(status uint16) []byte {
	return []byte{0x00, 0, 0, byte(status), byte(status >> 8), 0, 0}
}

func okAsEOF(status uint16) []byte {
	return []byte{0xfe, 0, 0, byte(status), byte(status >> 8), 0, 0}
}

func eofPacket(status uint16) []byte {
	return []byte{0xfe, 0, 0, byte(status), byte(status >> 8)}
}

func errPacket(code uint16, msg string) []byte {
	return AppendError(nil, code, "HY000", msg)
}

func columnDef(name string) []byte {
	var b []byte
	for _, s := range []string{"def", "db", "t", "t", name, name} {
		b = append(b, byte(len(s)))
		b = append(b, s...)
	}
	b = append(b, 0x0c, 0x21, 0x00, 0x0b, 0x00, 0x00, 0x00, mysql.MYSQL_TYPE_VAR_STRING, 0, 0, 0, 0, 0)
	return b
}

func textRow(values ...string) []byte {
	var b []byte
	for _, v := range values {
		b = mysql.AppendLengthEncodedInteger(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

// resultSet appends a result set of one column with the given rows, ended with status.
func (s *stream) resultSet(deprecateEOF bool, status uint16, rows ...[]byte) *stream {
	s.packet([]byte{1}).packet(columnDef("c"))
	if !deprecateEOF {
		s.packet(eofPacket(status &^ mysql.SERVER_MORE_RESULTS_EXISTS))
	}
	for _, r := range rows {
		s.packet(r)
	}
	if deprecateEOF {
		return s.packet(okAsEOF(status))
	}
	return s.packet(eofPacket(status))
}

func prepareOK(id uint32, columns, params uint16) []byte {
	b := []byte{0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[1:], id)
	binary.LittleEndian.PutUint16(b[5:], columns)
	binary.LittleEndian.PutUint16(b[7:], params)
	return b
}

// relayOver returns a Relay whose backend reads from backendIn and whose client reads
// from clientIn, with the client's command sequence already consumed (the relay writes
// responses from sequence id 1, as after a command).
func relayOver(backendIn, clientIn []byte, caps uint32) (*Relay, *memConn, *memConn) {
	bm, cm := newMemConn(backendIn), newMemConn(clientIn)
	x := &Relay{Client: NewConn(cm), Backend: NewConn(bm), Capabilities: caps}
	Pair(x.Client, x.Backend)
	x.Client.seq = 1
	return x, cm, bm
}
