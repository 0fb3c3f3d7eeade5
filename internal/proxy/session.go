package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
	"github.com/gatekeeperdb/gatekeeper/internal/rules"
	"github.com/gatekeeperdb/gatekeeper/internal/topology"
)

// collaborators are what a session works with. The server hands them over; a session
// reaches nothing else of it.
type collaborators struct {
	cfg     *config.Config // read only
	log     *slog.Logger
	metrics *metrics
	adm     *admitter
	rec     *recorder
	gate    *gate
	// mode gives each session its backend link: passthrough's or pooled mode's.
	mode mode
	// routing routes reads to replicas; nil without them.
	routing *routing.Policy
	// cache is the result cache; nil when off.
	cache *resultCache
	// rules are the query rules in force; a reload swaps them whole.
	rules *atomic.Pointer[rules.Set]
	// index finds another session by the id its client knows (KILL).
	index sessionIndex
	// logins bounds the connections logging in at once.
	logins *handshakeGate
	// handoff is the hand-over under way, nil when none: the drain then moves each session
	// to the other process rather than close it.
	handoff atomic.Pointer[Handoff]
	// topology knows the primary and holds writes while there is none; nil: the primary
	// is backends.primary.
	topology *topology.Topology
	// durable holds each write's OK until a replica has applied it
	// (failover.durable_acks: replica); nil when off.
	durable *durableAcks
}

// sessionIndex finds a live session by the connection id its client knows.
type sessionIndex interface {
	sessionByID(id uint64) *session
}

var _ sessionIndex = (*Server)(nil)

// recorder measures what units cost and records it by request type.
type recorder struct {
	// costs learns what each request type costs; nil: nothing is recorded.
	costs *estimator.Table
	// share measures what each command costs the backend (estimator.backend_cpus).
	share   *estimator.Share
	typeKey typeKey
}

// gate is what logs clients in: TLS towards clients (nil: not offered) and towards
// backends, and the accounts of pooled mode and auth.from_backend (nil without either),
// with refresh to read them again for an unknown user and derived, the count of
// passthrough credentials derived.
type gate struct {
	clientTLS  *tls.Config
	backendTLS *backend.TLSPolicy
	accounts   *auth.Store
	refresh    func(ctx context.Context) bool
	derived    *prometheus.CounterVec
	// timeouts limits the log lines of timed-out handshakes.
	timeouts logEvery
}

// logEvery lets one log line of a kind through at most every period, counting the
// occurrences in between.
type logEvery struct {
	period time.Duration
	mu     sync.Mutex
	last   time.Time
	n      int
}

// allow counts an occurrence and says whether to log it, with how many occurrences there
// were since the last line (this one included).
func (l *logEvery) allow(now time.Time) (n int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if !l.last.IsZero() && now.Sub(l.last) < l.period {
		return 0, false
	}
	n, l.n, l.last = l.n, 0, now
	return n, true
}

// session serves one client connection. It holds the connection's state; the statement
// path (path.go) runs each command through named steps, and the backend link, which its
// mode gives it, is where units get their connection.
type session struct {
	id uint64
	*collaborators
	log *slog.Logger
	// ctx ends when the session is killed, or once a unit of it has waited for admission,
	// when its client hangs up (clientWatch).
	ctx    context.Context
	cancel context.CancelFunc

	client *protocol.Conn
	// link reaches the backends: passthrough's dedicated connection, or pooled mode's
	// leases. routes is the session's side of read routing; nil without it.
	link   backendLink
	routes *routing.Session
	// wire relays between the client and the backend connection of the open unit
	// (wire.Backend, nil between units).
	wire protocol.Relay
	cmd  protocol.Command
	res  protocol.Response
	// plan is the current command on its way through the statement path; unit the open
	// unit, and charge its admission.
	plan   plan
	unit   unit
	charge charge
	// capture keeps the response a cache fill relays.
	capture protocol.Capture
	// conn is the protocol state the responses tell.
	connState
	// cls classifies the statements; sampleBuf is where a type's sample is put together.
	cls       *classify.Classifier
	sampleBuf []byte
	// hot are the session's counts of the per-command metrics, from run to close.
	hot *sessionCounts
	// info is what the session knows of its client, set before it is listed.
	info clientInfo
	// slot is the session's place among the logins in progress, from the start of its
	// login to the end (nil for a session handed over).
	slot *loginSlot
	// view is what snapshots show of the session (publish).
	view atomic.Pointer[sessionView]
	// relayedAt is when the last command's response was relayed, zero when the last
	// command ended otherwise: the start of the wait for the next one, without reading the
	// clock again.
	relayedAt time.Time
	// backendBroken is set when the backend connection failed or was left in the middle of
	// an exchange: it must not be reused or sent anything more.
	backendBroken bool
	// handedOff is set once the session moved to another process: its sockets are that
	// process's now, and closing them here only lets go of this one's descriptors.
	handedOff bool

	// mu guards wait: the interplay with the server's drain and idle reaper.
	mu   sync.Mutex
	wait waitState
}

