package chaos

import (
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// A client that speaks the protocol itself, without a driver: no goroutine and no buffer per
// connection, so that ten thousand of them cost the test little, and a login can be sent
// one byte at a time.

// writePacket writes one packet (a payload under 16 MiB) with sequence id seq.
func writePacket(c net.Conn, seq byte, payload []byte) error {
	n := len(payload)
	_, err := c.Write(append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...))
	return err
}

// readPacket reads one packet and returns its sequence id and payload.
func readPacket(c net.Conn) (byte, []byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return 0, nil, err
	}
	p := make([]byte, int(h[0])|int(h[1])<<8|int(h[2])<<16)
	if _, err := io.ReadFull(c, p); err != nil {
		return 0, nil, err
	}
	return h[3], p, nil
}

// loginCapabilities are those of a plain client: protocol 4.1, plugin authentication, a
// schema at connect.
const loginCapabilities = mysql.CLIENT_LONG_PASSWORD | mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION |
	mysql.CLIENT_PLUGIN_AUTH | mysql.CLIENT_TRANSACTIONS | mysql.CLIENT_CONNECT_WITH_DB | mysql.CLIENT_LONG_FLAG

// handshakeResponse reads the server greeting from c and returns the handshake response
// packet (header included) that logs in as user with mysql_native_password.
func handshakeResponse(c net.Conn, user, password, database string) ([]byte, error) {
	_, p, err := readPacket(c)
	if err != nil {
		return nil, fmt.Errorf("greeting: %w", err)
	}
	if len(p) > 0 && p[0] == mysql.ERR_HEADER {
		return nil, serverError(p)
	}
	g, err := protocol.ParseGreeting(p)
	if err != nil {
		return nil, err
	}
	payload := protocol.AppendHandshakeResponse(nil, &protocol.Login{
		Capabilities:  loginCapabilities & g.Capabilities,
		MaxPacketSize: 1 << 24,
		Charset:       45, // utf8mb4_general_ci
		User:          user,
		AuthResponse:  protocol.NativeResponse(protocol.NativeStage1(password), scramble20(g.Scramble)),
		Database:      database,
		AuthPlugin:    protocol.NativePassword,
	})
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), 1}, payload...), nil
}

// finishLogin reads the answer to a handshake response: OK, or a switch to
// mysql_native_password with a new scramble, answered here.
func finishLogin(c net.Conn, password string) error {
	seq, p, err := readPacket(c)
	if err != nil {
		return fmt.Errorf("login answer: %w", err)
	}
	if len(p) > 0 && p[0] == mysql.EOF_HEADER {
		plugin, data, err := protocol.ParseAuthSwitch(p)
		if err != nil {
			return err
		}
		if plugin != protocol.NativePassword {
			return fmt.Errorf("asked to switch to %s", plugin)
		}
		answer := protocol.NativeResponse(protocol.NativeStage1(password), scramble20(data))
		if err := writePacket(c, seq+1, answer); err != nil {
			return err
		}
		if _, p, err = readPacket(c); err != nil {
			return fmt.Errorf("login answer: %w", err)
		}
	}
	switch {
	case len(p) > 0 && p[0] == mysql.OK_HEADER:
		return nil
	case len(p) > 0 && p[0] == mysql.ERR_HEADER:
		return serverError(p)
	}
	return fmt.Errorf("unexpected login answer %q", p)
}

// rawLogin logs in on a connected c as the test account.
func rawLogin(c net.Conn) error {
	resp, err := handshakeResponse(c, env.User, env.Password, env.Database)
	if err != nil {
		return err
	}
	if _, err := c.Write(resp); err != nil {
		return err
	}
	return finishLogin(c, env.Password)
}

// scramble20 is the part of a scramble mysql_native_password uses.
func scramble20(s []byte) []byte {
	if len(s) > 20 {
		return s[:20]
	}
	return s
}

func serverError(p []byte) error {
	e, err := protocol.ParseError(p)
	if err != nil {
		return errors.New("malformed error packet")
	}
	return e
}
