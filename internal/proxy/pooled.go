package proxy

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/pooled"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
	"github.com/gatekeeperdb/gatekeeper/internal/topology"
)

// pooledMode is what pooled mode adds to the server: a pool of connections per backend,
// what its sessions share, and the primary's greeting, which the proxy's own imitates so
// that clients see the server they expect.
type pooledMode struct {
	// pools are the backends' pools: the primary's first, then the replicas' in the
	// router's order (routing.Decision.Backend indexes them), then those of the other
	// servers that may become the primary.
	pools   []*backend.Pool
	metrics *backend.Metrics
	shared  *pooled.Shared
	primary string
	connect time.Duration
	// topology names the primary now; nil: it is primary.
	topology *topology.Topology
	// greeting is the primary's greeting, read once it answers.
	greeting atomic.Pointer[protocol.Greeting]
	probeMu  sync.Mutex
	// attrs are the connection attributes of the proxy's own connections.
	attrs     []protocol.Attribute
	authFails *prometheus.CounterVec
}

// newPooledMode returns pooled mode's pools for the primary and, when reads are routed to
// them, for replicas.
func newPooledMode(cfg *config.Config, pc backend.PoolConfig, replicas, others []string, tlsFor func(string, bool) (*tls.Config, error), log *slog.Logger, reg prometheus.Registerer) *pooledMode {
	m := &pooledMode{
		metrics: backend.NewMetrics(reg),
		shared:  pooled.NewShared(reg),
		primary: cfg.Backends.Primary,
		connect: cfg.Backends.ConnectTimeout,
		attrs:   []protocol.Attribute{{Key: "_client_name", Value: "gatekeeper"}, {Key: "program_name", Value: "gatekeeper"}},
	}
	for _, addr := range slices.Concat([]string{cfg.Backends.Primary}, replicas, others) {
		dialer := &backend.Dialer{Addr: addr, ConnectTimeout: cfg.Backends.ConnectTimeout,
			DeadAfter: cfg.Backends.DeadAfter, TLS: tlsFor}
		m.pools = append(m.pools, backend.NewPool(dialer, pc, m.metrics, log))
	}
	m.authFails = registerAuthFailures(reg)
	reg.MustRegister(backend.NewPoolCollector(func() []*backend.Pool { return m.pools }))
	return m
}

func (m *pooledMode) link(s *session) backendLink {
	return &pooledLink{s: s, m: m, pl: pooled.NewSession(m.shared, s.log)}
}

// poolOf returns the pool of the backend at addr.
func (m *pooledMode) poolOf(addr string) *backend.Pool {
	for _, pool := range m.pools {
		if pool.Addr() == addr {
			return pool
		}
	}
	return m.pools[0]
}

// primaryGreeting returns the primary's greeting, dialing it (without logging in) the
// first time.
func (m *pooledMode) primaryGreeting(ctx context.Context) (*protocol.Greeting, error) {
	if g := m.greeting.Load(); g != nil {
		return g, nil
	}
	m.probeMu.Lock()
	defer m.probeMu.Unlock()
	if g := m.greeting.Load(); g != nil {
		return g, nil
	}
	addr := m.primary
	if m.topology != nil {
		addr = m.topology.Primary() // after a failover, the configured one may be gone
	}
	nc, err := dialBackend(ctx, addr, m.connect, 0)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(m.connect))
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
	m.greeting.Store(g)
	return g, nil
}

// pooledLink is pooled mode's backend link: the proxy authenticates the client itself
// (pooled_auth.go), and each unit leases a connection from the pool of the backend its
// route names, brought to the session's state first (package pooled).
type pooledLink struct {
	s  *session
	m  *pooledMode
	pl *pooled.Session
	// leave ends the user's count against its max_connections; nil when not counted.
	leave func()
	// scramble is the challenge of the proxy's greeting, which a COM_CHANGE_USER answers.
	scramble []byte
	// last is the address of the backend of the open or last unit.
	last string
}

var _ backendLink = (*pooledLink)(nil)

func (l *pooledLink) held() bool     { return l.pl.Lease() != nil }
func (l *pooledLink) pinned() bool   { return l.pl.Pinned() }
func (l *pooledLink) addr() string   { return l.last }
func (l *pooledLink) drop()          { l.pl.Discard() }
func (l *pooledLink) abort()         { l.pl.Abort() }
func (l *pooledLink) view() linkView { return linkView{credential: "pooled", pins: l.pl.Pins.Bits} }

func (l *pooledLink) backendNow() (string, uint32) {
	if c := l.pl.Conn(); c != nil {
		return c.Addr(), c.ThreadID()
	}
	return "", 0
}