// connState is a session's protocol state, owned by its goroutine.
type connState struct {
	user, schema, programName string
	inTxn, autocommit         bool
	// stmts are the prepared statements by the id the client knows them by, with what
	// the classifier found in them.
	stmts map[uint32]statement
}

// clientInfo is what a session knows of its client connection.
type clientInfo struct {
	// addr is the client's IP, for the policers; text its address as a string.
	addr  netip.Addr
	text  string
	since time.Time
	// loginDeadline ends the login: waiting for a slot and the handshake itself.
	loginDeadline time.Time
	// loginIn and loginOut are the client's bytes by the end of the login, which the
	// metrics leave out.
	loginIn, loginOut uint64
}

// waitState is how a session waits for its client's next command; session.mu guards it.
type waitState struct {
	// idle is set while the session waits for the client's next command; inTxn whether it
	// waits inside a transaction; since is when it started waiting.
	idle  bool
	inTxn bool
	since time.Time
	// draining is set when the server shuts down.
	draining bool
	// interrupted says why the wait for a command was cut short, or is empty.
	interrupted string
}

func newSession(c *collaborators, id uint64, conn net.Conn) *session {
	ctx, cancel := context.WithCancel(context.Background())
	now := time.Now()
	s := &session{
		id:            id,
		collaborators: c,
		log:           c.log.With("conn", id, "client", conn.RemoteAddr().String()),
		ctx:           ctx,
		cancel:        cancel,
		client:        protocol.NewConn(conn),
		connState:     connState{stmts: map[uint32]statement{}},
		cls:           classify.New(),
		info: clientInfo{addr: addrOf(conn.RemoteAddr()), text: conn.RemoteAddr().String(), since: now,
			loginDeadline: now.Add(c.cfg.Client.HandshakeTimeout)},
	}
	if c.routing != nil {
		s.routes = c.routing.NewSession()
	}
	s.link = c.mode.link(s)
	return s
}

func (s *session) run() {
	s.hot = s.metrics.hot.open()
	defer func() {
		s.close()
		// A login that failed gives its slot back once its backend connection is closed,
		// so that the connection taking the slot (one that evicted this login) keeps the
		// backend connections within the bound.
		s.slot.leave()
	}()
	// A connection waits for a login slot half its handshake timeout at most, so that one
	// that gets a slot has the other half to log in, rather than a deadline too close to
	// make and a connection cut without a word.
	ctx, cancel := context.WithDeadline(s.ctx, s.info.since.Add(s.cfg.Client.HandshakeTimeout/2))
	conn := s.client.NetConn()
	slot, refused := s.logins.enter(ctx, s.info.addr, s.info.since, func() { _ = conn.Close() })
	cancel()
	if refused != "" {
		s.metrics.connsRefused.WithLabelValues(refused).Inc()
		_ = s.client.SetWriteDeadline(time.Now().Add(time.Second))
		s.sendError(errTooManyLogins(refused, s.cfg.Client))
		s.backendBroken = true
		return
	}
	s.slot = slot
	err := s.link.login()
	if err != nil {
		s.log.Debug("handshake failed", "err", err)
		return
	}
	s.slot.leave()
	s.log.Debug("session started", "user", s.user, "schema", s.schema, "backend", s.link.addr())
	s.publish()
	for s.awaitCommand() {
		if !s.dispatch() {
			return
		}
	}
}

