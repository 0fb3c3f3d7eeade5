package mysqltest

import (
	"bytes"
	"net"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// charsetUTF8MB4 is utf8mb4_general_ci, the character set the greeting announces.
const charsetUTF8MB4 = 45

// login runs the connection phase: greeting, handshake response, an authentication switch
// when the client answered with another method, and the verdict. An error closes the
// connection.
func (c *Conn) login() error {
	scramble := protocol.NewScramble()
	c.buf = protocol.AppendGreeting(c.buf[:0], &protocol.Hello{
		ServerVersion: c.srv.opts.Version,
		ConnectionID:  c.id,
		Capabilities:  c.srv.opts.Capabilities,
		Charset:       charsetUTF8MB4,
		Status:        mysql.SERVER_STATUS_AUTOCOMMIT,
		Scramble:      scramble,
		AuthPlugin:    protocol.NativePassword,
	})
	if err := c.pc.WritePacket(c.buf); err != nil {
		return err
	}
	if err := c.pc.Flush(); err != nil {
		return err
	}
	p, err := c.pc.ReadPacket()
	if err != nil {
		return err
	}
	if protocol.IsSSLRequest(p) {
		return errClose // TLS was not offered
	}
	resp, err := protocol.ParseHandshakeResponse(p)
	if err != nil {
		_ = c.writeError(serverError(mysql.ER_HANDSHAKE_ERROR, "Bad handshake"))
		return errClose
	}
	answer := resp.AuthResponse
	if resp.AuthPlugin != "" && resp.AuthPlugin != protocol.NativePassword {
		if scramble, answer, err = c.switchAuth(); err != nil {
			return err
		}
	}
	if c.srv.refuse.Load() || !c.srv.verify(resp.User, scramble, answer) {
		_ = c.writeError(c.accessDenied(resp.User, answer))
		return errClose
	}
	if resp.Database == UnknownSchema {
		_ = c.writeError(serverError(mysql.ER_BAD_DB_ERROR, "Unknown database '%s'", resp.Database))
		return errClose
	}
	c.mu.Lock()
	c.user, c.schema = resp.User, resp.Database
	c.caps = resp.Capabilities & c.srv.opts.Capabilities
	c.mu.Unlock()
	c.srv.logins.Add(1)
	return c.writeOK(0, 0, &effects{schema: resp.Database != ""}, false)
}

// switchAuth asks the client to answer a fresh scramble with mysql_native_password and
// returns the scramble and the answer.
func (c *Conn) switchAuth() (scramble, answer []byte, err error) {
	scramble = protocol.NewScramble()
	c.buf = protocol.AppendAuthSwitch(c.buf[:0], protocol.NativePassword, scramble)
	if err := c.pc.WritePacket(c.buf); err != nil {
		return nil, nil, err
	}
	if err := c.pc.Flush(); err != nil {
		return nil, nil, err
	}
	p, err := c.pc.ReadPacket()
	if err != nil {
		return nil, nil, err
	}
	return scramble, bytes.Clone(p), nil
}

// accessDenied is the ERR 1045 a failed authentication gets.
func (c *Conn) accessDenied(user string, answer []byte) *protocol.ServerError {
	host, _, err := net.SplitHostPort(c.netConn.RemoteAddr().String())
	if err != nil {
		host = "localhost"
	}
	using := "NO"
	if len(answer) > 0 {
		using = "YES"
	}
	return serverError(mysql.ER_ACCESS_DENIED_ERROR,
		"Access denied for user '%s'@'%s' (using password: %s)", user, host, using)
}

// changeUser answers COM_CHANGE_USER. The answer in the command was computed against the
// scramble of the login, so the server always asks again with a fresh one. Success resets
// the session as COM_RESET_CONNECTION does; failure closes the connection.
func (c *Conn) changeUser(cu *protocol.ChangeUser) error {
	scramble, answer, err := c.switchAuth()
	if err != nil {
		return err
	}
	if !c.srv.verify(cu.User, scramble, answer) {
		_ = c.writeError(c.accessDenied(cu.User, answer))
		return errClose
	}
	if cu.Database == UnknownSchema {
		_ = c.writeError(serverError(mysql.ER_BAD_DB_ERROR, "Unknown database '%s'", cu.Database))
		return errClose
	}
	c.mu.Lock()
	c.resetLocked()
	c.user, c.schema = cu.User, cu.Database
	c.mu.Unlock()
	return c.writeOK(0, 0, &effects{schema: cu.Database != ""}, false)
}