// readOnly tells whether the session made its transactions read-only.
func (l *pooledLink) readOnly() bool {
	for _, name := range [...]string{"transaction_read_only", "tx_read_only"} {
		if v, ok := l.pl.State.Var(name); ok {
			return v == "1" || strings.EqualFold(v, "ON")
		}
	}
	return false
}

// acquire leases, unless the session holds one, a connection where p.route says, and
// brings it to the session's state.
func (l *pooledLink) acquire(p *plan) (*protocol.Conn, error) {
	s := l.s
	if l.pl.Lease() == nil {
		if err := l.lease(p); err != nil {
			s.routes.Done()
			return nil, err
		}
	} else {
		s.routes.PinnedRead(p.stmt.routed(), s.inTxn)
	}
	c := l.pl.Lease().Conn()
	l.last = c.Addr()
	s.wire.Capabilities = c.Capabilities()
	s.wire.StripSessionState = l.pl.ClientCaps&mysql.CLIENT_SESSION_TRACK == 0 && c.Capabilities()&mysql.CLIENT_SESSION_TRACK != 0
	c.BeforeCommand()
	return c.Packets(), nil
}

// lease leases a connection for the unit and makes it the session's.
func (l *pooledLink) lease(p *plan) error {
	lease, err := l.leaseFor(p)
	if err != nil {
		return err
	}
	needLID := p.stmt.valid && p.stmt.Uses&classify.UsesLastInsertID != 0
	return l.pl.Take(l.s.ctx, lease, needLID)
}

// leaseFor leases a connection of the pool of the backend p.route names, and counts where
// the unit went. A replica that cannot give one is marked down (unless all its
// connections are busy) and the unit falls back to the primary.
func (l *pooledLink) leaseFor(p *plan) (*backend.Lease, error) {
	s := l.s
	if p.route.Replica() {
		lease, err := l.fromReplica(&p.route)
		if err == nil {
			s.routes.Leased()
			return lease, nil
		}
		if s.ctx.Err() != nil {
			return nil, err
		}
		s.log.Debug("replica gave no connection; the read goes to the primary", "backend", p.route.To.Addr, "err", err)
		s.fallBack(p, err, !errors.Is(err, backend.ErrWaitTimeout))
	}
	lease, err := l.fromPrimary()
	if err == nil {
		s.routes.Leased()
	}
	return lease, err
}

// fromPrimary leases a connection of the primary's pool: of the server that is the
// primary now, waiting while there is none (a failover, a paused switchover). A primary
// that cannot be reached is suspected at once, and the unit waits for a primary again,
// within failover.buffer_timeout.
func (l *pooledLink) fromPrimary() (*backend.Lease, error) {
	s := l.s
	top := s.topology
	if top == nil {
		return l.m.pools[0].Acquire(s.ctx, l.pl.WantNow())
	}
	deadline := time.Now().Add(s.cfg.Failover.BufferTimeout)
	for {
		addr, err := top.Writer(s.ctx)
		if err != nil {
			return nil, err
		}
		pool := l.m.poolOf(addr)
		lease, err := pool.Acquire(s.ctx, l.pl.WantNow())
		if errors.Is(err, backend.ErrBackoff) {
			if seen, up := top.Seen(addr); up && pool.Redial(seen) {
				lease, err = pool.Acquire(s.ctx, l.pl.WantNow())
			}
		}
		if err == nil || !unreachable(s.ctx, err) || time.Now().After(deadline) {
			return lease, err
		}
		s.log.Debug("the primary gave no connection; waiting for a primary", "backend", addr, "err", err)
		top.Suspect(addr)
	}
}

// fromReplica leases a connection of the replica d names.
func (l *pooledLink) fromReplica(d *routing.Decision) (*backend.Lease, error) {
	pool := l.m.pools[d.Backend()]
	lease, err := pool.Acquire(l.s.ctx, l.pl.WantNow())
	if errors.Is(err, backend.ErrBackoff) {
		if st := d.To.Status(); st.Up && pool.Redial(st.Checked) {
			// The replica's monitor saw it answer after the dials failed: dial now,
			// rather than send its reads to the primary until the backoff runs out.
			lease, err = pool.Acquire(l.s.ctx, l.pl.WantNow())
		}
	}
	return lease, err
}

// release ends a unit: the connection goes back to the pool unless the session is pinned
// to it.
func (l *pooledLink) release() {
	s := l.s
	if l.pl.Release(s.routes.Current().Replica(), s.backendBroken) {
		s.backendBroken = false
		s.routes.Done()
	}
}

