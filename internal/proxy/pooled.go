package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// pooling is what pooled mode adds to the server: the pool of connections to the primary,
// the accounts clients log in with, and the primary's greeting, which the proxy's own
// imitates so that clients see the server they expect.
type pooling struct {
	pool    *backend.Pool
	metrics *backend.Metrics
	// rt routes reads to replicas; nil without them.
	rt *routing
	// greeting is the primary's greeting, read once it answers.
	greeting atomic.Pointer[protocol.Greeting]
	probeMu  sync.Mutex
	// attrs are the connection attributes of the proxy's own connections.
	attrs []protocol.Attribute

	// maxStmts and maxStmtBytes bound a session's prepared statements and the bytes of
	// their texts, which the proxy keeps to prepare them again on other connections.
	maxStmts, maxStmtBytes int

	pinsTotal [numPinReasons]prometheus.Counter
	pinned    prometheus.Gauge
	resets    prometheus.Counter
	syncs     prometheus.Counter
	authFails *prometheus.CounterVec
}

func newPooling(cfg config.Config, tlsFor func(string, bool) (*tls.Config, error), log *slog.Logger, reg prometheus.Registerer) (*pooling, error) {
	p := &pooling{
		metrics:      backend.NewMetrics(reg),
		maxStmts:     16382,    // MySQL's default max_prepared_stmt_count
		maxStmtBytes: 64 << 20, // statement text per client connection
		attrs:        []protocol.Attribute{{Key: "_client_name", Value: "gatekeeper"}, {Key: "program_name", Value: "gatekeeper"}},
	}
	pins := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatekeeper_session_pins_total",
		Help: "Times a client session was pinned to its backend connection, by reason.",
	}, []string{"reason"})
	for r := range numPinReasons {
		p.pinsTotal[r] = pins.WithLabelValues(r.String())
	}
	p.pinned = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gatekeeper_sessions_pinned",
		Help: "Client sessions pinned to a backend connection now.",
	})
	p.resets = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gatekeeper_backend_resets_total",
		Help: "Pooled connections reset (COM_RESET_CONNECTION) after a session that left state on them.",
	})
	p.syncs = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gatekeeper_session_state_syncs_total",
		Help: "Units whose session state (schema, variables, user) was carried to a pooled connection first.",
	})
	p.authFails = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatekeeper_auth_failures_total",
		Help: "Client logins the proxy refused in pooled mode, by reason.",
	}, []string{"reason"})
	p.pool = p.newPool(cfg.Backends.Primary, cfg, tlsFor, log)
	if cfg.Routes() {
		var err error
		if p.rt, err = newRouting(cfg, p, tlsFor, log, reg); err != nil {
			return nil, err
		}
	}
	reg.MustRegister(pins, p.pinned, p.resets, p.syncs, p.authFails, backend.NewPoolCollector(p.pools))
	return p, nil
}

// newPool returns a pool of connections to addr.
func (p *pooling) newPool(addr string, cfg config.Config, tlsFor func(string, bool) (*tls.Config, error), log *slog.Logger) *backend.Pool {
	dialer := &backend.Dialer{Addr: addr, ConnectTimeout: cfg.Backends.ConnectTimeout,
		DeadAfter: cfg.Backends.DeadAfter, TLS: tlsFor}
	pc := backend.PoolConfig{
		MaxOpen: cfg.Pools.MaxOpen, MaxIdle: cfg.Pools.MaxIdle, IdleTimeout: cfg.Pools.IdleTimeout,
		MaxLifetime: cfg.Pools.MaxLifetime, WaitTimeout: cfg.Pools.WaitTimeout,
	}
	return backend.NewPool(dialer, pc, p.metrics, log)
}

// pools returns the primary's pool and the replicas'.
func (p *pooling) pools() []*backend.Pool {
	all := []*backend.Pool{p.pool}
	if p.rt != nil {
		all = append(all, p.rt.pools...)
	}
	return all
}

// poolOf returns the pool of the backend at addr.
func (p *pooling) poolOf(addr string) *backend.Pool {
	for _, pool := range p.pools() {
		if pool.Addr() == addr {
			return pool
		}
	}
	return p.pool
}

