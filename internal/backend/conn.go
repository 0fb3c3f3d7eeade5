package backend

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// Errors of connections.
var (
	// ErrLoginRefused reports that a backend refused the proxy's login; it wraps the
	// server's error.
	ErrLoginRefused = errors.New("backend refused the login")
	// ErrNoSecret reports a user whose password the proxy does not know well enough to log
	// in with the method the backend asks for.
	ErrNoSecret = errors.New("the proxy cannot log in as this user")
	// ErrSchema reports that a backend refused the login for the schema asked for (it does
	// not exist, or the user may not use it); it wraps the server's error. The session's
	// schema is at fault, not the backend or the user's credential.
	ErrSchema = errors.New("backend refused the schema")
	// ErrSync reports that bringing a connection to a session's state failed; it wraps the
	// server's error.
	ErrSync = errors.New("cannot carry the session state to the connection")
)

// Key is what a client expects of the packets on a connection: the capability flags that
// change the shape or the meaning of what the server sends. Connections are shared only
// between clients with the same key.
type Key struct {
	Capabilities        uint32
	MariaDBCapabilities uint32
}

// keyCapabilities are the flags of a client's handshake that matter after it: the others
// only shape the login (attributes, plugin names, TLS, the default schema), or are the
// proxy's own choice (session tracking).
const keyCapabilities = mysql.CLIENT_FOUND_ROWS | mysql.CLIENT_LONG_FLAG | mysql.CLIENT_NO_SCHEMA |
	mysql.CLIENT_ODBC | mysql.CLIENT_LOCAL_FILES | mysql.CLIENT_IGNORE_SPACE | mysql.CLIENT_INTERACTIVE |
	mysql.CLIENT_IGNORE_SIGPIPE | mysql.CLIENT_TRANSACTIONS | mysql.CLIENT_MULTI_STATEMENTS |
	mysql.CLIENT_MULTI_RESULTS | mysql.CLIENT_PS_MULTI_RESULTS | mysql.CLIENT_DEPRECATE_EOF

// KeyOf returns the key of a client with the given negotiated capabilities.
func KeyOf(caps, mariadbCaps uint32) Key {
	return Key{Capabilities: caps & keyCapabilities, MariaDBCapabilities: mariadbCaps}
}

// loginCapabilities are what the proxy asks for besides the client's key.
const loginCapabilities = mysql.CLIENT_LONG_PASSWORD | mysql.CLIENT_PROTOCOL_41 |
	mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_PLUGIN_AUTH |
	mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | mysql.CLIENT_CONNECT_ATTRS |
	mysql.CLIENT_SESSION_TRACK | mysql.CLIENT_TRANSACTIONS

// trackingSetup turns on the session tracking the proxy reads state changes from. It is
// sent after every login and reset, which return these to the server's defaults.
const trackingSetup = "SET SESSION session_track_system_variables='*', session_track_state_change=ON, session_track_schema=ON"

// Want is what a session asks of the connection it leases.
type Want struct {
	// Credential is the user to log in as.
	Credential auth.Credential
	Key        Key
	// Charset is the collation id of the client's handshake.
	Charset byte
	// Schema is the session's default schema: the one a new connection logs in with.
	Schema string
	// Prefer is the connection the session used last; it is handed back when it is idle.
	Prefer *Conn
	// State is the session's state, when known: among idle connections, one already in it
	// is chosen first.
	State *State
	// Attributes are sent as connection attributes when a connection is opened.
	Attributes []protocol.Attribute
}

// Dialer opens connections to one backend address.
type Dialer struct {
	Addr string
	// ConnectTimeout bounds dialing and reading the greeting; zero means 5s.
	ConnectTimeout time.Duration
	// DeadAfter gives up a connection whose server sends no answer at all, not even to
	// TCP keepalive probes, for this long (see NetDialer); zero keeps the system's defaults.
	DeadAfter time.Duration
	// TLS returns the TLS configuration for a backend that does or does not offer TLS, or
	// nil for none; an error when TLS is required but not offered. Nil: no TLS.
	TLS func(addr string, offered bool) (*tls.Config, error)

	// names caches, by collation id, the names of a login's character set and collation,
	// read from the server once.
	names sync.Map
}

