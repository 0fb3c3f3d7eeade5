package main

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// healthCollector exports at each scrape whether the primary answers and whether the proxy
// is ready, as /readyz would answer: alert rules need them as series. The probe reuses a
// recent result, so scrapes add no connections of their own to the database.
type healthCollector struct {
	primary   *replicas.Probe
	ready     admin.CheckFunc
	upDesc    *prometheus.Desc
	readyDesc *prometheus.Desc
}

var _ prometheus.Collector = (*healthCollector)(nil)

func newHealthCollector(primary *replicas.Probe, ready admin.CheckFunc) *healthCollector {
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
