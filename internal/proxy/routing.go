package proxy

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"log/slog"
	"strings"
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
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// routing is what read routing adds to pooled mode: the router, a pool per replica, the
// writes of named sessions, and the metrics of the choices made.
type routing struct {
	router   *replicas.Router
	sessions *replicas.SessionPositions
	// pools are the replicas' pools, in the router's order.
	pools       []*backend.Pool
	consistency replicas.Consistency
	causalWait  time.Duration
	poll        time.Duration
	// readOnlyTxns sends read-only transactions to replicas.
	readOnlyTxns bool

	// reads counts units by backend (the router's Index) and reason.
	reads       [][numReasons]prometheus.Counter
	causalWaits prometheus.Histogram
}

// readReason is why a unit went where it went, the reason label of gatekeeper_reads_total.
type readReason uint8

const (
	// reasonNone: the unit is not counted (session state, transaction control, SHOW).
	reasonNone readReason = iota
	reasonRouted
	reasonWaited
	reasonFellBack
	reasonTransaction
	reasonPinned
	reasonWrite
	reasonUnsure
	numReasons
)

var reasonNames = [numReasons]string{"", "routed", "waited", "fell_back_to_primary", "in_transaction", "pinned", "write", "unsure"}

// count counts a unit sent to b for reason.
func (rt *routing) count(b *replicas.Backend, reason readReason) {
	if reason != reasonNone {
		rt.reads[b.Index][reason].Inc()
	}
}

func newRouting(cfg config.Config, p *pooling, tlsFor func(string, bool) (*tls.Config, error), log *slog.Logger, reg prometheus.Registerer) (*routing, error) {
	consistency, err := replicas.ParseConsistency(cfg.Routing.Consistency)
	if err != nil {
		return nil, err
	}
	balance, err := replicas.ParseBalance(cfg.Routing.Balance)
	if err != nil {
		return nil, err
	}
	rt := &routing{
		router: replicas.NewRouter(replicas.Config{
			Primary: cfg.Backends.Primary, Replicas: cfg.Backends.Replicas,
			User: cfg.Monitor.User, Password: cfg.Monitor.Password,
			Balance: balance, PrimaryReads: cfg.Routing.PrimaryReads,
			MaxLag: cfg.Routing.MaxLag, PollInterval: cfg.Replicas.PollInterval,
			ClosureInterval: cfg.Replicas.ClosureInterval,
		}, replicas.NewVersions(), log),
		sessions:     replicas.NewSessionPositions(1 << 16),
		consistency:  consistency,
		causalWait:   cfg.Routing.CausalWait,
		poll:         cfg.Replicas.PollInterval,
		readOnlyTxns: cfg.Routing.ReadOnlyTransactions == "replica",
	}
	for _, addr := range cfg.Backends.Replicas {
		rt.pools = append(rt.pools, p.newPool(addr, cfg, tlsFor, log))
	}
	reads := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatekeeper_reads_total",
		Help: "Units by the backend they went to and why: routed (to a replica at once), waited (to a replica after waiting for it to catch up), fell_back_to_primary (no replica caught up in routing.causal_wait), in_transaction, pinned (session state, a cursor), write, unsure (statements the classifier is unsure of).",
	}, []string{"backend", "reason"})
	rt.causalWaits = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "gatekeeper_causal_wait_seconds",
		Help:    "Time reads waited for a replica to apply the writes they need, whether one did or the read went to the primary.",
		Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1},
	})
	for _, b := range append([]*replicas.Backend{rt.router.Primary()}, rt.router.Replicas()...) {
		var c [numReasons]prometheus.Counter
		for r := reasonRouted; r < numReasons; r++ {
			c[r] = reads.WithLabelValues(b.Addr, reasonNames[r])
		}
		rt.reads = append(rt.reads, c)
	}
	reg.MustRegister(reads, rt.causalWaits, newReplicaCollector(rt.router))
	return rt, nil
}

// tableSet is what routing keeps of a statement's tables: the keys of the tables it reads
// and writes, whether others may hide behind them, and its routing hints.
type tableSet struct {
	read, written             [][]byte
	readUnknown, writeUnknown bool
	consistency               int8 // -1: none given
	sessionKey                []byte
}