// loginNames returns the character set and collation names a fresh login with collation
// id gets, asking the server over c, which has just logged in, the first time; nil when it
// cannot tell.
func (d *Dialer) loginNames(c *Conn, id byte) *loginNames {
	if n := d.knownNames(id); n != nil {
		return n
	}
	n := c.queryNames()
	if n != nil {
		d.names.Store(id, n)
	}
	return n
}

// knownNames returns what a fresh login with collation id got, or nil when no connection
// has logged in with it yet.
func (d *Dialer) knownNames(id byte) *loginNames {
	if v, ok := d.names.Load(id); ok {
		return v.(*loginNames)
	}
	return nil
}

// queryNames asks the server for c's character set and collation; nil when it cannot tell.
func (c *Conn) queryNames() *loginNames {
	row, err := c.queryRow("SELECT @@character_set_client, @@collation_connection")
	if err != nil || len(row) != 2 {
		return nil
	}
	return &loginNames{charset: row[0], collation: row[1]}
}

// Conn is a connection the proxy opened and logged in itself. It belongs to one lease at
// a time; between leases its pool owns it.
type Conn struct {
	pc       *protocol.Conn
	addr     string
	threadID uint32
	version  string
	// caps are the negotiated capabilities; key the client shape they came from.
	caps     uint32
	key      Key
	scramble []byte
	tracking bool // session tracking is on
	secure   bool // TLS

	// The state the connection is in, as far as the proxy set or saw it.
	user         string
	charset      byte
	schema       string
	vars         *varSet
	lastInsertID uint64
	stmts        stmtCache

	created  time.Time
	lastUsed time.Time
	// broken: the connection failed, or was left in the middle of an exchange.
	broken bool
	// idx is the connection's place in its pool's idle list, -1 when not idle.
	idx int
	// lease is the connection's lease while it is lent out.
	lease Lease
	// dialer opened the connection; names are its login's character set names, nil when
	// unknown.
	dialer *Dialer
	names  *loginNames
}

// Packets returns the connection's packet stream, to relay on.
func (c *Conn) Packets() *protocol.Conn { return c.pc }

// ThreadID returns the server's id of the connection (what KILL takes).
func (c *Conn) ThreadID() uint32 { return c.threadID }

// Addr returns the backend address.
func (c *Conn) Addr() string { return c.addr }

// User returns the user the connection is logged in as.
func (c *Conn) User() string { return c.user }

// Capabilities returns the capabilities negotiated with the server.
func (c *Conn) Capabilities() uint32 { return c.caps }

// Tracking tells whether the server reports session-state changes on this connection.
func (c *Conn) Tracking() bool { return c.tracking }

// ServerVersion returns the version the server announced.
func (c *Conn) ServerVersion() string { return c.version }

// MarkBroken records that the connection cannot be reused.
func (c *Conn) MarkBroken() { c.broken = true }

// Close closes the connection, saying goodbye first when it is between commands.
func (c *Conn) Close() error {
	if !c.broken {
		_ = c.pc.SetWriteDeadline(time.Now().Add(time.Second))
		c.pc.ResetSequence()
		if c.pc.WritePacket([]byte{mysql.COM_QUIT}) == nil {
			_ = c.pc.Flush()
		}
	}
	c.broken = true
	return c.pc.Close()
}