// awaitCommand reads the next command, or says why the session ends.
func (s *session) awaitCommand() bool {
	s.client.Trim()
	if !s.startWaiting() {
		if h := s.handoff.Load(); h != nil && s.handOff(h) {
			return false
		}
		s.log.Debug("closing for shutdown")
		return false
	}
	consumed := s.client.Consumed()
	err := s.client.ReadCommand(&s.cmd)
	reason := s.stopWaiting()
	if reason != "" {
		// The wait was cut short by a deadline in the past; lift it if the command came
		// in anyway.
		_ = s.client.SetReadDeadline(time.Time{})
	}
	if err == nil {
		return true
	}
	switch {
	case reason == reasonShutdown && errors.Is(err, os.ErrDeadlineExceeded) && s.handoff.Load() != nil &&
		s.client.Consumed() == consumed:
		// Nothing of a command was consumed: what came of one is buffered, and moves.
		s.handOff(s.handoff.Load())
	case reason != "" && errors.Is(err, os.ErrDeadlineExceeded):
		if s.backendBroken {
			// Counted; one line per client would flood the log when a database restarts.
			s.log.Debug("closing connection", "reason", reason)
		} else {
			s.log.Info("closing connection", "reason", reason)
		}
	case errors.Is(err, protocol.ErrPacketTooLarge):
		s.protocolError("packet_too_large", err)
		s.refuseTooLarge(int(s.cfg.Client.MaxPacketSize))
	case errors.Is(err, protocol.ErrMalformed):
		s.protocolError("malformed", err)
		s.sendError(errMalformedPacket(err))
	case errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed):
		s.log.Debug("client disconnected without COM_QUIT")
	default:
		s.log.Debug("client read failed", "err", err)
	}
	return false
}

// startWaiting marks the session idle before it reads the next command; false when it
// must end instead (a drain, outside a transaction).
func (s *session) startWaiting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wait.draining && !s.inTxn {
		return false
	}
	since := s.relayedAt
	if since.IsZero() {
		since = time.Now()
	}
	s.relayedAt = time.Time{}
	s.wait.idle, s.wait.inTxn, s.wait.since = true, s.inTxn, since
	return true
}

// stopWaiting ends the wait for a command, returning why it was cut short, if it was.
func (s *session) stopWaiting() (reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wait.idle = false
	reason, s.wait.interrupted = s.wait.interrupted, ""
	return reason
}

// interruptLocked cuts short a wait for a command, for reason. Called with s.mu held.
func (s *session) interruptLocked(reason string) {
	s.wait.interrupted = reason
	_ = s.client.SetReadDeadline(time.Unix(1, 0))
}

// reasonShutdown is why a drain interrupts a session's wait for a command.
const reasonShutdown = "server shutting down"

// drain marks the session for shutdown and ends it at once if it idles outside a
// transaction. The others end when their transaction does.
func (s *session) drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wait.draining = true
	if s.wait.idle && !s.wait.inTxn {
		s.interruptLocked(reasonShutdown)
	}
}

// reapIfIdle ends the session if it has waited for a command since before cutoff.
func (s *session) reapIfIdle(cutoff time.Time, timeout time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wait.idle && s.wait.interrupted == "" && s.wait.since.Before(cutoff) {
		s.interruptLocked("idle for longer than client.idle_timeout (" + timeout.String() + ")")
	}
}

// kill closes the session's connections from outside, after the drain timeout.
func (s *session) kill() {
	s.cancel()
	_ = s.client.NetConn().Close()
	s.mu.Lock()
	s.wait.interrupted = "drain timeout reached"
	s.mu.Unlock()
	// The session's goroutine may be using the backend connection; closing its socket is
	// safe from any goroutine.
	s.link.abort()
}

