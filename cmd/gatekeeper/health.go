package main

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
	"github.com/gatekeeperdb/gatekeeper/internal/topology"
)

// healthCollector exports at each scrape whether the primary answers and whether the proxy
// is ready, as /readyz would answer: alert rules need them as series. The probe reuses a
// recent result, so scrapes add no connections of their own to the database.
type healthCollector struct {
	primary   prober
	ready     admin.CheckFunc
	upDesc    *prometheus.Desc
	readyDesc *prometheus.Desc
}

var _ prometheus.Collector = (*healthCollector)(nil)

// prober checks that a server answers (replicas.Probe).
type prober interface {
	Check(ctx context.Context) error
	Addr() string
}

var (
	_ prober = (*replicas.Probe)(nil)
	_ prober = (*primaryProbe)(nil)
)

// primaryProbe probes the primary of the moment: the one the topology names, so that
// after a failover readiness follows the promoted server, not the configured one.
type primaryProbe struct {
	top      *topology.Topology // nil: the configured primary alone
	fixed    string
	timeout  time.Duration
	mu       sync.Mutex
	byServer map[string]*replicas.Probe
}

func newPrimaryProbe(top *topology.Topology, configured string, timeout time.Duration) *primaryProbe {
	return &primaryProbe{top: top, fixed: configured, timeout: timeout, byServer: map[string]*replicas.Probe{}}
}

func (p *primaryProbe) probe() *replicas.Probe {
	addr := p.fixed
	if p.top != nil {
		addr = p.top.Primary()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pr := p.byServer[addr]
	if pr == nil {
		pr = replicas.NewProbe(addr, p.timeout, 2*time.Second)
		p.byServer[addr] = pr
	}
	return pr
}

func (p *primaryProbe) Check(ctx context.Context) error { return p.probe().Check(ctx) }
func (p *primaryProbe) Addr() string                    { return p.probe().Addr() }

func newHealthCollector(primary prober, ready admin.CheckFunc) *healthCollector {
	return &healthCollector{
		primary: primary,
		ready:   ready,
		upDesc: prometheus.NewDesc("gatekeeper_backend_up",
			"1 when the backend answered with a greeting at the last check, 0 when not.",
			[]string{"backend", "role"}, nil),
		readyDesc: prometheus.NewDesc("gatekeeper_ready",
			"1 when the proxy is ready (the primary answers and the proxy is not draining), as /readyz says; 0 when not.",
			nil, nil),
	}
}

func (c *healthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.upDesc
	ch <- c.readyDesc
}

func (c *healthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ch <- prometheus.MustNewConstMetric(c.upDesc, prometheus.GaugeValue,
		one(c.primary.Check(ctx) == nil), c.primary.Addr(), "primary")
	ch <- prometheus.MustNewConstMetric(c.readyDesc, prometheus.GaugeValue, one(c.ready(ctx) == nil))
}

func one(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
