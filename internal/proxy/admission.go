package proxy

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// Error code of a unit the proxy refuses or gives up waiting for: ER_LOCK_WAIT_TIMEOUT,
// which drivers and ORMs treat as transient (retry the statement or the transaction)
// without discarding the connection.
const codeLockWaitTimeout = 1205

// AdmissionConfig turns the admission settings into the controller's policy.
func AdmissionConfig(a config.Admission) admission.Config {
	d, _ := admission.ParseDiscipline(a.Discipline) // validated
	capacity := time.Duration(a.Capacity)
	var auto admission.AutoConfig
	if a.Capacity.Auto() {
		capacity = max(a.CapacityStart, a.CapacityMin)
		auto = admission.AutoConfig{Enabled: true, Min: a.CapacityMin, Max: a.CapacityMax,
			Interval: a.CapacityInterval, Step: a.CapacityStep, Stretch: a.CapacityStretch}
	}
	return admission.Config{
		Capacity:            capacity,
		Auto:                auto,
		MaxConcurrency:      a.MaxConcurrency,
		Discipline:          d,
		Aging:               a.Aging,
		LastCall:            a.LastCallFor(),
		QueueTimeout:        a.QueueTimeout,
		MaxQueue:            a.MaxQueue,
		MaxOpenTransactions: a.MaxOpenTransactions,
		Sessions: admission.SessionConfig{
			ActiveLimit:      a.Sessions.ActiveLimit,
			BlockingQueue:    a.Sessions.BlockingQueue,
			Aggressive:       a.Sessions.Variant == config.SessionsAggressive,
			SLO:              a.Sessions.SLO,
			AdaptEvery:       a.Sessions.AdaptEvery,
			MaxBlockingQueue: a.Sessions.MaxBlockingQueue,
		},
		Reserve: admission.ReserveConfig{
			Floor:           a.Reserve.Floor,
			QuickCutoff:     a.Reserve.QuickCutoff,
			LengthyLane:     a.Reserve.LengthyLane,
			LaneRate:        a.Reserve.LaneRate,
			QuickWaitTarget: a.Reserve.QuickWaitTarget,
		},
	}
}

// admissionSettings are the settings the sessions read at each unit; swapped whole on a
// reload.
type admissionSettings struct {
	enabled         bool
	tagKey          bool // sessions are keyed by a gk:session tag
	policerInterval time.Duration
}

// admitter is admission as sessions see it: the controller, the settings read at each
// unit, the rate policers, the application sessions admitted before, and the watch that
// notices a client gone while its unit waits.
type admitter struct {
	// ctl admits the units that go to the primary: every unit, unless reads are routed.
	ctl *admission.Controller
	// replicas admit the reads routed to each replica, in the router's order: each
	// backend has a capacity of its own (the load limit per backend of conflict-aware
	// scheduling), so that a slow replica holds back only the reads sent to it, and
	// with capacity: auto each tracks its own database's knee.
	replicas []*admission.Controller
	settings atomic.Pointer[admissionSettings]
	policers atomic.Pointer[admission.Policers]
	tags     tagSet
	watch    *clientWatch
	// threadsRunning feeds the policers the primary's Threads_running.
	threadsRunning atomic.Pointer[func() (float64, bool)]
}

func newAdmitter(a config.Admission) (*admitter, error) {
	adm := &admitter{ctl: admission.New(AdmissionConfig(a), nil)}
	adm.settings.Store(&admissionSettings{enabled: a.Enabled, tagKey: a.Sessions.Key == config.SessionKeyTag,
		policerInterval: a.PolicerInterval})
	ps, err := newPolicers(a, time.Now())
	if err != nil {
		return nil, err
	}
	adm.policers.Store(ps)
	if adm.watch, err = newClientWatch(); err != nil {
		return nil, fmt.Errorf("proxy: watching waiting clients: %w", err)
	}
	return adm, nil
}