// fill sets t from a classifier's result; schema qualifies unqualified names.
func (t *tableSet) fill(r *classify.Result, schema string) {
	t.read = keysOf(t.read[:0], r.Read, schema)
	t.written = keysOf(t.written[:0], r.Written, schema)
	// A function the classifier does not know may read or write any table.
	t.readUnknown = r.Unsure || r.UnknownTables || r.MultiStatement || r.CallsFunction
	t.writeUnknown = t.readUnknown || r.Kind == classify.DDL
	t.consistency = -1
	if r.Consistency != nil {
		if c, err := replicas.ParseConsistency(string(r.Consistency)); err == nil {
			t.consistency = int8(c)
		}
	}
	t.sessionKey = append(t.sessionKey[:0], r.SessionKey...)
}

// keysOf appends the keys of tables to dst, reusing its buffers.
func keysOf(dst [][]byte, tables []classify.Table, schema string) [][]byte {
	for _, tb := range tables {
		s := tb.Schema
		if len(s) == 0 {
			s = []byte(schema)
		}
		dst = grow(dst)
		i := len(dst) - 1
		dst[i] = replicas.TableKey(dst[i][:0], s, tb.Name)
	}
	return dst
}

// grow extends dst by one buffer, reusing the one past its end when there is one.
func grow(dst [][]byte) [][]byte {
	if len(dst) < cap(dst) {
		return dst[:len(dst)+1]
	}
	return append(dst, nil)
}

// clone returns a copy of t that owns its buffers, for a prepared statement.
func (t *tableSet) clone() *tableSet {
	c := &tableSet{readUnknown: t.readUnknown, writeUnknown: t.writeUnknown, consistency: t.consistency,
		sessionKey: bytes.Clone(t.sessionKey)}
	for _, k := range t.read {
		c.read = append(c.read, bytes.Clone(k))
	}
	for _, k := range t.written {
		c.written = append(c.written, bytes.Clone(k))
	}
	return c
}

// routeState is a session's side of routing.
type routeState struct {
	rt *routing
	// query holds the tables of the current text statement.
	query tableSet
	// to is the replica the open unit reads from, nil for the primary; cost the
	// estimated work counted against it.
	to   *replicas.Backend
	cost time.Duration
	// written, writeUnknown and wrote collect the open unit's writes until its commit
	// position comes back.
	written      [][]byte
	writeUnknown bool
	wrote        bool
	// own is the position of the session's own last write; need a buffer.
	own  replicas.Pos
	need replicas.Pos
	// sessionKey is the key of the unit's writes, from /* gk:session=KEY */.
	sessionKey []byte
	// consistency is the user's.
	consistency replicas.Consistency
	// plan is where the unit being admitted goes, chosen before admission so that it
	// waits for the capacity of that backend.
	plan routePlan
	// txn is what a read-only transaction reads: every table.
	txn tableSet
}

// routePlan is route's choice for a unit, made before its lease.
type routePlan struct {
	set    bool
	pool   *backend.Pool
	to     *replicas.Backend
	reason readReason
}

// setUser takes the consistency of the session's user, routing.consistency where it has
// none, and forgets the writes of the session's former user.
func (rs *routeState) setUser(u *auth.User) {
	rs.consistency = rs.rt.consistency
	if c, err := replicas.ParseConsistency(u.Consistency); err == nil {
		rs.consistency = c
	}
	rs.own = rs.own[:0]
}

// noteTables keeps the tables of the statement just classified.
func (s *session) noteTables(r *classify.Result) {
	if s.rs == nil {
		return
	}
	s.rs.query.fill(r, s.schema)
	s.stmt.tables = &s.rs.query
}

// route chooses where a new unit goes: a replica's pool for an autocommit read that may
// go to one, the primary's (nil) otherwise. to is the backend a read goes to (the primary
// when it takes reads), reason why, for gatekeeper_reads_total; reasonNone for units that
// are not counted (session state, transaction control, SHOW and the like).
func (s *session) route() (pool *backend.Pool, to *replicas.Backend, reason readReason) {
	rs := s.rs
	if rs == nil || len(s.cmd.Payload) == 0 {
		return nil, nil, reasonNone // the login's lease
	}
	cmd := s.cmd.Byte()
	st := &s.stmt
	if (cmd != mysql.COM_QUERY && cmd != mysql.COM_STMT_EXECUTE) || !st.valid || st.tables == nil {
		return nil, nil, reasonNone
	}
	if s.startsReadOnly() {
		// The whole transaction reads from one replica that has every write its
		// consistency needs: it may read any table.
		rs.txn = tableSet{readUnknown: true, consistency: st.tables.consistency, sessionKey: st.tables.sessionKey}
		return s.routeRead(&rs.txn)
	}
	switch {
	case st.kind == classify.Write || st.kind == classify.LockingRead || st.kind == classify.DDL:
		return nil, nil, reasonWrite
	case st.kind != classify.Read:
		return nil, nil, reasonNone
	case st.opaque || st.multi:
		return nil, nil, reasonUnsure
	case s.inTxn || !s.autocommit:
		return nil, nil, reasonTransaction
	case st.uses != 0 || (cmd == mysql.COM_STMT_EXECUTE && opensCursorFlag(s.cmd.Payload)):
		return nil, nil, reasonPinned
	}
	return s.routeRead(st.tables)
}

