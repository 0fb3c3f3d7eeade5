package protocol

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Capabilities the relay passes through unchanged when both sides have them. What is not
// listed is masked: compression, query attributes, optional result-set metadata,
// multi-factor authentication and MariaDB progress reports change the shape of packets the
// relay parses. CLIENT_SSL is managed separately on each side.
const relayedCapabilities = mysql.CLIENT_LONG_PASSWORD | mysql.CLIENT_FOUND_ROWS |
	mysql.CLIENT_LONG_FLAG | mysql.CLIENT_CONNECT_WITH_DB | mysql.CLIENT_NO_SCHEMA |
	mysql.CLIENT_ODBC | mysql.CLIENT_LOCAL_FILES | mysql.CLIENT_IGNORE_SPACE |
	mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_INTERACTIVE | mysql.CLIENT_IGNORE_SIGPIPE |
	mysql.CLIENT_TRANSACTIONS | mysql.CLIENT_RESERVED | mysql.CLIENT_SECURE_CONNECTION |
	mysql.CLIENT_MULTI_STATEMENTS | mysql.CLIENT_MULTI_RESULTS | mysql.CLIENT_PS_MULTI_RESULTS |
	mysql.CLIENT_PLUGIN_AUTH | mysql.CLIENT_CONNECT_ATTRS |
	mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | mysql.CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS |
	mysql.CLIENT_SESSION_TRACK | mysql.CLIENT_DEPRECATE_EOF |
	mysql.CLIENT_SSL_VERIFY_SERVER_CERT | mysql.CLIENT_REMEMBER_OPTIONS

// MariaDB extended capabilities (the upper 32 bits, carried in reserved bytes when the
// server clears CLIENT_LONG_PASSWORD). Only extended column metadata is relayed: it changes
// the content of column definitions, which the relay does not read. Progress reports,
// COM_MULTI, bulk execution and metadata caching change packet shapes and are masked.
const relayedMariaDBCapabilities = 1 << 3 // MARIADB_CLIENT_EXTENDED_METADATA

// Greeting is the server's initial handshake packet (protocol version 10).
type Greeting struct {
	// Raw is the packet as received, with capability bits rewritten by SetCapabilities.
	Raw           []byte
	ServerVersion string
	ConnectionID  uint32
	// Capabilities are the server's capability flags.
	Capabilities uint32
	// MariaDBCapabilities are MariaDB's extended capability flags; zero for MySQL.
	MariaDBCapabilities uint32
	Charset             byte
	Status              uint16
	// Scramble is the authentication challenge (both parts joined).
	Scramble []byte
	// AuthPlugin is the server's default authentication method.
	AuthPlugin string
	// offsets of the capability fields in Raw
	capLowAt, capHighAt, extCapAt int
}

// ParseGreeting decodes a server greeting. It copies p.
func ParseGreeting(p []byte) (*Greeting, error) {
	bad := func(what string) error { return fmt.Errorf("%w: server greeting: %s", ErrMalformed, what) }
	if len(p) < 1 || p[0] != mysql.ClassicProtocolVersion {
		return nil, bad("unsupported protocol version")
	}
	g := &Greeting{Raw: bytes.Clone(p)}
	b := g.Raw
	pos := 1
	version, n, ok := readNulString(b[pos:])
	if !ok {
		return nil, bad("server version")
	}
	g.ServerVersion = string(version)
	pos += n
	// connection id (4), scramble part 1 (8), filler (1), capabilities low (2)
	if len(b) < pos+15 {
		return nil, bad("too short")
	}
	g.ConnectionID = binary.LittleEndian.Uint32(b[pos:])
	scramble := bytes.Clone(b[pos+4 : pos+12])
	pos += 13
	g.capLowAt = pos
	g.Capabilities = uint32(binary.LittleEndian.Uint16(b[pos:]))
	pos += 2
	if len(b) == pos { // pre-4.1 servers stop here
		g.Scramble = scramble
		return g, nil
	}
	// charset (1), status (2), capabilities high (2), auth data length (1), reserved (10)
	if len(b) < pos+16 {
		return nil, bad("too short")
	}
	g.Charset = b[pos]
	g.Status = binary.LittleEndian.Uint16(b[pos+1:])
	g.capHighAt = pos + 3
	g.Capabilities |= uint32(binary.LittleEndian.Uint16(b[pos+3:])) << 16
	authLen := int(b[pos+5])
	if g.Capabilities&mysql.CLIENT_LONG_PASSWORD == 0 {
		// MariaDB: the last four reserved bytes hold the extended capabilities.
		g.extCapAt = pos + 12
		g.MariaDBCapabilities = binary.LittleEndian.Uint32(b[g.extCapAt:])
	}
	pos += 16
	if g.Capabilities&mysql.CLIENT_SECURE_CONNECTION != 0 {
		// The second part is max(13, authLen-8) bytes, the last of which is a NUL.
		l := max(13, authLen-8)
		if len(b) < pos+l {
			return nil, bad("scramble")
		}
		part2 := b[pos : pos+l]
		if part2[len(part2)-1] == 0 {
			part2 = part2[:len(part2)-1]
		}
		scramble = append(scramble, part2...)
		pos += l
	}
	g.Scramble = scramble
	if g.Capabilities&mysql.CLIENT_PLUGIN_AUTH != 0 && pos < len(b) {
		name, _, ok := readNulString(b[pos:])
		if !ok { // some servers omit the final NUL
			name = b[pos:]
		}
		g.AuthPlugin = string(name)
	}
	return g, nil
}