// primaryGreeting returns the primary's greeting, dialing it (without logging in) the
// first time.
func (p *pooling) primaryGreeting(ctx context.Context, addr string, timeout time.Duration) (*protocol.Greeting, error) {
	if g := p.greeting.Load(); g != nil {
		return g, nil
	}
	p.probeMu.Lock()
	defer p.probeMu.Unlock()
	if g := p.greeting.Load(); g != nil {
		return g, nil
	}
	nc, err := dialBackend(ctx, addr, timeout, 0)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(timeout))
	c := protocol.NewConn(nc)
	pkt, err := c.ReadPacket()
	if err != nil {
		return nil, fmt.Errorf("no greeting: %w", err)
	}
	if len(pkt) > 0 && pkt[0] == mysql.ERR_HEADER {
		e, _ := protocol.ParseError(pkt)
		return nil, e
	}
	g, err := protocol.ParseGreeting(pkt)
	if err != nil {
		return nil, err
	}
	p.greeting.Store(g)
	return g, nil
}

// pinReason is why a session keeps its backend connection between units.
type pinReason uint8

const (
	pinUserVariable pinReason = iota
	pinGetLock
	pinLockTables
	pinTemporaryTable
	pinPreparedSQL
	pinFoundRows
	pinLastInsertID
	pinNextTransaction
	pinSessionTracking
	pinHandler
	pinXA
	pinSQLLogBin
	pinSessionVariable
	pinSessionState
	pinLongData
	pinCursor
	pinSetOption
	pinNoTracking
	numPinReasons
)

var pinNames = [numPinReasons]string{
	"user_variable", "get_lock", "lock_tables", "temporary_table", "prepared_sql", "found_rows",
	"last_insert_id", "next_transaction", "session_tracking", "handler", "xa", "sql_log_bin",
	"session_variable", "session_state", "long_data", "cursor", "set_option", "no_tracking",
}

func (r pinReason) String() string { return pinNames[r] }

// transientPins end with the unit after the one that set them: SQL_CALC_FOUND_ROWS is read
// by the next statement, SET TRANSACTION applies to the next transaction.
const transientPins = 1<<pinFoundRows | 1<<pinLastInsertID | 1<<pinNextTransaction

// pins are the reasons a session holds its connection, as bits of pinReason.
type pins struct {
	bits uint32
	// getLocks counts GET_LOCK calls not matched by RELEASE_LOCK.
	getLocks int
	// expiring are transient pins set before the current unit: they end with it.
	expiring uint32
}

func (p *pins) has(r pinReason) bool { return p.bits&(1<<r) != 0 }

// names returns the pin reasons set, for the sessions API.
func (p *pins) names() []string {
	var out []string
	for r := range numPinReasons {
		if p.has(r) {
			out = append(out, r.String())
		}
	}
	return out
}

// pooledState is a session's side of pooled mode.
type pooledState struct {
	pooling *pooling
	want    backend.Want
	state   *backend.State
	// lease is the connection of the open unit, or of a pinned session between units.
	lease *backend.Lease
	// last is the connection of the last unit, asked for again for the next.
	last *backend.Conn
	pins pins
	// clientCaps are the capabilities agreed with the client.
	clientCaps uint32
	// stmts are the client's prepared statements, under the proxy's ids.
	stmts  map[uint32]*clientStmt
	nextID uint32
	// leave ends the user's count against its max_connections.
	leave func()
	// cursors and longData count the statements with an open cursor, or with data sent
	// for their next execution; stmtBytes the bytes of the statements' texts.
	cursors, longData, stmtBytes int
	// unflushed: the server holds session-state records for the next OK of the leased
	// connection, which the last response (an EOF-ended result set) could not carry.
	unflushed bool
}

// acquirePooled leases a connection for a new unit and brings it to the session's state.
func (s *session) acquirePooled() (*protocol.Conn, error) {
	switch {
	case s.pl.lease != nil:
		return s.acquireFrom(nil, nil, reasonNone)
	case s.rs != nil && s.rs.plan.set: // routed before admission
		p := s.rs.plan
		s.rs.plan = routePlan{}
		return s.acquireFrom(p.pool, p.to, p.reason)
	}
	return s.acquireFrom(s.route())
}

