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

// The sessions' histograms show what Prometheus histograms fed the same durations show,
// the wait for admission with its bucket at 0.
func TestHotHistogramsMatchPrometheus(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	busy := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "busy", Buckets: latencyBuckets})
	wait := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "wait", Buckets: append([]float64{0}, latencyBuckets...)})
	rng := rand.New(rand.NewPCG(1, 2))
	var sum time.Duration
	counts := []*sessionCounts{m.hot.open(), m.hot.open(), m.hot.open()}
	for i := range 5000 {
		// From zero to a minute, bounds included.
		d := time.Duration(float64(time.Microsecond) * float64(int64(1)<<rng.IntN(26)) * rng.Float64())
		if i < len(latencyBuckets) {
			d = time.Duration(latencyBuckets[i] * float64(time.Second))
		}
		if i%50 == 0 {
			d = 0
		}
		sum += d
		c := counts[i%len(counts)]
		c.unitBusy.observe(d)
		c.waits.observe(d)
		busy.Observe(d.Seconds())
		wait.Observe(d.Seconds())
		if i == 4000 {
			m.hot.close(counts[0]) // ended sessions count on
			counts = counts[1:]
		}
	}
	for name, ref := range map[string]prometheus.Histogram{"gatekeeper_unit_busy_seconds": busy, "gatekeeper_admission_wait_seconds": wait} {
		var want dto.Metric
		require.NoError(t, ref.Write(&want))
		got := family(t, reg, name).Metric[0].Histogram
		require.Equal(t, want.Histogram.GetSampleCount(), got.GetSampleCount(), name)
		require.InDelta(t, sum.Seconds(), got.GetSampleSum(), 1e-9, name)
		require.Len(t, got.Bucket, len(want.Histogram.Bucket), name)
		for i, b := range want.Histogram.Bucket {
			require.Equal(t, b.GetUpperBound(), got.Bucket[i].GetUpperBound(), name)
			require.Equal(t, b.GetCumulativeCount(), got.Bucket[i].GetCumulativeCount(), "%s le=%g", name, b.GetUpperBound())
		}
	}
}

// A scrape sums the counts of every session, running or ended, and every series is
// there from the start.
func TestHotMetricsSumTheSessions(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	commands := family(t, reg, "gatekeeper_client_commands_total")
	require.Equal(t, 0.0, value(commands, "command", "query"))
	require.Equal(t, 0.0, value(commands, "command", "unknown"))
	require.Len(t, family(t, reg, "gatekeeper_statement_duration_seconds").Metric, len(timedCommands)+1)

	const sessions = 5
	for i := range sessions {
		c := m.hot.open()
		m.hot.command(c, mysql.COM_QUERY)
		m.hot.command(c, 0xee) // no such command
		m.hot.statement(c, mysql.COM_QUERY).observe(time.Millisecond)
		m.hot.statement(c, mysql.COM_PING).observe(time.Millisecond)
		c.units[unitTransaction].add(1)
		c.bytesIn.add(10)
		c.bytesOut.add(100)
		c.classified[classify.Read].add(1)
		c.unsure.add(1)
		if i%2 == 0 {
			m.hot.close(c)
		}
	}
	require.Len(t, m.hot.live, sessions/2)
	n := float64(sessions)
	commands = family(t, reg, "gatekeeper_client_commands_total")
	require.Equal(t, n, value(commands, "command", "query"))
	require.Equal(t, n, value(commands, "command", "unknown"))
	require.Equal(t, 0.0, value(commands, "command", "ping"))
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
