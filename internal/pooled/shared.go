package pooled

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Shared is what the sessions of pooled mode share: the bounds on a session's prepared
// statements and the metrics of pins, resets and state replays.
type Shared struct {
	// MaxStmts and MaxStmtBytes bound a session's prepared statements and the bytes of
	// their texts, which the proxy keeps to prepare them again on other connections.
	MaxStmts, MaxStmtBytes int

	pinsTotal [numPinReasons]prometheus.Counter
	pinned    prometheus.Gauge
	resets    prometheus.Counter
	syncs     prometheus.Counter
}

// Bounds of a session's prepared statements.
const (
	defaultMaxStmts     = 16382    // MySQL's default max_prepared_stmt_count
	defaultMaxStmtBytes = 64 << 20 // statement text per client connection
)

// NewShared returns what pooled sessions share, its metrics registered with reg.
func NewShared(reg prometheus.Registerer) *Shared {
	sh := &Shared{MaxStmts: defaultMaxStmts, MaxStmtBytes: defaultMaxStmtBytes}
	pins := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatekeeper_session_pins_total",
		Help: "Times a client session was pinned to its backend connection, by reason.",
	}, []string{"reason"})
	for r := range numPinReasons {
		sh.pinsTotal[r] = pins.WithLabelValues(r.String())
	}
	sh.pinned = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gatekeeper_sessions_pinned",
		Help: "Client sessions pinned to a backend connection now.",
	})
	sh.resets = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gatekeeper_backend_resets_total",
		Help: "Pooled connections reset (COM_RESET_CONNECTION) after a session that left state on them.",
	})
	sh.syncs = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gatekeeper_session_state_syncs_total",
		Help: "Units whose session state (schema, variables, user) was carried to a pooled connection first.",
	})
	reg.MustRegister(pins, sh.pinned, sh.resets, sh.syncs)
	return sh
}
