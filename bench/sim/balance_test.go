package sim

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const ms1 = time.Millisecond

func TestPickersPick(t *testing.T) {
	loads := []load{{requests: 3, work: 500 * ms1}, {requests: 1, work: 900 * ms1}, {requests: 5, work: 200 * ms1}}
	tests := []struct {
		name   string
		picker picker
		loads  []load
		want   []int // picks of successive reads against the same loads
	}{
		{"self: least estimated work, not fewest requests", &leastWork{}, loads, []int{2, 2, 2}},
		{"sqf: fewest requests, not least work", &fewestRequests{}, loads, []int{1, 1, 1}},
		{"rr: in turn, whatever the loads", &roundRobin{}, loads, []int{0, 1, 2, 0, 1}},
		{"self: ties in turn", &leastWork{}, make([]load, 3), []int{0, 1, 2, 0}},
		{"sqf: ties in turn", &fewestRequests{}, make([]load, 3), []int{0, 1, 2, 0}},
		{"self: ties among the least only", &leastWork{}, []load{{work: ms1}, {}, {work: ms1}, {}}, []int{1, 3, 1}},
		{"one backend", &leastWork{}, []load{{requests: 9, work: time.Second}}, []int{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int
			for range tt.want {
				got = append(got, tt.picker.pick(0, tt.loads))
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestLARD(t *testing.T) {
	const low, high = 500 * ms1, 2 * time.Second
	w := func(ws ...time.Duration) []load {
		out := make([]load, len(ws))
		for i, v := range ws {
			out[i] = load{requests: 1, work: v}
		}
		return out
	}
	p := newLARD(2, low, high)
	steps := []struct {
		name  string
		class int
		loads []load
		want  int
	}{
		{"a new class goes to the least loaded", 0, w(300*ms1, 100*ms1, 200*ms1), 1},
		{"and stays there under the high threshold", 0, w(0, 1900*ms1, 0), 1},
		{"over high, none under low: stays", 0, w(600*ms1, 2100*ms1, 700*ms1), 1},
		{"over high, one under low: moves to the least loaded", 0, w(600*ms1, 2100*ms1, 400*ms1), 2},
		{"and stays at its new backend", 0, w(0, 0, 1500*ms1), 2},
		{"at twice high it moves even with none under low", 0, w(3*time.Second, 1*time.Second, 4*time.Second), 1},
		{"another class has its own backend", 1, w(10*ms1, 20*ms1, 5*ms1), 2},
		{"the first class has not moved", 0, w(10*ms1, 20*ms1, 5*ms1), 1},
	}
	for _, st := range steps {
		require.Equal(t, st.want, p.pick(st.class, st.loads), st.name)
	}
}

func TestParseBalance(t *testing.T) {
	for _, b := range Balances {
		got, err := ParseBalance(b.String())
		require.NoError(t, err)
		require.Equal(t, b, got)
	}
	got, err := ParseBalance("SELF")
	require.NoError(t, err)
	require.Equal(t, BalanceSELF, got)
	_, err = ParseBalance("random")
	require.ErrorContains(t, err, "self, lard, sqf, rr")
}

// testCluster is a cluster over the shopping mix, with the mix.
func testCluster(t *testing.T, cfg ClusterConfig) (*cluster, *Mix) {
	t.Helper()
	mix := tpcw(t)
	require.NoError(t, cfg.Validate(mix))
	return newCluster(cfg, twoCores, mix), mix
}

func TestRoute(t *testing.T) {
	read := func(mix *Mix) *request { return &request{class: mix.Index(PointReadClass)} }
	write := func(mix *Mix) *request { return &request{class: mix.Index("Buy Confirm")} }
	outstanding := []load{{requests: 1, work: 2 * time.Second}, {requests: 4, work: 40 * ms1}, {requests: 2, work: 900 * ms1}}

	tests := []struct {
		name      string
		cfg       ClusterConfig
		write     bool
		want      int
		wantReads []int // the backends that take reads
	}{
		{"no replica: the primary reads", ClusterConfig{}, false, 0, []int{0}},
		{"no replica: the primary writes", ClusterConfig{Writes: TPCWWrites}, true, 0, []int{0}},
		{"self: least outstanding work", ClusterConfig{Replicas: 2, Writes: TPCWWrites, PrimaryReads: true}, false, 1, []int{0, 1, 2}},
		{"sqf: fewest outstanding", ClusterConfig{Replicas: 2, Writes: TPCWWrites, PrimaryReads: true, Balance: BalanceSQF}, false, 0, []int{0, 1, 2}},
		{"replicas only: sqf skips the primary", ClusterConfig{Replicas: 2, Writes: TPCWWrites, Balance: BalanceSQF}, false, 2, []int{1, 2}},
		{"a write goes to the primary, however loaded", ClusterConfig{Replicas: 2, Writes: TPCWWrites, PrimaryReads: true}, true, 0, []int{0, 1, 2}},
		{"a write goes to the primary under rr", ClusterConfig{Replicas: 2, Writes: TPCWWrites, Balance: BalanceRR}, true, 0, []int{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mix := testCluster(t, tt.cfg)
			require.Equal(t, tt.wantReads, c.readers)
			for i := range c.backends {
				c.backends[i].sent = outstanding[i]
			}
			r := read(mix)
			if tt.write {
				r = write(mix)
			}
			require.Equal(t, tt.want, c.route(r))
		})
	}
}

func TestSendAndAnsweredKeepTheProxysView(t *testing.T) {
	c, mix := testCluster(t, ClusterConfig{Replicas: 1, PrimaryReads: true})
	r := &request{class: mix.Index(HeavyClass)}
	cost := mix.Mean(r.class)
	require.True(t, c.send(1, r, cost), "no limit: it starts at once")
	require.Equal(t, load{requests: 1, work: cost}, c.backends[1].sent)
	require.Equal(t, 0, c.route(&request{class: mix.Index(PointReadClass)}), "self avoids the backend running a heavy read")
	c.answered(r, cost)
	require.Equal(t, load{}, c.backends[1].sent)
}

func TestLimitHoldsInOrder(t *testing.T) {
	c, _ := testCluster(t, ClusterConfig{Limit: time.Second})
	reqs := make([]request, 4)
	cost := 600 * ms1
	var started []*request
	start := func(r *request) {
		c.backends[0].running += cost
		started = append(started, r)
	}
	for i := range reqs {
		if c.send(0, &reqs[i], cost) {
			start(&reqs[i])
		}
	}
	// 0 starts (0 running), 1 starts (600ms < 1s), 2 and 3 wait (1.2s running).
	require.Equal(t, []*request{&reqs[0], &reqs[1]}, started)
	require.Equal(t, 2, c.held(0))
	require.Equal(t, load{requests: 4, work: 4 * cost}, c.backends[0].sent, "held requests count as outstanding")
	_, ok := c.nextHeld(0)
	require.False(t, ok, "still over the limit")

	c.backends[0].running -= cost // 0 finished: 600ms running, under the limit
	r, ok := c.nextHeld(0)
	require.True(t, ok)
	require.Same(t, &reqs[2], r, "first come first served")
	start(r)
	_, ok = c.nextHeld(0)
	require.False(t, ok)
	c.backends[0].running -= 2 * cost
	r, ok = c.nextHeld(0)
	require.True(t, ok)
	require.Same(t, &reqs[3], r)
	require.Zero(t, c.held(0))
}

func TestClusterRuns(t *testing.T) {
	mix := tpcw(t)
	writes := 0
	run := func(cc ClusterConfig) Result {
		t.Helper()
		res, err := Run(Config{Seed: 5, Database: twoCores, Mix: mix, Cluster: &cc,
			Closed: &ClosedLoop{Clients: 100 * cc.Backends(), Think: 7 * time.Second}, Warmup: 20 * time.Second, Duration: 200 * time.Second})
		require.NoError(t, err)
		require.Len(t, res.Backends, cc.Backends())
		return res
	}
	dbCompleted := func(res Result) int {
		n := res.Completed
		for i, c := range mix.Classes() {
			if c.NoLoad == 0 {
				n -= res.Classes[i].N
			}
		}
		return n
	}

	t.Run("no replica: everything on the primary", func(t *testing.T) {
		for _, b := range Balances {
			res := run(ClusterConfig{Writes: TPCWWrites, ApplyShare: 0.3, Balance: b, LARDLow: ms1, LARDHigh: time.Second})
			bc := res.Backends[0]
			require.Equal(t, dbCompleted(res), bc.Reads+bc.Writes, "%s", b)
			require.Zero(t, bc.Applied)
			writes = bc.Writes
		}
		require.Positive(t, writes)
	})
	for _, b := range Balances {
		t.Run("writes on the primary only: "+b.String(), func(t *testing.T) {
			res := run(ClusterConfig{Replicas: 2, Writes: TPCWWrites, ApplyShare: 0.3, Balance: b, LARDLow: 500 * ms1, LARDHigh: 2 * time.Second})
			require.Positive(t, res.Backends[0].Writes)
			require.Zero(t, res.Backends[0].Reads, "the primary takes no reads unless told")
			for _, bc := range res.Backends[1:] {
				require.Zero(t, bc.Writes, "a replica never takes a client's write")
				require.Positive(t, bc.Reads)
				require.InDelta(t, res.Backends[0].Writes, bc.Applied, 5, "each replica applies the primary's writes")
				require.Positive(t, bc.ApplyWork)
			}
		})
	}
	t.Run("primary reads", func(t *testing.T) {
		res := run(ClusterConfig{Replicas: 2, Writes: TPCWWrites, PrimaryReads: true})
		for _, bc := range res.Backends {
			require.Positive(t, bc.Reads)
			require.Zero(t, bc.Applied, "applying is free at share 0")
		}
	})
	t.Run("rr shares the reads evenly", func(t *testing.T) {
		res := run(ClusterConfig{Replicas: 3, Balance: BalanceRR})
		for _, bc := range res.Backends[2:] {
			require.InEpsilon(t, res.Backends[1].Reads, bc.Reads, 0.01)
		}
	})
	t.Run("a limit holds requests", func(t *testing.T) {
		res := run(ClusterConfig{Replicas: 1, Writes: TPCWWrites, PrimaryReads: true, Limit: 2 * time.Second})
		require.Positive(t, res.Backends[0].MaxHeld)
		require.Positive(t, res.All.MeanWait(), "held requests wait before the database")
	})
}

func TestClusterConfigValidate(t *testing.T) {
	mix := tpcw(t)
	for _, cfg := range []ClusterConfig{
		{Replicas: -1},
		{ApplyShare: -0.1},
		{Balance: Balance(9)},
		{Balance: BalanceLARD},
		{Balance: BalanceLARD, LARDLow: time.Second, LARDHigh: ms1},
		{Limit: -time.Second},
		{Writes: []string{"no such class"}},
	} {
		require.Error(t, cfg.Validate(mix), "%+v", cfg)
	}
}

// balanceSetup is a small experiment: short runs, two cluster sizes, a load near saturation.
func balanceSetup() BalanceSetup {
	s := DefaultBalanceSetup(true)
	s.Replicas = []int{0, 2}
	s.ClientsPerBackend = []int{100, 175}
	s.Detail = 175
	s.Seeds = 2
	s.Warmup, s.Duration = 30*time.Second, 200*time.Second
	return s
}

func TestBalanceExperiment(t *testing.T) {
	s := balanceSetup()
	r, err := RunBalance(s, 3, 2)
	require.NoError(t, err)
	again, err := RunBalance(s, 3, 1)
	require.NoError(t, err)
	require.Equal(t, r, again, "the same seed gives the same results, however many workers")
	other, err := RunBalance(s, 4, 2)
	require.NoError(t, err)
	require.NotEqual(t, r.Runs, other.Runs, "another seed, other runs")

	h := r.Headlines()
	for p, b := range s.Policies {
		require.Greater(t, h.Peak[p][1], 2.5*h.Peak[p][0], "%s: throughput scales with replicas", b)
		require.Equal(t, h.Peak[0][0], h.Peak[p][0], "with no replica the policy does not matter")
	}
	require.Equal(t, 2, sumOf(h.SQFCount[0]), "two loads on one cluster with replicas")

	pt := r.Point(0, 1, 1, 0)
	require.Len(t, pt.Backends, 3)
	require.LessOrEqual(t, pt.MinThroughput, pt.Throughput)
	require.GreaterOrEqual(t, pt.MaxThroughput, pt.Throughput)
	require.Equal(t, r.Runs[0][1][1][0][0].All.N+r.Runs[0][1][1][0][1].All.N, pt.All.N, "the seeds pooled")

	var md bytes.Buffer
	require.NoError(t, r.WriteMarkdown(&md, Meta{Command: "go run ./bench/cmd/sim balance", Machine: "test", GoVersion: "go", Elapsed: time.Second}))
	for _, want := range []string{"## Headlines", "## Without a per-backend limit", "## With a per-backend limit of 8s",
		"### At 175 clients per database", "#### 2 replicas", "| Product Detail | 0.91 ms | 17% |", "![peak throughput](peak-throughput.png)",
		"go run ./bench/cmd/sim balance", "## What the runs show"} {
		require.Contains(t, md.String(), want)
	}
	dir := t.TempDir()
	require.NoError(t, r.WriteCharts(dir))
	for _, c := range r.Charts() {
		info, err := os.Stat(filepath.Join(dir, c.File))
		require.NoError(t, err)
		require.Positive(t, info.Size())
	}
}

func TestBalanceSetupValidate(t *testing.T) {
	mix := tpcw(t)
	for name, change := range map[string]func(*BalanceSetup){
		"no replicas":        func(s *BalanceSetup) { s.Replicas = nil },
		"detail not a load":  func(s *BalanceSetup) { s.Detail = 1 },
		"no clients":         func(s *BalanceSetup) { s.ClientsPerBackend = []int{0} },
		"lard without range": func(s *BalanceSetup) { s.LARDLow = 0 },
		"negative seeds":     func(s *BalanceSetup) { s.Seeds = -1 },
	} {
		s := balanceSetup()
		change(&s)
		require.Error(t, s.Validate(mix), name)
	}
	require.NoError(t, balanceSetup().Validate(mix))
}
