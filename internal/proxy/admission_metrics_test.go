package proxy

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
)

// A lengthy unit kept out only by a full lane shows as parked, and in the queue length.
func TestAdmissionCollectorShowsTheLengthyLane(t *testing.T) {
	ctl := admission.New(admission.Config{
		Capacity: 100 * time.Millisecond, Discipline: admission.FIFO,
		QueueTimeout: 10 * time.Second, MaxQueue: 10,
		Reserve: admission.ReserveConfig{Floor: 50 * time.Millisecond, QuickCutoff: 20 * time.Millisecond, LengthyLane: 1},
	}, admission.NewManualClock(time.Unix(1_700_000_000, 0)))
	var inLane, parked, quick admission.Ticket
	st, err := ctl.Arrive(&inLane, admission.Request{Cost: 60 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, admission.Admitted, st)
	st, err = ctl.Arrive(&parked, admission.Request{Cost: 30 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, admission.Queued, st)
	st, err = ctl.Arrive(&quick, admission.Request{Cost: 10 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, admission.Admitted, st, "the quick unit uses the reserve past the parked one")

	reg := lintedRegistry(t, ctl)
	for name, want := range map[string]float64{
		"gatekeeper_admission_lengthy_lane":   1,
		"gatekeeper_admission_lengthy_parked": 1,
		"gatekeeper_admission_queue_length":   1,
		"gatekeeper_admission_running":        2,
	} {
		got, err := gaugeValue(reg, name)
		require.NoError(t, err)
		require.Equal(t, want, got, name)
	}

	waiting := ctl.Waiting(10)
	require.Len(t, waiting, 1)
	require.True(t, waiting[0].Parked, "/api/v1/queue marks the unit that waits for the lane")

	ctl.Release(&inLane, 60*time.Millisecond)
	got, err := gaugeValue(reg, "gatekeeper_admission_lengthy_parked")
	require.NoError(t, err)
	require.Zero(t, got, "the parked unit runs once the lane is free")
}

// lintedRegistry registers ctl's collector, with no policers, and checks that what it
// exports passes the linter.
func lintedRegistry(t *testing.T, ctl *admission.Controller) *prometheus.Registry {
	t.Helper()
	policers, err := admission.NewPolicers(nil, time.Unix(1_700_000_000, 0))
	require.NoError(t, err)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(&admissionCollector{ctl: ctl, policers: func() *admission.Policers { return policers }}))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	require.NoError(t, err)
	require.Empty(t, problems)
	return reg
}

func gaugeValue(g prometheus.Gatherer, name string) (float64, error) {
	mfs, err := g.Gather()
	if err != nil {
		return 0, err
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue(), nil
		}
	}
	return 0, fmt.Errorf("no single gauge %s among %d families", name, len(mfs))
}

// With the adaptive capacity on, its gauges are exported and pass the linter; before its
// first window the stretch and the time alone it divides by read 0.
func TestAdmissionCollectorShowsTheAdaptiveCapacity(t *testing.T) {
	ctl := admission.New(admission.Config{
		Capacity: 10 * time.Millisecond, Discipline: admission.SJF, QueueTimeout: time.Second, MaxQueue: 10,
		Auto: admission.AutoConfig{Enabled: true, Min: time.Millisecond, Max: time.Second},
	}, admission.NewManualClock(time.Unix(1_700_000_000, 0)))
	reg := lintedRegistry(t, ctl)
	for _, name := range []string{"gatekeeper_admission_capacity_stretch_ratio", "gatekeeper_admission_capacity_alone_seconds", "gatekeeper_admission_capacity_size_floor_seconds", "gatekeeper_admission_capacity_max_running"} {
		got, err := gaugeValue(reg, name)
		require.NoError(t, err)
		require.Zero(t, got, name)
	}
	got, err := gaugeValue(reg, "gatekeeper_admission_capacity_target_stretch_ratio")
	require.NoError(t, err)
	require.Equal(t, 2.5, got, "the default target")
}
