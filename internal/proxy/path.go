package proxy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
	"github.com/gatekeeperdb/gatekeeper/internal/rules"
)

// plan is one command on its way through the statement path: what it is, the type and
// cost of the unit it starts, where that unit runs, and what its relay measured. It lives
// in the session and is filled again for each command, so that the path allocates nothing.
type plan struct {
	// op is the command byte.
	op byte
	// stmt is what the classifier found in the command's statement.
	stmt statement
	// req is what the unit the command starts asks admission: its type and shape, its
	// expected cost and service time.
	req admission.Request
	// route is where the unit runs.
	route routing.Decision
	// clientStmtID is the statement id the command named, before a backend's replaced it.
	clientStmtID uint32
	// gtids holds the commit positions of the response, for routing.
	gtids []replicas.GTID
	// cache is the command's part in the result cache; rules what the query rules decided.
	cache cacheFill
	rules ruleState
	// written is the client's bytes written before the response; start and end bound the
	// relay, elapsed is their difference and work the backend's share of it.
	written       uint64
	start, end    time.Time
	elapsed, work time.Duration
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
	// limit is the max_concurrent slot of a query rule the unit holds until it ends.
	limit *rules.Limiter
}

// dispatch runs one command through the statement path: classify, route, admit, lease,
// relay, record. The backend link answers what its mode answers itself, readies the
// command for its connection and learns from the response. It returns false when the
// session must end.
func (s *session) dispatch() bool {
	keep := s.path(&s.plan)
	s.endFill(&s.plan, nil) // a fill that did not get to store its result
	return keep
}

// path is dispatch's steps.
func (s *session) path(p *plan) bool {
	p.op = s.cmd.Byte()
	s.metrics.hot.command(s.hot, p.op)
	if protocol.ShapeOf(p.op) == protocol.ShapeUnsupported {
		return s.unsupported(p.op)
	}
	s.classify(p)
	if handled, keep := s.intercept(p); handled {
		return keep
	}
	if ok, keep := s.applyRules(p); !ok {
		return keep
	}
	if s.routes.PinsReplica(p.stmt.routedBy(p.op), s.inTxn) {
		return s.refusePinOnReplica()
	}
	if s.cache != nil {
		if hit, keep := s.lookup(p); hit {
			return keep
		}
	}
	admit := s.needsAdmission(p)
	if admit {
		s.typeUnit(p)
		if !s.police(p) {
			return s.client.IOErr() == nil
		}
	}
	s.route(p)
	if ok, keep := s.limit(p); !ok {
		return keep
	}
	if admit {
		if ok, keep := s.admit(p); !ok {
			return keep
		}
	}
	if !s.unit.open {
		if ok, keep := s.lease(p); !ok {
			return keep
		}
	}
	if ok, keep := s.link.prepare(p); !ok {
		return s.unprepared(keep)
	}
	s.startFill(p)
	if err := s.relay(p); err != nil {
		return s.lost(p, err)
	}
	return s.record(p)
}

// unsupported refuses a command the proxy does not relay.
func (s *session) unsupported(cmd byte) bool {
	if !s.cmd.Complete() {
		s.protocolError("unsupported_command", errUnsupportedCommand(cmd))
		return false
	}
	s.sendError(errUnsupportedCommand(cmd))
	return true
}

// intercept lets the link answer what its mode answers itself, wholly or in part,
// before a unit starts. handled tells that the command was dealt with; keep that the
// session goes on.
func (s *session) intercept(p *plan) (handled, keep bool) {
	handled, keep = s.link.intercept(p)
	if handled && keep && !s.cmd.Complete() {
		// Answered from its head: the rest of it is read and dropped.
		keep = s.client.DiscardCommand(&s.cmd) == nil
	}
	return handled, keep
}

// refusePinOnReplica refuses a command that would tie the session to the replica its
// read-only transaction runs on; it never reaches the replica, and the transaction stays
// open.
func (s *session) refusePinOnReplica() (keep bool) {
	if !s.cmd.Complete() && s.client.DiscardCommand(&s.cmd) != nil {
		return false
	}
	s.sendError(errPinOnReplica(s.routes.Current().To.Addr))
	return s.client.IOErr() == nil
}

