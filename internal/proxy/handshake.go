package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// handshakeLimit bounds the packets of a client that has not authenticated yet.
const handshakeLimit = 64 << 10

// errAuthRefused reports that the backend refused the client's credentials; the client has
// the backend's own error.
var errAuthRefused = errors.New("backend refused authentication")

// handshake relays the connection setup in passthrough mode: the client talks to the
// primary's greeting and authentication through the proxy, which masks the capabilities it
// does not relay, terminates the client's TLS with its own certificate and, if configured,
// starts TLS of its own towards the backend.
func (s *session) handshake() error {
	cfg := s.cfg
	m := s.metrics
	deadline := s.loginDeadline
	ctx, cancel := context.WithDeadline(s.ctx, deadline)
	defer cancel()
	s.loginDeadlines(deadline)
	s.client.SetLimit(handshakeLimit)

	addr := cfg.Backends.Primary
	s.backendAddr = addr
	backend, g, err := s.connectBackend(ctx, addr, deadline)
	if err != nil {
		var ce *clientError
		if errors.As(err, &ce) {
			s.sendError(ce)
		}
		m.handshakeErrors.WithLabelValues("backend").Inc()
		s.log.Warn("cannot open a backend connection for a client", "backend", addr, "err", err)
		return err
	}
	if g == nil { // the backend refused the connection; its error was relayed
		m.handshakeErrors.WithLabelValues("backend_refused").Inc()
		return errAuthRefused
	}

	s.backendThread = g.ConnectionID
	// Greeting, with the capabilities the relay can carry.
	advertised, advertisedMariaDB := protocol.RelayCapabilities(g.Capabilities, g.MariaDBCapabilities, s.gate.clientTLS != nil)
	backendOffersTLS := g.Capabilities&mysql.CLIENT_SSL != 0
	g.SetCapabilities(advertised, advertisedMariaDB)
	resp, err := s.greet(ctx, g.Raw)
	if err != nil {
		return err
	}

	// The response goes on to the backend with the capabilities both sides agreed on.
	caps := resp.Capabilities & advertised &^ mysql.CLIENT_SSL
	mariadbCaps := resp.MariaDBCapabilities & advertisedMariaDB
	tlsConfig, err := s.gate.backendTLS.forBackend(addr, backendOffersTLS)
	if err != nil {
		s.sendError(errBackendTLS(addr, err))
		m.handshakeErrors.WithLabelValues("backend_tls").Inc()
		return err
	}
	if tlsConfig != nil {
		resp.SetCapabilities(caps|mysql.CLIENT_SSL, mariadbCaps)
		if err := backend.WritePacket(resp.SSLRequest()); err != nil {
			return s.backendFailed(addr, err)
		}
		if err := backend.UpgradeClient(ctx, tlsConfig); err != nil {
			s.sendError(errBackendTLS(addr, err))
			m.handshakeErrors.WithLabelValues("backend_tls").Inc()
			m.backendDialErrs.WithLabelValues(addr).Inc()
			return err
		}
	} else {
		resp.SetCapabilities(caps, mariadbCaps)
	}
	if err := backend.WritePacket(resp.Raw); err != nil {
		return s.backendFailed(addr, err)
	}

	s.relay = protocol.Relay{Client: s.client, Backend: backend, Capabilities: caps}
	if err := s.relay.ForwardAuth(&s.res); err != nil {
		if s.client.IOErr() != nil {
			return s.clientGone(err)
		}
		return s.backendFailed(addr, err)
	}
	if s.res.Err != nil {
		s.backendBroken = true // the backend closes the connection
		m.handshakeErrors.WithLabelValues("auth").Inc()
		m.errorSent(originServer, s.res.Err.Code)
		s.log.Debug("authentication refused by the backend", "user", resp.User, "err", s.res.Err)
		return errAuthRefused
	}

	s.user, s.schema, s.programName = resp.User, resp.Database, resp.Attribute("program_name")
	if s.gate.derived != nil {
		plugin, scramble, answer := resp.AuthPlugin, g.Scramble, resp.AuthResponse
		if s.res.AuthSwitch {
			plugin, scramble, answer = s.res.AuthPlugin, s.res.AuthData, s.res.AuthReply
		}
		s.deriveCredential(plugin, scramble, answer)
	}
	s.autocommit = s.res.Status&mysql.SERVER_STATUS_AUTOCOMMIT != 0
	s.inTxn = s.res.Status&mysql.SERVER_STATUS_IN_TRANS != 0
	s.source = &dedicated{conn: backend}
	// A backend that closes the connection while the client is idle (its wait_timeout, a
	// restart, a KILL) closes the client's connection at once, as it would directly, so
	// that the client's pool sees it and opens another.
	s.backendWatch = s.adm.watch.watch(backend.NetConn(), s.backendHungUp)
	_ = s.client.SetDeadline(time.Time{})
	_ = backend.SetDeadline(time.Time{})
	s.client.SetLimit(int(cfg.Client.MaxPacketSize))
	s.loginIn, s.loginOut = s.client.BytesRead, s.client.BytesWritten
	return nil
}

