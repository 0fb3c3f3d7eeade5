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
	"github.com/gatekeeperdb/gatekeeper/internal/topology"
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

// login authenticates the client against the proxy's accounts, as a server would,
// without any backend connection until the client has proven who it is. Then it leases a
// connection once, to check that the proxy can log in as the user and that the schema
// asked for exists, and gives it back.
func (l *pooledLink) login() error {
	s := l.s
	start := time.Now()
	deadline := s.info.loginDeadline
	ctx, cancel := context.WithDeadline(s.ctx, deadline)
	defer cancel()
	s.loginDeadlines(deadline)
	s.client.SetLimit(handshakeLimit)

	resp, caps, mariadbCaps, err := l.greet(ctx)
	if err != nil {
		return err
	}
	user, cred, err := l.authenticate(ctx, resp.User, resp.AuthPlugin, l.scramble, resp.AuthResponse)
	if err != nil {
		s.metrics.handshakeErrors.WithLabelValues("auth").Inc()
		return err
	}
	if !l.enter(user) {
		s.metrics.handshakeErrors.WithLabelValues("max_user_connections").Inc()
		return errors.New("user at max_connections")
	}
	l.begin(user, cred, resp, caps, mariadbCaps)
	// One lease now: a user the backend refuses, or a schema that does not exist, fails
	// the login as it would on the server.
	if err := l.tryLease(); err != nil {
		l.leave()
		l.leave = nil
		s.sendLeaseError(err, time.Since(start))
		s.metrics.handshakeErrors.WithLabelValues("backend").Inc()
		return err
	}
	if err := s.client.WritePacket(protocol.AppendOK(nil, 0, 0, mysql.SERVER_STATUS_AUTOCOMMIT, 0)); err != nil {
		return s.clientGone(err)
	}
	if err := s.client.Flush(); err != nil {
		return s.clientGone(err)
	}
	_ = s.client.SetDeadline(time.Time{})
	s.client.SetLimit(int(s.cfg.Client.MaxPacketSize))
	s.info.loginIn, s.info.loginOut = s.client.BytesRead, s.client.BytesWritten
	return nil
}

// greet sends the client the proxy's greeting, imitating the primary's, and reads its
// answer; caps and mariadbCaps are the capabilities agreed with it.
func (l *pooledLink) greet(ctx context.Context) (resp *protocol.HandshakeResponse, caps, mariadbCaps uint32, err error) {
	s := l.s
	m := s.metrics
	g, err := l.m.primaryGreeting(ctx)
	if err != nil {
		m.backendDialErrs.WithLabelValues(l.m.primary).Inc()
		s.sendError(errBackendUnreachable("primary", l.m.primary, err))
		m.handshakeErrors.WithLabelValues("backend").Inc()
		s.log.Warn("cannot read the primary's greeting for a client", "backend", l.m.primary, "err", err)
		return nil, 0, 0, err
	}
	advertised, advertisedMariaDB := protocol.RelayCapabilities(g.Capabilities, g.MariaDBCapabilities, s.gate.clientTLS != nil)
	l.scramble = protocol.NewScramble()
	hello := &protocol.Hello{
		ServerVersion: g.ServerVersion, ConnectionID: uint32(s.id), Capabilities: advertised,
		MariaDBCapabilities: advertisedMariaDB, Charset: g.Charset, Status: mysql.SERVER_STATUS_AUTOCOMMIT,
		Scramble: l.scramble, AuthPlugin: protocol.NativePassword,
	}
	if resp, err = s.greet(ctx, protocol.AppendGreeting(nil, hello)); err != nil {
		return nil, 0, 0, err
	}
	return resp, resp.Capabilities & advertised &^ mysql.CLIENT_SSL, resp.MariaDBCapabilities & advertisedMariaDB, nil
}

// enter counts the session against its user's max_connections; when the user is at it,
// the client is told, and enter returns false.
func (l *pooledLink) enter(user *auth.User) bool {
	s := l.s
	leave, ok := s.gate.accounts.Enter(user)
	if !ok {
		s.sendError(&clientError{code: codeUserConnections, state: stateGeneral, msg: fmt.Sprintf(
			"gatekeeper: user '%s' already has %d connections open, its max_connections in auth.users_file; retry later",
			user.Name, user.MaxConnections)})
		return false
	}
	l.leave = leave
	return true
}