// acquireFrom leases, unless the session holds one, a connection of pool (the primary's
// when nil) for a unit that goes to backend to for reason, and brings it to the session's
// state.
func (s *session) acquireFrom(pool *backend.Pool, to *replicas.Backend, reason readReason) (*protocol.Conn, error) {
	pl := s.pl
	if pl.lease == nil {
		pl.want.State = pl.state
		lease, err := s.leaseFor(pool, to, reason)
		if err != nil {
			s.routeDone()
			return nil, err
		}
		c := lease.Conn()
		needLID := s.stmt.valid && s.stmt.uses&classify.UsesLastInsertID != 0
		if !pl.state.Matches(c) || needLID {
			if err := c.Sync(s.ctx, &pl.want, pl.state, needLID); err != nil {
				lease.Discard()
				s.routeDone()
				return nil, err
			}
			pl.pooling.syncs.Inc()
		}
		s.mu.Lock()
		pl.lease = lease
		s.mu.Unlock()
	} else if s.rs != nil {
		s.countPinnedRead()
	}
	c := pl.lease.Conn()
	s.backendAddr = c.Addr()
	s.relay.Capabilities = c.Capabilities()
	s.relay.StripSessionState = pl.clientCaps&mysql.CLIENT_SESSION_TRACK == 0 && c.Capabilities()&mysql.CLIENT_SESSION_TRACK != 0
	c.BeforeCommand()
	return c.Packets(), nil
}

// releasePooled ends a unit: the connection goes back to the pool unless the session is
// pinned to it.
func (s *session) releasePooled() {
	pl := s.pl
	if pl.lease == nil {
		return
	}
	pl.pins.bits &^= pl.pins.expiring
	if rs := s.rs; rs != nil && rs.to != nil && !rs.to.Primary {
		// A read-only transaction on a replica ends: what it left for the next unit
		// (FOUND_ROWS, LAST_INSERT_ID(expr), SET TRANSACTION) stays with the replica's
		// connection, so that the next unit, which may write, is not held to it.
		pl.pins.bits &^= transientPins
		s.setPinned(pl.pins.bits != 0)
	}
	pl.pins.expiring = pl.pins.bits & transientPins
	if pl.pins.bits != 0 {
		return
	}
	c := pl.lease.Conn()
	if pl.unflushed {
		// Take the records the server still holds, so that they reach no other session;
		// they describe what the session saw already.
		pl.unflushed = false
		if err := c.FlushState(); err != nil {
			s.backendBroken = true
		}
	}
	c.Adopt(pl.state)
	s.routeDone()
	s.mu.Lock()
	lease := pl.lease
	pl.lease = nil
	killing := s.killing
	s.mu.Unlock()
	pl.last = c
	if s.backendBroken {
		s.backendBroken = false
		lease.Discard()
		return
	}
	if killing {
		// A KILL QUERY of this session may still be on its way to the connection: no
		// other session may get it.
		lease.Discard()
		return
	}
	lease.Release()
}

// closePooled gives the connection of a closing session back: reset first when the session
// left state on it, closed when it broke.
func (s *session) closePooled() {
	pl := s.pl
	if pl.leave != nil {
		pl.leave()
	}
	s.setPinned(false)
	s.routeDone()
	s.mu.Lock()
	lease := pl.lease
	pl.lease = nil
	s.mu.Unlock()
	if lease == nil {
		return
	}
	c := lease.Conn()
	if s.backendBroken || s.killing {
		lease.Discard()
		return
	}
	if pl.pins.bits != 0 || s.inTxn || s.unit.open {
		_ = c.Packets().SetDeadline(time.Now().Add(2 * time.Second))
		err := c.Reset()
		_ = c.Packets().SetDeadline(time.Time{})
		if err != nil {
			lease.Discard()
			return
		}
		pl.pooling.resets.Inc()
	}
	lease.Release()
}

// pin records that the session keeps its connection for reason.
func (s *session) pin(r pinReason) {
	pl := s.pl
	if pl.pins.has(r) {
		return
	}
	pl.pins.bits |= 1 << r
	pl.pooling.pinsTotal[r].Inc()
	s.log.Debug("session pinned to its backend connection", "reason", r.String())
}

func (s *session) unpin(r pinReason) { s.pl.pins.bits &^= 1 << r }

// setPinned keeps the pinned-sessions gauge and the snapshot of the pins up to date.
func (s *session) setPinned(on bool) {
	if on == s.pinnedGauge {
		return
	}
	s.pinnedGauge = on
	if on {
		s.pl.pooling.pinned.Inc()
	} else {
		s.pl.pooling.pinned.Dec()
	}
}

