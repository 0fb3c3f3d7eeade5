package proxy

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// Error codes of pooled mode's own authentication, as the server sends them.
const (
	codeAccessDenied     = 1045 // ER_ACCESS_DENIED_ERROR
	codeUserConnections  = 1203 // ER_TOO_MANY_USER_CONNECTIONS
	codeMaxPreparedStmts = 1461 // ER_MAX_PREPARED_STMT_COUNT_REACHED
	codeUnknownStmt      = 1243 // ER_UNKNOWN_STMT_HANDLER
	codeUnknownThread    = 1094 // ER_NO_SUCH_THREAD
	codeNotOwner         = 1095 // ER_KILL_DENIED_ERROR
	stateAccessDenied    = "28000"
)

// errAccessDenied is the server's own refusal of a login, word for word.
func errAccessDenied(user, host string, withPassword bool) *clientError {
	using := "NO"
	if withPassword {
		using = "YES"
	}
	return &clientError{code: codeAccessDenied, state: stateAccessDenied,
		msg: fmt.Sprintf("Access denied for user '%s'@'%s' (using password: %s)", user, host, using)}
}

// handshakePooled authenticates the client against the proxy's accounts, as a server
// would, without any backend connection until the client has proven who it is. Then it
// leases a connection once, to check that the proxy can log in as the user and that the
// schema asked for exists, and gives it back.
func (s *session) handshakePooled() error {
	cfg := s.cfg
	m := s.metrics
	pooling := s.pooling
	start := time.Now()
	deadline := s.loginDeadline
	ctx, cancel := context.WithDeadline(s.ctx, deadline)
	defer cancel()
	s.loginDeadlines(deadline)
	s.client.SetLimit(handshakeLimit)

	g, err := pooling.primaryGreeting(ctx, cfg.Backends.Primary, cfg.Backends.ConnectTimeout)
	if err != nil {
		m.backendDialErrs.WithLabelValues(cfg.Backends.Primary).Inc()
		ce := errBackendUnreachable("primary", cfg.Backends.Primary, err)
		s.sendError(ce)
		m.handshakeErrors.WithLabelValues("backend").Inc()
		s.log.Warn("cannot read the primary's greeting for a client", "backend", cfg.Backends.Primary, "err", err)
		return err
	}
	advertised, advertisedMariaDB := protocol.RelayCapabilities(g.Capabilities, g.MariaDBCapabilities, s.gate.clientTLS != nil)
	scramble := protocol.NewScramble()
	s.scramble = scramble
	hello := &protocol.Hello{
		ServerVersion: g.ServerVersion, ConnectionID: uint32(s.id), Capabilities: advertised,
		MariaDBCapabilities: advertisedMariaDB, Charset: g.Charset, Status: mysql.SERVER_STATUS_AUTOCOMMIT,
		Scramble: scramble, AuthPlugin: protocol.NativePassword,
	}
	resp, err := s.greet(ctx, protocol.AppendGreeting(nil, hello))
	if err != nil {
		return err
	}
	caps := resp.Capabilities & advertised &^ mysql.CLIENT_SSL
	mariadbCaps := resp.MariaDBCapabilities & advertisedMariaDB

	user, cred, err := s.authenticate(ctx, resp.User, resp.AuthPlugin, scramble, resp.AuthResponse)
	if err != nil {
		m.handshakeErrors.WithLabelValues("auth").Inc()
		return err
	}
	leave, ok := s.gate.accounts.Enter(user)
	if !ok {
		m.handshakeErrors.WithLabelValues("max_user_connections").Inc()
		s.sendError(&clientError{code: codeUserConnections, state: stateGeneral, msg: fmt.Sprintf(
			"gatekeeper: user '%s' already has %d connections open, its max_connections in auth.users_file; retry later",
			user.Name, user.MaxConnections)})
		return errors.New("user at max_connections")
	}

	s.user, s.schema, s.programName = resp.User, resp.Database, resp.Attribute("program_name")
	s.cred = cred
	s.autocommit = true
	s.pl = &pooledState{
		pooling: pooling,
		want: backend.Want{Credential: cred, Key: backend.KeyOf(caps, mariadbCaps), Charset: resp.Charset,
			Schema: resp.Database, Attributes: pooling.attrs},
		state:      backend.NewState(resp.Database, resp.Charset),
		clientCaps: caps,
		stmts:      map[uint32]*clientStmt{},
		leave:      leave,
	}
	s.relay = protocol.Relay{Client: s.client, Capabilities: caps}
	if rt := pooling.rt; rt != nil {
		s.rs = &routeState{rt: rt}
		s.rs.setUser(user)
		s.relay.BeforeAck = s.beforeAck
	}

	// One lease now: a user the backend refuses, or a schema that does not exist, fails
	// the login as it would on the server.
	if _, err := s.acquirePooled(); err != nil {
		s.pl.leave()
		s.pl.leave = nil
		s.sendLeaseError(err, time.Since(start))
		m.handshakeErrors.WithLabelValues("backend").Inc()
		return err
	}
	s.releasePooled()

	if err := s.client.WritePacket(protocol.AppendOK(nil, 0, 0, mysql.SERVER_STATUS_AUTOCOMMIT, 0)); err != nil {
		return s.clientGone(err)
	}
	if err := s.client.Flush(); err != nil {
		return s.clientGone(err)
	}
	_ = s.client.SetDeadline(time.Time{})
	s.client.SetLimit(int(cfg.Client.MaxPacketSize))
	s.loginIn, s.loginOut = s.client.BytesRead, s.client.BytesWritten
	return nil
}