// replicaConfig is the policy of a replica's controller: admission's, without the
// session gate, which counts the units of sessions once, at the primary's controller.
func replicaConfig(a config.Admission) admission.Config {
	cfg := AdmissionConfig(a)
	cfg.Sessions = admission.SessionConfig{}
	return cfg
}

// addReplicas gives each of n replicas a controller of its own.
func (a *admitter) addReplicas(n int, cfg config.Admission) {
	for range n {
		a.replicas = append(a.replicas, admission.New(replicaConfig(cfg), nil))
	}
}

// all returns every controller, the primary's first.
func (a *admitter) all() []*admission.Controller {
	return append([]*admission.Controller{a.ctl}, a.replicas...)
}

// forBackend returns the controller that admits units going to b (nil: the primary).
func (a *admitter) forBackend(b *replicas.Backend) *admission.Controller {
	if b == nil || b.Primary || b.Index > len(a.replicas) {
		return a.ctl
	}
	return a.replicas[b.Index-1]
}

// room tells whether backend b's controller would admit a unit of cost at once; always,
// with admission off. Read routing prefers the backends with room.
func (a *admitter) room(b *replicas.Backend, cost time.Duration) bool {
	if !a.settings.Load().enabled {
		return true
	}
	return a.forBackend(b).Room(cost)
}

// Admission returns the admission controller of the primary, for the admin API and
// metrics.
func (s *Server) Admission() *admission.Controller { return s.adm.ctl }

// BackendAdmission returns the controller of each backend, the primary's first, in the
// order of Pools; only the primary's when reads are not routed.
func (s *Server) BackendAdmission() []*admission.Controller { return s.adm.all() }

// ReloadAdmission applies new admission settings; waiting units keep their place. The
// policers start again from their configured rates.
func (s *Server) ReloadAdmission(a config.Admission) error {
	ps, err := newPolicers(a, time.Now())
	if err != nil {
		return err
	}
	s.adm.policers.Store(ps)
	s.accept.Store(newAcceptPolicer(a.Accept, time.Now()))
	s.adm.ctl.Configure(AdmissionConfig(a))
	for _, c := range s.adm.replicas {
		c.Configure(replicaConfig(a))
	}
	s.adm.settings.Store(&admissionSettings{enabled: a.Enabled, tagKey: a.Sessions.Key == config.SessionKeyTag,
		policerInterval: a.PolicerInterval})
	return nil
}

// tickAdmission moves the clock-driven state (timeouts, the reserve, the adaptive
// policers) until stop is closed.
func (s *Server) tickAdmission(stop <-chan struct{}) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	lastAdapt := time.Now()
	ctls := s.adm.all()
	names := s.backendNames()
	logged := make([]time.Duration, len(ctls)) // the adaptive capacities as last logged
	for i, c := range ctls {
		logged[i] = c.Snapshot().Capacity
	}
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			for i, c := range ctls {
				c.Tick(now)
				if snap := c.Snapshot(); snap.Auto.Enabled && (snap.Capacity >= 2*logged[i] || 2*snap.Capacity <= logged[i]) {
					s.log.Info("admission capacity moved", "backend", names[i], "from", logged[i], "to", snap.Capacity,
						"decision", snap.Auto.Last.String(), "stretch", snap.Auto.Stretch)
					logged[i] = snap.Capacity
				}
			}
			if now.Sub(lastAdapt) >= s.adm.settings.Load().policerInterval {
				s.adaptPolicers(now)
				lastAdapt = now
			}
		}
	}
}

// needsAdmission says whether the current command starts the unit's admitted work: a
// statement (not transaction control) in a unit not admitted yet. A transaction opened by
// BEGIN is admitted at its first statement, whose type sets its cost; it holds no locks
// before that statement. Statements longer than what the proxy holds in memory pass: they
// stream to the backend as they are read.
func (s *session) needsAdmission(cmd byte) bool {
	if s.unit.admitted || (cmd != mysql.COM_QUERY && cmd != mysql.COM_STMT_EXECUTE) {
		return false
	}
	if set := s.adm.settings.Load(); !set.enabled {
		return false
	}
	return s.cmd.Complete() && (!s.stmt.valid || s.stmt.kind != classify.Transaction)
}

