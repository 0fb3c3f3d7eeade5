package proxy

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
)

// admissionMetrics are what the sessions observe of admission; the controller's own state
// is read at scrape time by admissionCollector.
type admissionMetrics struct {
	refusedBy map[error]prometheus.Counter
}

// refusalReasons label gatekeeper_admission_refused_total.
var refusalReasons = map[error]string{
	admission.ErrQueueFull:         "queue_full",
	admission.ErrTimeout:           "timeout",
	admission.ErrCanceled:          "canceled",
	admission.ErrNewSession:        "new_session",
	admission.ErrBlockingQueueFull: "blocking_queue_full",
}

func (m *metrics) registerAdmission(reg prometheus.Registerer, ctl *admission.Controller, policers func() *admission.Policers) {
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatekeeper_admission_refused_total",
		Help: "Units not admitted, by reason: queue_full, timeout, canceled (client gone), new_session, blocking_queue_full, policer.",
	}, []string{"reason"})
	m.refusedBy = map[error]prometheus.Counter{}
	for err, reason := range refusalReasons {
		m.refusedBy[err] = refused.WithLabelValues(reason)
	}
	refused.WithLabelValues("policer")
	m.refusedVec = refused
	reg.MustRegister(refused, &admissionCollector{ctl: ctl, policers: policers})
}

// refused counts a refusal by its reason.
func (m *metrics) refused(err error) {
	for e, c := range m.refusedBy {
		if errors.Is(err, e) {
			c.Inc()
			return
		}
	}
}

// admissionCollector exports one snapshot of the controller per scrape.
type admissionCollector struct {
	ctl      *admission.Controller
	policers func() *admission.Policers
}