// begin starts the session of user, logged in with resp: what a connection for it must
// be, its state, and its consistency.
func (l *pooledLink) begin(user *auth.User, cred auth.Credential, resp *protocol.HandshakeResponse, caps, mariadbCaps uint32) {
	s := l.s
	s.user, s.schema, s.programName = resp.User, resp.Database, resp.Attribute("program_name")
	s.autocommit = true
	l.pl.Want = backend.Want{Credential: cred, Key: backend.KeyOf(caps, mariadbCaps), Charset: resp.Charset,
		Schema: resp.Database, Attributes: l.m.attrs}
	l.pl.State = backend.NewState(resp.Database, resp.Charset)
	l.pl.ClientCaps = caps
	s.wire = protocol.Relay{Client: s.client, Capabilities: caps}
	if s.routes != nil {
		s.routes.SetConsistency(user.Consistency)
		s.wire.BeforeAck = s.beforeAck
	}
}

// tryLease leases a connection for the session and gives it back: the login's, and a
// change of user's, check that the backend takes the user and its schema.
func (l *pooledLink) tryLease() error {
	var p plan // no command: the primary's
	if _, err := l.acquire(&p); err != nil {
		return err
	}
	l.release()
	return nil
}

// authenticate checks a client's login (or COM_CHANGE_USER) answer, asking the client to
// switch methods when the one it used cannot be checked against the account. On failure
// the client has been told, as the server tells it.
func (l *pooledLink) authenticate(ctx context.Context, name, plugin string, scramble, answer []byte) (*auth.User, auth.Credential, error) {
	s := l.s
	pooling := l.m
	host := s.info.addr.Unmap().String()
	u, ok := s.gate.accounts.Lookup(name, s.info.addr)
	if refresh := s.gate.refresh; !ok && refresh != nil && refresh(ctx) {
		u, ok = s.gate.accounts.Lookup(name, s.info.addr)
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
		var err error
		plugin = methods[0]
		if scramble, answer, err = l.switchMethod(plugin); err != nil {
			return nil, auth.Credential{}, err
		}
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

// switchMethod asks the client to answer again with plugin, to a fresh challenge, and
// returns the challenge and the answer.
func (l *pooledLink) switchMethod(plugin string) (scramble, answer []byte, err error) {
	s := l.s
	scramble = protocol.NewScramble()
	if plugin == protocol.Ed25519 {
		scramble = make([]byte, 32)
		_, _ = rand.Read(scramble)
		// Clients such as go-sql-driver strip a NUL that ends an authentication switch's
		// data, as servers end a native scramble with one; a nonce whose last byte is 0
		// would reach them 31 bytes long, and they refuse it as malformed (one login in 256).
		for scramble[31] == 0 {
			_, _ = rand.Read(scramble[31:])
		}
	}
	if err := s.client.WritePacket(protocol.AppendAuthSwitch(nil, plugin, scramble)); err != nil {
		return nil, nil, s.clientGone(err)
	}
	if err := s.client.Flush(); err != nil {
		return nil, nil, s.clientGone(err)
	}
	answer, err = s.client.ReadPacket()
	if err != nil {
		return nil, nil, s.clientGone(err)
	}
	return scramble, answer, nil
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
	var te *topology.Error
	if errors.As(err, &te) {
		s.log.Warn("no primary for a unit", "err", err)
		s.sendError(errNoPrimary(te))
		return
	}
	s.log.Warn("no backend connection for a unit", "backend", s.cfg.Backends.Primary, "err", err)
	s.sendError(errLease(s.cfg.Backends.Primary, err, waited, s.cfg.Pools))
}

// changeUser carries out COM_CHANGE_USER in the proxy: the new user is checked against
// the accounts like a login, and the session starts afresh, as on a server. A refused
// change ends the connection, as the server ends it.
func (l *pooledLink) changeUser() bool {
	s := l.s
	cu, err := protocol.ParseChangeUser(s.cmd.Payload, l.pl.ClientCaps)
	if err != nil {
		s.protocolError("malformed", err)
		s.sendError(errMalformedPacket(err))
		return false
	}
	l.reset()
	if l.leave != nil {
		l.leave()
		l.leave = nil
	}
	user, cred, err := l.authenticate(s.ctx, cu.User, cu.AuthPlugin, l.scramble, cu.AuthResponse)
	if err != nil || !l.enter(user) {
		return false
	}
	s.routes.SetConsistency(user.Consistency)
	charset := l.pl.Want.Charset
	if cu.Charset != 0 {
		charset = byte(cu.Charset)
	}
	s.user, s.schema = cu.User, cu.Database
	l.pl.Want.Credential, l.pl.Want.Charset, l.pl.Want.Schema = cred, charset, cu.Database
	l.pl.State = backend.NewState(cu.Database, charset)
	start := time.Now()
	if err := l.tryLease(); err != nil {
		s.sendLeaseError(err, time.Since(start))
		return false
	}
	return s.writeLocalOK()
}
