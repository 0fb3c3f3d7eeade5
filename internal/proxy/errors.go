package proxy

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
	"github.com/gatekeeperdb/gatekeeper/internal/topology"
)

// MySQL error codes the proxy sends. Where a server code fits, it is used, so that drivers
// recognise the condition. Connection-level failures use server codes with SQLSTATE 08S01
// (communication link failure), never the client library's own codes (2003, 2013): libmariadb,
// under the mariadb CLI and many drivers, reads an ERR packet that carries such a code as a
// malformed packet (2027) and loses the message, while 08S01 is what JDBC drivers and their
// pools take for a broken connection, to discard and replace. docs/errors.md lists them.
const (
	codeConCount        = 1040 // ER_CON_COUNT_ERROR: too many connections
	codeHandshake       = 1043 // ER_HANDSHAKE_ERROR: bad handshake; also the backend cannot be reached
	codeUnknownCommand  = 1047 // ER_UNKNOWN_COM_ERROR
	codePacketTooLarge  = 1153 // ER_NET_PACKET_TOO_LARGE
	codeNetRead         = 1158 // ER_NET_READ_ERROR: the backend connection broke
	codeInterrupted     = 1317 // ER_QUERY_INTERRUPTED: a result ended early, the connection stays usable
	codeReadOnlyTxn     = 1792 // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
	codeSecureTransport = 3159 // ER_SECURE_TRANSPORT_REQUIRED
	codeNotAllowed      = 1148 // ER_NOT_ALLOWED_COMMAND: a query rule denies the statement
	codeNoPrimary       = 9001 // no writable primary in time (ProxySQL's code for a hostgroup it cannot reach)
	stateConnection     = "08S01"
	stateGeneral        = "HY000"
	stateInterrupted    = "70100"
	stateReadOnlyTxn    = "25006"
	stateAccess         = "42000"
	// stateConnectionRefuse is the state of a connection refused at login.
	stateConnectionRefuse = "08004"
)

// clientError is a failure the client is told about in an ERR packet.
type clientError struct {
	code  uint16
	state string
	msg   string // starts with "gatekeeper:"
	err   error  // the cause, for logs
}

func (e *clientError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *clientError) Unwrap() error { return e.err }

func errBackendUnreachable(role, addr string, err error) *clientError {
	return &clientError{code: codeHandshake, state: stateConnection, err: err, msg: fmt.Sprintf(
		"gatekeeper: cannot reach the %s backend %s (%s); check that it runs and that backends.%s is right",
		role, addr, shortCause(err), role)}
}

func errBackendLost(addr string, err error) *clientError {
	return &clientError{code: codeNetRead, state: stateConnection, err: err, msg: fmt.Sprintf(
		"gatekeeper: lost the connection to backend %s during the command (%s); reconnect and retry if the command is safe to repeat",
		addr, shortCause(err))}
}

// errTxnLost tells the client that the connection of its open transaction (or of its
// COMMIT) broke: the proxy did not commit it, and only the server knows whether it did.
func errTxnLost(addr string, err error) *clientError {
	return &clientError{code: codeNetRead, state: stateConnection, err: err, msg: fmt.Sprintf(
		"gatekeeper: lost the connection to backend %s during your transaction (%s); the proxy did not commit it: "+
			"the server rolls back a transaction whose connection ends before COMMIT, and a COMMIT in flight is the server's to settle; "+
			"reconnect, check what was committed, and run the transaction again if it was not",
		addr, shortCause(err))}
}

// errNoPrimary tells the client that its unit found no writable primary: none appeared
// within failover.buffer_timeout, too many waited, or two servers are writable.
func errNoPrimary(err *topology.Error) *clientError {
	return &clientError{code: codeNoPrimary, state: stateGeneral, err: err, msg: "gatekeeper: " + err.Error() +
		"; the statement did not run: retry it"}
}

// errReplicaLost tells the client that a read's replica failed after part of its result
// was sent: the ERR ends the result where it stopped, and the connection stays usable.
func errReplicaLost(addr string, rows int, err error) *clientError {
	return &clientError{code: codeInterrupted, state: stateInterrupted, err: err, msg: fmt.Sprintf(
		"gatekeeper: lost the connection to replica %s after %d rows of the result (%s); the result is incomplete, "+
			"and this connection is still usable: run the statement again",
		addr, rows, shortCause(err))}
}