// SetCapabilities rewrites the capability flags in Raw.
func (g *Greeting) SetCapabilities(caps, mariadb uint32) {
	g.Capabilities = caps
	binary.LittleEndian.PutUint16(g.Raw[g.capLowAt:], uint16(caps))
	if g.capHighAt > 0 {
		binary.LittleEndian.PutUint16(g.Raw[g.capHighAt:], uint16(caps>>16))
	}
	if g.extCapAt > 0 {
		g.MariaDBCapabilities = mariadb
		binary.LittleEndian.PutUint32(g.Raw[g.extCapAt:], mariadb)
	}
}

// RelayCapabilities returns the server capabilities a relaying proxy advertises to clients:
// those it can pass through, with CLIENT_SSL set when it offers TLS itself.
func RelayCapabilities(server, mariadb uint32, offerTLS bool) (uint32, uint32) {
	caps := server & relayedCapabilities
	if offerTLS {
		caps |= mysql.CLIENT_SSL
	}
	return caps, mariadb & relayedMariaDBCapabilities
}

// sslRequestLen is the length of an SSLRequest: the fixed head of a handshake response.
const sslRequestLen = 32

// IsSSLRequest tells whether a client's first packet asks to start TLS.
func IsSSLRequest(p []byte) bool {
	return len(p) == sslRequestLen && binary.LittleEndian.Uint32(p)&mysql.CLIENT_SSL != 0
}

// HandshakeResponse is a client's answer to the greeting (HandshakeResponse41).
type HandshakeResponse struct {
	// Raw is the packet as received, with capability bits rewritten by SetCapabilities.
	Raw                 []byte
	Capabilities        uint32
	MariaDBCapabilities uint32
	MaxPacketSize       uint32
	Charset             byte
	User                string
	AuthResponse        []byte
	Database            string
	AuthPlugin          string
	// Attributes are the connection attributes, in the order sent.
	Attributes []Attribute
}

// Attribute is one connection attribute (such as program_name).
type Attribute struct{ Key, Value string }

// Attribute returns the value of the connection attribute key, or "".
func (r *HandshakeResponse) Attribute(key string) string {
	for _, a := range r.Attributes {
		if a.Key == key {
			return a.Value
		}
	}
	return ""
}

// maxAttributes bounds the connection attributes kept from one handshake.
const maxAttributes = 64

