package fleet

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the fleet's metrics, registered once per process.
type Metrics struct{ metrics }

type metrics struct {
	up, lastSync, members, adjuster    prometheus.Gauge
	syncErrors, held                   prometheus.Counter
	share, fleetCap, memberCap, demand *prometheus.GaugeVec
	config                             *prometheus.CounterVec
}

// NewMetrics registers the fleet's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	byBackend := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"backend"})
	}
	m := &Metrics{metrics{
		up:       gauge("gatekeeper_fleet_etcd_up", "1 while the last sync with the fleet's etcd succeeded; 0 while admission runs on the last shares."),
		lastSync: gauge("gatekeeper_fleet_last_sync_timestamp_seconds", "When this member last synced with the fleet (Unix time)."),
		members:  gauge("gatekeeper_fleet_members", "Members of the fleet at the last sync, this one included."),
		adjuster: gauge("gatekeeper_fleet_adjuster", "1 while this member is the one that adapts the fleet's capacity."),
		syncErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "gatekeeper_fleet_sync_errors_total",
			Help: "Syncs with the fleet's etcd that failed; the shares in force stayed."}),
		held: prometheus.NewCounter(prometheus.CounterOpts{Name: "gatekeeper_fleet_holds_total",
			Help: "Times this member started nothing new while the adjuster timed its units alone (a fleet-wide solo check)."}),
		share:     byBackend("gatekeeper_fleet_share", "This member's part of the backend's fleet capacity (0 to 1)."),
		fleetCap:  byBackend("gatekeeper_fleet_capacity_seconds", "The fleet's capacity for the backend, as this member holds it."),
		memberCap: byBackend("gatekeeper_fleet_member_capacity_seconds", "The capacity this member admits against on the backend: its share of the fleet's."),
		demand:    byBackend("gatekeeper_fleet_demand_seconds", "This member's demand on the backend over the last interval: the mean expected cost of its running and queued units."),
		config: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatekeeper_fleet_config_changes_total",
			Help: "Changes of the shared configuration read from etcd, by result: applied, or refused (the running configuration stayed)."}, []string{"result"}),
	}}
	reg.MustRegister(m.up, m.lastSync, m.members, m.adjuster, m.syncErrors, m.held, m.share, m.fleetCap, m.memberCap, m.demand, m.config)
	m.config.WithLabelValues("applied")
	m.config.WithLabelValues("refused")
	return m
}

func (m *metrics) backend(key string, s Step, demand time.Duration) {
	m.share.WithLabelValues(key).Set(s.Share)
	m.fleetCap.WithLabelValues(key).Set(s.Fleet.Seconds())
	m.memberCap.WithLabelValues(key).Set(s.Capacity.Seconds())
	m.demand.WithLabelValues(key).Set(demand.Seconds())
}

func (m *metrics) synced(members int, adjuster bool) {
	m.up.Set(1)
	m.lastSync.Set(float64(time.Now().UnixNano()) / 1e9)
	m.members.Set(float64(members))
	m.adjuster.Set(b2f(adjuster))
}

func (m *metrics) failed() {
	m.up.Set(0)
	m.syncErrors.Inc()
}

func (m *metrics) configApplied(ok bool) {
	if ok {
		m.config.WithLabelValues("applied").Inc()
	} else {
		m.config.WithLabelValues("refused").Inc()
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
