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
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// Error code of a unit the proxy refuses or gives up waiting for: ER_LOCK_WAIT_TIMEOUT,
// which drivers and ORMs treat as transient (retry the statement or the transaction)
// without discarding the connection.
const codeLockWaitTimeout = 1205

// Admission is admission as the proxy applies it: each backend controller's policy, the
// rate policers, the accept policer and the settings the sessions read at each unit.
type Admission struct {
	// Enabled: units ask admission (admission.enabled); off, estimates are still recorded.
	Enabled bool
	// Primary is the policy of the primary's controller; Replica that of each replica's,
	// with routing.
	Primary, Replica admission.Config
	// Policers are the rate policers' rules; PolicerInterval is how often adaptive ones
	// move.
	Policers        []admission.Rule
	PolicerInterval time.Duration
	// Accept polices new connections at the listener.
	Accept config.Accept
	// TagKey: sessions are told apart by a gk:session tag, not by connection.
	TagKey bool
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

func newAdmitter(a Admission) (*admitter, error) {
	adm := &admitter{ctl: admission.New(a.Primary, nil)}
	adm.settings.Store(&admissionSettings{enabled: a.Enabled, tagKey: a.TagKey, policerInterval: a.PolicerInterval})
	ps, err := admission.NewPolicers(a.Policers, time.Now())
	if err != nil {
		return nil, err
	}
	adm.policers.Store(ps)
	if adm.watch, err = newClientWatch(); err != nil {
		return nil, fmt.Errorf("proxy: watching waiting clients: %w", err)
	}
	return adm, nil
}

// addReplicas gives each of n replicas a controller of its own, of policy cfg.
func (a *admitter) addReplicas(n int, cfg admission.Config) {
	for range n {
		a.replicas = append(a.replicas, admission.New(cfg, nil))
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
func (s *Server) ReloadAdmission(a Admission) error {
	ps, err := admission.NewPolicers(a.Policers, time.Now())
	if err != nil {
		return err
	}
	s.adm.policers.Store(ps)
	s.accept.Store(newAcceptPolicer(a.Accept, time.Now()))
	s.adm.ctl.Configure(a.Primary)
	for _, c := range s.adm.replicas {
		c.Configure(a.Replica)
	}
	s.adm.settings.Store(&admissionSettings{enabled: a.Enabled, tagKey: a.TagKey, policerInterval: a.PolicerInterval})
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
func (s *session) needsAdmission(p *plan) bool {
	if s.unit.admitted || (p.op != mysql.COM_QUERY && p.op != mysql.COM_STMT_EXECUTE) {
		return false
	}
	if set := s.adm.settings.Load(); !set.enabled {
		return false
	}
	return s.cmd.Complete() && (!p.stmt.valid || p.stmt.Kind != classify.Transaction)
}

// typeUnit sets the request type and shape of the unit the command starts, which the
// policers and admission go by.
func (s *session) typeUnit(p *plan) {
	txn := s.inTxn || !s.autocommit
	key := s.unitKey(&p.stmt, txn)
	p.req = admission.Request{Type: key, Shape: s.unitShape(&p.stmt, key, txn), Txn: txn}
}

// admit passes the unit through admission before its first statement goes to the backend:
// it waits for the capacity of the backend its route names. When the unit is refused, the
// client has been told why and admitted is false; keep is false when the client has gone.
func (s *session) admit(p *plan) (admitted, keep bool) {
	req := &p.req
	req.Conn, req.Accepted, req.Holding = s.id, s.accepted(), s.link.held()
	s.costOf(req)
	ctl := s.adm.forBackend(p.route.To)
	s.charge.by = ctl
	start := time.Now()
	state, err := ctl.ArriveAt(&s.charge.ticket, *req, start)
	if err == nil && state != admission.Admitted {
		if !s.charge.watched { // a client that hangs up ends its session's context
			s.charge.watched = true
			s.charge.watchToken = s.adm.watch.watch(s.client.NetConn(), s.cancel)
		}
		err = ctl.Wait(s.ctx, &s.charge.ticket)
	}
	waited := time.Since(start)
	s.hot.waits.observe(waited)
	if err != nil {
		return false, s.refused(p, err, waited)
	}
	s.unit.admitted = true
	s.charge.accepted = true
	if s.adm.settings.Load().tagKey {
		if id := sessionTag(s.cmd.Text()); id != nil {
			s.adm.tags.add(id)
		}
	}
	return true, true
}

// refused ends a unit admission refused (err) after it waited: the client is told why,
// unless it has gone; keep says whether the session goes on.
func (s *session) refused(p *plan, err error, waited time.Duration) (keep bool) {
	s.metrics.refused(err)
	where := "the database"
	if p.route.Replica() {
		where = "replica " + p.route.To.Addr
	}
	s.routes.Done()
	if errors.Is(err, admission.ErrCanceled) {
		s.log.Debug("client went away while its unit waited for admission", "waited", waited)
		return false
	}
	s.sendError(s.admissionError(err, waited, where))
	return s.client.IOErr() == nil
}

// accepted says whether the session has been admitted before: the connection, or under
// the tag key the application session its statement names.
func (s *session) accepted() bool {
	if !s.adm.settings.Load().tagKey {
		return s.charge.accepted
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
		s.charge.by.ReleaseAt(&s.charge.ticket, s.unit.busy, now)
		s.unit.admitted = false
	}
}

// moveCharge moves an admitted unit's charge to the controller of the backend its route
// now names, when it ran out of another's: it leaves the one that admitted it, having run
// nothing there, and is charged at once where it runs.
func (s *session) moveCharge(p *plan) {
	to := s.adm.forBackend(p.route.To)
	if !s.unit.admitted || s.charge.by == to {
		return
	}
	now := time.Now()
	s.charge.by.ReleaseAt(&s.charge.ticket, 0, now)
	to.AdmitNowAt(&s.charge.ticket, p.req, now)
	s.charge.by = to
}

// admissionError tells the client why its unit was refused; where names the backend
// whose capacity it waited for.
func (s *session) admissionError(err error, waited time.Duration, where string) *clientError {
	cfg := s.charge.by.Snapshot()
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

// CapacityMemory returns each backend's adaptive capacity to keep across a restart, by
// address (the primary's, then the replicas' when reads are routed); empty with the
// capacity static.
func (s *Server) CapacityMemory() map[string]admission.AutoMemory {
	out := map[string]admission.AutoMemory{}
	ctls := s.adm.all()
	for i, name := range s.backendNames() {
		if m, ok := ctls[i].Memory(); ok {
			out[name] = m
		}
	}
	return out
}

// ResumeCapacity starts each backend's adaptive capacity from what a CapacityMemory kept
// of it, by address, and returns how many it resumed.
func (s *Server) ResumeCapacity(kept map[string]admission.AutoMemory) int {
	n := 0
	ctls := s.adm.all()
	for i, name := range s.backendNames() {
		if m, ok := kept[name]; ok && ctls[i].Resume(m) {
			n++
		}
	}
	return n
}