// routeRead routes a read of t: to a replica that qualifies, else the primary.
func (s *session) routeRead(t *tableSet) (pool *backend.Pool, to *replicas.Backend, reason readReason) {
	rs := s.rs
	b, waited := s.pickReplica(t)
	switch {
	case b == nil:
		return nil, nil, reasonFellBack
	case waited:
		reason = reasonWaited
	default:
		reason = reasonRouted
	}
	if b.Primary {
		return nil, b, reason
	}
	return rs.rt.pools[b.Index-1], b, reason
}

// planRoute chooses where the new unit goes before it is admitted, and returns the
// controller that admits it: the replica's its read goes to, else the primary's. A read
// counts as outstanding on its replica from now, so that balancing sees the reads waiting
// for a replica's capacity as well as those running there.
func (s *session) planRoute() *admission.Controller {
	rs := s.rs
	pool, to, reason := s.route()
	rs.plan = routePlan{set: true, pool: pool, to: to, reason: reason}
	if to != nil {
		rs.to = to
		to.Start(rs.cost)
	}
	return s.adm.forBackend(to)
}

// startsReadOnly tells whether the statement (classified: route checked) starts a
// read-only transaction that may run on a replica: START TRANSACTION READ ONLY, or BEGIN in a session whose transactions are
// read-only (SET SESSION TRANSACTION READ ONLY, as JDBC's setReadOnly sends), outside a
// transaction and with autocommit on.
func (s *session) startsReadOnly() bool {
	st := &s.stmt
	if !s.rs.rt.readOnlyTxns || st.kind != classify.Transaction || st.readWrite ||
		s.inTxn || !s.autocommit {
		return false
	}
	if st.readOnly {
		return true
	}
	return st.startsTxn && st.uses == 0 && sessionReadOnly(s.pl.state)
}

// sessionReadOnly tells whether the session made its transactions read-only.
func sessionReadOnly(st *backend.State) bool {
	for _, name := range [...]string{"transaction_read_only", "tx_read_only"} {
		if v, ok := st.Var(name); ok {
			return v == "1" || strings.EqualFold(v, "ON")
		}
	}
	return false
}

// replicaPins are the uses of connection state that would tie the session to a replica's
// connection beyond its read-only transaction, where its later writes could not run.
const replicaPins = classify.UsesUserVariable | classify.UsesGetLock | classify.UsesLockTables |
	classify.UsesTemporaryTable | classify.UsesPrepare | classify.UsesSessionTracking |
	classify.UsesHandler | classify.UsesXAStart

// pinsReplica tells whether the command, in a read-only transaction on a replica, would
// tie the session to that replica's connection.
func (s *session) pinsReplica(cmd byte) bool {
	rs, st := s.rs, &s.stmt
	return rs.to != nil && !rs.to.Primary && s.inTxn && st.valid && st.uses&replicaPins != 0 &&
		(cmd == mysql.COM_QUERY || cmd == mysql.COM_STMT_EXECUTE)
}

// refusePinOnReplica refuses such a command, which never reaches the replica; the
// transaction stays open.
func (s *session) refusePinOnReplica() (keep bool) {
	if !s.cmd.Complete() && s.client.DiscardCommand(&s.cmd) != nil {
		return false
	}
	s.sendError(errPinOnReplica(s.rs.to.Addr))
	return s.client.IOErr() == nil
}