// Dial opens a connection to the backend and logs in as w asks.
func (d *Dialer) Dial(ctx context.Context, w *Want) (*Conn, error) {
	timeout := d.ConnectTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nc, err := NetDialer(timeout, d.DeadAfter).DialContext(dctx, "tcp", d.Addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", d.Addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	deadline, _ := dctx.Deadline()
	_ = nc.SetDeadline(deadline)
	c := &Conn{pc: protocol.NewConn(nc), addr: d.Addr, key: w.Key, created: time.Now(), idx: -1, vars: emptyVars, dialer: d}
	if err := c.login(dctx, d, w); err != nil {
		c.broken = true
		_ = c.pc.Close()
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	c.lastUsed = time.Now()
	return c, nil
}

func (c *Conn) login(ctx context.Context, d *Dialer, w *Want) error {
	p, err := c.pc.ReadPacket()
	if err != nil {
		return fmt.Errorf("backend %s: no greeting: %w", c.addr, err)
	}
	if len(p) > 0 && p[0] == mysql.ERR_HEADER {
		e, _ := protocol.ParseError(p)
		return fmt.Errorf("backend %s: %w: %w", c.addr, ErrLoginRefused, e)
	}
	g, err := protocol.ParseGreeting(p)
	if err != nil {
		return fmt.Errorf("backend %s: %w", c.addr, err)
	}
	c.threadID, c.version, c.scramble = g.ConnectionID, g.ServerVersion, g.Scramble

	caps := (w.Key.Capabilities | loginCapabilities) & g.Capabilities
	if w.Schema != "" {
		caps |= mysql.CLIENT_CONNECT_WITH_DB & g.Capabilities
	}
	var mariadbCaps uint32
	if g.Capabilities&mysql.CLIENT_LONG_PASSWORD == 0 {
		mariadbCaps = w.Key.MariaDBCapabilities & g.MariaDBCapabilities
	}
	c.caps = caps
	c.user, c.charset, c.schema = w.Credential.User, w.Charset, w.Schema
	login := &protocol.Login{
		Capabilities: caps, MariaDBCapabilities: mariadbCaps, MaxPacketSize: 1<<30 - 1,
		Charset: w.Charset, User: w.Credential.User, Database: w.Schema, AuthPlugin: g.AuthPlugin,
		Attributes: w.Attributes,
	}
	secure := false
	if d.TLS != nil {
		cfg, err := d.TLS(c.addr, g.Capabilities&mysql.CLIENT_SSL != 0)
		if err != nil {
			return fmt.Errorf("backend %s: %w", c.addr, err)
		}
		if cfg != nil {
			login.Capabilities |= mysql.CLIENT_SSL
			head := protocol.AppendHandshakeResponse(nil, login)[:32]
			if err := c.pc.WritePacket(head); err != nil {
				return err
			}
			if err := c.pc.UpgradeClient(ctx, cfg); err != nil {
				return fmt.Errorf("backend %s: %w", c.addr, err)
			}
			secure = true
			c.secure = true
		}
	}
	if login.AuthResponse, err = authAnswer(g.AuthPlugin, g.Scramble, w.Credential, secure); err != nil {
		// Answer with mysql_native_password instead: the server switches to the account's
		// own method, which may be one the proxy can answer.
		login.AuthPlugin = protocol.NativePassword
		login.AuthResponse, _ = authAnswer(protocol.NativePassword, g.Scramble, w.Credential, secure)
	}
	if err := c.pc.WritePacket(protocol.AppendHandshakeResponse(nil, login)); err != nil {
		return err
	}
	if err := c.pc.Flush(); err != nil {
		return err
	}
	if err := c.finishAuth(ctx, login.AuthPlugin, g.Scramble, w.Credential, secure); err != nil {
		return err
	}
	if caps&mysql.CLIENT_SESSION_TRACK != 0 {
		if err := c.exec([]byte(trackingSetup)); err != nil {
			var se *protocol.ServerError
			if !errors.As(err, &se) {
				return err
			}
			// A server without session tracking: the session keeps its connection when
			// it changes state.
		} else {
			c.tracking = true
		}
	}
	c.names = d.loginNames(c, w.Charset)
	return nil
}

// authAnswer is the answer to a challenge with the given method.
func authAnswer(plugin string, scramble []byte, cred auth.Credential, secure bool) ([]byte, error) {
	switch plugin {
	case protocol.NativePassword, "":
		switch {
		case cred.Stage1 != nil:
			return protocol.NativeResponse(cred.Stage1, scramble), nil
		case cred.HasPassword:
			if cred.Password == "" {
				return nil, nil
			}
			return protocol.NativeResponse(protocol.NativeStage1(cred.Password), scramble), nil
		}
	case protocol.CachingSHA2:
		if cred.HasPassword {
			return protocol.SHA2Response(cred.Password, scramble), nil
		}
	case protocol.Ed25519:
		if cred.HasPassword {
			return protocol.Ed25519Response(cred.Password, scramble), nil
		}
	case protocol.ClearPassword:
		if cred.HasPassword && secure {
			return append([]byte(cred.Password), 0), nil
		}
	default:
		return nil, fmt.Errorf("%w: the backend asks for authentication method %s, which the proxy does not speak", ErrNoSecret, plugin)
	}
	return nil, fmt.Errorf("%w: the backend asks for %s and the proxy does not know %s's password", ErrNoSecret, plugin, cred.User)
}

// finishAuth reads the server's side of the authentication exchange to its end.
func (c *Conn) finishAuth(ctx context.Context, plugin string, scramble []byte, cred auth.Credential, secure bool) error {
	for {
		p, err := c.pc.ReadPacket()
		if err != nil {
			return fmt.Errorf("backend %s: login: %w", c.addr, err)
		}
		if len(p) == 0 {
			return fmt.Errorf("backend %s: login: %w: empty packet", c.addr, protocol.ErrMalformed)
		}
		var answer []byte
		switch p[0] {
		case mysql.OK_HEADER:
			return nil
		case mysql.ERR_HEADER:
			e, _ := protocol.ParseError(p)
			if e != nil && (e.Code == mysql.ER_BAD_DB_ERROR || e.Code == mysql.ER_DBACCESS_DENIED_ERROR) {
				return fmt.Errorf("backend %s: %w as %s: %w", c.addr, ErrSchema, cred.User, e)
			}
			return fmt.Errorf("backend %s: %w as %s: %w", c.addr, ErrLoginRefused, cred.User, e)
		case mysql.EOF_HEADER:
			name, data, err := protocol.ParseAuthSwitch(p)
			if err != nil {
				return err
			}
			plugin, scramble = name, bytes.Clone(data)
			if answer, err = authAnswer(plugin, scramble, cred, secure); err != nil {
				return fmt.Errorf("backend %s: %w", c.addr, err)
			}
			if answer == nil {
				answer = []byte{}
			}
		case mysql.MORE_DATE_HEADER:
			if plugin != protocol.CachingSHA2 || len(p) < 2 {
				return fmt.Errorf("backend %s: login: %w: unexpected 0x01 packet", c.addr, protocol.ErrMalformed)
			}
			switch {
			case p[1] == mysql.CACHE_SHA2_FAST_AUTH && len(p) == 2:
				continue // the OK follows
			case p[1] == mysql.CACHE_SHA2_FULL_AUTH && len(p) == 2:
				if !cred.HasPassword {
					return fmt.Errorf("backend %s: %w: full caching_sha2_password authentication needs %s's password", c.addr, ErrNoSecret, cred.User)
				}
				if secure {
					answer = append([]byte(cred.Password), 0)
				} else {
					answer = []byte{2} // ask for the server's public key
				}
			default: // the public key
				if answer, err = encryptPassword(cred.Password, scramble, p[1:]); err != nil {
					return fmt.Errorf("backend %s: %w", c.addr, err)
				}
			}
		default:
			return fmt.Errorf("backend %s: login: %w: unexpected packet 0x%02x", c.addr, protocol.ErrMalformed, p[0])
		}
		if err := c.pc.WritePacket(answer); err != nil {
			return err
		}
		if err := c.pc.Flush(); err != nil {
			return err
		}
	}
}

// encryptPassword encrypts password for caching_sha2_password's full authentication over
// a connection without TLS, with the server's RSA public key.
func encryptPassword(password string, scramble, keyPEM []byte) ([]byte, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("caching_sha2_password: the server's public key is not PEM")
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("caching_sha2_password: the server's public key: %w", err)
	}
	pub, ok := key.(*rsa.PublicKey)
	if !ok {
		return nil, errors.New("caching_sha2_password: the server's public key is not RSA")
	}
	plain := append([]byte(password), 0)
	for i := range plain {
		plain[i] ^= scramble[i%len(scramble)]
	}
	return rsa.EncryptOAEP(sha1.New(), rand.Reader, pub, plain, nil)
}

// exec sends commands (COM_QUERY texts, or whole command payloads when they start with a
// command byte below 0x20) in one write and reads every response. It returns the first
// server error, after all responses are read, or the failure of the exchange.
func (c *Conn) exec(cmds ...[]byte) error {
	c.pendingCloses()
	for _, cmd := range cmds {
		c.pc.ResetSequence()
		var err error
		if len(cmd) > 0 && cmd[0] < 0x20 {
			err = c.pc.WritePacket(cmd)
		} else {
			err = c.pc.WritePacket(append([]byte{mysql.COM_QUERY}, cmd...))
		}
		if err != nil {
			c.broken = true
			return err
		}
	}
	if err := c.pc.Flush(); err != nil {
		c.broken = true
		return err
	}
	var first error
	for range cmds {
		serr, err := c.readResponse()
		if err != nil {
			c.broken = true
			return fmt.Errorf("backend %s: %w", c.addr, err)
		}
		if serr != nil && first == nil {
			first = serr
		}
	}
	return first
}

// Kill sends a KILL statement between units; the server's refusal is returned as a
// *protocol.ServerError.
func (c *Conn) Kill(statement string) error {
	return c.exec([]byte(statement))
}

// FlushState takes the session-state records the server holds for the next OK, after a
// result set ended by an EOF, which cannot carry them.
func (c *Conn) FlushState() error {
	return c.exec([]byte{mysql.COM_PING})
}

// Variable reads a session variable of the connection, between units.
func (c *Conn) Variable(name string) (string, error) {
	if !ValidVarName([]byte(name)) {
		return "", fmt.Errorf("invalid variable name %q", name)
	}
	row, err := c.queryRow("SELECT @@SESSION." + name)
	if err != nil {
		return "", err
	}
	if len(row) != 1 {
		return "", fmt.Errorf("%w: SELECT @@SESSION.%s returned %d columns", protocol.ErrMalformed, name, len(row))
	}
	return row[0], nil
}

// Global reads a global variable of the server (SELECT @@GLOBAL.name).
func (c *Conn) Global(name string) (string, error) {
	if !ValidVarName([]byte(name)) {
		return "", fmt.Errorf("invalid variable name %q", name)
	}
	row, err := c.queryRow("SELECT @@GLOBAL." + name)
	if err != nil {
		return "", err
	}
	if len(row) != 1 {
		return "", fmt.Errorf("%w: SELECT @@GLOBAL.%s returned %d columns", protocol.ErrMalformed, name, len(row))
	}
	return row[0], nil
}

// Broken tells whether the connection failed, or was left in the middle of an exchange.
func (c *Conn) Broken() bool { return c.broken }

// queryRow runs a query that returns one row and returns its values as text (NULL as "").
func (c *Conn) queryRow(query string) ([]string, error) {
	p, err := c.request(mysql.COM_QUERY, []byte(query))
	if err != nil {
		return nil, err
	}
	columns, err := protocol.ParseColumnCount(p)
	if err != nil {
		c.broken = true
		return nil, err
	}
	deprecateEOF := c.caps&mysql.CLIENT_DEPRECATE_EOF != 0
	skip := int(columns)
	if !deprecateEOF {
		skip++
	}
	for range skip {
		if _, err := c.pc.ReadPacket(); err != nil {
			c.broken = true
			return nil, err
		}
	}
	var row []string
	for {
		p, err := c.pc.ReadPacket()
		if err != nil {
			c.broken = true
			return nil, err
		}
		if protocol.IsTerminator(p, deprecateEOF) || (len(p) > 0 && p[0] == mysql.ERR_HEADER) {
			return row, nil
		}
		if row == nil {
			if row, err = protocol.ParseTextRow(p, int(columns)); err != nil {
				c.broken = true
				return nil, err
			}
		}
	}
}

// request sends one command and reads the first packet of its response. A server error is
// returned as a *protocol.ServerError and leaves c usable; any other error breaks it.
func (c *Conn) request(cmd byte, arg []byte) ([]byte, error) {
	c.pendingCloses()
	c.pc.ResetSequence()
	if err := c.pc.WritePacket(append([]byte{cmd}, arg...)); err != nil {
		c.broken = true
		return nil, err
	}
	if err := c.pc.Flush(); err != nil {
		c.broken = true
		return nil, err
	}
	p, err := c.pc.ReadPacket()
	if err != nil {
		c.broken = true
		return nil, fmt.Errorf("backend %s: %s: %w", c.addr, protocol.CommandName(cmd), err)
	}
	if len(p) > 0 && p[0] == mysql.ERR_HEADER {
		e, err := protocol.ParseError(p)
		if err != nil {
			c.broken = true
			return nil, err
		}
		return nil, e
	}
	return p, nil
}

// readResponse reads the whole response to one command, discarding result rows.
func (c *Conn) readResponse() (*protocol.ServerError, error) {
	deprecateEOF := c.caps&mysql.CLIENT_DEPRECATE_EOF != 0
	var ok protocol.OK
	for {
		p, err := c.pc.ReadPacket()
		if err != nil {
			return nil, err
		}
		if len(p) == 0 {
			return nil, fmt.Errorf("%w: empty packet", protocol.ErrMalformed)
		}
		var status uint16
		switch p[0] {
		case mysql.OK_HEADER:
			if err := protocol.ParseOK(p, c.caps, &ok); err != nil {
				return nil, err
			}
			status = ok.Status
		case mysql.ERR_HEADER:
			e, err := protocol.ParseError(p)
			if err != nil {
				return nil, err
			}
			return e, nil
		case mysql.LocalInFile_HEADER:
			// The proxy sends no files of its own: an empty one ends the request.
			if err := c.pc.WritePacket(nil); err != nil {
				return nil, err
			}
			if err := c.pc.Flush(); err != nil {
				return nil, err
			}
			continue
		default:
			if status, err = c.skipResultSet(p, deprecateEOF); err != nil {
				return nil, err
			}
		}
		if status&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
			return nil, nil
		}
	}
}

// skipResultSet reads a result set whose column-count packet is p, up to its terminator,
// and returns the terminator's status.
func (c *Conn) skipResultSet(p []byte, deprecateEOF bool) (uint16, error) {
	columns, err := protocol.ParseColumnCount(p)
	if err != nil {
		return 0, err
	}
	skip := int(columns)
	if !deprecateEOF {
		skip++
	}
	for range skip {
		if _, err := c.pc.ReadPacket(); err != nil {
			return 0, err
		}
	}
	for {
		p, err := c.pc.ReadPacket()
		if err != nil {
			return 0, err
		}
		switch {
		case len(p) > 0 && p[0] == mysql.ERR_HEADER:
			return 0, nil
		case !protocol.IsTerminator(p, deprecateEOF):
		case deprecateEOF:
			var ok protocol.OK
			if err := protocol.ParseOK(p, c.caps, &ok); err != nil {
				return 0, err
			}
			return ok.Status, nil
		default:
			return protocol.ParseEOF(p)
		}
	}
}