// killClient closes the client's connection from another session's KILL.
func (s *session) killClient() {
	s.mu.Lock()
	s.wait.interrupted = "killed by KILL CONNECTION"
	s.mu.Unlock()
	s.cancel()
	_ = s.client.NetConn().Close()
}

// close ends the session: what it holds of a backend goes back (a transaction the client
// left open is ended there), then the client connection closes.
func (s *session) close() {
	s.releaseUnit() // a transaction left open by the client
	s.releaseLimit()
	s.link.close()
	s.adm.watch.forget(s.charge.watchToken)
	_ = s.client.Close()
	s.countBytes()
	s.metrics.hot.close(s.hot)
	s.cancel()
}

// fail handles a command that broke the exchange: it tells the client what it can and
// leaves the session to end.
func (s *session) fail(cmd byte, err error, written uint64) {
	s.backendBroken = true // it is in the middle of an exchange
	switch {
	case errors.Is(err, protocol.ErrPacketTooLarge):
		s.protocolError("packet_too_large", err)
		s.refuseTooLarge(int(s.cfg.Client.MaxPacketSize))
	case s.client.IOErr() != nil:
		s.log.Debug("client connection lost during a command", "command", protocol.CommandName(cmd), "err", err)
	default:
		addr := s.link.addr()
		s.metrics.backendLost.Inc()
		s.suspect(addr)
		s.log.Warn("backend connection lost during a command; closing the client connection",
			"command", protocol.CommandName(cmd), "backend", addr, "in_transaction", s.inTxn, "err", err)
		if s.client.Written() == written || s.res.Resumable {
			// Nothing of the response reached the client, or what did ended in whole
			// packets where an ERR may end the response (among rows, between results):
			// it can be told why. Cut off without one, a driver reports a bare broken
			// connection (go-sql-driver: "invalid connection") after rows that may look
			// like the whole result.
			if s.inTxn { // a COMMIT in flight included: the transaction is open until its OK
				s.sendError(errTxnLost(addr, err))
			} else {
				s.sendError(errBackendLost(addr, err))
			}
		}
	}
}

// refuseTooLarge tells the client its packet is over limit and takes in the rest of the
// packet (for at most 2 s), so that the client reads the error, not a reset.
func (s *session) refuseTooLarge(limit int) {
	s.sendError(errPacketTooLarge(limit))
	_ = s.client.DiscardRefused(time.Now().Add(2 * time.Second))
}

func (s *session) protocolError(reason string, err error) {
	s.metrics.protocolErrors.WithLabelValues(reason).Inc()
	s.log.Warn("closing client connection: protocol error", "reason", reason, "err", err)
}

// countBytes brings the session's counts of the bytes relayed since the login up to date.
func (s *session) countBytes() {
	s.hot.bytesIn.Store(s.client.BytesRead - s.info.loginIn)
	s.hot.bytesOut.Store(s.client.BytesWritten - s.info.loginOut)
}

// useBackend makes b the backend connection of the open unit.
func (s *session) useBackend(b *protocol.Conn) {
	protocol.Pair(s.client, b)
	s.wire.Backend = b
}

// status is the server status the session is in, for the proxy's own answers.
func (s *session) status() uint16 {
	var st uint16
	if s.autocommit {
		st |= mysql.SERVER_STATUS_AUTOCOMMIT
	}
	if s.inTxn {
		st |= mysql.SERVER_STATUS_IN_TRANS
	}
	return st
}

// charge is the open unit's admission: the ticket that carries it and the controller that
// admitted it, which holds its charge.
type charge struct {
	ticket admission.Ticket
	by     *admission.Controller
	// accepted says a unit of the connection has been admitted before (an accepted
	// session).
	accepted bool
	// watched says the client's hang-up is watched (clientWatch); watchToken is for
	// forgetting the watch.
	watched    bool
	watchToken uint64
}
