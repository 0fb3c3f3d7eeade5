package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/fleet"
	"github.com/gatekeeperdb/gatekeeper/internal/mdtable"
	"github.com/gatekeeperdb/gatekeeper/internal/monitor"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
	"github.com/gatekeeperdb/gatekeeper/internal/wiring"
)

// metricDoc is what the reference says of a metric: its type and its label names, sorted.
type metricDoc struct {
	typ    string
	labels []string
}

func (m metricDoc) String() string {
	return fmt.Sprintf("%s {%s}", m.typ, strings.Join(m.labels, ", "))
}

// recordingRegisterer registers with a real registry, which refuses what /metrics would,
// and keeps every collector so that the test can read what each exports.
type recordingRegisterer struct {
	prometheus.Registerer
	collectors []prometheus.Collector
}

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	if err := r.Registerer.Register(c); err != nil {
		return err
	}
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// metricsConfigs are configurations that together turn every metric on: passthrough with
// admission, policers, the reserve, accounts from the backend and the monitor; and pooled,
// with replicas and the result cache.
func metricsConfigs(t *testing.T) map[string]config.Config {
	t.Helper()
	pass := config.Default()
	pass.Admission.Enabled = true
	pass.Admission.Policers = []config.Policer{{Name: "checkout", Rate: 10, Burst: 10}}
	pass.Admission.Reserve.Floor = 100 * time.Millisecond
	pass.Admission.CapacityMin = 100 * time.Millisecond // the adaptive capacity keeps above the floor
	pass.Admission.Reserve.QuickWaitTarget = 10 * time.Millisecond
	pass.Admission.Sessions.ActiveLimit = 100
	pass.Auth.FromBackend = true
	pass.Monitor.User = "monitor"
	pooled := pass
	pooled.Mode = config.ModePooled
	pooled.Backends.Replicas = []string{"127.0.0.1:1"} // reads are routed
	pooled.Cache.Mode = config.CacheAuto
	pooled.Failover.DurableAcks = config.DurableAcksReplica
	pooled.Fleet.Etcd = []string{"127.0.0.1:1"}
	cfgs := map[string]config.Config{"passthrough": pass, "pooled": pooled}
	for name, c := range cfgs {
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return cfgs
}

// exportedMetrics registers what serve registers for cfg and returns every metric the
// collectors describe, except the Go runtime's and the process's.
func exportedMetrics(t *testing.T, cfg config.Config) map[string]metricDoc {
	t.Helper()
	costs, err := newCostTable(cfg.Estimator)
	if err != nil {
		t.Fatal(err)
	}
	costs.Record(1, []byte("SELECT 1"), time.Millisecond) // so that the per-type series exist
	rec := &recordingRegisterer{Registerer: prometheus.NewRegistry()}
	log := slog.New(slog.DiscardHandler)
	registerMetrics(rec, costs, cfg.Estimator.MetricsTopTypes)
	if _, err := wiring.Proxy(cfg, costs, log, rec); err != nil {
		t.Fatal(err)
	}
	if cfg.Fleet.Enabled() {
		fleet.NewMetrics(rec)
	}
	if cfg.Monitor.User != "" {
		threads, err := monitor.New(cfg.Backends.Primary, cfg.Monitor.User, "", cfg.Monitor.Interval, log)
		if err != nil {
			t.Fatal(err)
		}
		registerThreadsRunning(rec, threads)
	}
	if cfg.Admin.Listen != "" {
		// A primary that refuses at once: the collector reports it down.
		probe := replicas.NewProbe("127.0.0.1:1", time.Second, 2*time.Second)
		rec.MustRegister(newHealthCollector(probe, admin.CheckFunc(func(context.Context) error { return nil })))
	}

	out := map[string]metricDoc{}
	for _, c := range rec.collectors {
		collected := collect(c)
		for _, d := range describe(c) {
			name, labels, err := parseDesc(d)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
				continue
			}
			typ := metricType(c, d, collected)
			if typ == "" {
				t.Errorf("%s: no sample collected, so its type is unknown; make metricsConfigs produce one", name)
			}
			out[name] = metricDoc{typ: typ, labels: labels}
		}
	}
	return out
}

func describe(c prometheus.Collector) []*prometheus.Desc {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }() // ends when Describe returns
	var out []*prometheus.Desc
	for d := range ch {
		out = append(out, d)
	}
	return out
}

func collect(c prometheus.Collector) []prometheus.Metric {
	ch := make(chan prometheus.Metric)
	go func() { c.Collect(ch); close(ch) }() // ends when Collect returns
	var out []prometheus.Metric
	for m := range ch {
		out = append(out, m)
	}
	return out
}

// metricType returns the type of the metric d describes: from the vector's own type, or
// from a sample the collector produced.
func metricType(c prometheus.Collector, d *prometheus.Desc, collected []prometheus.Metric) string {
	switch c.(type) {
	case *prometheus.CounterVec:
		return "counter"
	case *prometheus.GaugeVec:
		return "gauge"
	case *prometheus.HistogramVec:
		return "histogram"
	case *prometheus.SummaryVec:
		return "summary"
	}
	for _, m := range collected {
		if m.Desc() != d {
			continue
		}
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			return ""
		}
		switch {
		case pb.Counter != nil:
			return "counter"
		case pb.Gauge != nil:
			return "gauge"
		case pb.Histogram != nil:
			return "histogram"
		case pb.Summary != nil:
			return "summary"
		case pb.Untyped != nil:
			return "untyped"
		}
	}
	return ""
}

