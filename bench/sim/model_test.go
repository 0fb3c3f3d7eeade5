package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
)

func tpcw(t *testing.T) *Mix {
	t.Helper()
	mix, err := NewMix(TPCW, false, 0.5)
	require.NoError(t, err)
	return mix
}

var twoCores = DatabaseConfig{Cores: 2, Knee: 32, Penalty: 0.004}

func fifoAdmission(timeout time.Duration) *admission.Config {
	return &admission.Config{Capacity: 8 * time.Second, MaxConcurrency: 16, QueueTimeout: timeout, MaxQueue: 1 << 20}
}

func TestDeterministic(t *testing.T) {
	mix := tpcw(t)
	configs := map[string]Config{
		"closed": {Database: twoCores, Mix: mix, Admission: fifoAdmission(time.Minute),
			Closed: &ClosedLoop{Clients: 250, Think: 7 * time.Second}, Warmup: 20 * time.Second, Duration: 60 * time.Second},
		"open": {Database: twoCores, Mix: mix, Admission: fifoAdmission(time.Second),
			Open: &OpenLoop{Arrivals: Poisson(30)}, Duration: 60 * time.Second},
		"sessions": {Database: twoCores, Mix: mix, Admission: &admission.Config{Capacity: 8 * time.Second, QueueTimeout: time.Minute, MaxQueue: 1000,
			Sessions: admission.SessionConfig{ActiveLimit: 8, BlockingQueue: 4}},
			Sessions: &SessionLoad{Arrivals: Bursty(1, 5, 0.5, 20*time.Second), Count: 300, MinLength: 5, MaxLength: 35, Think: 7 * time.Second}},
	}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			cfg.Seed = 42
			a, err := Run(cfg)
			require.NoError(t, err)
			b, err := Run(cfg)
			require.NoError(t, err)
			require.Equal(t, a, b, "the same seed gives the same result")
			require.NotZero(t, a.Completed)
			cfg.Seed = 43
			c, err := Run(cfg)
			require.NoError(t, err)
			require.NotEqual(t, a.All, c.All, "another seed, another run")
		})
	}
}

func TestClosedLoopKeepsTheDatabaseBusy(t *testing.T) {
	// Clients that never think keep as many requests in the database as there are
	// clients: with one or two clients on two cores every request runs at full speed, so
	// the throughput is clients / mean time per interaction.
	mix := tpcw(t)
	for _, clients := range []int{1, 2} {
		for _, direct := range []bool{true, false} {
			cfg := Config{Seed: 1, Database: twoCores, Mix: mix,
				Closed: &ClosedLoop{Clients: clients}, Duration: 2000 * time.Second}
			if !direct {
				cfg.Admission = fifoAdmission(time.Minute)
			}
			res, err := Run(cfg)
			require.NoError(t, err)
			want := float64(clients) / mix.MeanDemand().Seconds()
			require.InEpsilon(t, want, res.Throughput, 0.05, "clients=%d direct=%v", clients, direct)
			require.LessOrEqual(t, res.MaxRunning, clients)
			require.Zero(t, res.All.MeanWait(), "nothing waits for admission")
		}
	}
}

func TestAdmissionBoundsConcurrency(t *testing.T) {
	mix := tpcw(t)
	cfg := Config{Seed: 1, Database: twoCores, Mix: mix, Admission: fifoAdmission(time.Hour),
		Closed: &ClosedLoop{Clients: 300, Think: 7 * time.Second}, Warmup: 60 * time.Second, Duration: 300 * time.Second}
	res, err := Run(cfg)
	require.NoError(t, err)
	require.Equal(t, 16, res.MaxRunning, "max_concurrency holds")
	require.Zero(t, res.Refused)
	require.Positive(t, res.All.MeanWait())
	cfg.Admission = nil
	res, err = Run(cfg)
	require.NoError(t, err)
	require.Greater(t, res.MaxRunning, 100, "direct lets everything in")
}

func TestOpenLoopRefusesPastSaturation(t *testing.T) {
	mix := tpcw(t)
	res, err := Run(Config{Seed: 1, Database: twoCores, Mix: mix, Admission: fifoAdmission(2 * time.Second),
		Open: &OpenLoop{Arrivals: Poisson(60)}, Duration: 120 * time.Second})
	require.NoError(t, err)
	require.Positive(t, res.Refused)
	require.Equal(t, int(res.Admission.TimedOut), res.Refused, "every refusal is a timeout")
	sum := 0
	for _, n := range res.RefusedByClass {
		sum += n
	}
	require.Equal(t, res.Refused, sum)
	// Each answered interaction waited at most the timeout.
	for _, c := range res.Classes {
		require.LessOrEqual(t, c.MeanWait(), 2*time.Second)
	}
}

