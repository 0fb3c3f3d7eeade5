package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/cache"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
	"github.com/gatekeeperdb/gatekeeper/internal/rules"
	"github.com/gatekeeperdb/gatekeeper/internal/topology"
)

// Server accepts client connections and runs a session for each. It owns the listeners and
// the set of live sessions; each session gets its collaborators from it (collaborators),
// not the server itself.
type Server struct {
	cfg config.Config
	log *slog.Logger
	// collaborators are what the sessions work with: admission, cost recording, the
	// login, the mode and read routing.
	*collaborators
	// pooled is pooled mode's part (nil in passthrough).
	pooled *pooledMode
	// accept polices new connections at the listener; logins bounds those logging in.
	accept atomic.Pointer[acceptPolicer]
	logins *handshakeGate

	nextID atomic.Uint64
	open   atomic.Int64 // client connections open

	// mu guards the fields below it.
	mu sync.Mutex
	// listeners are those Serve was given, in its order (Detach keeps it); detached is set
	// once Detach took them.
	listeners []net.Listener
	detached  bool
	sessions  map[*session]struct{}
	// byID finds a session by the connection id its client sees (KILL).
	byID     map[uint32]*session
	draining bool
	// done is closed when the last session of a drain ends.
	done chan struct{}

	wg sync.WaitGroup // accept loops, sessions and the idle reaper

	startReaper sync.Once
	stopReaper  chan struct{}
	// rules are the query rules in force (collaborators.rules points here).
	rules atomic.Pointer[rules.Set]
}

// Parts are what a Server runs on besides its configuration, each built from the
// configuration by package wiring.
type Parts struct {
	// Costs learns what each request type costs; nil: nothing is recorded.
	Costs *estimator.Table
	// Admission is admission's policy.
	Admission Admission
	// BackendTLS secures the proxy's connections to backends; nil: no TLS.
	BackendTLS *backend.TLSPolicy
	// Pools are the limits of pooled mode's pools.
	Pools backend.PoolConfig
	// Routing routes pooled mode's reads to replicas; nil: reads stay on the primary.
	// With the result cache on it is there, replicas or not, for the versions of tables.
	Routing *routing.Policy
	// Cache is the result cache's store; nil: no cache.
	Cache *cache.Store
	// Rules are the query rules; nil: none.
	Rules *rules.Set
	// Topology knows which server is the primary and holds writes during a failover;
	// nil: the primary is backends.primary.
	Topology *topology.Topology
}

// New returns a Server for cfg, which must have been validated, running on parts. Metrics
// are registered with reg.
func New(cfg config.Config, parts Parts, log *slog.Logger, reg prometheus.Registerer) (*Server, error) {
	key, ok := typeKeys[cfg.Classify.TypeKey]
	if !ok {
		return nil, fmt.Errorf("classify.type_key: unknown key %q", cfg.Classify.TypeKey)
	}
	s := &Server{
		cfg:        cfg,
		log:        log,
		logins:     newHandshakeGate(cfg.Client.MaxHandshakes, cfg.Client.MaxHandshakesPerClient),
		sessions:   map[*session]struct{}{},
		byID:       map[uint32]*session{},
		stopReaper: make(chan struct{}),
	}
	c := &collaborators{cfg: &s.cfg, log: log, metrics: newMetrics(reg), index: s, logins: s.logins, mode: passthrough{},
		rec:  &recorder{costs: parts.Costs, share: estimator.NewShare(cfg.Estimator.BackendCPUs, time.Now()), typeKey: key},
		gate: &gate{timeouts: logEvery{period: time.Minute}, backendTLS: parts.BackendTLS}}
	s.collaborators = c
	c.topology = parts.Topology
	s.rules.Store(parts.Rules)
	c.rules = &s.rules
	var err error
	if c.adm, err = newAdmitter(parts.Admission); err != nil {
		return nil, err
	}
	s.accept.Store(newAcceptPolicer(parts.Admission.Accept, time.Now()))
	c.metrics.registerAdmission(reg, c.adm.ctl, c.adm.policers.Load)
	c.metrics.registerLogins(reg, s.logins)
	if err := s.newGate(reg); err != nil {
		return nil, err
	}
	if cfg.Mode == config.ModePooled {
		s.newPooled(parts, reg)
	}
	return s, nil
}