// admit passes the unit through admission before its first statement goes to the backend.
// When the unit is refused, the client has been told why and admitted is false; keep is
// false when the client has gone.
func (s *session) admit() (admitted, keep bool) {
	txn := s.inTxn || !s.autocommit
	key := s.unitKey(txn)
	m := s.metrics
	if rule := s.police(key); rule != "" {
		m.refusedVec.WithLabelValues("policer").Inc()
		s.sendError(&clientError{code: codeLockWaitTimeout, state: stateGeneral, err: errPoliced{rule},
			msg: fmt.Sprintf("gatekeeper: rate limit: policer %q (admission.policers) refused the statement; retry later", rule)})
		return false, s.client.IOErr() == nil
	}
	req := admission.Request{Type: key, Shape: s.unitShape(key, txn), Txn: txn, Conn: s.id, Accepted: s.accepted(),
		Holding: s.pl != nil && s.pl.lease != nil}
	ctl := s.adm.ctl
	switch rs := s.rs; {
	case rs == nil:
	case !req.Holding:
		ctl = s.planRoute()
	case rs.to != nil: // a read-only transaction on a replica
		ctl = s.adm.forBackend(rs.to)
	}
	s.admittedBy = ctl
	if s.rec.costs != nil {
		var measured bool
		req.Cost, req.Service, measured = s.rec.costs.ExpectMeasured(estimator.Key(key))
		req.Unmeasured = !measured // admission charges an unknown type by its own rule
	}
	start := time.Now()
	state, err := ctl.ArriveAt(&s.ticket, req, start)
	if err == nil && state != admission.Admitted {
		if !s.watched { // a client that hangs up ends its session's context
			s.watched = true
			s.watchToken = s.adm.watch.watch(s.client.NetConn(), s.cancel)
		}
		err = ctl.Wait(s.ctx, &s.ticket)
	}
	waited := time.Since(start)
	s.hot.waits.observe(waited)
	if err != nil {
		m.refused(err)
		where := "the database"
		if rs := s.rs; rs != nil && rs.to != nil && !rs.to.Primary {
			where = "replica " + rs.to.Addr
		}
		s.routeDone()
		if errors.Is(err, admission.ErrCanceled) {
			s.log.Debug("client went away while its unit waited for admission", "waited", waited)
			return false, false
		}
		s.sendError(s.admissionError(err, waited, where))
		return false, s.client.IOErr() == nil
	}
	s.unit.admitted = true
	s.wasAdmitted = true
	if s.adm.settings.Load().tagKey {
		if id := sessionTag(s.cmd.Text()); id != nil {
			s.adm.tags.add(id)
		}
	}
	return true, true
}

// accepted says whether the session has been admitted before: the connection, or under
// the tag key the application session its statement names.
func (s *session) accepted() bool {
	if !s.adm.settings.Load().tagKey {
		return s.wasAdmitted
	}
	id := sessionTag(s.cmd.Text())
	return id != nil && s.adm.tags.has(id)
}

// releaseUnit gives back the charge of an admitted unit.
func (s *session) releaseUnit() {
	if s.unit.admitted {
		s.releaseUnitAt(time.Now())
	}
}

// releaseUnitAt is releaseUnit at now, a reading of the clock at hand.
func (s *session) releaseUnitAt(now time.Time) {
	if s.unit.admitted {
		s.admittedBy.ReleaseAt(&s.ticket, s.unit.busy, now)
		s.unit.admitted = false
	}
}

// unitKey is the request type the unit is costed by at admission: what recordUnit will
// record it under, as far as its first statement tells.
func (s *session) unitKey(txn bool) uint64 {
	st := &s.stmt
	switch s.rec.typeKey {
	case keyUser, keySchema, keyProgram:
		key, _ := s.identityKey()
		return key
	case keyTag, keyTagDigest:
		if u := &s.unit.typ; u.tagged {
			return u.hash // the transaction's BEGIN carried the tag
		}
		if st.valid && st.tag != nil {
			key := classify.Hash(st.tag) ^ saltTag
			if s.rec.typeKey == keyTagDigest && !txn {
				key = tagDigestKey(key, st.hash)
			}
			return key
		}
	}
	if txn {
		return st.hash ^ saltTransaction
	}
	return st.hash
}

