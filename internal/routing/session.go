package routing

import (
	"context"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// Statement is what routing reads of a classified statement.
type Statement struct {
	Kind classify.Kind
	// Tables are its tables (Session.Fill, or a prepared statement's Tables.Clone).
	Tables *Tables
	// Uses is what it does with connection state.
	Uses classify.Uses
	// Multi: the text holds several statements; Opaque: it may do more than the
	// classifier sees (a CALL, several statements, a statement it is unsure of).
	Multi, Opaque bool
	// StartsTxn: BEGIN, START TRANSACTION and the like; ReadOnly and ReadWrite: START
	// TRANSACTION named its access mode.
	StartsTxn, ReadOnly, ReadWrite bool
}

// Unit is what routing needs of the command that starts a unit.
type Unit struct {
	// Stmt is the statement of a COM_QUERY, or the one a COM_STMT_EXECUTE runs; nil for
	// other commands and for statements not classified.
	Stmt *Statement
	// Cursor: a COM_STMT_EXECUTE that opens a cursor.
	Cursor bool
	// InTxn and Autocommit are the session's.
	InTxn, Autocommit bool
	// SessionReadOnly: the session made its transactions read-only (SET SESSION
	// TRANSACTION READ ONLY, as JDBC's setReadOnly sends). Read for transaction control
	// only.
	SessionReadOnly bool
	// Key is the unit's request type, whose estimated cost balancing counts.
	Key uint64
	// Rule is the consistency a query rule asks of the unit, over the statement's hint.
	Rule Rule
}

// Rule is a consistency asked of a statement from outside it, by a query rule; the zero
// Rule asks nothing.
type Rule struct {
	Mode replicas.Consistency
	Set  bool
}

// Session is a client session's side of routing: its consistency, the position of its own
// last write, the writes of its open unit until they are acknowledged, and where its open
// unit runs. It belongs to the session's goroutine.
type Session struct {
	p           *Policy
	consistency replicas.Consistency
	// query holds the tables of the current text statement; txn what a read-only
	// transaction reads (every table).
	query, txn Tables
	// cur is where the open unit runs, or the connection the session holds between units.
	// A cur.To counts the read as outstanding there until Done.
	cur Decision
	// own is the position of the session's own last write; need a buffer.
	own, need replicas.Pos
	// written, writeUnknown and wrote collect the open unit's writes until its commit
	// position comes back; sessionKey is the key of its writes (/* gk:session=KEY */).
	written      [][]byte
	writeUnknown bool
	wrote        bool
	sessionKey   []byte
}

// SetConsistency takes the consistency of the session's user (routing.consistency when
// it names none) and forgets the writes of the session's former user.
func (s *Session) SetConsistency(user string) {
	if s == nil {
		return
	}
	s.consistency = s.p.cfg.Consistency
	if c, err := replicas.ParseConsistency(user); err == nil {
		s.consistency = c
	}
	s.own = s.own[:0]
}

// Fill keeps the tables of a text statement just classified, in a buffer of the session's
// that the next call reuses; nil without routing.
func (s *Session) Fill(r *classify.Result, schema string) *Tables {
	if s == nil {
		return nil
	}
	s.query.Fill(r, schema)
	return &s.query
}

// Current returns where the open unit runs: the last Route's decision, or what a lease
// turned it into, until Done.
func (s *Session) Current() Decision {
	if s == nil {
		return Decision{}
	}
	return s.cur
}

// Route decides where a new unit goes: a replica for an autocommit read that may go to
// one (waiting up to the causal wait for one to catch up, until ctx ends), the primary
// otherwise. A read counts as outstanding on its backend from now, so that balancing sees
// the reads waiting for a backend's capacity as well as those running there.
func (s *Session) Route(ctx context.Context, u *Unit) Decision {
	if s == nil {
		return Decision{}
	}
	s.cur = s.decide(ctx, u)
	if s.cur.To != nil {
		s.cur.To.Start(s.cur.Cost)
	}
	return s.cur
}

// decide is Route's choice.
func (s *Session) decide(ctx context.Context, u *Unit) Decision {
	st := u.Stmt
	if st == nil || st.Tables == nil || len(s.p.router.Replicas()) == 0 {
		// Session state, transaction control, the login's lease; or a policy without
		// replicas, which keeps only the version map (for the result cache).
		return Decision{}
	}
	if s.startsReadOnly(u) {
		// The whole transaction reads from one replica that has every write its
		// consistency needs: it may read any table.
		s.txn = Tables{readUnknown: true, consistency: st.Tables.consistency, sessionKey: st.Tables.sessionKey}
		return s.read(ctx, &s.txn, u)
	}
	switch {
	case st.Kind == classify.Write || st.Kind == classify.LockingRead || st.Kind == classify.DDL:
		return Decision{Reason: Write}
	case st.Kind != classify.Read:
		return Decision{}
	case st.Opaque || st.Multi:
		return Decision{Reason: Unsure}
	case u.InTxn || !u.Autocommit:
		return Decision{Reason: Transaction}
	case st.Uses != 0 || u.Cursor:
		return Decision{Reason: Pinned}
	}
	return s.read(ctx, st.Tables, u)
}

// startsReadOnly tells whether the unit starts a read-only transaction that may run on a
// replica: START TRANSACTION READ ONLY, or BEGIN in a session whose transactions are
// read-only, outside a transaction and with autocommit on.
func (s *Session) startsReadOnly(u *Unit) bool {
	st := u.Stmt
	if !s.p.cfg.ReadOnlyTransactions || st.Kind != classify.Transaction || st.ReadWrite || u.InTxn || !u.Autocommit {
		return false
	}
	return st.ReadOnly || st.StartsTxn && st.Uses == 0 && u.SessionReadOnly
}

// read routes the read of t that starts u: to a replica that qualifies, else the primary.
func (s *Session) read(ctx context.Context, t *Tables, u *Unit) Decision {
	cost := s.p.cost(u.Key)
	mode := s.ModeOf(t, u.Rule)
	b, waited := s.pick(ctx, t, mode, cost)
	switch {
	case b == nil:
		return Decision{Reason: FellBack}
	case waited:
		return Decision{To: b, Reason: Waited, Need: s.need, Cost: cost, Mode: mode}
	}
	return Decision{To: b, Reason: Routed, Need: s.need, Cost: cost, Mode: mode}
}

// ModeOf returns what a read of t must see: a rule's consistency, else its hint, else the
// session's consistency.
func (s *Session) ModeOf(t *Tables, r Rule) replicas.Consistency {
	if r.Set {
		return r.Mode
	}
	if t.consistency >= 0 {
		return replicas.Consistency(t.consistency)
	}
	return s.consistency
}

// pick returns the backend a read of t under mode goes to, waiting up to the causal wait for one to
// catch up; nil when none did. waited says it waited.
func (s *Session) pick(ctx context.Context, t *Tables, mode replicas.Consistency, cost time.Duration) (b *replicas.Backend, waited bool) {
	p := s.p
	var horizon replicas.Pos
	if mode == replicas.Strong {
		if p.holdsStrong() {
			return nil, false // another process may acknowledge writes this one does not see
		}
		var ok bool
		if horizon, ok = s.horizon(ctx); !ok {
			return nil, true // what the read must see cannot be told in time: the primary
		}
	}
	locality := uint64(0)
	if len(t.read) > 0 {
		locality = classify.Hash(t.read[0])
	}
	var start time.Time
	var timer *time.Timer
	for {
		if need, known := s.needOf(mode, t, horizon); known {
			if b = p.router.Pick(need, mode == replicas.Eventual, cost, locality); b != nil {
				break
			}
		}
		if start.IsZero() {
			if p.cfg.CausalWait <= 0 || !p.router.Waitable() {
				return nil, false
			}
			start = time.Now()
			timer = time.NewTimer(p.cfg.CausalWait)
			defer timer.Stop()
		}
		if gaveUp, observe := s.waitForReplica(ctx, timer); gaveUp {
			if observe {
				p.m.causalWaits.Observe(time.Since(start).Seconds())
			}
			return nil, true
		}
	}
	if !start.IsZero() {
		p.m.causalWaits.Observe(time.Since(start).Seconds())
	}
	return b, !start.IsZero()
}

// waitForReplica waits for a replica to move, or a poll interval (a write without a
// position resolves at the primary's poll). gaveUp says the causal wait ran out (observe)
// or ctx ended.
func (s *Session) waitForReplica(ctx context.Context, timer *time.Timer) (gaveUp, observe bool) {
	advanced := s.p.router.Advanced()
	poll := time.NewTimer(s.p.cfg.Poll)
	defer poll.Stop()
	select {
	case <-advanced:
	case <-poll.C:
	case <-timer.C:
		return true, true
	case <-ctx.Done():
		return true, false
	}
	return false, false
}

// horizon returns, for a strong read under a rule that counts every writer, the primary's
// position as read after the read arrived, once (PerTable) the version map holds every write
// up to it; ok is false when that cannot be had within the wait (horizonWait), and the read
// then goes to the primary. Under ProxyLocal it returns nil and ok.
func (s *Session) horizon(ctx context.Context) (pos replicas.Pos, ok bool) {
	return s.p.horizon(ctx)
}

// horizon is Session.horizon, for any caller.
func (p *Policy) horizon(ctx context.Context) (pos replicas.Pos, ok bool) {
	return p.horizonWithin(ctx, p.horizonWait())
}

// horizonWithin is horizon, waiting up to wait.
func (p *Policy) horizonWithin(ctx context.Context, wait time.Duration) (pos replicas.Pos, ok bool) {
	rule := p.rule()
	if rule == ProxyLocal {
		return nil, true
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	pos, err := p.positions.Read(wctx)
	if err == nil && rule == PerTable {
		err = p.follower.Recorded(wctx, pos)
	}
	p.m.horizonWaits.Observe(time.Since(start).Seconds())
	if err != nil {
		p.m.unvouched.Inc()
		return nil, false
	}
	return pos, true
}

// needOf returns what a read of t needs a replica to have applied under mode, horizon
// being the primary's position when the read arrived (Global's need); known is false while
// that cannot be told yet.
func (s *Session) needOf(mode replicas.Consistency, t *Tables, horizon replicas.Pos) (need replicas.Pos, known bool) {
	switch mode {
	case replicas.Eventual:
		return nil, true
	case replicas.Session:
		s.need = append(s.need[:0], s.own...)
		if len(t.sessionKey) > 0 {
			s.need = s.p.sessions.Need(s.need, t.sessionKey)
		}
		return s.need, true
	}
	if horizon != nil && s.p.rule() == Global {
		return horizon, true
	}
	s.need, known = s.p.router.Versions().Need(s.need, t.read, t.readUnknown)
	return s.need, known
}

// Leased counts the unit as sent where its decision says, once it has a connection there.
func (s *Session) Leased() {
	if s == nil {
		return
	}
	to := s.cur.To
	if to == nil {
		to = s.p.router.Primary()
	}
	s.p.count(to, s.cur.Reason)
}

// PinnedRead counts a read that starts a unit on the connection its session holds
// between units (pinned, or in a read-only transaction on a replica). st is the command's
// statement, nil for a command without one.
func (s *Session) PinnedRead(st *Statement, inTxn bool) {
	if s != nil && st != nil && st.Kind == classify.Read && !inTxn {
		s.p.count(s.p.router.Primary(), Pinned)
	}
}

// FellBack turns the decision of a read whose replica cannot run it into the primary's:
// the replica gave no connection, or its connection failed before answering (cause).
// With down the replica takes no reads until its monitor sees it answer again.
func (s *Session) FellBack(cause error, down bool) {
	if s == nil {
		return
	}
	if down {
		s.MarkDown(cause)
	}
	s.Done()
	s.cur = Decision{Reason: FellBack}
}

// MarkDown marks the backend of the open unit down after its connection failed (cause).
func (s *Session) MarkDown(cause error) {
	if s != nil && s.cur.To != nil {
		s.p.router.MarkDown(s.cur.To, cause)
	}
}

// Done ends the open unit's read on its backend, or forgets where a unit that was not
// admitted would have gone.
func (s *Session) Done() {
	if s == nil {
		return
	}
	if s.cur.To != nil {
		s.cur.To.Done(s.cur.Cost)
	}
	s.cur = Decision{}
}

// replicaPins are the uses of connection state that would tie the session to a replica's
// connection beyond its read-only transaction, where its later writes could not run.
const replicaPins = classify.UsesUserVariable | classify.UsesGetLock | classify.UsesLockTables |
	classify.UsesTemporaryTable | classify.UsesPrepare | classify.UsesSessionTracking |
	classify.UsesHandler | classify.UsesXAStart

// PinsReplica tells whether st, run in a read-only transaction on a replica, would tie the
// session to that replica's connection: it must be refused. st is the statement of a
// COM_QUERY or COM_STMT_EXECUTE, nil for other commands.
func (s *Session) PinsReplica(st *Statement, inTxn bool) bool {
	return s != nil && s.cur.Replica() && inTxn && st != nil && st.Uses&replicaPins != 0
}

// SessionRecord is a session's side of routing as a hand-over to a new process carries
// it: the consistency its reads get and the position of its own last write.
type SessionRecord struct {
	Consistency replicas.Consistency `json:"consistency"`
	Own         string               `json:"own,omitempty"`
}

// Record returns the session as a record; nil without routing.
func (s *Session) Record() *SessionRecord {
	if s == nil {
		return nil
	}
	return &SessionRecord{Consistency: s.consistency, Own: s.own.String()}
}

// Restore makes the session the one r records.
func (s *Session) Restore(r *SessionRecord) error {
	if s == nil || r == nil {
		return nil
	}
	own, err := replicas.ParsePos(r.Own)
	if err != nil {
		return err
	}
	s.consistency, s.own = r.Consistency, own
	return nil
}