// newGate sets up what logs clients in: TLS towards clients, the accounts of pooled mode
// or auth.from_backend, and the count of passthrough credentials derived.
func (s *Server) newGate(reg prometheus.Registerer) error {
	cfg := &s.cfg
	g := s.gate
	if cfg.TLS.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLS.CertFile, cfg.TLS.KeyFile)
		if err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		g.clientTLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if cfg.Mode == config.ModePooled || cfg.Auth.FromBackend {
		g.accounts = auth.NewStore()
	}
	if cfg.Mode == config.ModePassthrough && cfg.Auth.FromBackend {
		g.derived = s.metrics.registerDerived(reg)
	}
	return nil
}

// newPooled sets up pooled mode: its pools, and read routing to the replicas when parts
// has it, each replica with an admission controller of its own.
func (s *Server) newPooled(parts Parts, reg prometheus.Registerer) {
	var replicaAddrs []string
	if rt := parts.Routing; rt != nil {
		s.routing = rt
		for _, b := range rt.Router().Replicas() {
			replicaAddrs = append(replicaAddrs, b.Addr)
		}
		s.adm.addReplicas(len(replicaAddrs), parts.Admission.Replica)
		rt.Router().SetRoom(s.adm.room)
		reg.MustRegister(&backendAdmissionCollector{ctls: s.adm.all(), names: s.backendNames()})
	}
	if parts.Cache != nil && parts.Routing != nil {
		s.cache = &resultCache{store: parts.Cache, versions: parts.Routing, eventual: s.cfg.Cache.Consistency == "eventual",
			auto: s.cfg.Cache.Mode == config.CacheAuto, m: newCacheMetrics(reg, parts.Cache)}
		s.cache.wait.Store(int64(s.cfg.Cache.Wait))
		s.cache.maxEntry.Store(int64(s.cfg.Cache.MaxEntryBytes))
	}
	// A server that may become the primary has a pool, routed to or not.
	var others []string
	if t := parts.Topology; t != nil {
		for _, a := range t.Servers() {
			if a != s.cfg.Backends.Primary && !slices.Contains(replicaAddrs, a) {
				others = append(others, a)
			}
		}
	}
	s.pooled = newPooledMode(&s.cfg, parts.Pools, replicaAddrs, others, s.gate.backendTLS.For, s.log, reg)
	s.pooled.topology = parts.Topology
	if s.cfg.Failover.DurableAcks == config.DurableAcksReplica && parts.Routing != nil {
		s.durable = newDurableAcks(parts.Routing.Router(), parts.Topology, s.cfg.Failover.BufferTimeout, reg)
	}
	s.mode = s.pooled
	s.metrics.registerMultiplex(reg, s.pooled.pools[0], &s.open)
}

// Topology returns what knows the primary and holds writes during a failover; nil when
// the roles are not read.
func (s *Server) Topology() *topology.Topology { return s.topology }

// PrimaryInFlight returns the units that hold a connection of the primary's pool now, for
// a pause of writes to wait for; ok is false in passthrough, where every session holds a
// connection of the primary of its own and writes cannot be paused.
func (s *Server) PrimaryInFlight() (n int, ok bool) {
	if s.pooled == nil || s.topology == nil {
		return 0, false
	}
	return s.pooled.poolOf(s.topology.Primary()).Stats().Leased, true
}

// Accounts returns the accounts of pooled mode or of auth.from_backend (nil without
// either), for the caller to fill and reload. refresh, when not nil, is called for a user
// the accounts do not know, to read them again at once.
func (s *Server) Accounts(refresh func(ctx context.Context) bool) *auth.Store {
	if s.gate.accounts == nil {
		return nil
	}
	s.gate.refresh = refresh
	return s.gate.accounts
}

// sessionByID returns the session whose client knows it by id, or nil.
func (s *Server) sessionByID(id uint64) *session {
	if id > math.MaxUint32 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[uint32(id)]
}

// SetBackendCPUs changes estimator.backend_cpus while running.
func (s *Server) SetBackendCPUs(n int) { s.rec.share.SetCPUs(n, time.Now()) }

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("proxy: server closed")