// unitShape is what the adaptive capacity times the unit alone by (admission.Request.Shape),
// the unit's type being key: 0 where the type is its first statement's digest already,
// else the type with that digest, so that an interaction's cheap and costly statements,
// or one user's, keep solo times of their own.
func (s *session) unitShape(key uint64, txn bool) uint64 {
	st := &s.stmt
	if !st.valid {
		return 0
	}
	digest := st.hash
	if txn {
		digest ^= saltTransaction
	}
	if key == digest || s.rec.typeKey == keyTagDigest && !txn {
		return 0 // typed by the statement's digest (a tag_digest key holds it too)
	}
	return tagDigestKey(key, digest)
}

// admissionError tells the client why its unit was refused; where names the backend
// whose capacity it waited for.
func (s *session) admissionError(err error, waited time.Duration, where string) *clientError {
	cfg := s.admittedBy.Snapshot()
	e := &clientError{code: codeLockWaitTimeout, state: stateGeneral, err: err}
	switch {
	case errors.Is(err, admission.ErrTimeout):
		e.msg = fmt.Sprintf("gatekeeper: queue timeout: waited %d ms for admission while %s was at capacity "+
			"(admission.queue_timeout); retry later, or raise admission.capacity or admission.queue_timeout",
			waited.Milliseconds(), where)
	case errors.Is(err, admission.ErrQueueFull):
		e.msg = fmt.Sprintf("gatekeeper: queue full: %d units already wait for admission (admission.max_queue); "+
			"the database is overloaded, retry later", cfg.Queued)
	case errors.Is(err, admission.ErrNewSession):
		e.code, e.state = codeConCount, stateConnectionRefuse
		e.msg = fmt.Sprintf("gatekeeper: new session refused under overload: %d units are active "+
			"(admission.sessions.active_limit); sessions already admitted are served first, retry later", cfg.Active)
	case errors.Is(err, admission.ErrBlockingQueueFull):
		e.msg = fmt.Sprintf("gatekeeper: overloaded: the blocking queue for admitted sessions is full (%d units, "+
			"admission.sessions.blocking_queue); retry later", cfg.BlockingQueue)
	default:
		e.msg = "gatekeeper: not admitted: " + err.Error()
	}
	return e
}

// underTLS returns the connection a TLS connection runs on, or conn.
func underTLS(conn net.Conn) net.Conn {
	if tc, ok := conn.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return conn
}

// sessionTag returns the ID of a /* gk:session=ID */ comment in the statement, or nil.
func sessionTag(sql []byte) []byte {
	i := bytes.Index(sql, []byte("gk:session="))
	if i < 0 {
		return nil
	}
	id := sql[i+len("gk:session="):]
	end := 0
	for end < len(id) && end < 128 && (isTagByte(id[end])) {
		end++
	}
	if end == 0 {
		return nil
	}
	return id[:end]
}

func isTagByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':'
}

// tagSet remembers the application sessions admitted before, up to a bound; past it the
// oldest half is forgotten (those sessions count as new once more).
type tagSet struct {
	mu   sync.Mutex
	cur  map[string]struct{}
	prev map[string]struct{}
}

const tagSetGeneration = 100_000

func (t *tagSet) add(id []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil {
		t.cur = map[string]struct{}{}
	}
	if _, ok := t.cur[string(id)]; ok {
		return
	}
	if len(t.cur) >= tagSetGeneration {
		t.prev, t.cur = t.cur, map[string]struct{}{}
	}
	t.cur[string(id)] = struct{}{}
}

func (t *tagSet) has(id []byte) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.cur[string(id)]; ok {
		return true
	}
	_, ok := t.prev[string(id)]
	return ok
}
