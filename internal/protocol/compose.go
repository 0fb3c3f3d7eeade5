package protocol

import (
	"encoding/binary"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// This file builds the packets the proxy writes in its own name: as a server towards clients
// it authenticates itself (greeting, authentication switch, OK), and as a client towards
// backends it logs in (handshake response, COM_CHANGE_USER).

// Hello is the greeting the proxy sends as a server.
type Hello struct {
	ServerVersion string
	ConnectionID  uint32
	Capabilities  uint32
	// MariaDBCapabilities are sent when Capabilities lacks CLIENT_LONG_PASSWORD, as MariaDB
	// servers do.
	MariaDBCapabilities uint32
	Charset             byte
	Status              uint16
	// Scramble is the 20-byte challenge.
	Scramble   []byte
	AuthPlugin string
}

// AppendGreeting appends the payload of a protocol-10 greeting.
func AppendGreeting(b []byte, h *Hello) []byte {
	b = append(b, mysql.ClassicProtocolVersion)
	b = append(append(b, h.ServerVersion...), 0)
	b = binary.LittleEndian.AppendUint32(b, h.ConnectionID)
	b = append(append(b, h.Scramble[:8]...), 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(h.Capabilities))
	b = append(b, h.Charset)
	b = binary.LittleEndian.AppendUint16(b, h.Status)
	b = binary.LittleEndian.AppendUint16(b, uint16(h.Capabilities>>16))
	b = append(b, byte(len(h.Scramble)+1))
	b = append(b, 0, 0, 0, 0, 0, 0)
	if h.Capabilities&mysql.CLIENT_LONG_PASSWORD == 0 {
		b = binary.LittleEndian.AppendUint32(b, h.MariaDBCapabilities)
	} else {
		b = append(b, 0, 0, 0, 0)
	}
	b = append(append(b, h.Scramble[8:]...), 0)
	return append(append(b, h.AuthPlugin...), 0)
}

// AppendAuthSwitch appends an authentication switch request: the client is to answer data
// with the method plugin.
func AppendAuthSwitch(b []byte, plugin string, data []byte) []byte {
	b = append(b, headerEOF)
	b = append(append(b, plugin...), 0)
	b = append(b, data...)
	if plugin == NativePassword {
		b = append(b, 0) // as servers send it
	}
	return b
}

// ParseAuthSwitch decodes an authentication switch request. Servers end a
// mysql_native_password or caching_sha2_password scramble with a NUL, which is not part of
// it; client_ed25519's nonce is 32 random bytes, sent without one, and its last byte may
// itself be 0.
func ParseAuthSwitch(p []byte) (plugin string, data []byte, err error) {
	if len(p) < 1 || p[0] != headerEOF {
		return "", nil, fmt.Errorf("%w: not an authentication switch", ErrMalformed)
	}
	name, n, ok := readNulString(p[1:])
	if !ok {
		return "", nil, fmt.Errorf("%w: authentication switch: plugin name", ErrMalformed)
	}
	data = p[1+n:]
	if string(name) != Ed25519 && len(data) > 0 && data[len(data)-1] == 0 {
		data = data[:len(data)-1]
	}
	return string(name), data, nil
}

// AppendOK appends an OK packet without session-state information.
func AppendOK(b []byte, affected, lastInsertID uint64, status, warnings uint16) []byte {
	b = append(b, headerOK)
	b = AppendLenenc(b, affected)
	b = AppendLenenc(b, lastInsertID)
	b = binary.LittleEndian.AppendUint16(b, status)
	return binary.LittleEndian.AppendUint16(b, warnings)
}

// AppendEOF appends a legacy EOF packet.
func AppendEOF(b []byte, warnings, status uint16) []byte {
	b = append(b, headerEOF)
	b = binary.LittleEndian.AppendUint16(b, warnings)
	return binary.LittleEndian.AppendUint16(b, status)
}

// AppendLenenc appends a length-encoded integer.
func AppendLenenc(b []byte, v uint64) []byte {
	switch {
	case v < 251:
		return append(b, byte(v))
	case v < 1<<16:
		return append(b, 0xfc, byte(v), byte(v>>8))
	case v < 1<<24:
		return append(b, 0xfd, byte(v), byte(v>>8), byte(v>>16))
	}
	return binary.LittleEndian.AppendUint64(append(b, 0xfe), v)
}

// AppendLenencString appends a length-encoded string.
func AppendLenencString(b []byte, s string) []byte {
	return append(AppendLenenc(b, uint64(len(s))), s...)
}

// Column types and flags the proxy's own result sets use.
const (
	TypeLongLong    = mysql.MYSQL_TYPE_LONGLONG
	TypeVarString   = mysql.MYSQL_TYPE_VAR_STRING
	FlagNotNull     = mysql.NOT_NULL_FLAG
	FlagUnsigned    = mysql.UNSIGNED_FLAG
	FlagBinary      = mysql.BINARY_FLAG
	charsetBinary   = 63
	charsetUTF8MB4  = 45
	columnFixedPart = 0x0c
)

// MariaDBExtendedMetadata is MariaDB's capability that adds a field to column definitions.
const MariaDBExtendedMetadata = relayedMariaDBCapabilities

// AppendColumn appends a column definition (protocol 4.1) of a computed column name, with
// the extended-metadata field of MariaDB when mariadbCaps has it.
func AppendColumn(b []byte, name string, typ byte, flags uint16, length uint32, mariadbCaps uint32) []byte {
	b = AppendLenencString(b, "def")
	b = AppendLenencString(b, "") // schema
	b = AppendLenencString(b, "") // table
	b = AppendLenencString(b, "") // original table
	b = AppendLenencString(b, name)
	b = AppendLenencString(b, "") // original name
	if mariadbCaps&MariaDBExtendedMetadata != 0 {
		b = AppendLenencString(b, "") // no extended type information
	}
	b = append(b, columnFixedPart)
	charset := uint16(charsetUTF8MB4)
	if flags&FlagBinary != 0 {
		charset = charsetBinary
	}
	b = binary.LittleEndian.AppendUint16(b, charset)
	b = binary.LittleEndian.AppendUint32(b, length)
	b = append(b, typ)
	b = binary.LittleEndian.AppendUint16(b, flags)
	return append(b, 0, 0, 0) // decimals, filler
}

// Login is what the proxy sends to log in to a backend.
type Login struct {
	Capabilities        uint32
	MariaDBCapabilities uint32
	MaxPacketSize       uint32
	Charset             byte
	User                string
	AuthResponse        []byte
	Database            string
	AuthPlugin          string
	Attributes          []Attribute
}

// AppendHandshakeResponse appends a HandshakeResponse41 for l. The capabilities decide
// which optional parts are written.
func AppendHandshakeResponse(b []byte, l *Login) []byte {
	caps := l.Capabilities
	b = binary.LittleEndian.AppendUint32(b, caps)
	b = binary.LittleEndian.AppendUint32(b, l.MaxPacketSize)
	b = append(b, l.Charset)
	b = append(b, make([]byte, 19)...)
	if caps&mysql.CLIENT_LONG_PASSWORD == 0 {
		b = binary.LittleEndian.AppendUint32(b, l.MariaDBCapabilities)
	} else {
		b = append(b, 0, 0, 0, 0)
	}
	b = append(append(b, l.User...), 0)
	switch {
	case caps&mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0:
		b = AppendLenencString(b, string(l.AuthResponse))
	default:
		b = append(b, byte(len(l.AuthResponse)))
		b = append(b, l.AuthResponse...)
	}
	if caps&mysql.CLIENT_CONNECT_WITH_DB != 0 {
		b = append(append(b, l.Database...), 0)
	}
	if caps&mysql.CLIENT_PLUGIN_AUTH != 0 {
		b = append(append(b, l.AuthPlugin...), 0)
	}
	if caps&mysql.CLIENT_CONNECT_ATTRS != 0 {
		b = appendAttributes(b, l.Attributes)
	}
	return b
}

func appendAttributes(b []byte, attrs []Attribute) []byte {
	var kv []byte
	for _, a := range attrs {
		kv = AppendLenencString(kv, a.Key)
		kv = AppendLenencString(kv, a.Value)
	}
	return AppendLenencString(b, string(kv))
}

// AppendChangeUser appends a COM_CHANGE_USER for l (its Capabilities are those of the
// connection; MaxPacketSize is not sent).
func AppendChangeUser(b []byte, l *Login) []byte {
	b = append(b, mysql.COM_CHANGE_USER)
	b = append(append(b, l.User...), 0)
	b = append(b, byte(len(l.AuthResponse)))
	b = append(b, l.AuthResponse...)
	b = append(append(b, l.Database...), 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(l.Charset))
	if l.Capabilities&mysql.CLIENT_PLUGIN_AUTH != 0 {
		b = append(append(b, l.AuthPlugin...), 0)
	}
	if l.Capabilities&mysql.CLIENT_CONNECT_ATTRS != 0 {
		b = appendAttributes(b, l.Attributes)
	}
	return b
}

// StripSessionState rewrites an OK packet of a connection with CLIENT_SESSION_TRACK for a
// client without it: the session-state records and their status flag go, and the info
// string stays as the server sends it to such a client, length-prefixed, or absent when it
// is empty (MariaDB's net_send_ok; libmariadb reads it so). It appends the result to dst.
func StripSessionState(dst, p []byte) ([]byte, error) {
	if len(p) < 1 || (p[0] != headerOK && p[0] != headerEOF) {
		return dst, fmt.Errorf("%w: not an OK packet", ErrMalformed)
	}
	b := p[1:]
	_, n1, ok1 := readLenenc(b)
	if !ok1 {
		return dst, fmt.Errorf("%w: OK packet: affected rows", ErrMalformed)
	}
	_, n2, ok2 := readLenenc(b[n1:])
	if !ok2 || len(b) < n1+n2+4 {
		return dst, fmt.Errorf("%w: OK packet: status", ErrMalformed)
	}
	head := 1 + n1 + n2
	dst = append(dst, p[:head]...)
	status := binary.LittleEndian.Uint16(p[head:]) &^ mysql.SERVER_SESSION_STATE_CHANGED
	dst = binary.LittleEndian.AppendUint16(dst, status)
	dst = append(dst, p[head+2:head+4]...)
	rest := p[head+4:]
	if len(rest) == 0 {
		return dst, nil
	}
	info, n, ok := readLenencString(rest)
	if !ok {
		return dst, fmt.Errorf("%w: OK packet: info", ErrMalformed)
	}
	if len(info) == 0 {
		return dst, nil
	}
	return append(dst, rest[:n]...), nil
}

// StateChange is one session-state record of an OK packet.
type StateChange struct {
	// Type is a SESSION_TRACK_* constant.
	Type byte
	// Name and Value are a system variable's (SESSION_TRACK_SYSTEM_VARIABLES); for the
	// other types Name is empty and Value is the schema (SESSION_TRACK_SCHEMA) or the
	// record's data as it is (the state-change flag "1", a GTID record).
	Name, Value []byte
}

// NextStateChange decodes the first record of raw session-state records and returns the
// rest; ok is false at the end or on a malformed record.
func NextStateChange(raw []byte) (c StateChange, rest []byte, ok bool) {
	if len(raw) < 1 {
		return c, nil, false
	}
	c.Type = raw[0]
	data, n, good := readLenencString(raw[1:])
	if !good {
		return c, nil, false
	}
	rest = raw[1+n:]
	switch c.Type {
	case mysql.SESSION_TRACK_SYSTEM_VARIABLES:
		name, k, good := readLenencString(data)
		if !good {
			return c, nil, false
		}
		value, _, good := readLenencString(data[k:])
		if !good {
			return c, nil, false
		}
		c.Name, c.Value = name, value
	case mysql.SESSION_TRACK_SCHEMA:
		v, _, good := readLenencString(data)
		if !good {
			return c, nil, false
		}
		c.Value = v
	default:
		c.Value = data
	}
	return c, rest, true
}