// notePooled learns from the command just run what the session state is now and whether
// the session must keep its connection.
func (s *session) notePooled(cmd byte) {
	pl := s.pl
	res := &s.res
	if res.LastInsertID != 0 {
		pl.state.LastInsertID = res.LastInsertID
	}
	st := &s.stmt
	if (cmd == mysql.COM_QUERY || cmd == mysql.COM_STMT_EXECUTE) && st.valid && res.Err == nil {
		s.pinsOfStatement(st)
	}
	if res.StateChanged {
		s.trackState(cmd, st)
	}
	if cmd == mysql.COM_INIT_DB && res.Err == nil && !res.SchemaChanged && s.cmd.Complete() {
		pl.state.Schema = string(s.cmd.Text())
	}
	if cmd == mysql.COM_SET_OPTION && res.Err == nil {
		s.pin(pinSetOption) // the connection's multi-statement setting differs from its key
	}
	s.setPinned(pl.pins.bits != 0)
}

// pinsOfStatement applies what the classifier saw of a successful statement.
func (s *session) pinsOfStatement(st *statement) {
	u := st.uses
	if u == 0 {
		if st.kind == classify.Session && !s.pl.lease.Conn().Tracking() {
			s.pin(pinNoTracking)
		}
		return
	}
	pl := s.pl
	if u&classify.UsesUserVariable != 0 {
		s.pin(pinUserVariable)
	}
	if u&classify.UsesGetLock != 0 {
		pl.pins.getLocks++
		s.pin(pinGetLock)
	}
	if u&classify.UsesReleaseLock != 0 && pl.pins.getLocks > 0 {
		if pl.pins.getLocks--; pl.pins.getLocks == 0 {
			s.unpin(pinGetLock)
		}
	}
	if u&classify.UsesReleaseAllLocks != 0 {
		pl.pins.getLocks = 0
		s.unpin(pinGetLock)
	}
	if u&classify.UsesLockTables != 0 {
		s.pin(pinLockTables)
	}
	if u&classify.UsesUnlockTables != 0 {
		s.unpin(pinLockTables)
	}
	if u&classify.UsesTemporaryTable != 0 {
		s.pin(pinTemporaryTable)
	}
	if u&classify.UsesPrepare != 0 {
		s.pin(pinPreparedSQL)
	}
	if u&classify.UsesFoundRows != 0 {
		s.pinTransient(pinFoundRows)
	}
	if u&classify.UsesSetLastInsertID != 0 {
		s.pinTransient(pinLastInsertID)
	}
	if u&classify.UsesNextTransaction != 0 {
		s.pinTransient(pinNextTransaction)
	}
	if u&classify.UsesSessionTracking != 0 {
		s.pin(pinSessionTracking)
	}
	if u&classify.UsesHandler != 0 {
		s.pin(pinHandler)
	}
	if u&classify.UsesXAStart != 0 {
		s.pin(pinXA)
	}
	if u&classify.UsesXAEnd != 0 {
		s.unpin(pinXA)
	}
	if !s.pl.lease.Conn().Tracking() && st.kind == classify.Session {
		s.pin(pinNoTracking)
	}
}

// pinTransient pins for the rest of this unit and the whole of the next.
func (s *session) pinTransient(r pinReason) {
	s.pin(r)
	s.pl.pins.expiring &^= 1 << r
}

// untracked are variables whose tracked value cannot be set again on another connection:
// they are fixed values of a moment (timestamp), one-shot values for the next statement,
// or ids that belong to one connection.
var untracked = map[string]bool{
	"timestamp": true, "insert_id": true, "last_insert_id": true, "identity": true,
	"rand_seed1": true, "rand_seed2": true, "pseudo_thread_id": true, "gtid_seq_no": true,
	"pseudo_slave_mode": true, "sql_log_bin": true,
}

// trackState applies the session-state records of a response: variables and schema follow
// the session; a change the records do not explain pins it.
func (s *session) trackState(cmd byte, st *statement) {
	pl := s.pl
	// Records that describe the statement's own doing, not the session's: SET STATEMENT
	// var=value FOR ... reports the variable it set for the one statement, and a prepared
	// statement run in the schema or SQL mode it was prepared in reports the switch. The
	// server has put the session's own values back already.
	borrowed := st.valid && bytes.HasPrefix(st.digest, setStatementFor) ||
		cmd == mysql.COM_STMT_EXECUTE && !st.opaque && st.kind != classify.Session
	if len(s.res.StateChanges) == 0 {
		// An EOF-ended result set cannot carry the records: the server sends them with
		// the next OK, which must not reach another session.
		pl.unflushed = true
		if !borrowed && !(cmd == mysql.COM_STMT_EXECUTE && !st.opaque) &&
			!pl.pins.has(pinUserVariable) && !pl.pins.has(pinTemporaryTable) && !pl.pins.has(pinPreparedSQL) {
			s.pin(pinSessionState)
		}
		return
	}
	if borrowed {
		return
	}
	explained, changed, ok := s.applyRecords(s.res.StateChanges, cmd != mysql.COM_STMT_EXECUTE)
	if !ok {
		s.pin(pinSessionState)
		return
	}
	// A change the records explain is the whole change, unless the statement may do more
	// than the classifier sees (a CALL, several statements): then user variables or
	// temporary tables may hide behind it.
	if changed && (!explained || st.opaque) && !pl.pins.has(pinUserVariable) && !pl.pins.has(pinTemporaryTable) && !pl.pins.has(pinPreparedSQL) {
		s.pin(pinSessionState)
	}
}

