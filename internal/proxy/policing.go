package proxy

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// errPoliced is the refusal of a unit by a rate policer.
type errPoliced struct{ rule string }

func (e errPoliced) Error() string { return "refused by policer " + e.rule }

// police runs the rate policers on the unit about to ask for admission. It returns false
// when one refused the unit; the client has been told why.
func (s *session) police(p *plan) bool {
	ps := s.adm.policers.Load()
	if ps.Len() == 0 {
		return true
	}
	u := admission.Policed{User: s.user, Schema: s.schema, Client: s.info.addr}
	if p.stmt.valid && p.stmt.tag != nil {
		u.Type = string(p.stmt.tag)
	} else {
		u.Type = fmt.Sprintf("%016x", p.req.Type)
	}
	rule, ok := ps.Allow(&u, time.Now())
	if ok {
		return true
	}
	s.metrics.refusedVec.WithLabelValues("policer").Inc()
	s.sendError(&clientError{code: codeLockWaitTimeout, state: stateGeneral, err: errPoliced{rule},
		msg: fmt.Sprintf("gatekeeper: rate limit: policer %q (admission.policers) refused the statement; retry later", rule)})
	return false
}

// adaptPolicers moves the adaptive policers' rates from the current signals.
func (s *Server) adaptPolicers(now time.Time) {
	signals := s.adm.ctl.Signals()
	if f := s.adm.threadsRunning.Load(); f != nil {
		if v, ok := (*f)(); ok {
			signals[admission.SignalThreadsRunning] = v
		}
	}
	s.adm.policers.Load().Adapt(signals, now)
}

// SetThreadsRunning gives the policers the primary's Threads_running: f returns it and
// whether it is known.
func (s *Server) SetThreadsRunning(f func() (float64, bool)) { s.adm.threadsRunning.Store(&f) }

// acceptPolicer polices new connections at the listener: a bucket for all clients and one
// per client address, kept for the addresses seen recently.
type acceptPolicer struct {
	mu        sync.Mutex
	cfg       config.Accept
	all       admission.TokenBucket
	perClient map[netip.Addr]*admission.TokenBucket
}

// acceptClients bounds the addresses with a bucket of their own; past it the map starts
// over (a flood from many addresses is the global bucket's to cut).
const acceptClients = 65536

func newAcceptPolicer(c config.Accept, now time.Time) *acceptPolicer {
	return &acceptPolicer{cfg: c, all: admission.NewTokenBucket(c.Rate, c.Burst, now),
		perClient: map[netip.Addr]*admission.TokenBucket{}}
}

// allow says whether a connection from addr is accepted, and if not which limit refused it.
func (a *acceptPolicer) allow(addr net.Addr, now time.Time) (limit string, ok bool) {
	if a.cfg.Rate == 0 && a.cfg.PerClientRate == 0 {
		return "", true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var b *admission.TokenBucket
	if a.cfg.PerClientRate > 0 {
		ip := addrOf(addr)
		if b = a.perClient[ip]; b == nil {
			if len(a.perClient) >= acceptClients {
				clear(a.perClient)
			}
			nb := admission.NewTokenBucket(a.cfg.PerClientRate, a.cfg.PerClientBurst, now)
			b = &nb
			a.perClient[ip] = b
		}
		if !b.Allow(now) {
			return "admission.accept.per_client_rate", false
		}
	}
	if a.cfg.Rate > 0 && !a.all.Allow(now) {
		return "admission.accept.rate", false
	}
	return "", true
}

// addrOf returns the IP of a TCP address, or the zero Addr.
func addrOf(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(ta.IP)
		return ip.Unmap()
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

func errAcceptRate(limit string, rate float64) *clientError {
	return &clientError{code: codeConCount, state: stateConnectionRefuse, msg: "gatekeeper: too many new connections: " +
		limit + " (" + strconv.FormatFloat(rate, 'g', -1, 64) + " per second) is exceeded; retry later"}
}