// Serve accepts connections on ln until Shutdown, running a session for each. It always
// returns a non-nil error; after Shutdown, ErrServerClosed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners = append(s.listeners, ln)
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	s.startReaper.Do(func() {
		s.adm.watch.start() // ends in Shutdown, once the sessions have
		s.wg.Add(2)
		go func() { // ends when Shutdown closes stopReaper
			defer s.wg.Done()
			s.reapIdle(s.stopReaper)
		}()
		go func() { // ends when Shutdown closes stopReaper
			defer s.wg.Done()
			s.tickAdmission(s.stopReaper)
		}()
	})

	var backoff time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			draining, detached := s.draining, s.detached
			s.mu.Unlock()
			if detached {
				return ErrDetached
			}
			if draining {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) {
				// Out of file descriptors or a passing failure: wait and retry, as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "in", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		s.start(conn)
	}
}

// start registers and runs a session for conn; the session's goroutine ends when the
// connection closes.
func (s *Server) start(conn net.Conn) {
	s.metrics.connsTotal.Inc()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if limit, ok := s.accept.Load().allow(conn.RemoteAddr(), time.Now()); !ok {
		s.metrics.connsRefused.WithLabelValues("accept_rate").Inc()
		rate := s.cfg.Admission.Accept.Rate
		if limit != "admission.accept.rate" {
			rate = s.cfg.Admission.Accept.PerClientRate
		}
		s.wg.Add(1)
		go func() { // ends after one write, bounded by the deadline
			defer s.wg.Done()
			refuse(conn, errAcceptRate(limit, rate), s.metrics)
		}()
		return
	}
	if limit := s.cfg.Client.MaxConnections; limit > 0 && s.open.Load() >= int64(limit) {
		s.metrics.connsRefused.WithLabelValues("max_connections").Inc()
		s.wg.Add(1)
		go func() { // ends after one write, bounded by the deadline
			defer s.wg.Done()
			refuse(conn, errTooManyConnections(limit), s.metrics)
		}()
		return
	}
	sess := newSession(s.collaborators, s.nextID.Add(1), conn)
	s.launch(sess, sess.run)
}

// launch registers sess and runs it with run: its login and commands, or (resume) the
// commands of a session another process handed over.
func (s *Server) launch(sess *session, run func()) {
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		_ = sess.client.Close()
		sess.link.abort() // a passthrough session handed over comes with its backend connection
		return
	}
	s.sessions[sess] = struct{}{}
	s.byID[uint32(sess.id)] = sess
	s.wg.Add(1)
	s.mu.Unlock()
	s.open.Add(1)
	s.metrics.connsOpen.Inc()
	go func() { // ends when the session ends
		defer s.wg.Done()
		run()
		s.open.Add(-1)
		s.metrics.connsOpen.Dec()
		s.mu.Lock()
		delete(s.sessions, sess)
		if s.byID[uint32(sess.id)] == sess {
			delete(s.byID, uint32(sess.id))
		}
		if s.draining && len(s.sessions) == 0 && s.done != nil {
			close(s.done)
			s.done = nil
		}
		s.mu.Unlock()
	}()
}

// Shutdown stops accepting, lets sessions finish the statement or transaction they are in
// (idle sessions are closed at once), and when ctx ends closes what remains. It returns
// when every session has ended.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.draining {
		close(s.stopReaper)
	}
	s.draining = true
	for _, ln := range s.listeners {
		_ = ln.Close()
	}
	done := make(chan struct{})
	if len(s.sessions) == 0 {
		close(done)
	} else {
		s.done = done
	}
	for sess := range s.sessions {
		sess.drain()
	}
	s.mu.Unlock()

	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("drain timeout: closing %d connections: %w", s.Open(), ctx.Err())
		h := s.handoff.Load()
		s.mu.Lock()
		for sess := range s.sessions {
			if h != nil {
				h.drain("drain_timeout")
			}
			sess.kill()
		}
		s.mu.Unlock()
	}
	s.wg.Wait()
	s.adm.watch.close()
	for _, p := range s.Pools() {
		p.Close()
	}
	return err
}

// Open returns the number of client connections open.
func (s *Server) Open() int { return int(s.open.Load()) }

// reapIdle closes connections idle for longer than the idle timeout, checking every tenth of
// it (at most every second), until stop is closed.
func (s *Server) reapIdle(stop <-chan struct{}) {
	timeout := s.cfg.Client.IdleTimeout
	if timeout <= 0 {
		return
	}
	t := time.NewTicker(min(timeout/10, time.Second))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			cutoff := now.Add(-timeout)
			s.mu.Lock()
			for sess := range s.sessions {
				sess.reapIfIdle(cutoff, timeout)
			}
			s.mu.Unlock()
		}
	}
}