// route decides where a new unit runs, before it is admitted, so that it waits for the
// capacity of that backend. A session that holds a connection between units (pinned, or in
// a read-only transaction on a replica) runs there.
func (s *session) route(p *plan) {
	if !s.unit.open && !s.link.held() && s.routes != nil {
		u := routing.Unit{Stmt: p.stmt.routedBy(p.op), InTxn: s.inTxn, Autocommit: s.autocommit, Rule: p.rules.mode}
		if p.routedToPrimary() {
			u.Stmt = nil // a query rule keeps it on the primary
		}
		if u.Stmt != nil {
			u.Key = s.unitKey(&p.stmt, false)
			u.Cursor = p.op == mysql.COM_STMT_EXECUTE && opensCursor(s.cmd.Payload)
			u.SessionReadOnly = p.stmt.StartsTxn && s.link.readOnly()
		}
		s.routes.Route(s.ctx, &u)
	}
	p.route = s.routes.Current()
}

// opensCursor tells whether a COM_STMT_EXECUTE asks for a cursor.
func opensCursor(c []byte) bool { return len(c) > 5 && c[5] != 0 }

// lease obtains the backend connection for a new unit. When none can be had, the unit's
// charge goes back and the client is told why.
func (s *session) lease(p *plan) (ok, keep bool) {
	start := time.Now()
	b, err := s.link.acquire(p)
	if err != nil {
		s.releaseUnit()
		if !s.cmd.Complete() {
			s.log.Warn("no backend connection for unit", "err", err)
			return false, false
		}
		s.sendLeaseError(err, time.Since(start))
		return false, s.client.IOErr() == nil
	}
	s.useBackend(b)
	s.unit.open = true // endUnit left the rest zero
	return true, true
}

// unprepared ends a command the link could not ready for its connection (the client has
// been told why): a unit it began, and that ran nothing, ends with it.
func (s *session) unprepared(keep bool) bool {
	if keep && !s.inTxn && s.unit.commands == 0 {
		s.releaseUnit()
		s.endUnitQuietly()
	}
	return keep
}

// relay sends the command to the unit's backend and streams the response back, timing
// both; a read whose replica failed before answering runs again on the primary.
func (s *session) relay(p *plan) error {
	p.start = time.Now()
	p.written = s.client.Written()
	clock := s.rec.share.Start(p.start)
	err := s.client.ForwardCommand(&s.cmd, s.wire.Backend)
	if err == nil {
		err = s.wire.ForwardResponse(p.op, &s.res)
	}
	if err != nil && s.retriable(p, err) {
		err = s.retryOnPrimary(p, err)
	}
	p.end = time.Now()
	p.elapsed, p.work = p.end.Sub(p.start), s.rec.share.Stop(p.end, clock)
	return err
}

// retriable tells whether a command that failed with err on its backend connection may
// run again on the primary: it was an autocommit read on a replica (or the BEGIN of a
// read-only transaction), nothing of its answer reached the client, and the whole command
// is at hand.
func (s *session) retriable(p *plan, err error) bool {
	return p.route.Replica() && !s.inTxn && s.client.Written() == p.written && s.client.IOErr() == nil &&
		s.cmd.Complete() && !errors.Is(err, protocol.ErrPacketTooLarge)
}

// retryOnPrimary runs the command again on the primary after its replica connection
// failed (cause) before anything of the answer was relayed. The replica is marked down.
func (s *session) retryOnPrimary(p *plan, cause error) error {
	s.log.Warn("replica connection failed before the read's answer; the read runs on the primary",
		"backend", p.route.To.Addr, "err", cause)
	s.link.drop()
	s.fallBack(p, cause, true)
	b, err := s.link.acquire(p)
	if err != nil {
		return err
	}
	s.useBackend(b)
	if p.op == mysql.COM_STMT_EXECUTE {
		binary.LittleEndian.PutUint32(s.cmd.Payload[1:], p.clientStmtID)
		if ok, _ := s.link.prepare(p); !ok {
			return errStatementGone
		}
	}
	if err := s.client.ForwardCommand(&s.cmd, s.wire.Backend); err != nil {
		return err
	}
	return s.wire.ForwardResponse(p.op, &s.res)
}

// errStatementGone: a prepared statement could not be prepared on the primary again; the
// client has been told why.
var errStatementGone = errors.New("the statement could not be prepared on the primary")

// fallBack moves the open unit's read, which its replica cannot run (cause), to the
// primary: routing's decision, and the unit's admission charge with it. With down the
// replica takes no reads until its monitor sees it answer again. It is the one place a
// unit moves between backends.
func (s *session) fallBack(p *plan, cause error, down bool) {
	s.routes.FellBack(cause, down)
	p.route = s.routes.Current()
	s.moveCharge(p)
}

// lost handles a command whose exchange with the backend broke (err).
func (s *session) lost(p *plan, err error) bool {
	if s.resumable(p) {
		s.endLostRead(p, err)
		return s.client.IOErr() == nil
	}
	s.fail(p.op, err, p.written)
	return false
}