var (
	descQueued    = prometheus.NewDesc("gatekeeper_admission_queue_length", "Units waiting for capacity.", nil, nil)
	descBlocked   = prometheus.NewDesc("gatekeeper_admission_blocked", "Units of accepted sessions waiting in the session gate's blocking queue.", nil, nil)
	descRunning   = prometheus.NewDesc("gatekeeper_admission_running", "Admitted units running now.", nil, nil)
	descLoad      = prometheus.NewDesc("gatekeeper_admission_load_seconds", "Expected cost of the running units (the load against the capacity).", nil, nil)
	descCapacity  = prometheus.NewDesc("gatekeeper_admission_capacity_seconds", "The capacity: concurrent expected work admitted at most.", nil, nil)
	descOpenTxns  = prometheus.NewDesc("gatekeeper_admission_open_transactions", "Admitted transactions running now.", nil, nil)
	descAdmitted  = prometheus.NewDesc("gatekeeper_admission_admitted_total", "Units admitted.", nil, nil)
	descWaited    = prometheus.NewDesc("gatekeeper_admission_queued_total", "Units that had to wait for admission.", nil, nil)
	descB         = prometheus.NewDesc("gatekeeper_admission_blocking_queue_capacity", "B: the capacity of the session gate's blocking queue (adapts when admission.sessions.slo is set).", nil, nil)
	descActive    = prometheus.NewDesc("gatekeeper_admission_active", "Units past the session gate (waiting for capacity or running).", nil, nil)
	descAdmitNew  = prometheus.NewDesc("gatekeeper_admission_new_sessions_admitted", "1 while the session gate lets new sessions in, 0 while it refuses them.", nil, nil)
	descReserve   = prometheus.NewDesc("gatekeeper_admission_reserve_seconds", "Capacity kept for quick units now.", nil, nil)
	descLane      = prometheus.NewDesc("gatekeeper_admission_lengthy_lane", "Lengthy units running inside the reserve.", nil, nil)
	descLaneRate  = prometheus.NewDesc("gatekeeper_admission_lengthy_lane_rate", "Lengthy units the lane may start a second while paced (admission.reserve.lane_rate, quick_wait_target); 0 while not paced.", nil, nil)
	descQuickWait = prometheus.NewDesc("gatekeeper_admission_quick_wait_seconds", "Quick units' mean queue wait over the last second, while admission.reserve.quick_wait_target is set.", nil, nil)
	descParked    = prometheus.NewDesc("gatekeeper_admission_lengthy_parked", "Lengthy units waiting for room in the lengthy lane (counted in the queue length too).", nil, nil)
	descDecisions = prometheus.NewDesc("gatekeeper_admission_capacity_decisions_total", "Windows of the adaptive capacity (admission.capacity: auto), by decision: up and down (the units ran faster or slower than the target stretch), hold (near it, or the clients bound the units), idle (nothing waited), sparse (too few completions), stall (throughput halved and units ran twice as long with nothing moved), restore (moves down did not bring the stretch down, or cost throughput: the capacity went back up), probe (the stretch held near the target: a move down, kept where the work holds).", []string{"decision"}, nil)
	descLastDec   = prometheus.NewDesc("gatekeeper_admission_capacity_last_decision", "1 for the adaptive capacity's last decision, 0 for the others.", []string{"decision"}, nil)
	descStretch   = prometheus.NewDesc("gatekeeper_admission_capacity_stretch_ratio", "How many times longer than alone the units of the adaptive capacity's last window ran, averaged over them (1: as fast as alone).", nil, nil)
	descAlone     = prometheus.NewDesc("gatekeeper_admission_capacity_alone_seconds", "What the stretch divides by: the time alone of the units of the adaptive capacity's last window, from their types' solo times (geometric mean over the units).", nil, nil)
	descTarget    = prometheus.NewDesc("gatekeeper_admission_capacity_target_stretch_ratio", "The stretch the adaptive capacity moves towards (admission.capacity_stretch).", nil, nil)
	descSizeFloor = prometheus.NewDesc("gatekeeper_admission_capacity_size_floor_seconds", "The least capacity the adaptive capacity keeps: twice the size of the units that did most of its last window's work (0 before a window told it).", nil, nil)
	descMaxRun    = prometheus.NewDesc("gatekeeper_admission_capacity_max_running", "The most units the adaptive capacity lets run at once: twice the target stretch times the units the database runs at once for each unit of stretch (0 before its windows told it).", nil, nil)
	descSolo      = prometheus.NewDesc("gatekeeper_admission_capacity_solo_checks_total", "Solo checks of the adaptive capacity: short spells that run one unit at a time, to time each type alone.", nil, nil)
	descPhase     = prometheus.NewDesc("gatekeeper_admission_capacity_phase", "1 for where the adaptive capacity stands, 0 for the others: start (the knee not found yet: it grows multiplicatively while units wait under the target), settle (moves in proportion to the error), probe (a solo check times units alone).", []string{"phase"}, nil)
	descError     = prometheus.NewDesc("gatekeeper_admission_capacity_error_ratio", "The adaptive capacity's last window's error: the target stretch over the stretch it moved by (1: on target; over 1: room for more units; 0: not measured).", nil, nil)
	descMove      = prometheus.NewDesc("gatekeeper_admission_capacity_last_move_ratio", "The adaptive capacity's last move: the capacity it set over the one before (1: held).", nil, nil)
	descProbing   = prometheus.NewDesc("gatekeeper_admission_capacity_probe_seconds_total", "Time spent in solo checks (probes of the time alone), during which units ran one at a time: the cost of measuring it.", nil, nil)
	descPolRate   = prometheus.NewDesc("gatekeeper_admission_policer_rate", "A rate policer's current rate, units per second.", []string{"policer"}, nil)
	descPolUnits  = prometheus.NewDesc("gatekeeper_admission_policer_units_total", "Units a rate policer matched, by outcome (allowed, refused), since it was configured.", []string{"policer", "outcome"}, nil)
)

func (c *admissionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descQueued, descBlocked, descRunning, descLoad, descCapacity,
		descOpenTxns, descAdmitted, descWaited, descB, descActive, descAdmitNew, descReserve, descLane, descParked, descLaneRate, descQuickWait,
		descPolRate, descPolUnits, descDecisions, descLastDec, descStretch, descAlone, descTarget, descSizeFloor, descMaxRun, descSolo,
		descPhase, descError, descMove, descProbing} {
		ch <- d
	}
}

