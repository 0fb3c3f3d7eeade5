package proxy

import (
	"slices"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/pooled"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
)

// SessionSnapshot is what an operator sees of one client session.
type SessionSnapshot struct {
	ID                   uint64
	User, Client, Schema string
	// State is idle, running or idle_in_transaction.
	State         string
	Backend       string
	BackendThread uint32
	Pins          []string
	// Credential is pooled, derived or none.
	Credential string
	Since      time.Time
}

// sessionView is the part of a session's state its goroutine publishes for snapshots
// whenever it changes (rarely: at login, on a change of schema, user or pins).
type sessionView struct {
	user, schema, credential string
	pins                     uint32
}

// publish makes the session's current user, schema, credential and pins visible to
// snapshots. It costs a few comparisons when nothing changed.
func (s *session) publish() {
	lv := s.link.view()
	v := sessionView{user: s.user, schema: s.schema, credential: lv.credential, pins: lv.pins}
	if old := s.view.Load(); old != nil && *old == v {
		return
	}
	changed := v // only a view that changed goes to the heap
	s.view.Store(&changed)
}

// Sessions returns a snapshot of the client sessions that have logged in, by id.
func (s *Server) Sessions() []SessionSnapshot {
	s.mu.Lock()
	list := make([]*session, 0, len(s.sessions))
	for sess := range s.sessions {
		list = append(list, sess)
	}
	s.mu.Unlock()
	out := make([]SessionSnapshot, 0, len(list))
	for _, sess := range list {
		v := sess.view.Load()
		if v == nil {
			continue // still logging in
		}
		snap := SessionSnapshot{ID: uint64(uint32(sess.id)), User: v.user, Client: sess.info.text, Schema: v.schema,
			Pins: pooled.Names(v.pins), Credential: v.credential, Since: sess.info.since}
		sess.mu.Lock()
		switch {
		case sess.wait.idle && sess.wait.inTxn:
			snap.State = "idle_in_transaction"
		case sess.wait.idle:
			snap.State = "idle"
		default:
			snap.State = "running"
		}
		sess.mu.Unlock()
		snap.Backend, snap.BackendThread = sess.link.backendNow()
		out = append(out, snap)
	}
	slices.SortFunc(out, func(a, b SessionSnapshot) int { return int(int64(a.ID) - int64(b.ID)) })
	return out
}

// Mode returns passthrough or pooled.
func (s *Server) Mode() string { return s.cfg.Mode }

// Pools returns the pools of pooled mode's connections; none in passthrough.
func (s *Server) Pools() []*backend.Pool {
	if s.pooled == nil {
		return nil
	}
	return s.pooled.pools
}

// Router returns the read router; nil when reads are not routed.
func (s *Server) Router() *replicas.Router {
	if s.routing == nil {
		return nil
	}
	return s.routing.Router()
}

// Routing returns the routing policy; nil when reads are not routed.
func (s *Server) Routing() *routing.Policy { return s.routing }

// backendNames returns the addresses of the backends, the primary first, in the order
// of BackendAdmission.
func (s *Server) backendNames() []string {
	names := []string{s.cfg.Backends.Primary}
	if s.routing != nil {
		names = append(names, s.cfg.Backends.Replicas...)
	}
	return names
}

// RoutingConfig returns the routing settings the server runs with.
func (s *Server) RoutingConfig() config.Routing { return s.cfg.Routing }