// errPinOnReplica refuses, in a read-only transaction that runs on a replica, a statement
// that would keep state in the replica's connection (a user variable, a lock, a temporary
// table, a prepared statement): the session's later writes could not see it.
func errPinOnReplica(addr string) *clientError {
	return &clientError{code: codeReadOnlyTxn, state: stateReadOnlyTxn, msg: fmt.Sprintf(
		"gatekeeper: this read-only transaction runs on replica %s, and the statement would keep state "+
			"(a user variable, a lock, a temporary table, a prepared statement) that later writes on the primary "+
			"could not see; run it before START TRANSACTION READ ONLY, or set routing.read_only_transactions: primary",
		addr)}
}

func errTooManyConnections(limit int) *clientError {
	return &clientError{code: codeConCount, state: stateConnectionRefuse, msg: fmt.Sprintf(
		"gatekeeper: too many connections (client.max_connections is %d); retry later", limit)}
}

func errTooManyLogins(bound string, c config.Client) *clientError {
	what := fmt.Sprintf("%d connections are logging in at once (client.max_handshakes)", c.MaxHandshakes)
	if bound == "max_handshakes_per_client" {
		what = fmt.Sprintf("%d connections from your address are logging in at once (client.max_handshakes_per_client)", c.MaxHandshakesPerClient)
	}
	return &clientError{code: codeConCount, state: stateConnectionRefuse, msg: fmt.Sprintf(
		"gatekeeper: too many connections: %s and none finished within half of client.handshake_timeout (%s); retry later",
		what, c.HandshakeTimeout)}
}

func errTLSRequired() *clientError {
	return &clientError{code: codeSecureTransport, state: stateGeneral,
		msg: "gatekeeper: this proxy requires TLS (tls.required); connect with TLS enabled"}
}

func errTLSNotOffered() *clientError {
	return &clientError{code: codeHandshake, state: stateConnection,
		msg: "gatekeeper: the client asked for TLS but the proxy has no certificate (tls.cert_file); connect without TLS or configure one"}
}

func errBadHandshake(err error) *clientError {
	return &clientError{code: codeHandshake, state: stateConnection, err: err,
		msg: "gatekeeper: bad handshake; the client sent a malformed or unsupported handshake packet"}
}

func errBackendTLS(addr string, err error) *clientError {
	return &clientError{code: codeHandshake, state: stateConnection, err: err, msg: fmt.Sprintf(
		"gatekeeper: TLS to backend %s failed (%s); check backends.tls", addr, shortCause(err))}
}

func errPacketTooLarge(limit int) *clientError {
	return &clientError{code: codePacketTooLarge, state: stateConnection, msg: fmt.Sprintf(
		"gatekeeper: got a packet bigger than client.max_packet_size (%d bytes); closing the connection", limit)}
}

func errMalformedPacket(err error) *clientError {
	return &clientError{code: codeHandshake, state: stateConnection, err: err,
		msg: "gatekeeper: malformed packet from the client; closing the connection"}
}

func errUnsupportedCommand(cmd byte) *clientError {
	return &clientError{code: codeUnknownCommand, state: stateConnection, msg: fmt.Sprintf(
		"gatekeeper: command %s (0x%02x) is not supported through the proxy; connect to the server directly for it",
		protocol.CommandName(cmd), cmd)}
}

// shortCause renders the cause of a network failure without the noise of the whole chain.
func shortCause(err error) string {
	var op *net.OpError
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "timed out"
	case errors.As(err, &op) && op.Err != nil:
		var sys *os.SyscallError
		if errors.As(op.Err, &sys) {
			return sys.Err.Error()
		}
		return op.Err.Error()
	case err == nil:
		return "unknown cause"
	}
	return err.Error()
}

// refuse answers a new connection with e instead of a greeting and closes it.
func refuse(conn net.Conn, e *clientError, m *metrics) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	m.errorSent(originProxy, e.code)
	_ = protocol.NewConn(conn).WriteError(e.code, e.state, e.msg)
}

// sendError writes e to the client as an ERR packet. The error of the write itself is of no
// use: the connection is usually closed next.
func (s *session) sendError(e *clientError) {
	s.metrics.errorSent(originProxy, e.code)
	_ = s.client.WriteError(e.code, e.state, e.msg)
}

// relayError writes an error the server sent to the client, as the server sent it.
func (s *session) relayError(se *protocol.ServerError) {
	s.metrics.errorSent(originServer, se.Code)
	_ = s.client.WriteError(se.Code, se.State, se.Message)
}
