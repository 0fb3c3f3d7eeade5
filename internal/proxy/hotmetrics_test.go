package proxy

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
)

// The striped histogram shows what a Prometheus histogram fed the same durations shows.
func TestHotHistogramMatchesPrometheus(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	ref := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ref", Buckets: latencyBuckets})
	rng := rand.New(rand.NewPCG(1, 2))
	var sum time.Duration
	for i := range 5000 {
		// From a microsecond to a minute, bounds included.
		d := time.Duration(float64(time.Microsecond) * float64(int64(1)<<rng.IntN(26)) * rng.Float64())
		if i < len(latencyBuckets) {
			d = time.Duration(latencyBuckets[i] * float64(time.Second))
		}
		sum += d
		m.hot.stripe(uint64(i)).unitBusy.observe(d)
		ref.Observe(d.Seconds())
	}
	var want dto.Metric
	require.NoError(t, ref.Write(&want))
	got := family(t, reg, "gatekeeper_unit_busy_seconds").Metric[0].Histogram
	require.Equal(t, want.Histogram.GetSampleCount(), got.GetSampleCount())
	require.InDelta(t, sum.Seconds(), got.GetSampleSum(), 1e-9)
	require.Len(t, got.Bucket, len(want.Histogram.Bucket))
	for i, b := range want.Histogram.Bucket {
		require.Equal(t, b.GetUpperBound(), got.Bucket[i].GetUpperBound())
		require.Equal(t, b.GetCumulativeCount(), got.Bucket[i].GetCumulativeCount(), "bucket le=%g", b.GetUpperBound())
	}
}

// A scrape sums every stripe, and every series is there from the start.
func TestHotMetricsSumTheStripes(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	commands := family(t, reg, "gatekeeper_client_commands_total")
	require.Equal(t, 0.0, value(commands, "command", "query"))
	require.Equal(t, 0.0, value(commands, "command", "unknown"))
	require.Len(t, family(t, reg, "gatekeeper_statement_duration_seconds").Metric, len(timedCommands)+1)

	for id := range uint64(3 * len(m.hot.stripes)) {
		s := m.hot.stripe(id)
		s.commands[mysql.COM_QUERY].Add(1)
		s.commands[0xee].Add(1) // no such command
		s.statement[m.hot.timedSeries[mysql.COM_QUERY]].observe(time.Millisecond)
		s.statement[m.hot.timedSeries[mysql.COM_PING]].observe(time.Millisecond)
		s.units[unitTransaction].Add(1)
		s.bytesIn.Add(10)
		s.bytesOut.Add(100)
		s.classified[classify.Read].Add(1)
		s.unsure.Add(1)
	}
	n := float64(3 * len(m.hot.stripes))
	commands = family(t, reg, "gatekeeper_client_commands_total")
	require.Equal(t, n, value(commands, "command", "query"))
	require.Equal(t, n, value(commands, "command", "unknown"))
	statements := family(t, reg, "gatekeeper_statement_duration_seconds")
	for _, name := range []string{"query", "other"} {
		require.Equal(t, uint64(n), find(statements, "command", name).Histogram.GetSampleCount(), name)
	}
	require.Equal(t, uint64(0), find(statements, "command", "stmt_execute").Histogram.GetSampleCount())
	units := family(t, reg, "gatekeeper_units_total")
	require.Equal(t, n, value(units, "kind", "transaction"))
	require.Equal(t, 0.0, value(units, "kind", "statement"))
	require.Equal(t, 10*n, family(t, reg, "gatekeeper_client_received_bytes_total").Metric[0].Counter.GetValue())
	require.Equal(t, 100*n, family(t, reg, "gatekeeper_client_sent_bytes_total").Metric[0].Counter.GetValue())
	require.Equal(t, n, value(family(t, reg, "gatekeeper_statements_classified_total"), "kind", classify.Read.String()))
	require.Equal(t, n, family(t, reg, "gatekeeper_statements_unsure_total").Metric[0].Counter.GetValue())
}

func family(t *testing.T, reg *prometheus.Registry, name string) *dto.MetricFamily {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			return f
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

func find(f *dto.MetricFamily, label, val string) *dto.Metric {
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if l.GetName() == label && l.GetValue() == val {
				return m
			}
		}
	}
	return nil
}

func value(f *dto.MetricFamily, label, val string) float64 {
	m := find(f, label, val)
	if m == nil {
		return -1
	}
	return m.Counter.GetValue()
}