// connectBackend dials addr and reads its greeting within the connect timeout. When the
// backend answers with an error instead of a greeting (too many connections, host
// blocked), the error is relayed to the client and the greeting is nil.
func (s *session) connectBackend(ctx context.Context, addr string, deadline time.Time) (*protocol.Conn, *protocol.Greeting, error) {
	m := s.metrics
	timeout := s.cfg.Backends.ConnectTimeout
	connectBy := time.Now().Add(timeout)
	if connectBy.After(deadline) {
		connectBy = deadline
	}
	dctx, cancel := context.WithDeadline(ctx, connectBy)
	defer cancel()
	nc, err := dialBackend(dctx, addr, timeout, s.cfg.Backends.DeadAfter)
	if err != nil {
		m.backendDialErrs.WithLabelValues(addr).Inc()
		return nil, nil, errBackendUnreachable("primary", addr, err)
	}
	backend := protocol.NewConn(nc)
	backend.SetLimit(handshakeLimit)
	s.mu.Lock()
	s.dedicatedConn = backend
	s.mu.Unlock()
	protocol.Pair(s.client, backend)
	_ = backend.SetDeadline(connectBy)
	p, err := backend.ReadPacket()
	if err != nil {
		s.backendBroken = true
		m.backendDialErrs.WithLabelValues(addr).Inc()
		return nil, nil, errBackendUnreachable("primary", addr, fmt.Errorf("no greeting: %w", err))
	}
	if len(p) > 0 && p[0] == mysql.ERR_HEADER {
		s.backendBroken = true
		m.backendDialErrs.WithLabelValues(addr).Inc()
		s.client.ResetSequence()
		if s.client.WritePacket(p) == nil {
			_ = s.client.Flush()
		}
		if e, err := protocol.ParseError(p); err == nil {
			s.log.Warn("backend refused the connection", "backend", addr, "err", e)
		}
		return backend, nil, nil
	}
	g, err := protocol.ParseGreeting(p)
	if err != nil {
		s.backendBroken = true
		m.backendDialErrs.WithLabelValues(addr).Inc()
		return nil, nil, errBackendUnreachable("primary", addr, err)
	}
	_ = backend.SetDeadline(deadline)
	backend.SetLimit(0)
	return backend, g, nil
}

// loginDeadlines bounds the login on the client's side: reads end at deadline, and
// writes a second later, so that the error of a login that ran out of time at the
// deadline (a backend that stopped answering) still reaches the client.
func (s *session) loginDeadlines(deadline time.Time) {
	_ = s.client.SetReadDeadline(deadline)
	_ = s.client.SetWriteDeadline(deadline.Add(time.Second))
}