// authenticate checks a client's login (or COM_CHANGE_USER) answer, asking the client to
// switch methods when the one it used cannot be checked against the account. On failure
// the client has been told, as the server tells it.
func (s *session) authenticate(ctx context.Context, name, plugin string, scramble, answer []byte) (*auth.User, auth.Credential, error) {
	pooling := s.pooling
	host := s.clientAddr.Unmap().String()
	u, ok := s.gate.accounts.Lookup(name, s.clientAddr)
	if refresh := s.gate.refresh; !ok && refresh != nil && refresh(ctx) {
		u, ok = s.gate.accounts.Lookup(name, s.clientAddr)
	}
	if !ok {
		pooling.authFails.WithLabelValues("unknown_user").Inc()
		s.log.Info("login refused: unknown user", "user", name)
		s.sendError(errAccessDenied(name, host, len(answer) > 0))
		return nil, auth.Credential{}, errAuthRefused
	}
	methods := u.Methods()
	if len(methods) == 0 {
		pooling.authFails.WithLabelValues("no_secret").Inc()
		s.log.Warn("login refused: the proxy knows no secret of this account", "user", name, "plugin", u.Plugin)
		s.sendError(errAccessDenied(name, host, len(answer) > 0))
		return nil, auth.Credential{}, errAuthRefused
	}
	if plugin == "" {
		plugin = protocol.NativePassword
	}
	emptyPassword := u.HasPassword && u.Password == ""
	if !slices.Contains(methods, plugin) || (len(answer) == 0 && !emptyPassword) {
		// Ask for the best method the account allows, with a fresh challenge: the client
		// answered with a method the account cannot check, or did not answer at all (a
		// COM_CHANGE_USER that leaves the method to the server).
		plugin = methods[0]
		scramble = protocol.NewScramble()
		if plugin == protocol.Ed25519 {
			scramble = make([]byte, 32)
			_, _ = rand.Read(scramble)
			// Clients such as go-sql-driver strip a NUL that ends an authentication
			// switch's data, as servers end a native scramble with one; a nonce whose last
			// byte is 0 would reach them 31 bytes long, and they refuse it as malformed
			// (one login in 256).
			for scramble[31] == 0 {
				_, _ = rand.Read(scramble[31:])
			}
		}
		if err := s.client.WritePacket(protocol.AppendAuthSwitch(nil, plugin, scramble)); err != nil {
			return nil, auth.Credential{}, s.clientGone(err)
		}
		if err := s.client.Flush(); err != nil {
			return nil, auth.Credential{}, s.clientGone(err)
		}
		p, err := s.client.ReadPacket()
		if err != nil {
			return nil, auth.Credential{}, s.clientGone(err)
		}
		answer = p
	}
	cred, err := u.Verify(plugin, scramble, answer)
	if err != nil {
		pooling.authFails.WithLabelValues("wrong_password").Inc()
		s.log.Info("login refused", "user", name, "method", plugin, "err", err)
		s.sendError(errAccessDenied(name, host, len(answer) > 0))
		return nil, auth.Credential{}, errAuthRefused
	}
	if plugin == protocol.CachingSHA2 {
		// The fast path's success, which the server's OK follows.
		if err := s.client.WritePacket([]byte{mysql.MORE_DATE_HEADER, mysql.CACHE_SHA2_FAST_AUTH}); err != nil {
			return nil, auth.Credential{}, s.clientGone(err)
		}
	}
	if !cred.CanLogin() {
		pooling.authFails.WithLabelValues("cannot_log_in").Inc()
		s.log.Warn("login refused: the proxy cannot log in to the backend as this user", "user", name, "method", plugin)
		s.sendError(&clientError{code: codeAccessDenied, state: stateAccessDenied, msg: fmt.Sprintf(
			"gatekeeper: the proxy can check '%s' but cannot log in to the database as it: its account uses %s and "+
				"only a hash of its password is known; give its password in auth.users_file or use mode passthrough", name, u.Plugin)})
		return nil, auth.Credential{}, errAuthRefused
	}
	return u, cred, nil
}