func (c *admissionCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.ctl.Snapshot()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descQueued, float64(s.Queued))
	gauge(descBlocked, float64(s.Blocked))
	gauge(descRunning, float64(s.Running))
	gauge(descLoad, s.Load.Seconds())
	gauge(descCapacity, s.Capacity.Seconds())
	gauge(descOpenTxns, float64(s.OpenTxns))
	ch <- prometheus.MustNewConstMetric(descAdmitted, prometheus.CounterValue, float64(s.Admitted))
	ch <- prometheus.MustNewConstMetric(descWaited, prometheus.CounterValue, float64(s.Counters.Queued))
	gauge(descB, float64(s.BlockingQueue))
	gauge(descActive, float64(s.Active))
	admitNew := 0.0
	if s.AdmitNew {
		admitNew = 1
	}
	gauge(descAdmitNew, admitNew)
	gauge(descReserve, s.Reserve.Seconds())
	gauge(descLane, float64(s.Lane))
	gauge(descParked, float64(s.Parked))
	gauge(descLaneRate, s.LaneRate)
	gauge(descQuickWait, s.QuickWait.Seconds())
	if s.Auto.Enabled {
		for _, d := range admission.Decisions[1:] {
			ch <- prometheus.MustNewConstMetric(descDecisions, prometheus.CounterValue, float64(s.Auto.Decided[d]), d.String())
			last := 0.0
			if s.Auto.Last == d {
				last = 1
			}
			gauge(descLastDec, last, d.String())
		}
		gauge(descStretch, s.Auto.Stretch)
		gauge(descAlone, s.Auto.Alone.Seconds())
		gauge(descTarget, s.Auto.Target)
		gauge(descSizeFloor, s.Auto.SizeFloor.Seconds())
		gauge(descMaxRun, float64(s.Auto.MaxRunning))
		ch <- prometheus.MustNewConstMetric(descSolo, prometheus.CounterValue, float64(s.Auto.Solo))
		for _, p := range admission.Phases {
			on := 0.0
			if s.Auto.Phase == p {
				on = 1
			}
			gauge(descPhase, on, p.String())
		}
		gauge(descError, s.Auto.Error)
		gauge(descMove, s.Auto.Move)
		ch <- prometheus.MustNewConstMetric(descProbing, prometheus.CounterValue, s.Auto.Probing.Seconds())
	}
	for _, p := range c.policers().States() {
		ch <- prometheus.MustNewConstMetric(descPolRate, prometheus.GaugeValue, p.Rate, p.Name)
		ch <- prometheus.MustNewConstMetric(descPolUnits, prometheus.CounterValue, float64(p.Allowed), p.Name, "allowed")
		ch <- prometheus.MustNewConstMetric(descPolUnits, prometheus.CounterValue, float64(p.Refused), p.Name, "refused")
	}
}

// backendAdmissionCollector exports each backend's controller when reads are routed.
type backendAdmissionCollector struct {
	ctls  []*admission.Controller
	names []string
}

var (
	descBackendCapacity = prometheus.NewDesc("gatekeeper_backend_admission_capacity_seconds", "With read routing: the backend's own capacity (the primary's is gatekeeper_admission_capacity_seconds).", []string{"backend"}, nil)
	descBackendLoad     = prometheus.NewDesc("gatekeeper_backend_admission_load_seconds", "With read routing: expected cost of the units running on the backend.", []string{"backend"}, nil)
	descBackendRunning  = prometheus.NewDesc("gatekeeper_backend_admission_running", "With read routing: admitted units running on the backend.", []string{"backend"}, nil)
	descBackendQueued   = prometheus.NewDesc("gatekeeper_backend_admission_queue_length", "With read routing: units waiting for the backend's capacity.", []string{"backend"}, nil)
)

func (c *backendAdmissionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBackendCapacity, descBackendLoad, descBackendRunning, descBackendQueued} {
		ch <- d
	}
}

func (c *backendAdmissionCollector) Collect(ch chan<- prometheus.Metric) {
	for i, ctl := range c.ctls {
		s := ctl.Snapshot()
		g := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, c.names[i])
		}
		g(descBackendCapacity, s.Capacity.Seconds())
		g(descBackendLoad, s.Load.Seconds())
		g(descBackendRunning, float64(s.Running))
		g(descBackendQueued, float64(s.Queued))
	}
}