// ParseHandshakeResponse decodes a client's handshake response. It copies p.
func ParseHandshakeResponse(p []byte) (*HandshakeResponse, error) {
	bad := func(what string) error {
		return fmt.Errorf("%w: handshake response: %s", ErrMalformed, what)
	}
	if len(p) < sslRequestLen {
		return nil, bad("too short")
	}
	r := &HandshakeResponse{Raw: bytes.Clone(p)}
	b := r.Raw
	r.Capabilities = binary.LittleEndian.Uint32(b)
	if r.Capabilities&mysql.CLIENT_PROTOCOL_41 == 0 {
		return nil, bad("client does not speak protocol 4.1")
	}
	r.MaxPacketSize = binary.LittleEndian.Uint32(b[4:])
	r.Charset = b[8]
	if r.Capabilities&mysql.CLIENT_LONG_PASSWORD == 0 {
		r.MariaDBCapabilities = binary.LittleEndian.Uint32(b[28:])
	}
	pos := sslRequestLen
	user, n, ok := readNulString(b[pos:])
	if !ok {
		return nil, bad("user")
	}
	r.User = string(user)
	pos += n
	switch {
	case r.Capabilities&mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0:
		auth, n, ok := readLenencString(b[pos:])
		if !ok {
			return nil, bad("auth response")
		}
		r.AuthResponse = auth
		pos += n
	case r.Capabilities&mysql.CLIENT_SECURE_CONNECTION != 0:
		if pos >= len(b) || pos+1+int(b[pos]) > len(b) {
			return nil, bad("auth response")
		}
		r.AuthResponse = b[pos+1 : pos+1+int(b[pos])]
		pos += 1 + int(b[pos])
	default:
		auth, n, ok := readNulString(b[pos:])
		if !ok {
			return nil, bad("auth response")
		}
		r.AuthResponse = auth
		pos += n
	}
	if r.Capabilities&mysql.CLIENT_CONNECT_WITH_DB != 0 && pos < len(b) {
		db, n, ok := readNulString(b[pos:])
		if !ok {
			return nil, bad("database")
		}
		r.Database = string(db)
		pos += n
	}
	if r.Capabilities&mysql.CLIENT_PLUGIN_AUTH != 0 && pos < len(b) {
		name, n, ok := readNulString(b[pos:])
		if !ok {
			return nil, bad("auth plugin")
		}
		r.AuthPlugin = string(name)
		pos += n
	}
	if r.Capabilities&mysql.CLIENT_CONNECT_ATTRS != 0 && pos < len(b) {
		attrs, _, ok := readLenencString(b[pos:])
		if !ok {
			return nil, bad("connection attributes")
		}
		for len(attrs) > 0 {
			k, n, ok := readLenencString(attrs)
			if !ok {
				return nil, bad("connection attribute key")
			}
			v, m, ok := readLenencString(attrs[n:])
			if !ok {
				return nil, bad("connection attribute value")
			}
			attrs = attrs[n+m:]
			if len(r.Attributes) < maxAttributes {
				r.Attributes = append(r.Attributes, Attribute{Key: string(k), Value: string(v)})
			}
		}
	}
	return r, nil
}

// SetCapabilities rewrites the capability flags in Raw.
func (r *HandshakeResponse) SetCapabilities(caps, mariadb uint32) {
	r.Capabilities = caps
	binary.LittleEndian.PutUint32(r.Raw, caps)
	if caps&mysql.CLIENT_LONG_PASSWORD == 0 {
		r.MariaDBCapabilities = mariadb
		binary.LittleEndian.PutUint32(r.Raw[28:], mariadb)
	}
}

// SSLRequest returns the SSLRequest that precedes this response on a TLS connection: its
// fixed head with CLIENT_SSL set.
func (r *HandshakeResponse) SSLRequest() []byte {
	p := bytes.Clone(r.Raw[:sslRequestLen])
	binary.LittleEndian.PutUint32(p, r.Capabilities|mysql.CLIENT_SSL)
	return p
}

// ChangeUser is what the proxy reads from a COM_CHANGE_USER command.
type ChangeUser struct {
	User       string
	Database   string
	AuthPlugin string
	// AuthResponse is the answer to the connection's first challenge; it points into the
	// parsed packet.
	AuthResponse []byte
	// Charset is the collation id asked for; zero when the packet has none.
	Charset uint16
}

// ParseChangeUser decodes a COM_CHANGE_USER payload (command byte included). caps are the
// client's capabilities.
func ParseChangeUser(p []byte, caps uint32) (*ChangeUser, error) {
	bad := func(what string) error { return fmt.Errorf("%w: COM_CHANGE_USER: %s", ErrMalformed, what) }
	if len(p) < 1 || p[0] != mysql.COM_CHANGE_USER {
		return nil, bad("not a COM_CHANGE_USER")
	}
	b := p[1:]
	user, n, ok := readNulString(b)
	if !ok {
		return nil, bad("user")
	}
	cu := &ChangeUser{User: string(user)}
	b = b[n:]
	if caps&mysql.CLIENT_SECURE_CONNECTION != 0 {
		if len(b) < 1 || len(b) < 1+int(b[0]) {
			return nil, bad("auth response")
		}
		cu.AuthResponse = b[1 : 1+int(b[0])]
		b = b[1+int(b[0]):]
	} else {
		var resp []byte
		if resp, n, ok = readNulString(b); !ok {
			return nil, bad("auth response")
		}
		cu.AuthResponse = resp
		b = b[n:]
	}
	db, n, ok := readNulString(b)
	if !ok {
		return nil, bad("database")
	}
	cu.Database = string(db)
	b = b[n:]
	if len(b) >= 2 { // character set
		cu.Charset = binary.LittleEndian.Uint16(b)
		b = b[2:]
		if caps&mysql.CLIENT_PLUGIN_AUTH != 0 && len(b) > 0 {
			name, _, ok := readNulString(b)
			if !ok {
				name = b
			}
			cu.AuthPlugin = string(name)
		}
	}
	return cu, nil
}