// applyRecords applies session-state records to the session state; schemas too when
// withSchema. explained says that a variable or the schema changed, changed that the
// server flagged a change of state; ok is false for records it cannot read.
func (s *session) applyRecords(records []byte, withSchema bool) (explained, changed, ok bool) {
	pl := s.pl
	charsetSet, collationSet := false, false
	for rest := records; len(rest) > 0; {
		sc, next, good := protocol.NextStateChange(rest)
		if !good {
			return explained, changed, false
		}
		rest = next
		switch sc.Type {
		case mysql.SESSION_TRACK_SYSTEM_VARIABLES:
			explained = true
			if bytes.EqualFold(sc.Name, lastGTID) {
				continue // the commit position of the last write, not a setting
			}
			name := strings.ToLower(string(sc.Name))
			switch {
			case name == "sql_log_bin":
				if v := string(sc.Value); v == "OFF" || v == "0" {
					s.pin(pinSQLLogBin)
				} else {
					s.unpin(pinSQLLogBin)
				}
			case strings.HasPrefix(name, "session_track_"):
				s.pin(pinSessionTracking)
			case untracked[name] || !backend.ValidVarName(sc.Name):
				s.pin(pinSessionVariable)
			default:
				pl.state.SetVar(name, string(sc.Value))
				charsetSet = charsetSet || name == "character_set_connection"
				collationSet = collationSet || name == "collation_connection"
			}
		case mysql.SESSION_TRACK_SCHEMA:
			if withSchema {
				explained = true
				pl.state.Schema = string(sc.Value)
			}
		case mysql.SESSION_TRACK_STATE_CHANGE:
			changed = bytes.Equal(sc.Value, []byte("1"))
		}
	}
	if charsetSet && !collationSet {
		// SET NAMES cs COLLATE c reports the character sets but not the collation.
		s.trackCollation()
	}
	return explained, changed, true
}

// setStatementFor starts the digest of SET STATEMENT ... FOR statement.
var setStatementFor = []byte("SET STATEMENT ")

// trackCollation reads the connection's collation after the character sets changed, since
// session tracking does not report it.
func (s *session) trackCollation() {
	v, err := s.pl.lease.Conn().Variable("collation_connection")
	if err != nil {
		s.pin(pinSessionVariable) // the collation cannot be known: keep the connection
		return
	}
	s.pl.state.SetVar("collation_connection", v)
}

// errLease tells the client that its unit found no backend connection; the command was
// not sent.
func errLease(addr string, err error, waited time.Duration, cfg config.Pools) *clientError {
	switch {
	case errors.Is(err, backend.ErrWaitTimeout):
		return &clientError{code: codeLockWaitTimeout, state: stateGeneral, err: err, msg: fmt.Sprintf(
			"gatekeeper: no backend connection came free in %d ms: all %d connections to %s are in use (pools.max_open, pools.wait_timeout); retry later",
			waited.Milliseconds(), cfg.MaxOpen, addr)}
	case errors.Is(err, backend.ErrLoginRefused) || errors.Is(err, backend.ErrNoSecret):
		return &clientError{code: codeAccessDenied, state: stateAccessDenied, err: err, msg: fmt.Sprintf(
			"gatekeeper: the backend %s refused the proxy's login as this user (%s); check that the user's password in auth.users_file matches the database's",
			addr, shortCause(err))}
	case errors.Is(err, backend.ErrSync):
		return &clientError{code: codeNetRead, state: stateConnection, err: err, msg: fmt.Sprintf(
			"gatekeeper: cannot carry the session's state to a connection to %s (%s); the statement was not run, retry it",
			addr, shortCause(err))}
	}
	return errBackendUnreachable("primary", addr, err)
}
