package proxy

import (
	"strconv"
	"sync/atomic"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/backend"
)

// metrics are the proxy's Prometheus metrics. The series every command adds to are in hot;
// the rest are resolved once or are rare.
type metrics struct {
	hot               *hotMetrics
	connsOpen         prometheus.Gauge
	connsTotal        prometheus.Counter
	connsRefused      *prometheus.CounterVec
	handshakeErrors   *prometheus.CounterVec
	backendDialErrs   *prometheus.CounterVec
	backendLost       prometheus.Counter
	backendClosedIdle prometheus.Counter
	protocolErrors    *prometheus.CounterVec
	errorsSent        *prometheus.CounterVec // by origin and code
	handovers         *prometheus.CounterVec // by result
	handoverConns     *prometheus.CounterVec // by result and reason
	admissionMetrics
	refusedVec *prometheus.CounterVec
}

// latencyBuckets span a point select on loopback to a report query.
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// timedCommands get their own series of the statement latency histogram; the rest share
// "other".
var timedCommands = [...]byte{mysql.COM_QUERY, mysql.COM_STMT_EXECUTE, mysql.COM_STMT_PREPARE, mysql.COM_STMT_FETCH}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		connsOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatekeeper_client_connections_open",
			Help: "Client connections open now.",
		}),
		connsTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatekeeper_client_connections_total",
			Help: "Client connections accepted.",
		}),
		connsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatekeeper_client_connections_refused_total",
			Help: "Client connections refused before the handshake, by reason.",
		}, []string{"reason"}),
		handshakeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatekeeper_client_handshake_failures_total",
			Help: "Client connections that did not complete the handshake, by reason.",
		}, []string{"reason"}),
		backendDialErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatekeeper_backend_dial_errors_total",
			Help: "Failed attempts to open a backend connection (dial, greeting or TLS), by backend.",
		}, []string{"backend"}),
		backendLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatekeeper_backend_lost_total",
			Help: "Backend connections that broke during a command.",
		}),
		backendClosedIdle: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatekeeper_backend_closed_idle_total",
			Help: "Passthrough client connections closed because the backend closed theirs while they were idle.",
		}),
		protocolErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatekeeper_client_protocol_errors_total",
			Help: "Client connections closed for a protocol violation, by reason.",
		}, []string{"reason"}),
	}
	m.errorsSent = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatekeeper_client_errors_total",
		Help: "ERR packets sent to clients, by MySQL error code and origin: the server's relayed (server) or the proxy's own (proxy).",
	}, []string{"origin", "code"})
	m.handovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatekeeper_handovers_total",
		Help: "Hand-overs to a new process started by this process or the ones it took over from, by result: completed, refused (the new process cannot read this one's state), failed.",
	}, []string{"result"})
	m.handoverConns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatekeeper_handover_connections_total",
		Help: "Client connections at the hand-overs this process took over: handed_over, or drained instead, by the reason they could not move (tls, a pin's name, ...).",
	}, []string{"result", "reason"})
	m.hot = newHotMetrics()
	reg.MustRegister(m.connsOpen, m.connsTotal, m.connsRefused, m.handshakeErrors, m.hot,
		m.backendDialErrs, m.backendLost, m.backendClosedIdle, m.protocolErrors, m.errorsSent,
		m.handovers, m.handoverConns)
	return m
}

// Origins of the errors clients are sent.
const (
	originServer = "server"
	originProxy  = "proxy"
)

// errorSent counts an ERR packet sent to a client. Errors are rare, so resolving the
// series each time costs nothing that matters; codes are 16 bits, a bounded set.
func (m *metrics) errorSent(origin string, code uint16) {
	m.errorsSent.WithLabelValues(origin, strconv.Itoa(int(code))).Inc()
}

// registerLogins exports the logins in progress.
func (m *metrics) registerLogins(reg prometheus.Registerer, g *handshakeGate) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gatekeeper_client_handshakes",
		Help: "Client connections logging in now (bounded by client.max_handshakes).",
	}, func() float64 { return float64(g.inProgress()) }))
}

// registerDerived returns the count of passthrough logins by whether a credential could be
// derived from them (auth.from_backend).
func (m *metrics) registerDerived(reg prometheus.Registerer) *prometheus.CounterVec {
	derived := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatekeeper_passthrough_credentials_total",
		Help: "Passthrough logins by whether the proxy could derive a credential to open more connections as the user (derived, underivable).",
	}, []string{"outcome"})
	reg.MustRegister(derived)
	return derived
}

// registerMultiplex exports how many client connections (open) each of the primary pool's
// connections serves in pooled mode.
func (m *metrics) registerMultiplex(reg prometheus.Registerer, primary *backend.Pool, open *atomic.Int64) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gatekeeper_backend_client_sessions_per_connection",
		Help: "Client connections open per pooled backend connection open: how many clients each database connection serves.",
	}, func() float64 {
		if n := primary.Stats().Open; n > 0 {
			return float64(open.Load()) / float64(n)
		}
		return 0
	}))
}

// registerAuthFailures returns the count of pooled mode's refused logins, by reason.
func registerAuthFailures(reg prometheus.Registerer) *prometheus.CounterVec {
	fails := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatekeeper_auth_failures_total",
		Help: "Client logins the proxy refused in pooled mode, by reason.",
	}, []string{"reason"})
	reg.MustRegister(fails)
	return fails
}
