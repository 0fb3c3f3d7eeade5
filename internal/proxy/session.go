package proxy

import (
	"context"
	"crypto/tls"
	"encoding/binary"
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
	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
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
	// pooling is pooled mode's pools; nil in passthrough.
	pooling *pooling
	// index finds another session by the id its client knows (KILL).
	index sessionIndex
	// logins bounds the connections logging in at once.
	logins *handshakeGate
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
	backendTLS *backendTLS
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

// session serves one client connection.
type session struct {
	// rs is read routing's state; nil without it.
	rs *routeState
	id uint64
	collaborators
	log *slog.Logger
	// ctx ends when the session is killed, or once a unit of it has waited for admission,
	// when its client hangs up (clientWatch; watchToken is for forgetting the watch).
	ctx        context.Context
	cancel     context.CancelFunc
	watched    bool
	watchToken uint64

	client *protocol.Conn
	// source hands out the backend connection for each unit; backend is the one of the
	// open unit, nil between units.
	source      backendSource
	backend     *protocol.Conn
	backendAddr string
	// dedicatedConn is the passthrough backend, closed when the session ends.
	dedicatedConn *protocol.Conn
	// cred is what the proxy knows to log in as the client's user: in pooled mode always,
	// in passthrough when auth.from_backend let it derive one at login.
	cred auth.Credential
	// backendWatch is the token of the watch on a passthrough backend's hang-up.
	backendWatch uint64
	// pl is the session's side of pooled mode; nil in passthrough.
	pl *pooledState
	// scramble is the challenge of the proxy's greeting (pooled mode), which a
	// COM_CHANGE_USER answers.
	scramble []byte
	// pinnedGauge says the session counts in the pinned-sessions gauge.
	pinnedGauge bool
	// view is what snapshots show of the session; clientText, since and backendThread are
	// set before the session is listed and do not change.
	view          atomic.Pointer[sessionView]
	clientText    string
	since         time.Time
	backendThread uint32
	// relayedAt is when the last command's response was relayed, zero when the last
	// command ended otherwise: the start of the wait for the next one, without reading the
	// clock again.
	relayedAt time.Time
	// loginDeadline ends the login: waiting for a slot and the handshake itself.
	loginDeadline time.Time
	// backendBroken is set when the backend connection failed or was left in the middle of
	// an exchange: it must not be reused or sent anything more.
	backendBroken bool

	relay protocol.Relay
	cmd   protocol.Command
	res   protocol.Response

	// Protocol state, owned by the session's goroutine.
	user        string
	schema      string
	programName string
	inTxn       bool
	autocommit  bool
	stmts       map[uint32]statement // prepared statements by id
	unit        unit
	// ticket carries the session's units through admission; wasAdmitted says a unit of
	// the connection has been admitted before (an accepted session).
	ticket      admission.Ticket
	wasAdmitted bool
	// admittedBy is the controller that admitted the open unit: the primary's, or with
	// read routing the replica's its read goes to.
	admittedBy *admission.Controller
	// clientAddr is the client's IP, for the policers.
	clientAddr netip.Addr

	// cls classifies the statements; stmt is what it said of the current command's.
	cls  *classify.Classifier
	stmt statement
	// sampleBuf is where a transaction type's sample is put together.
	sampleBuf []byte

	// hot are the session's counts of the per-command metrics, from run to close.
	hot *sessionCounts
	// loginIn and loginOut are the client's bytes by the end of the login, which the
	// metrics leave out.
	loginIn, loginOut uint64

	// mu guards the fields below it: the interplay with the server's drain and idle reaper.
	mu sync.Mutex
	// idle is set while the session waits for the client's next command; idleInTxn says
	// whether it waits inside a transaction; idleSince is when it started waiting.
	idle      bool
	idleInTxn bool
	idleSince time.Time
	// draining is set when the server shuts down.
	draining bool
	// interrupted says why the wait for a command was cut short, or is empty.
	interrupted string
	// killing is set while a KILL QUERY of this session's statement is on its way to its
	// pooled connection, which must then not go to another session.
	killing bool
}

// unit is the open unit of work: an autocommit statement, or a transaction from its first
// statement to its end.
type unit struct {
	open bool
	// busy is the backend busy time of the unit so far: from sending each command to the
	// last packet of its response, summed.
	busy time.Duration
	// work is the cost of the unit so far: its busy time, or under estimator.backend_cpus
	// its share of the backend's processors over that time.
	work time.Duration
	// commands counts the commands sent in the unit.
	commands int
	// txn tells that the unit became a transaction.
	txn bool
	// typ is what types the unit under the unit-wide type keys.
	typ unitType
	// admitted: the unit passed admission and holds its charge until it ends.
	admitted bool
}

func newSession(c collaborators, id uint64, conn net.Conn) *session {
	ctx, cancel := context.WithCancel(context.Background())
	return &session{
		id:            id,
		collaborators: c,
		log:           c.log.With("conn", id, "client", conn.RemoteAddr().String()),
		ctx:           ctx,
		cancel:        cancel,
		client:        protocol.NewConn(conn),
		clientAddr:    addrOf(conn.RemoteAddr()),
		clientText:    conn.RemoteAddr().String(),
		since:         time.Now(),
		loginDeadline: time.Now().Add(c.cfg.Client.HandshakeTimeout),
		stmts:         map[uint32]statement{},
		cls:           classify.New(),
	}
}

func (s *session) run() {
	s.hot = s.metrics.hot.open()
	defer s.close()
	handshake := s.handshake
	if s.pooling != nil {
		handshake = s.handshakePooled
	}
	// A connection waits for a login slot half its handshake timeout at most, so that one
	// that gets a slot has the other half to log in, rather than a deadline too close to
	// make and a connection cut without a word.
	ctx, cancel := context.WithDeadline(s.ctx, s.since.Add(s.cfg.Client.HandshakeTimeout/2))
	leave, refused := s.logins.enter(ctx, s.clientAddr)
	cancel()
	if refused != "" {
		s.metrics.connsRefused.WithLabelValues(refused).Inc()
		_ = s.client.SetWriteDeadline(time.Now().Add(time.Second))
		s.sendError(errTooManyLogins(refused, s.cfg.Client))
		s.backendBroken = true
		return
	}
	err := handshake()
	leave()
	if err != nil {
		s.log.Debug("handshake failed", "err", err)
		return
	}
	s.log.Debug("session started", "user", s.user, "schema", s.schema, "backend", s.backendAddr)
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
	s.mu.Lock()
	if s.draining && !s.inTxn {
		s.mu.Unlock()
		s.log.Debug("closing for shutdown")
		return false
	}
	since := s.relayedAt
	if since.IsZero() {
		since = time.Now()
	}
	s.relayedAt = time.Time{}
	s.idle, s.idleInTxn, s.idleSince = true, s.inTxn, since
	s.mu.Unlock()

	err := s.client.ReadCommand(&s.cmd)

	s.mu.Lock()
	s.idle = false
	reason := s.interrupted
	s.interrupted = ""
	s.mu.Unlock()
	if reason != "" {
		// The wait was cut short by a deadline in the past; lift it if the command came
		// in anyway.
		_ = s.client.SetReadDeadline(time.Time{})
	}
	if err == nil {
		return true
	}
	switch {
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

// interrupt cuts short a wait for a command, for reason. Called with s.mu held.
func (s *session) interruptLocked(reason string) {
	s.interrupted = reason
	_ = s.client.SetReadDeadline(time.Unix(1, 0))
}

// drain marks the session for shutdown and ends it at once if it idles outside a
// transaction. The others end when their transaction does.
func (s *session) drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.draining = true
	if s.idle && !s.idleInTxn {
		s.interruptLocked("server shutting down")
	}
}

// reapIfIdle ends the session if it has waited for a command since before cutoff.
func (s *session) reapIfIdle(cutoff time.Time, timeout time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idle && s.interrupted == "" && s.idleSince.Before(cutoff) {
		s.interruptLocked("idle for longer than client.idle_timeout (" + timeout.String() + ")")
	}
}

// kill closes the session's connections from outside, after the drain timeout.
func (s *session) kill() {
	s.cancel()
	_ = s.client.NetConn().Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.interrupted = "drain timeout reached"
	if s.dedicatedConn != nil {
		// The session's goroutine may be using it; closing is safe from any goroutine.
		_ = s.dedicatedConn.NetConn().Close()
	}
	if s.pl != nil && s.pl.lease != nil {
		_ = s.pl.lease.Conn().Packets().NetConn().Close()
	}
}

// close ends the session: a clean COM_QUIT to a backend that is between commands, then
// both connections closed.
func (s *session) close() {
	s.releaseUnit() // a transaction left open by the client
	if s.pl != nil {
		s.closePooled()
	}
	s.mu.Lock()
	b := s.dedicatedConn
	s.mu.Unlock()
	if b != nil {
		if !s.backendBroken {
			_ = b.SetWriteDeadline(time.Now().Add(time.Second))
			b.ResetSequence()
			if b.WritePacket([]byte{mysql.COM_QUIT}) == nil {
				_ = b.Flush()
			}
		}
		_ = b.Close()
	}
	s.adm.watch.forget(s.watchToken)
	s.adm.watch.forget(s.backendWatch)
	_ = s.client.Close()
	s.countBytes()
	s.metrics.hot.close(s.hot)
	s.cancel()
}

// dispatch runs one command. It returns false when the session must end.
func (s *session) dispatch() bool {
	cmd := s.cmd.Byte()
	m := s.metrics
	m.hot.command(s.hot, cmd)
	if protocol.ShapeOf(cmd) == protocol.ShapeUnsupported {
		if !s.cmd.Complete() {
			s.protocolError("unsupported_command", errUnsupportedCommand(cmd))
			return false
		}
		s.sendError(errUnsupportedCommand(cmd))
		return true
	}
	s.classifyCommand(cmd)
	if s.pl != nil {
		if handled, keep := s.localPooled(cmd); handled {
			if keep && !s.cmd.Complete() {
				// Answered from its head: the rest of it is read and dropped.
				keep = s.client.DiscardCommand(&s.cmd) == nil
			}
			return keep
		}
	}
	if s.rs != nil && s.pinsReplica(cmd) {
		return s.refusePinOnReplica()
	}
	if s.needsAdmission(cmd) {
		if admitted, keep := s.admit(); !admitted {
			// Refused: the client was told why (or is gone); the command never reached
			// the backend, and an open transaction stays open.
			return keep
		}
	}
	start := time.Now()
	if !s.unit.open {
		if err := s.beginUnit(); err != nil {
			s.releaseUnit()
			if s.pl == nil || !s.cmd.Complete() {
				s.log.Warn("no backend connection for unit", "err", err)
				return false
			}
			s.sendLeaseError(err, time.Since(start))
			return s.client.IOErr() == nil
		}
	}
	var clientStmtID uint32
	if s.pl != nil {
		clientStmtID, _ = stmtIDOf(s.cmd.Payload)
		if ok, keep := s.preparePooled(cmd); !ok {
			if keep && !s.inTxn && s.unit.commands == 0 {
				s.releaseUnit()
				s.endUnitQuietly()
			}
			return keep
		}
		// The wait for a pooled connection, and a statement prepared again on it, are not
		// the backend's time for this command.
		start = time.Now()
	}
	written := s.client.Written()
	clock := s.rec.share.Start(start)
	err := s.client.ForwardCommand(&s.cmd, s.backend)
	if err == nil {
		err = s.relay.ForwardResponse(cmd, &s.res)
	}
	if err != nil && s.retriable(err, written) {
		err = s.retryOnPrimary(cmd, clientStmtID, err)
	}
	end := time.Now()
	elapsed, work := end.Sub(start), s.rec.share.Stop(end, clock)
	if err != nil {
		if s.resumable() {
			s.endLostRead(err)
			return s.client.IOErr() == nil
		}
		s.fail(cmd, err, written)
		return false
	}
	s.countBytes()
	if cmd == mysql.COM_QUIT {
		return false
	}
	if s.res.Err != nil {
		m.errorSent(originServer, s.res.Err.Code)
	}
	if protocol.ShapeOf(cmd) != protocol.ShapeNone {
		m.hot.statement(s.hot, cmd).observe(elapsed)
		if s.res.Err == nil {
			s.typeStatement(cmd, work, elapsed, end)
		}
	}
	s.unit.busy += elapsed
	s.unit.work += work
	s.unit.commands++
	if s.pl != nil {
		s.notePooledStmt(cmd, clientStmtID)
		s.notePooled(cmd)
	}
	s.update(cmd)
	if s.inTxn {
		s.unit.txn = true
	} else {
		s.endUnit(end)
	}
	s.publish()
	s.relayedAt = end
	return true
}

// beginUnit obtains the backend connection for a new unit.
func (s *session) beginUnit() error {
	var b *protocol.Conn
	var err error
	if s.pl != nil {
		b, err = s.acquirePooled()
	} else {
		b, err = s.source.acquire(s.ctx)
	}
	if err != nil {
		return err
	}
	s.backend = b
	protocol.Pair(s.client, b)
	s.relay.Backend = b
	s.unit.open = true // endUnit left the rest zero
	return nil
}

// endUnit closes the open unit, which ended at end, and gives its backend connection back.
func (s *session) endUnit(end time.Time) {
	kind := unitStatement
	if s.unit.txn {
		kind = unitTransaction
	}
	s.hot.units[kind].add(1)
	s.hot.unitBusy.observe(s.unit.busy)
	s.recordUnit(end)
	s.releaseUnitAt(end)
	s.endUnitQuietly()
}

// endUnitQuietly gives the unit's backend connection back, recording nothing: for a unit
// that ran no command.
func (s *session) endUnitQuietly() {
	s.backend.Trim()
	if s.pl != nil {
		s.releasePooled()
	} else {
		s.source.release(s.backend)
	}
	s.backend = nil
	s.unit = unit{typ: unitType{sample: s.unit.typ.sample[:0]}}
}

// update applies what the response said to the session state.
func (s *session) update(cmd byte) {
	res := &s.res
	if res.HasStatus {
		s.inTxn = res.Status&mysql.SERVER_STATUS_IN_TRANS != 0
		s.autocommit = res.Status&mysql.SERVER_STATUS_AUTOCOMMIT != 0
	}
	if res.SchemaChanged && string(res.Schema) != s.schema {
		s.schema = string(res.Schema)
	}
	if res.Err != nil {
		return
	}
	switch cmd {
	case mysql.COM_INIT_DB:
		if s.cmd.Complete() {
			s.schema = string(s.cmd.Text())
		}
	case mysql.COM_STMT_PREPARE:
		s.rememberPrepared(res.StmtID)
	case mysql.COM_STMT_CLOSE:
		if p := s.cmd.Payload; len(p) >= 5 {
			delete(s.stmts, binary.LittleEndian.Uint32(p[1:]))
		}
	case mysql.COM_RESET_CONNECTION:
		clear(s.stmts)
	case mysql.COM_CHANGE_USER:
		clear(s.stmts)
		if cu, err := protocol.ParseChangeUser(s.cmd.Payload, s.relay.Capabilities); err == nil {
			s.user, s.schema = cu.User, cu.Database
		}
	}
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
		s.metrics.backendLost.Inc()
		s.log.Warn("backend connection lost during a command; closing the client connection",
			"command", protocol.CommandName(cmd), "backend", s.backendAddr, "err", err)
		if s.client.Written() == written || s.res.Resumable {
			// Nothing of the response reached the client, or what did ended in whole
			// packets where an ERR may end the response (among rows, between results):
			// it can be told why. Cut off without one, a driver reports a bare broken
			// connection (go-sql-driver: "invalid connection") after rows that may look
			// like the whole result.
			s.sendError(errBackendLost(s.backendAddr, err))
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
	s.hot.bytesIn.Store(s.client.BytesRead - s.loginIn)
	s.hot.bytesOut.Store(s.client.BytesWritten - s.loginOut)
}