func TestSessionsAllEnd(t *testing.T) {
	mix := tpcw(t)
	for _, aggressive := range []bool{false, true} {
		for _, b := range []int{0, 4, 64} {
			res, err := Run(Config{Seed: 3, Database: twoCores, Mix: mix,
				Admission: &admission.Config{Capacity: 8 * time.Second, MaxConcurrency: 16, QueueTimeout: 30 * time.Second, MaxQueue: 1 << 20,
					Sessions: admission.SessionConfig{ActiveLimit: 16, BlockingQueue: b, Aggressive: aggressive}},
				Sessions: &SessionLoad{Arrivals: Bursty(1.5, 5, 0.5, 60*time.Second), Count: 1000, MinLength: 5, MaxLength: 35, Think: 7 * time.Second}})
			require.NoError(t, err)
			s := res.Sessions
			require.Equal(t, 1000, s.Arrived)
			require.Equal(t, s.Arrived, s.Rejected+s.Aborted+s.Completed, "every session ended one way")
			require.LessOrEqual(t, s.Aborted, s.Accepted)
			a := res.Admission
			require.Zero(t, a.Running+a.Queued+a.Blocked+a.Active, "the controller ends empty")
			require.Equal(t, int(a.NewSessionRefused+a.SessionAborted+a.TimedOut), res.Refused)
			if b == 0 {
				require.Positive(t, s.Aborted, "bursts abort sessions without a blocking queue")
			}
		}
	}
}

// TestCollectOutOfOrder: when the controller admits a unit that arrived after another of its
// class still waiting, the simulator finds it all the same.
func TestCollectOutOfOrder(t *testing.T) {
	cfg := Config{Database: twoCores, Mix: tpcw(t), Open: &OpenLoop{Arrivals: Poisson(1)}, Duration: time.Second,
		Admission: &admission.Config{Capacity: 9 * time.Millisecond, Discipline: admission.SJF, QueueTimeout: time.Minute, MaxQueue: 10}}
	require.NoError(t, cfg.Validate())
	s := newRun(cfg)
	f := s.fronts[0]
	arrive := func(cost time.Duration) *request {
		r := &request{class: 0, demand: 1, fr: f}
		st, err := f.ctl.Arrive(&r.ticket, admission.Request{Cost: cost})
		require.NoError(t, err)
		if st == admission.Queued {
			r.waiting = true
			f.waiting.add(r)
		}
		return r
	}
	running := arrive(9 * time.Millisecond)
	first := arrive(8 * time.Millisecond)
	second := arrive(2 * time.Millisecond)
	require.Equal(t, 2, f.waiting.n)
	f.ctl.Release(&running.ticket, time.Millisecond)
	s.collect(f)
	require.Equal(t, admission.Admitted, second.ticket.State(), "SJF admits the cheaper, later one")
	require.Equal(t, admission.Queued, first.ticket.State())
	require.Equal(t, 1, f.waiting.n)
	require.Same(t, first, f.waiting.front(0))
	require.Equal(t, 1, s.cluster.backends[0].db.Running(), "the admitted one went to the database")
	require.False(t, second.waiting)
}

func TestValidate(t *testing.T) {
	mix := tpcw(t)
	closed := &ClosedLoop{Clients: 1}
	tests := map[string]Config{
		"no load":      {Database: twoCores, Mix: mix, Duration: time.Second},
		"two loads":    {Database: twoCores, Mix: mix, Duration: time.Second, Closed: closed, Open: &OpenLoop{Arrivals: Poisson(1)}},
		"no mix":       {Database: twoCores, Duration: time.Second, Closed: closed},
		"no time":      {Database: twoCores, Mix: mix, Closed: closed},
		"no cores":     {Mix: mix, Duration: time.Second, Closed: closed},
		"no clients":   {Database: twoCores, Mix: mix, Duration: time.Second, Closed: &ClosedLoop{}},
		"bad policy":   {Database: twoCores, Mix: mix, Duration: time.Second, Closed: closed, Admission: &admission.Config{}},
		"bad rate":     {Database: twoCores, Mix: mix, Duration: time.Second, Open: &OpenLoop{}},
		"bad session":  {Database: twoCores, Mix: mix, Sessions: &SessionLoad{Arrivals: Poisson(1), Count: 1, MinLength: 5, MaxLength: 4}},
		"session time": {Database: twoCores, Mix: mix, Duration: time.Second, Sessions: &SessionLoad{Arrivals: Poisson(1), Count: 1, MinLength: 1, MaxLength: 1}},
	}
	for name, cfg := range tests {
		_, err := Run(cfg)
		require.Error(t, err, name)
	}
}
