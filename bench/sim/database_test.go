package sim

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// serve starts jobs (demand in seconds, at a start time) on a database and returns when each
// finishes, in seconds.
func serve(t *testing.T, cfg DatabaseConfig, jobs []struct{ at, demand float64 }) []float64 {
	t.Helper()
	db := NewDatabase(cfg)
	reqs := make([]request, len(jobs))
	done := map[*request]float64{}
	next := 0
	for len(done) < len(jobs) {
		tdb, busy := db.Next()
		if next < len(jobs) && (!busy || seconds(jobs[next].at) <= tdb) {
			at := seconds(jobs[next].at)
			reqs[next].seq = uint64(next)
			db.Start(&reqs[next], jobs[next].demand, at)
			next++
			continue
		}
		require.True(t, busy, "nothing runs and nothing is left to start")
		finished := db.Finish(tdb, nil)
		require.NotEmpty(t, finished, "the database promised a finish at %s", tdb)
		for _, r := range finished {
			done[r] = tdb.Seconds()
		}
	}
	out := make([]float64, len(jobs))
	for i := range reqs {
		out[i] = done[&reqs[i]]
	}
	return out
}

func TestProcessorSharing(t *testing.T) {
	type job = struct{ at, demand float64 }
	oneCore := DatabaseConfig{Cores: 1, Knee: 100}
	twoCores := DatabaseConfig{Cores: 2, Knee: 100}
	tests := []struct {
		name string
		cfg  DatabaseConfig
		jobs []job
		want []float64
	}{
		{"alone, one core", oneCore, []job{{0, 1}}, []float64{1}},
		{"alone, two cores: a request uses one", twoCores, []job{{0.5, 2}}, []float64{2.5}},
		{"two share one core", oneCore, []job{{0, 1}, {0, 1}}, []float64{2, 2}},
		{"two on two cores", twoCores, []job{{0, 1}, {0, 1}}, []float64{1, 1}},
		{"four share two cores", twoCores, []job{{0, 1}, {0, 1}, {0, 1}, {0, 1}}, []float64{2, 2, 2, 2}},
		// A runs alone for 0.5 s, then A and B at half speed: B's 1 s takes 2 s, A has
		// 0.5 s left and finishes alone.
		{"staggered", oneCore, []job{{0, 2}, {0.5, 1}}, []float64{3, 2.5}},
		// The short one leaves first, the long one speeds up.
		{"short and long", oneCore, []job{{0, 3}, {0, 1}}, []float64{4, 2}},
		// rate(4) = 1/4 / (1 + 0.5*2) = 1/8: each 1 s request takes 8 s instead of 4.
		{"thrashing", DatabaseConfig{Cores: 1, Knee: 2, Penalty: 0.5}, []job{{0, 1}, {0, 1}, {0, 1}, {0, 1}}, []float64{8, 8, 8, 8}},
		// After the first two leave, the last two run under the knee at full shared speed.
		{"thrashing ends", DatabaseConfig{Cores: 1, Knee: 2, Penalty: 0.5}, []job{{0, 1}, {0, 1}, {0, 2}, {0, 2}}, []float64{8, 8, 10, 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := serve(t, tt.cfg, tt.jobs)
			require.InDeltaSlice(t, tt.want, got, 1e-6)
		})
	}
}

func TestRate(t *testing.T) {
	cfg := DatabaseConfig{Cores: 2, Knee: 4, Penalty: 0.25}
	tests := []struct {
		n    int
		want float64 // work per second, n * rate(n)
	}{
		{0, 0}, {1, 1}, {2, 2}, {3, 2}, {4, 2},
		{5, 2 / 1.25}, {8, 2 / 2.0}, {12, 2 / 3.0},
	}
	for _, tt := range tests {
		require.InDelta(t, tt.want, float64(tt.n)*cfg.Rate(tt.n), 1e-12, "n=%d", tt.n)
	}
	// Past the knee, the work done falls with every request added.
	for n := cfg.Knee; n < 100; n++ {
		require.Less(t, float64(n+1)*cfg.Rate(n+1), float64(n)*cfg.Rate(n))
	}
}

func TestDatabaseLongRun(t *testing.T) {
	// Many requests over a long time: every finish comes when promised, and the work done
	// adds up to the demand served.
	db := NewDatabase(DatabaseConfig{Cores: 2, Knee: 8, Penalty: 0.1})
	reqs := make([]request, 20000)
	now, served, demand := time.Duration(0), 0, 0.0
	for i := range reqs {
		reqs[i].seq = uint64(i)
		d := 0.001 + 0.05*math.Mod(float64(i)*0.618, 1)
		demand += d
		db.Start(&reqs[i], d, now)
		now += 20 * time.Millisecond
		for {
			tdb, busy := db.Next()
			if !busy || tdb > now {
				break
			}
			got := db.Finish(tdb, nil)
			require.NotEmpty(t, got)
			served += len(got)
		}
	}
	for db.Running() > 0 {
		tdb, _ := db.Next()
		served += len(db.Finish(tdb, nil))
	}
	require.Equal(t, len(reqs), served)
}

func TestDatabaseConfigValidate(t *testing.T) {
	require.NoError(t, DatabaseConfig{Cores: 1}.Validate())
	require.Error(t, DatabaseConfig{}.Validate())
	require.Error(t, DatabaseConfig{Cores: 1, Knee: -1}.Validate())
	require.Error(t, DatabaseConfig{Cores: 1, Penalty: -1}.Validate())
}