// countPinnedRead counts a read that starts a unit on the connection its session is
// pinned to.
func (s *session) countPinnedRead() {
	st := &s.stmt
	if len(s.cmd.Payload) > 0 && st.valid && st.kind == classify.Read && !s.inTxn {
		s.rs.rt.count(s.rs.rt.router.Primary(), reasonPinned)
	}
}

// opensCursorFlag tells whether a COM_STMT_EXECUTE asks for a cursor.
func opensCursorFlag(p []byte) bool { return len(p) > 5 && p[5] != 0 }

// pickReplica returns the backend a read of tables goes to, waiting up to
// routing.causal_wait for one to catch up; nil when none did. waited says it waited.
func (s *session) pickReplica(t *tableSet) (b *replicas.Backend, waited bool) {
	rs := s.rs
	rt := rs.rt
	mode := rs.consistency
	if t.consistency >= 0 {
		mode = replicas.Consistency(t.consistency)
	}
	cost := s.estimateCost()
	locality := uint64(0)
	if len(t.read) > 0 {
		locality = classify.Hash(t.read[0])
	}
	var start time.Time
	var timer *time.Timer
	for {
		need, known := s.needOf(mode, t)
		if known {
			if b = rt.router.Pick(need, mode == replicas.Eventual, cost, locality); b != nil {
				break
			}
		}
		if start.IsZero() {
			if rt.causalWait <= 0 || !rt.router.Waitable() {
				return nil, false
			}
			start = time.Now()
			timer = time.NewTimer(rt.causalWait)
			defer timer.Stop()
		}
		advanced := rt.router.Advanced()
		poll := time.NewTimer(rt.poll) // a write without position resolves at the primary's poll
		select {
		case <-advanced:
		case <-poll.C:
		case <-timer.C:
			poll.Stop()
			rt.causalWaits.Observe(time.Since(start).Seconds())
			return nil, true
		case <-s.ctx.Done():
			poll.Stop()
			return nil, true
		}
		poll.Stop()
	}
	if !start.IsZero() {
		rt.causalWaits.Observe(time.Since(start).Seconds())
	}
	rs.cost = cost
	return b, !start.IsZero()
}

// needOf returns what a read of t needs a replica to have applied under mode; known is
// false while that cannot be told yet.
func (s *session) needOf(mode replicas.Consistency, t *tableSet) (need replicas.Pos, known bool) {
	rs := s.rs
	switch mode {
	case replicas.Eventual:
		return nil, true
	case replicas.Session:
		rs.need = append(rs.need[:0], rs.own...)
		if len(t.sessionKey) > 0 {
			rs.need = rs.rt.sessions.Need(rs.need, t.sessionKey)
		}
		return rs.need, true
	}
	rs.need, known = rs.rt.router.Versions().Need(rs.need, t.read, t.readUnknown)
	return rs.need, known
}

// estimateCost returns the estimated cost of the unit's type, for SELF.
func (s *session) estimateCost() time.Duration {
	if s.rec.costs == nil {
		return time.Millisecond
	}
	cost, _, _ := s.rec.costs.ExpectMeasured(estimator.Key(s.unitKey(false)))
	return max(cost, time.Microsecond)
}

// beforeAck runs once a response is read whole and before its end reaches the client:
// the commit position it carries, if any, is recorded for the tables the unit wrote, so
// that no read that arrives after the acknowledgement misses the write.
func (s *session) beforeAck(res *protocol.Response) {
	rs := s.rs
	st := &s.stmt
	if st.valid && st.tables != nil && (st.kind == classify.Write || st.kind == classify.DDL || st.opaque) {
		rs.wrote = true
		rs.written = appendKeys(rs.written, st.tables.written)
		rs.writeUnknown = rs.writeUnknown || st.tables.writeUnknown || st.opaque
		if len(st.tables.sessionKey) > 0 {
			rs.sessionKey = append(rs.sessionKey[:0], st.tables.sessionKey...)
		}
	}
	if res.Err != nil && !rs.wrote {
		return
	}
	found := false
	for rest := res.StateChanges; len(rest) > 0; {
		sc, next, ok := protocol.NextStateChange(rest)
		if !ok {
			break
		}
		rest = next
		if sc.Type != mysql.SESSION_TRACK_SYSTEM_VARIABLES || !bytes.EqualFold(sc.Name, lastGTID) {
			continue
		}
		g, err := replicas.ParseGTID(string(sc.Value))
		if err != nil {
			continue
		}
		found = true
		rs.rt.router.Versions().Wrote(rs.written, rs.writeUnknown, g)
		rs.own = rs.own.With(g)
		if len(rs.sessionKey) > 0 {
			rs.rt.sessions.Wrote(rs.sessionKey, g)
		}
	}
	inTxn := res.HasStatus && res.Status&mysql.SERVER_STATUS_IN_TRANS != 0
	if inTxn && !found {
		return // the writes commit later
	}
	if rs.wrote && !found && (res.AffectedRows > 0 || rs.writeUnknown) {
		// Acknowledged without a position: what the primary has after it covers it.
		rs.rt.router.Versions().WroteUnknown(time.Now())
	}
	if st.valid && st.kind == classify.DDL && res.Err == nil {
		rs.rt.router.ReloadClosure()
	}
	rs.written, rs.writeUnknown, rs.wrote = rs.written[:0], false, false
	rs.sessionKey = rs.sessionKey[:0]
}