// sendLeaseError tells the client why its unit got no connection.
func (s *session) sendLeaseError(err error, waited time.Duration) {
	var se *protocol.ServerError
	if errors.As(err, &se) && !errors.Is(err, backend.ErrLoginRefused) {
		// The backend's own refusal (a schema that does not exist, access to it denied):
		// relayed as it is. A refused login gets the proxy's explanation instead: the proxy
		// logs in with the secret of auth.users_file or of mysql.user, not the client's
		// answer.
		s.relayError(se)
		return
	}
	s.log.Warn("no backend connection for a unit", "backend", s.cfg.Backends.Primary, "err", err)
	s.sendError(errLease(s.cfg.Backends.Primary, err, waited, s.cfg.Pools))
}

// changeUserPooled carries out COM_CHANGE_USER in the proxy: the new user is checked
// against the accounts like a login, and the session starts afresh, as on a server. A
// refused change ends the connection, as the server ends it.
func (s *session) changeUserPooled() bool {
	pl := s.pl
	cu, err := protocol.ParseChangeUser(s.cmd.Payload, pl.clientCaps)
	if err != nil {
		s.protocolError("malformed", err)
		s.sendError(errMalformedPacket(err))
		return false
	}
	s.resetPooled()
	if pl.leave != nil {
		pl.leave()
		pl.leave = nil
	}
	answer := cu.AuthResponse
	user, cred, err := s.authenticate(s.ctx, cu.User, cu.AuthPlugin, s.scramble, answer)
	if err != nil {
		return false
	}
	leave, ok := s.gate.accounts.Enter(user)
	if !ok {
		s.sendError(&clientError{code: codeUserConnections, state: stateGeneral, msg: fmt.Sprintf(
			"gatekeeper: user '%s' already has %d connections open, its max_connections in auth.users_file; retry later",
			user.Name, user.MaxConnections)})
		return false
	}
	pl.leave = leave
	if s.rs != nil {
		s.rs.setUser(user)
	}
	charset := pl.want.Charset
	if cu.Charset != 0 {
		charset = byte(cu.Charset)
	}
	s.user, s.schema = cu.User, cu.Database
	pl.want.Credential, pl.want.Charset, pl.want.Schema = cred, charset, cu.Database
	pl.state = backend.NewState(cu.Database, charset)
	start := time.Now()
	if _, err := s.acquirePooled(); err != nil {
		s.sendLeaseError(err, time.Since(start))
		return false
	}
	s.releasePooled()
	return s.writeLocalOK()
}
