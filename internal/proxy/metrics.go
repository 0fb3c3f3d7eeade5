package proxy

import (
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// metrics are the proxy's Prometheus metrics. Per-command series are resolved once, so the
// per-statement path only does atomic adds.
type metrics struct {
	connsOpen         prometheus.Gauge
	connsTotal        prometheus.Counter
	connsRefused      *prometheus.CounterVec
	handshakeErrors   *prometheus.CounterVec
	commands          [256]prometheus.Counter
	statementSeconds  [256]prometheus.Observer
	clientBytesIn     prometheus.Counter
	clientBytesOut    prometheus.Counter
	backendDialErrs   *prometheus.CounterVec
	backendLost       prometheus.Counter
	backendClosedIdle prometheus.Counter
	protocolErrors    *prometheus.CounterVec
	errorsSent        *prometheus.CounterVec // by origin and code
	statements        prometheus.Counter     // units that were autocommit statements
	transactions      prometheus.Counter     // units that were transactions
	unitBusySeconds   prometheus.Observer
	classified        [classify.NumKinds]prometheus.Counter
	unsure            prometheus.Counter
	admissionMetrics
	refusedVec *prometheus.CounterVec
}

// latencyBuckets span a point select on loopback to a report query.
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// timedCommands get their own series of the statement latency histogram; the rest share
// "other".
var timedCommands = []byte{mysql.COM_QUERY, mysql.COM_STMT_EXECUTE, mysql.COM_STMT_PREPARE, mysql.COM_STMT_FETCH}

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
		clientBytesIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatekeeper_client_received_bytes_total",
			Help: "Bytes received from clients after the handshake (sent on to backends).",
		}),
		clientBytesOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatekeeper_client_sent_bytes_total",
			Help: "Bytes sent to clients after the handshake (relayed from backends).",
		}),
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
		unitBusySeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gatekeeper_unit_busy_seconds",
			Help:    "Backend busy time of completed units (summed over their statements).",
			Buckets: latencyBuckets,
		}),
	}
	commands := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatekeeper_client_commands_total",
		Help: "Commands received from clients, by command.",
	}, []string{"command"})
	statements := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gatekeeper_statement_duration_seconds",
		Help:    "Time from sending a command to the backend to the last packet of its response, by command.",
		Buckets: latencyBuckets,
	}, []string{"command"})
	units := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatekeeper_units_total",
		Help: "Units of work completed, by kind: autocommit statements and transactions.",
	}, []string{"kind"})
	classified := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatekeeper_statements_classified_total",
		Help: "Statements (COM_QUERY and COM_STMT_PREPARE) classified, by kind.",
	}, []string{"kind"})
	for k := range classify.NumKinds {
		m.classified[k] = classified.WithLabelValues(k.String())
	}
	m.errorsSent = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatekeeper_client_errors_total",
		Help: "ERR packets sent to clients, by MySQL error code and origin: the server's relayed (server) or the proxy's own (proxy).",
	}, []string{"origin", "code"})
	m.unsure = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gatekeeper_statements_unsure_total",
		Help: "Statements the classifier could not read with confidence, treated as writes to unknown tables.",
	})
	m.statements = units.WithLabelValues("statement")
	m.transactions = units.WithLabelValues("transaction")
	unknown := commands.WithLabelValues("unknown")
	other := statements.WithLabelValues("other")
	for i := range m.commands {
		m.commands[i], m.statementSeconds[i] = unknown, other
	}
	for _, c := range protocol.Commands() {
		m.commands[c] = commands.WithLabelValues(protocol.CommandName(c))
	}
	for _, c := range timedCommands {
		m.statementSeconds[c] = statements.WithLabelValues(protocol.CommandName(c))
	}
	reg.MustRegister(m.connsOpen, m.connsTotal, m.connsRefused, m.handshakeErrors, commands,
		statements, m.clientBytesIn, m.clientBytesOut, m.backendDialErrs, m.backendLost, m.backendClosedIdle,
		m.protocolErrors, m.errorsSent, units, m.unitBusySeconds.(prometheus.Histogram), classified, m.unsure)
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