// parseDesc reads the name and the label names (constant and variable) of a Desc from its
// String form, the only place client_golang shows them:
// Desc{fqName: "n", help: "h", constLabels: {a="x",b="y"}, variableLabels: {c,d}}.
func parseDesc(d *prometheus.Desc) (name string, labels []string, err error) {
	s := d.String()
	fail := func() (string, []string, error) { return "", nil, fmt.Errorf("cannot read %s", s) }
	quoted := func(prefix string) (string, bool) {
		var ok bool
		if s, ok = strings.CutPrefix(s, prefix); !ok {
			return "", false
		}
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return "", false
		}
		s = s[len(q):]
		v, err := strconv.Unquote(q)
		return v, err == nil
	}
	var ok bool
	if name, ok = quoted("Desc{fqName: "); !ok {
		return fail()
	}
	if _, ok = quoted(", help: "); !ok {
		return fail()
	}
	if s, ok = strings.CutPrefix(s, ", constLabels: {"); !ok {
		return fail()
	}
	for !strings.HasPrefix(s, "}") {
		s = strings.TrimPrefix(s, ",")
		label, rest, found := strings.Cut(s, "=")
		if !found {
			return fail()
		}
		labels = append(labels, label)
		s = "=" + rest
		if _, ok = quoted("="); !ok {
			return fail()
		}
	}
	vars, ok := strings.CutPrefix(s, "}, variableLabels: {")
	if !ok || !strings.HasSuffix(vars, "}}") {
		return fail()
	}
	if vars = strings.TrimSuffix(vars, "}}"); vars != "" {
		for _, v := range strings.Split(vars, ",") {
			labels = append(labels, strings.TrimSuffix(strings.TrimPrefix(v, "c("), ")"))
		}
	}
	slices.Sort(labels)
	return name, labels, nil
}

// documentedMetrics reads the table headed "| metric | type | labels | meaning |".
func documentedMetrics(text string) (map[string]metricDoc, error) {
	out := map[string]metricDoc{}
	for _, r := range mdtable.Rows(text, "metric", "type", "labels") {
		name, ok := mdtable.OneCode(r.Cells[0])
		if !ok || len(r.Cells) < 4 {
			return nil, fmt.Errorf("line %d: want | `metric` | type | labels | meaning |, got %q", r.Line, strings.Join(r.Cells, " | "))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("line %d: %s is listed twice", r.Line, name)
		}
		labels := mdtable.Code(r.Cells[2])
		slices.Sort(labels)
		out[name] = metricDoc{typ: r.Cells[1], labels: labels}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no table headed | metric | type | labels | meaning |")
	}
	return out, nil
}

// compareMetrics returns what differs between the metrics exported and those documented.
func compareMetrics(exported, documented map[string]metricDoc) []string {
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(exported)) {
		doc, ok := documented[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s (%s) is exported but not documented", name, exported[name]))
		case doc.String() != exported[name].String():
			problems = append(problems, fmt.Sprintf("%s: documented as %s, exported as %s", name, doc, exported[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(documented)) {
		if _, ok := exported[name]; !ok {
			problems = append(problems, fmt.Sprintf("%s is documented but not exported in any mode", name))
		}
	}
	return problems
}

// TestMetricsReference keeps the table of docs/metrics.md equal to what the daemon exports:
// every metric of every mode, with its type and labels. Dashboards and alert rules are
// checked against that table.
func TestMetricsReference(t *testing.T) {
	exported := map[string]metricDoc{}
	for name, cfg := range metricsConfigs(t) {
		for metric, m := range exportedMetrics(t, cfg) {
			if prev, ok := exported[metric]; ok && prev.String() != m.String() {
				t.Errorf("%s: %s in one mode, %s in %s", metric, prev, m, name)
			}
			exported[metric] = m
		}
	}
	text, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	documented, err := documentedMetrics(string(text))
	if err != nil {
		t.Fatalf("docs/metrics.md: %v", err)
	}
	for _, p := range compareMetrics(exported, documented) {
		t.Errorf("docs/metrics.md: %s", p)
	}

	// The comparison fails on drift: a renamed metric, a changed label, a changed type.
	renamed := maps.Clone(documented)
	delete(renamed, "gatekeeper_admission_wait_seconds")
	renamed["gatekeeper_admission_waited_seconds"] = documented["gatekeeper_admission_wait_seconds"]
	relabeled := maps.Clone(documented)
	relabeled["gatekeeper_admission_refused_total"] = metricDoc{typ: "counter", labels: []string{"cause"}}
	retyped := maps.Clone(documented)
	retyped["gatekeeper_admission_refused_total"] = metricDoc{typ: "gauge", labels: []string{"reason"}}
	for name, doc := range map[string]map[string]metricDoc{"renamed": renamed, "relabeled": relabeled, "retyped": retyped} {
		if len(compareMetrics(exported, doc)) == 0 {
			t.Errorf("a %s metric is not reported", name)
		}
	}
}