// close gives the connection of a closing session back: reset first when the session left
// state on it, closed when it broke.
func (l *pooledLink) close() {
	s := l.s
	if l.leave != nil {
		l.leave()
		l.leave = nil
	}
	s.routes.Done()
	l.pl.Close(s.backendBroken, s.inTxn || s.unit.open)
}

// prepare maps the statement id of a command to the connection it runs on, preparing the
// statement there first when it is missing; for COM_STMT_PREPARE, it picks the id the
// client will know the statement by.
func (l *pooledLink) prepare(p *plan) (ok, keep bool) {
	s := l.s
	p.clientStmtID, _ = pooled.StmtID(s.cmd.Payload)
	switch p.op {
	case mysql.COM_STMT_PREPARE:
		s.wire.StmtID = l.pl.NextID()
		return true, true
	case mysql.COM_STMT_EXECUTE, mysql.COM_STMT_FETCH, mysql.COM_STMT_RESET, mysql.COM_STMT_SEND_LONG_DATA:
	default:
		return true, true
	}
	err := l.pl.Prepare(s.ctx, &s.cmd)
	if err == nil {
		return true, true
	}
	var se *protocol.ServerError
	if errors.As(err, &se) {
		// The statement no longer prepares (a table dropped): the client gets the
		// server's reason as the answer to its command.
		if p.op != mysql.COM_STMT_SEND_LONG_DATA {
			s.relayError(se)
		}
		return false, s.client.IOErr() == nil
	}
	s.backendBroken = true
	s.fail(p.op, err, s.client.Written())
	return false, false
}

// note learns from the command just run what the session state is now, what became of its
// prepared statements, and whether the session must keep its connection.
func (l *pooledLink) note(p *plan) {
	s := l.s
	if p.op == mysql.COM_STMT_PREPARE {
		s.wire.StmtID = 0
	}
	text, complete := s.cmd.Text(), s.cmd.Complete()
	if cs := l.pl.NoteStmt(p.op, p.clientStmtID, text, complete, &s.res); cs != nil && p.stmt.connIDOnly {
		cs.ConnIDOnly, cs.ConnIDName = true, string(p.stmt.connIDName)
	}
	st := p.stmt.pooled()
	l.pl.Note(p.op, &st, &s.res, text, complete)
}

// cacheScope appends the session's state to k (the capabilities agreed with the client,
// the character set, the schema and session variables), and for an execution the prepared
// statement (its text and the state it was prepared in) and the execution's bound values.
func (l *pooledLink) cacheScope(p *plan, k []byte) ([]byte, bool) {
	st := l.pl.State
	k = binary.LittleEndian.AppendUint32(k, l.pl.ClientCaps)
	k = binary.LittleEndian.AppendUint32(k, l.pl.Want.Key.MariaDBCapabilities)
	k = append(k, st.Charset)
	k = binary.LittleEndian.AppendUint64(k, st.Snapshot().Key())
	if p.op != mysql.COM_STMT_EXECUTE {
		return k, true
	}
	id, _ := pooled.StmtID(l.s.cmd.Payload)
	cs := l.pl.Stmt(id)
	if cs == nil || cs.LongData || cs.ConnIDOnly {
		return k, false
	}
	k = binary.LittleEndian.AppendUint64(k, cs.Snapshot().Key())
	return executeScope(k, cs.Text(), cs.Params(), l.s.cmd.Payload)
}

// intercept answers the commands that pooled mode handles in the proxy, wholly or in
// part, before a unit starts: the connection's own (quit, ping, reset, change user,
// CONNECTION_ID() and KILL, which name the proxy's connection ids) and the prepared
// statements' (their ids are the proxy's).
func (l *pooledLink) intercept(p *plan) (handled, keep bool) {
	s := l.s
	switch p.op {
	case mysql.COM_QUIT:
		return true, false // the connection goes back to the pool, not to the server's goodbye
	case mysql.COM_PING:
		if !l.held() {
			return true, s.writeLocalOK()
		}
	case mysql.COM_RESET_CONNECTION:
		l.reset()
		s.publish()
		return true, s.writeLocalOK()
	case mysql.COM_CHANGE_USER:
		keep := l.changeUser()
		s.publish()
		return true, keep
	case mysql.COM_QUERY:
		return l.interceptQuery(p)
	case mysql.COM_PROCESS_KILL:
		if id, ok := pooled.StmtID(s.cmd.Payload); ok {
			return true, l.kill(uint64(id), false)
		}
	default:
		return l.interceptStmt(p)
	}
	return false, true
}

// interceptQuery answers SELECT CONNECTION_ID() and KILL, which name the proxy's ids.
func (l *pooledLink) interceptQuery(p *plan) (handled, keep bool) {
	st := &p.stmt
	switch {
	case !st.valid:
	case st.connIDOnly:
		return true, l.answerConnectionID(string(st.connIDName), false)
	case st.Uses&classify.UsesKill != 0 && st.killID > 0:
		return true, l.kill(st.killID, st.killQuery)
	}
	return false, true
}