var lastGTID = []byte("last_gtid")

// appendKeys appends copies of keys to dst, reusing its buffers.
func appendKeys(dst, keys [][]byte) [][]byte {
	for _, k := range keys {
		dst = grow(dst)
		i := len(dst) - 1
		dst[i] = append(dst[i][:0], k...)
	}
	return dst
}

// routeDone ends the unit's read on a replica, and forgets where a unit that was not
// admitted would have gone.
func (s *session) routeDone() {
	rs := s.rs
	if rs == nil {
		return
	}
	rs.plan = routePlan{}
	if rs.to != nil {
		rs.to.Done(rs.cost)
		rs.to = nil
	}
}

// leaseFor leases a connection of pool for the new unit, the primary's when pool is nil,
// and counts where the unit went. A replica that cannot give one is marked down (unless
// all its connections are busy) and the unit goes to the primary.
func (s *session) leaseFor(pool *backend.Pool, to *replicas.Backend, reason readReason) (*backend.Lease, error) {
	pl := s.pl
	primary := pl.pooling.pool
	if pool != nil {
		lease, err := pool.Acquire(s.ctx, &pl.want)
		if errors.Is(err, backend.ErrBackoff) {
			if st := to.Status(); st.Up && pool.Redial(st.Checked) {
				// The replica's monitor saw it answer after the dials failed: dial now,
				// rather than send its reads to the primary until the backoff runs out.
				lease, err = pool.Acquire(s.ctx, &pl.want)
			}
		}
		if err == nil {
			s.startRead(to, reason)
			return lease, nil
		}
		if s.ctx.Err() != nil {
			return nil, err
		}
		if !errors.Is(err, backend.ErrWaitTimeout) {
			s.rs.rt.router.MarkDown(to, err)
		}
		s.log.Debug("replica gave no connection; the read goes to the primary", "backend", to.Addr, "err", err)
		s.routeDone()
		to, reason = nil, reasonFellBack
	}
	lease, err := primary.Acquire(s.ctx, &pl.want)
	if err == nil && s.rs != nil {
		if to == nil {
			s.rs.rt.count(s.rs.rt.router.Primary(), reason)
		} else {
			s.startRead(to, reason) // the primary, taking reads
		}
	}
	return lease, err
}

// startRead counts a read sent to b, outstanding there unless planRoute counted it.
func (s *session) startRead(b *replicas.Backend, reason readReason) {
	rs := s.rs
	rs.rt.count(b, reason)
	if rs.to != b {
		rs.to = b
		b.Start(rs.cost)
	}
}

// replicaCollector exports what the router knows of each backend.
type replicaCollector struct {
	router                            *replicas.Router
	up, shunned, lagTxns, lagSeconds  *prometheus.Desc
	outstandingReads, outstandingWork *prometheus.Desc
}

func newReplicaCollector(r *replicas.Router) *replicaCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"backend"}, nil)
	}
	return &replicaCollector{router: r,
		up:               d("gatekeeper_replica_up", "1 when the replica answered its last poll."),
		shunned:          d("gatekeeper_replica_shunned", "1 when the replica takes no reads: down, or behind the primary past routing.max_lag (it rejoins at half of it)."),
		lagTxns:          d("gatekeeper_replica_lag_transactions", "Transactions the primary has that the replica has not applied."),
		lagSeconds:       d("gatekeeper_replica_lag_seconds", "How long ago the primary first had a transaction the replica has not applied; 0 when it has them all."),
		outstandingReads: d("gatekeeper_backend_outstanding_reads", "Reads routed to the backend and not finished."),
		outstandingWork:  d("gatekeeper_backend_outstanding_work_seconds", "Estimated work of the reads routed to the backend and not finished (what balance self compares)."),
	}
}

