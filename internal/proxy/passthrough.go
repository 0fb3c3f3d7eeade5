package proxy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
	"github.com/gatekeeperdb/gatekeeper/internal/topology"
)

// passthrough is the mode of one backend connection per client: the handshake is relayed
// between the client and the primary, and the client keeps that connection for every unit.
type passthrough struct{}

func (passthrough) link(s *session) backendLink {
	return &dedicated{s: s, primary: s.cfg.Backends.Primary}
}

// dedicated is passthrough's backend link: the one backend connection the client
// authenticated on, for every unit.
type dedicated struct {
	s       *session
	primary string
	// mu guards conn, which kill closes from another goroutine; the session's goroutine
	// sets it under mu and reads it without.
	mu   sync.Mutex
	conn *protocol.Conn
	// thread is the connection's id on the backend.
	thread uint32
	// cred is what the proxy knows to log in as the client's user, when auth.from_backend
	// let it derive one at login.
	cred auth.Credential
	// watch is the token of the watch on the backend's hang-up.
	watch uint64
}

var _ backendLink = (*dedicated)(nil)

// cacheScope: passthrough does not follow the session's state, so it caches nothing.
func (d *dedicated) cacheScope(_ *plan, k []byte) ([]byte, bool) { return k, false }

func (d *dedicated) acquire(*plan) (*protocol.Conn, error) { return d.conn, nil }
func (d *dedicated) held() bool                            { return false }
func (d *dedicated) pinned() bool                          { return false }
func (d *dedicated) release()                              {}
func (d *dedicated) drop()                                 {}
func (d *dedicated) intercept(*plan) (handled, keep bool)  { return false, true }
func (d *dedicated) prepare(*plan) (ok, keep bool)         { return true, true }
func (d *dedicated) note(*plan)                            {}
func (d *dedicated) addr() string                          { return d.primary }
func (d *dedicated) readOnly() bool                        { return false }

func (d *dedicated) view() linkView {
	if d.cred.CanLogin() {
		return linkView{credential: "derived"}
	}
	return linkView{credential: "none"}
}

func (d *dedicated) backendNow() (string, uint32) { return d.primary, d.thread }

// close ends the backend connection: a clean COM_QUIT when it is between commands.
func (d *dedicated) close() {
	s := d.s
	d.mu.Lock()
	b := d.conn
	d.mu.Unlock()
	if b != nil {
		// A connection handed over to another process goes on there.
		if !s.backendBroken && !s.handedOff {
			_ = b.SetWriteDeadline(time.Now().Add(time.Second))
			b.ResetSequence()
			if b.WritePacket([]byte{mysql.COM_QUIT}) == nil {
				_ = b.Flush()
			}
		}
		_ = b.Close()
	}
	s.adm.watch.forget(d.watch)
}

func (d *dedicated) abort() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn != nil {
		_ = d.conn.NetConn().Close()
	}
}

// login relays the connection setup: the client talks to the primary's greeting and
// authentication through the proxy, which masks the capabilities it does not relay,
// terminates the client's TLS with its own certificate and, if configured, starts TLS of
// its own towards the backend.
func (d *dedicated) login() error {
	s := d.s
	deadline := s.info.loginDeadline
	ctx, cancel := context.WithDeadline(s.ctx, deadline)
	defer cancel()
	s.loginDeadlines(deadline)
	s.client.SetLimit(handshakeLimit)

	backend, g, err := d.open(ctx, deadline)
	if err != nil {
		return err
	}
	d.thread = g.ConnectionID
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
	if err := d.answer(ctx, backend, resp, caps, mariadbCaps, backendOffersTLS); err != nil {
		return err
	}
	if err := d.authenticate(backend, resp, caps); err != nil {
		return err
	}
	d.loggedIn(backend, g, resp)
	return nil
}

// open dials the primary and reads its greeting; on failure the client has been told why.
func (d *dedicated) open(ctx context.Context, deadline time.Time) (*protocol.Conn, *protocol.Greeting, error) {
	s := d.s
	m := s.metrics
	if s.topology != nil {
		// The primary now, waiting for one during a failover (within the login's time).
		wctx, cancel := context.WithDeadline(ctx, deadline)
		addr, err := s.topology.Writer(wctx)
		cancel()
		if err != nil {
			var te *topology.Error
			if errors.As(err, &te) {
				s.sendError(errNoPrimary(te))
			} else {
				s.sendError(errBackendUnreachable("primary", d.primary, err))
			}
			m.handshakeErrors.WithLabelValues("backend").Inc()
			return nil, nil, err
		}
		d.primary = addr
	}
	backend, g, err := d.connectBackend(ctx, d.primary, deadline)
	if err != nil {
		s.suspect(d.primary)
		var ce *clientError
		if errors.As(err, &ce) {
			s.sendError(ce)
		}
		m.handshakeErrors.WithLabelValues("backend").Inc()
		s.log.Warn("cannot open a backend connection for a client", "backend", d.primary, "err", err)
		return nil, nil, err
	}
	if g == nil { // the backend refused the connection; its error was relayed
		m.handshakeErrors.WithLabelValues("backend_refused").Inc()
		return nil, nil, errAuthRefused
	}
	return backend, g, nil
}