// interceptStmt answers what the proxy knows of the client's prepared statements: ids it
// never gave, statements closed, reset or executed with nothing on a connection, and the
// bounds on what it keeps.
func (l *pooledLink) interceptStmt(p *plan) (handled, keep bool) {
	s := l.s
	id, _ := pooled.StmtID(s.cmd.Payload)
	cs := l.pl.Stmt(id)
	switch p.op {
	case mysql.COM_STMT_PREPARE:
		return l.boundStmts()
	case mysql.COM_STMT_CLOSE:
		l.pl.CloseStmt(id)
		delete(s.stmts, id)
		return true, true // no answer, as from the server
	case mysql.COM_STMT_RESET:
		if cs == nil {
			return true, s.unknownStmt(id, "mysqld_stmt_reset")
		}
		if !(cs.Cursor || cs.LongData) || !l.held() {
			return true, s.writeLocalOK() // nothing of it lives on a connection
		}
	case mysql.COM_STMT_EXECUTE, mysql.COM_STMT_FETCH, mysql.COM_STMT_SEND_LONG_DATA:
		return l.interceptRun(p.op, id, cs)
	}
	return false, true
}

// interceptRun answers an execution, fetch or long data of statement id (cs, nil when the
// client has none) that needs no connection.
func (l *pooledLink) interceptRun(cmd byte, id uint32, cs *pooled.Stmt) (handled, keep bool) {
	s := l.s
	switch {
	case cs == nil && cmd == mysql.COM_STMT_SEND_LONG_DATA:
		return true, true // the server ignores it too, and answers nothing
	case cs == nil && cmd == mysql.COM_STMT_EXECUTE:
		return true, s.unknownStmt(id, "mysqld_stmt_execute")
	case cs == nil:
		return true, s.unknownStmt(id, "mysqld_stmt_fetch")
	case cmd == mysql.COM_STMT_EXECUTE && cs.ConnIDOnly:
		return true, l.answerConnectionID(cs.ConnIDName, true)
	case cmd == mysql.COM_STMT_FETCH && (!l.held() || !cs.Cursor):
		s.sendError(&clientError{code: 1421, state: stateGeneral,
			msg: "The statement (" + strconv.FormatUint(uint64(id), 10) + ") has no open cursor"})
		return true, s.client.IOErr() == nil
	}
	return false, true
}

// boundStmts refuses a COM_STMT_PREPARE past the bounds on what the proxy keeps of a
// session's statements.
func (l *pooledLink) boundStmts() (handled, keep bool) {
	s := l.s
	sh := l.m.shared
	n, size := l.pl.Stmts()
	switch {
	case n >= sh.MaxStmts:
		s.sendError(&clientError{code: codeMaxPreparedStmts, state: "42000", msg: fmt.Sprintf(
			"Can't create more than max_prepared_stmt_count statements (current value: %d)", sh.MaxStmts)})
		return true, s.client.IOErr() == nil
	case size+len(s.cmd.Payload) > sh.MaxStmtBytes || !s.cmd.Complete():
		if err := s.client.DiscardCommand(&s.cmd); err != nil {
			return true, false
		}
		s.sendError(&clientError{code: codeMaxPreparedStmts, state: "42000", msg: fmt.Sprintf(
			"gatekeeper: this connection's prepared statements would hold more than %d bytes of text, what the proxy keeps per connection to prepare them again; close statements no longer used",
			sh.MaxStmtBytes)})
		return true, s.client.IOErr() == nil
	}
	return false, true
}

// reset forgets the session state, as COM_RESET_CONNECTION does on a server: the
// variables, the prepared statements, and the pins with the connection they held, which
// is reset before it goes back to the pool.
func (l *pooledLink) reset() {
	s := l.s
	l.pl.Reset(s.unit.open)
	clear(s.stmts)
	s.inTxn, s.autocommit = false, true
}

// writeLocalOK answers the client with an OK of the proxy's own.
func (s *session) writeLocalOK() bool {
	if err := s.client.WritePacket(protocol.AppendOK(nil, 0, 0, s.status(), 0)); err != nil {
		return false
	}
	return s.client.Flush() == nil
}

func (s *session) unknownStmt(id uint32, where string) bool {
	s.sendError(&clientError{code: codeUnknownStmt, state: stateGeneral, msg: fmt.Sprintf(
		"Unknown prepared statement handler (%d) given to %s", id, where)})
	return s.client.IOErr() == nil
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