func (c *replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.shunned, c.lagTxns, c.lagSeconds, c.outstandingReads, c.outstandingWork} {
		ch <- d
	}
}

func (c *replicaCollector) Collect(ch chan<- prometheus.Metric) {
	g := func(d *prometheus.Desc, v float64, addr string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, addr)
	}
	for _, b := range append([]*replicas.Backend{c.router.Primary()}, c.router.Replicas()...) {
		work, n := b.Outstanding()
		g(c.outstandingReads, float64(n), b.Addr)
		g(c.outstandingWork, work.Seconds(), b.Addr)
		if b.Primary {
			continue
		}
		st := b.Status()
		g(c.up, b2f(st.Up), b.Addr)
		g(c.shunned, b2f(st.Shunned), b.Addr)
		g(c.lagTxns, float64(st.LagTxns), b.Addr)
		g(c.lagSeconds, st.LagSeconds, b.Addr)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// retriable tells whether a command that failed with err on its backend connection may
// run again on the primary: it was an autocommit read on a replica (or the BEGIN of a
// read-only transaction), nothing of its answer reached the client, and the whole command
// is at hand.
func (s *session) retriable(err error, written uint64) bool {
	rs := s.rs
	return rs != nil && rs.to != nil && !rs.to.Primary && !s.inTxn && s.client.Written() == written &&
		s.client.IOErr() == nil && s.cmd.Complete() && !errors.Is(err, protocol.ErrPacketTooLarge)
}

// retryOnPrimary runs the command again on the primary after its replica connection
// failed (cause) before anything of the answer was relayed. The replica is marked down.
func (s *session) retryOnPrimary(cmd byte, clientStmtID uint32, cause error) error {
	rs, pl := s.rs, s.pl
	to := rs.to
	rs.rt.router.MarkDown(to, cause)
	s.log.Warn("replica connection failed before the read's answer; the read runs on the primary",
		"backend", to.Addr, "err", cause)
	s.routeDone()
	s.mu.Lock()
	lease := pl.lease
	pl.lease = nil
	s.mu.Unlock()
	lease.Discard()
	b, err := s.acquireFrom(nil, nil, reasonFellBack)
	if err != nil {
		return err
	}
	s.backend = b
	protocol.Pair(s.client, b)
	s.relay.Backend = b
	if cmd == mysql.COM_STMT_EXECUTE {
		binary.LittleEndian.PutUint32(s.cmd.Payload[1:], clientStmtID)
		if ok, _ := s.preparePooled(cmd); !ok {
			return errStatementGone
		}
	}
	if err := s.client.ForwardCommand(&s.cmd, s.backend); err != nil {
		return err
	}
	return s.relay.ForwardResponse(cmd, &s.res)
}

// resumable tells whether a read whose replica connection failed after part of its answer
// was relayed may end with an error and leave the client its session: the relay stopped
// where an ERR packet may come, and the unit is an autocommit read on a replica, which
// keeps nothing of the session on that connection.
func (s *session) resumable() bool {
	rs := s.rs
	return rs != nil && rs.to != nil && !rs.to.Primary && s.res.Resumable && s.client.IOErr() == nil &&
		s.cmd.Complete() && !s.inTxn && s.pl.pins.bits == 0
}

// endLostRead ends a read whose replica connection failed mid-result (cause): the client
// gets an ERR in place of the rest of the result, the connection is dropped and the
// replica marked down, and the session goes on.
func (s *session) endLostRead(cause error) {
	to := s.rs.to
	s.rs.rt.router.MarkDown(to, cause)
	s.metrics.backendLost.Inc()
	s.log.Warn("replica connection lost mid-result; the client got an error and keeps its session",
		"backend", to.Addr, "rows", s.res.Rows, "err", cause)
	s.backendBroken = true
	s.sendError(errReplicaLost(to.Addr, s.res.Rows, cause))
	s.releaseUnit()
	s.endUnitQuietly()
}

// errStatementGone: a prepared statement could not be prepared on the primary again; the
// client has been told why.
var errStatementGone = errors.New("the statement could not be prepared on the primary")