// answer sends the client's handshake response on to the backend with the capabilities
// both sides agreed on, starting TLS towards the backend first when configured.
func (d *dedicated) answer(ctx context.Context, backend *protocol.Conn, resp *protocol.HandshakeResponse, caps, mariadbCaps uint32, offersTLS bool) error {
	s := d.s
	m := s.metrics
	addr := d.primary
	tlsConfig, err := s.gate.backendTLS.For(addr, offersTLS)
	if err != nil {
		s.sendError(errBackendTLS(addr, err))
		m.handshakeErrors.WithLabelValues("backend_tls").Inc()
		return err
	}
	if tlsConfig != nil {
		resp.SetCapabilities(caps|mysql.CLIENT_SSL, mariadbCaps)
		if err := backend.WritePacket(resp.SSLRequest()); err != nil {
			return d.backendFailed(addr, err)
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
		return d.backendFailed(addr, err)
	}
	return nil
}

// authenticate relays the authentication exchange between the client and the backend.
func (d *dedicated) authenticate(backend *protocol.Conn, resp *protocol.HandshakeResponse, caps uint32) error {
	s := d.s
	m := s.metrics
	s.wire = protocol.Relay{Client: s.client, Backend: backend, Capabilities: caps}
	if err := s.wire.ForwardAuth(&s.res); err != nil {
		if s.client.IOErr() != nil {
			return s.clientGone(err)
		}
		return d.backendFailed(d.primary, err)
	}
	if s.res.Err != nil {
		s.backendBroken = true // the backend closes the connection
		m.handshakeErrors.WithLabelValues("auth").Inc()
		m.errorSent(originServer, s.res.Err.Code)
		s.log.Debug("authentication refused by the backend", "user", resp.User, "err", s.res.Err)
		return errAuthRefused
	}
	return nil
}

// loggedIn takes what the login settled: the session's user and schema, a credential to
// derive (auth.from_backend), the status, and the watch on the backend's hang-up.
func (d *dedicated) loggedIn(backend *protocol.Conn, g *protocol.Greeting, resp *protocol.HandshakeResponse) {
	s := d.s
	s.user, s.schema, s.programName = resp.User, resp.Database, resp.Attribute("program_name")
	if s.gate.derived != nil {
		plugin, scramble, answer := resp.AuthPlugin, g.Scramble, resp.AuthResponse
		if s.res.AuthSwitch {
			plugin, scramble, answer = s.res.AuthPlugin, s.res.AuthData, s.res.AuthReply
		}
		d.deriveCredential(plugin, scramble, answer)
	}
	s.autocommit = s.res.Status&mysql.SERVER_STATUS_AUTOCOMMIT != 0
	s.inTxn = s.res.Status&mysql.SERVER_STATUS_IN_TRANS != 0
	// A backend that closes the connection while the client is idle (its wait_timeout, a
	// restart, a KILL) closes the client's connection at once, as it would directly, so
	// that the client's pool sees it and opens another.
	d.watch = s.adm.watch.watch(backend.NetConn(), s.backendHungUp)
	_ = s.client.SetDeadline(time.Time{})
	_ = backend.SetDeadline(time.Time{})
	s.client.SetLimit(int(s.cfg.Client.MaxPacketSize))
	s.info.loginIn, s.info.loginOut = s.client.BytesRead, s.client.BytesWritten
}

// connectBackend dials addr and reads its greeting within the connect timeout. When the
// backend answers with an error instead of a greeting (too many connections, host
// blocked), the error is relayed to the client and the greeting is nil.
func (d *dedicated) connectBackend(ctx context.Context, addr string, deadline time.Time) (*protocol.Conn, *protocol.Greeting, error) {
	s := d.s
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
	d.mu.Lock()
	d.conn = backend
	d.mu.Unlock()
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

// backendFailed reports a backend that failed during the handshake.
func (d *dedicated) backendFailed(addr string, err error) error {
	s := d.s
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
func (d *dedicated) deriveCredential(plugin string, scramble, answer []byte) {
	s := d.s
	outcome := "underivable"
	defer func() { s.gate.derived.WithLabelValues(outcome).Inc() }()
	if plugin == "" {
		plugin = protocol.NativePassword
	}
	u, ok := s.gate.accounts.Lookup(s.user, s.info.addr)
	if !ok {
		s.log.Debug("no credential for more connections: the account is not among those read from the primary", "user", s.user)
		return
	}
	cred, err := u.Verify(plugin, scramble, answer)
	if err != nil || !cred.CanLogin() {
		s.log.Debug("no credential for more connections", "user", s.user, "method", plugin, "err", err)
		return
	}
	d.cred = cred
	outcome = "derived"
}

// backendHungUp is called when the dedicated backend connection of a passthrough session
// is closed by the server. An idle client is disconnected at once; a client in the middle
// of a command sees the failure on that command.
func (s *session) backendHungUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.wait.idle || s.wait.interrupted != "" {
		return
	}
	s.backendBroken = true
	s.metrics.backendClosedIdle.Inc()
	s.interruptLocked("the backend closed the connection")
}
