package estimator

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
)

func gather(t *testing.T, c prometheus.Collector) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatalf("Register: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	return mfs
}

// typeLabels returns, sorted, the "type" label values of the family name.
func typeLabels(mfs []*dto.MetricFamily, name string) []string {
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "type" {
					out = append(out, l.GetValue())
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestCollectorMetricNamesLint(t *testing.T) {
	tab, _ := newTable(t, Config{MaxTypes: 2})
	for k := Key(1); k <= 4; k++ {
		tab.Record(k, nil, time.Duration(k)*time.Millisecond)
	}
	mfs := gather(t, NewCollector(tab, 10))
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	want := []string{
		"gatekeeper_estimator_cost_seconds",
		"gatekeeper_estimator_estimated_cost_seconds",
		"gatekeeper_estimator_evictions_total",
		"gatekeeper_estimator_load_share_ratio",
		"gatekeeper_estimator_tracked_types",
	}
	if !slices.Equal(names, want) {
		t.Errorf("families %v, want %v", names, want)
	}
}

func TestCollectorValues(t *testing.T) {
	tab, _ := newTable(t, Config{})
	for range 100 {
		tab.Record(0xab, nil, 20*time.Millisecond)
	}
	mfs := gather(t, NewCollector(tab, 5))
	byName := make(map[string]*dto.MetricFamily)
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	tests := []struct {
		family string
		got    func(*dto.Metric) float64
		want   float64
	}{
		{"gatekeeper_estimator_estimated_cost_seconds", func(m *dto.Metric) float64 { return m.GetGauge().GetValue() }, 0.020},
		{"gatekeeper_estimator_load_share_ratio", func(m *dto.Metric) float64 { return m.GetGauge().GetValue() }, 1},
		{"gatekeeper_estimator_cost_seconds", func(m *dto.Metric) float64 { return float64(m.GetSummary().GetSampleCount()) }, 100},
		{"gatekeeper_estimator_cost_seconds", func(m *dto.Metric) float64 { return m.GetSummary().GetSampleSum() }, 2},
		{"gatekeeper_estimator_tracked_types", func(m *dto.Metric) float64 { return m.GetGauge().GetValue() }, 1},
		{"gatekeeper_estimator_evictions_total", func(m *dto.Metric) float64 { return m.GetCounter().GetValue() }, 0},
	}
	for _, tt := range tests {
		mf := byName[tt.family]
		if mf == nil || len(mf.GetMetric()) != 1 {
			t.Errorf("%s: missing, or not exactly one series", tt.family)
			continue
		}
		if got := tt.got(mf.GetMetric()[0]); got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("%s = %v, want %v", tt.family, got, tt.want)
		}
	}
	if got := typeLabels(mfs, "gatekeeper_estimator_estimated_cost_seconds"); !slices.Equal(got, []string{"00000000000000ab"}) {
		t.Errorf("type labels %v, want [00000000000000ab]", got)
	}
	q := byName["gatekeeper_estimator_cost_seconds"].GetMetric()[0].GetSummary().GetQuantile()
	if len(q) != 3 {
		t.Fatalf("%d quantiles, want 3", len(q))
	}
	for _, qq := range q {
		if v := time.Duration(qq.GetValue() * 1e9); !near(v, 20*time.Millisecond) {
			t.Errorf("quantile %v = %v, want about 20ms", qq.GetQuantile(), v)
		}
	}
}

func TestCollectorExportsOnlyTopTypes(t *testing.T) {
	tab, clock := newTable(t, Config{})
	record := func(k Key, n int, cost time.Duration) {
		for range n {
			tab.Record(k, nil, cost)
		}
	}
	record(1, 10, 100*time.Millisecond) // share 1000ms
	record(2, 10, 50*time.Millisecond)  // 500ms
	record(3, 10, 10*time.Millisecond)  // 100ms
	c := NewCollector(tab, 2)
	const family = "gatekeeper_estimator_estimated_cost_seconds"
	if got, want := typeLabels(gather(t, c), family), []string{nameOf(1), nameOf(2)}; !slices.Equal(got, want) {
		t.Errorf("top 2 by share: %v, want %v", got, want)
	}

	// Past the horizon type 3 is the only one still busy: type 2 drops out of the top.
	clock.Advance(2 * time.Minute)
	record(3, 10, 10*time.Millisecond)
	got := typeLabels(gather(t, c), family)
	if !slices.Contains(got, nameOf(3)) || slices.Contains(got, nameOf(2)) || len(got) != 2 {
		t.Errorf("after type 3 took the load: %v, want type 3 in and type 2 out of a top 2", got)
	}
	for _, fam := range []string{"gatekeeper_estimator_cost_seconds", "gatekeeper_estimator_load_share_ratio"} {
		if n := len(typeLabels(gather(t, c), fam)); n != 2 {
			t.Errorf("%s: %d series, want 2", fam, n)
		}
	}
}