// resumable tells whether a read whose replica connection failed after part of its answer
// was relayed may end with an error and leave the client its session: the relay stopped
// where an ERR packet may come, and the unit is an autocommit read on a replica, which
// keeps nothing of the session on that connection.
func (s *session) resumable(p *plan) bool {
	return p.route.Replica() && s.res.Resumable && s.client.IOErr() == nil && s.cmd.Complete() && !s.inTxn &&
		!s.link.pinned()
}

// endLostRead ends a read whose replica connection failed mid-result (cause): the client
// gets an ERR in place of the rest of the result, the connection is dropped and the
// replica marked down, and the session goes on.
func (s *session) endLostRead(p *plan, cause error) {
	addr := p.route.To.Addr
	s.routes.MarkDown(cause)
	s.metrics.backendLost.Inc()
	s.log.Warn("replica connection lost mid-result; the client got an error and keeps its session",
		"backend", addr, "rows", s.res.Rows, "err", cause)
	s.backendBroken = true
	s.sendError(errReplicaLost(addr, s.res.Rows, cause))
	s.releaseUnit()
	s.endUnitQuietly()
}

// record is the path's last step: what the command cost goes to its type and its unit,
// the session learns what the response said, and an autocommit unit ends.
func (s *session) record(p *plan) bool {
	s.countBytes()
	if p.op == mysql.COM_QUIT {
		return false
	}
	if s.res.Err != nil {
		s.metrics.errorSent(originServer, s.res.Err.Code)
	}
	if protocol.ShapeOf(p.op) != protocol.ShapeNone {
		s.metrics.hot.statement(s.hot, p.op).observe(p.elapsed)
		if s.res.Err == nil {
			s.typeStatement(p, p.work, p.elapsed, p.end)
		}
	}
	s.unit.busy += p.elapsed
	s.unit.work += p.work
	s.unit.commands++
	s.link.note(p)
	s.update(p)
	if s.inTxn {
		s.unit.txn = true
	} else {
		s.endUnit(p.end)
	}
	s.publish()
	s.relayedAt = p.end
	return true
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
	s.wire.Backend.Trim()
	s.link.release()
	s.wire.Backend = nil
	s.releaseLimit()
	s.unit = unit{typ: unitType{sample: s.unit.typ.sample[:0]}}
}

// beforeAck runs once a response is read whole and before its end reaches the client: a
// cache fill stores the result, and routing records the commit positions it carries (see
// routing.Session.Ack).
func (s *session) beforeAck(res *protocol.Response) {
	p := &s.plan
	s.finishFill(p) // stored before the client can ask again
	p.gtids = appendGTIDs(p.gtids[:0], res.StateChanges)
	ack := routing.Response{Err: res.Err != nil, InTxn: res.HasStatus && res.Status&mysql.SERVER_STATUS_IN_TRANS != 0,
		AffectedRows: res.AffectedRows, GTIDs: p.gtids}
	s.routes.Ack(p.stmt.routed(), &ack)
	if s.durable != nil && len(p.gtids) > 0 && !s.durable.await(s.ctx, s.link.addr(), p.gtids) {
		// The primary that committed it is gone, and no replica has it: whether the write
		// survives the failover is unknown, and the client is not told it is done. The
		// connection closes without the OK, as it would had the primary died a moment
		// sooner.
		s.log.Warn("closing the client connection without the OK of a write no replica has, its primary gone",
			"backend", s.link.addr())
		_ = s.client.Close()
	}
}

// appendGTIDs appends to dst the commit positions (last_gtid) among the session-state
// records of a response.
func appendGTIDs(dst []replicas.GTID, records []byte) []replicas.GTID {
	for rest := records; len(rest) > 0; {
		sc, next, ok := protocol.NextStateChange(rest)
		if !ok {
			break
		}
		rest = next
		if sc.Type != mysql.SESSION_TRACK_SYSTEM_VARIABLES || !bytes.EqualFold(sc.Name, lastGTID) {
			continue
		}
		if g, err := replicas.ParseGTID(string(sc.Value)); err == nil {
			dst = append(dst, g)
		}
	}
	return dst
}

var lastGTID = []byte("last_gtid")

// costOf sets the expected cost of the unit req asks admission for, from its type's
// estimate.
func (s *session) costOf(req *admission.Request) {
	if s.rec.costs == nil {
		return
	}
	var measured bool
	req.Cost, req.Service, measured = s.rec.costs.ExpectMeasured(estimator.Key(req.Type))
	req.Unmeasured = !measured // admission charges an unknown type by its own rule
}