// clientGone reports a client that failed or left during the handshake.
func (s *session) clientGone(err error) error {
	reason := "client_gone"
	var ne net.Error
	switch {
	case errors.Is(err, protocol.ErrPacketTooLarge):
		reason = "malformed"
		s.log.Warn("closing client connection: login packet over 64 KiB", "err", err)
		s.refuseTooLarge(handshakeLimit)
	case errors.As(err, &ne) && ne.Timeout():
		reason = "timeout"
		// One line for every socket that connects and never speaks would flood the log.
		if n, ok := s.gate.timeouts.allow(time.Now()); ok {
			s.log.Info("handshakes timed out (client.handshake_timeout)", "since_last_line", n, "err", err)
		}
	}
	s.metrics.handshakeErrors.WithLabelValues(reason).Inc()
	s.backendBroken = true
	return err
}

// backendFailed reports a backend that failed during the handshake.
func (s *session) backendFailed(addr string, err error) error {
	s.backendBroken = true
	s.metrics.handshakeErrors.WithLabelValues("backend").Inc()
	s.metrics.backendDialErrs.WithLabelValues(addr).Inc()
	s.sendError(errBackendUnreachable("primary", addr, err))
	s.log.Warn("backend failed during the handshake", "backend", addr, "err", err)
	return err
}

// deriveCredential learns, from a login the backend accepted, what the proxy needs to open
// more connections as the same user (auth.from_backend): with the account's stored hash,
// a mysql_native_password answer gives SHA1(password). Logins with other methods cannot
// be derived; the session keeps only its relayed connection, and the metric counts them.
func (s *session) deriveCredential(plugin string, scramble, answer []byte) {
	outcome := "underivable"
	defer func() { s.gate.derived.WithLabelValues(outcome).Inc() }()
	if plugin == "" {
		plugin = protocol.NativePassword
	}
	u, ok := s.gate.accounts.Lookup(s.user, s.clientAddr)
	if !ok {
		s.log.Debug("no credential for more connections: the account is not among those read from the primary", "user", s.user)
		return
	}
	cred, err := u.Verify(plugin, scramble, answer)
	if err != nil || !cred.CanLogin() {
		s.log.Debug("no credential for more connections", "user", s.user, "method", plugin, "err", err)
		return
	}
	s.cred = cred
	outcome = "derived"
}

// greet sends a greeting to the client and reads its handshake response, starting TLS
// when the client asks (with the proxy's certificate) and refusing it when the proxy has
// none or requires it. On failure the client has been told why.
func (s *session) greet(ctx context.Context, greeting []byte) (*protocol.HandshakeResponse, error) {
	m := s.metrics
	s.client.ResetSequence()
	if err := s.client.WritePacket(greeting); err != nil {
		return nil, s.clientGone(err)
	}
	p, err := s.client.ReadPacket()
	if err != nil {
		return nil, s.clientGone(err)
	}
	if protocol.IsSSLRequest(p) {
		if s.gate.clientTLS == nil {
			s.sendError(errTLSNotOffered())
			m.handshakeErrors.WithLabelValues("tls").Inc()
			return nil, errors.New("client asked for TLS, which is not configured")
		}
		if err := s.client.UpgradeServer(ctx, s.gate.clientTLS); err != nil {
			m.handshakeErrors.WithLabelValues("tls").Inc()
			return nil, err
		}
		if p, err = s.client.ReadPacket(); err != nil {
			return nil, s.clientGone(err)
		}
	} else if s.cfg.TLS.Required {
		s.sendError(errTLSRequired())
		m.handshakeErrors.WithLabelValues("tls_required").Inc()
		return nil, errors.New("client did not start TLS, which is required")
	}
	resp, err := protocol.ParseHandshakeResponse(p)
	if err != nil {
		s.sendError(errBadHandshake(err))
		m.handshakeErrors.WithLabelValues("malformed").Inc()
		s.log.Warn("bad handshake from client", "err", err)
		return nil, err
	}
	return resp, nil
}

// backendHungUp is called when the dedicated backend connection of a passthrough session
// is closed by the server. An idle client is disconnected at once; a client in the middle
// of a command sees the failure on that command.
func (s *session) backendHungUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.idle || s.interrupted != "" {
		return
	}
	s.backendBroken = true
	s.metrics.backendClosedIdle.Inc()
	s.interruptLocked("the backend closed the connection")
}
