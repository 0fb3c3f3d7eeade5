package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/bookstore"
)

func TestParseModes(t *testing.T) {
	ms, err := parseModes("direct, passthrough,fifo,sjf,sjf-aging-2.5,sjf-last-call-3s,fifo@360ms,sjf@80ms+reserve,fifo+reserve,sjf@auto,sjf@auto-2.2,sjf@auto-rules")
	require.NoError(t, err)
	require.Equal(t, []mode{
		{Name: "direct"},
		{Name: "passthrough", Proxy: true},
		{Name: "fifo", Proxy: true, Admission: true, Discipline: "fifo"},
		{Name: "sjf", Proxy: true, Admission: true, Discipline: "sjf"},
		{Name: "sjf-aging-2.5", Proxy: true, Admission: true, Discipline: "sjf", Aging: 2.5},
		{Name: "sjf-last-call-3s", Proxy: true, Admission: true, Discipline: "sjf", LastCall: 3 * time.Second},
		{Name: "fifo@360ms", Proxy: true, Admission: true, Discipline: "fifo", Capacity: 360 * time.Millisecond},
		{Name: "sjf@80ms+reserve", Proxy: true, Admission: true, Discipline: "sjf", Capacity: 80 * time.Millisecond, Reserve: true},
		{Name: "fifo+reserve", Proxy: true, Admission: true, Discipline: "fifo", Reserve: true},
		{Name: "sjf@auto", Proxy: true, Admission: true, Discipline: "sjf", Auto: true},
		{Name: "sjf@auto-2.2", Proxy: true, Admission: true, Discipline: "sjf", Auto: true, Stretch: 2.2},
		{Name: "sjf@auto-rules", Proxy: true, Admission: true, Discipline: "sjf", Auto: true, Law: "rules"},
	}, ms)

	for in, msg := range map[string]string{
		"lifo":                     "unknown mode",
		"sjf-aging-0":              "positive number",
		"sjf-aging-x":              "positive number",
		"sjf-last-call-0s":         "positive duration",
		"fifo,fifo":                "listed twice",
		" , ":                      "no mode",
		"fifo@soon":                "positive duration",
		"direct@1s":                "only an admission mode",
		"passthrough+reserve":      "takes the reserve",
		"sjf+reserve@1s":           "the suffixes are",
		"sjf@80ms+reserve+reserve": "once each",
		"sjf+cache+pooled":         "in that order",
		"direct+cache":             "runs no proxy",
		"routed-0":                 "positive whole number",
		"routed-x":                 "positive whole number",
		"routed-2@1s":              "only an admission mode",
		"sjf@auto-1":               "a number over 1",
		"sjf@auto2":                "a number over 1",
		"sjf@autox":                "a number over 1",
		"direct:new":               "runs no gatekeeper build",
	} {
		_, err := parseModes(in)
		require.ErrorContains(t, err, msg, in)
	}
}

// A mode ending in :NAME runs the build --builds names so, beside the same mode of
// --gatekeeper's build.
func TestBuilds(t *testing.T) {
	ms, err := parseModes("sjf@auto,sjf@auto:new,sjf@80ms+reserve:new")
	require.NoError(t, err)
	require.Equal(t, "new", ms[1].Build)
	require.True(t, ms[1].Auto)
	require.Equal(t, mode{Name: "sjf@80ms+reserve:new", Proxy: true, Admission: true, Discipline: "sjf",
		Capacity: 80 * time.Millisecond, Reserve: true, Build: "new"}, ms[2])

	args := []string{"--primary", "127.0.0.1:1", "--modes", "sjf@auto,sjf@auto:new"}
	_, err = parseFlags(args)
	require.ErrorContains(t, err, `build "new"`)
	o, err := parseFlags(append(args, "--builds", "new=/tmp/gk-new, old=/tmp/gk-old"))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"new": "/tmp/gk-new", "old": "/tmp/gk-old"}, o.builds)
	for _, bad := range []string{"new", "=/tmp/x", "new=", "a/b=/tmp/x", "new=/a,new=/b"} {
		_, err := parseFlags(append(args, "--builds", bad))
		require.ErrorContains(t, err, "--builds", bad)
	}
}

func TestRoutedModes(t *testing.T) {
	ms, err := parseModes("pooled,routed-1,routed-2,pooled+cache,sjf@80ms+pooled+cache")
	require.NoError(t, err)
	require.Equal(t, []mode{
		{Name: "pooled", Proxy: true, Pooled: true},
		{Name: "routed-1", Proxy: true, Pooled: true, Replicas: 1},
		{Name: "routed-2", Proxy: true, Pooled: true, Replicas: 2},
		{Name: "pooled+cache", Proxy: true, Pooled: true, Cache: true},
		{Name: "sjf@80ms+pooled+cache", Proxy: true, Pooled: true, Cache: true, Admission: true, Discipline: "sjf",
			Capacity: 80 * time.Millisecond},
	}, ms)
	_, err = parseFlags([]string{"--primary", "127.0.0.1:1", "--modes", "direct,routed-2", "--replicas", "127.0.0.1:2"})
	require.ErrorContains(t, err, "names 1")
	o, err := parseFlags([]string{"--primary", "127.0.0.1:1", "--modes", "direct,routed-2", "--replicas", "127.0.0.1:2, 127.0.0.1:3"})
	require.NoError(t, err)
	require.Equal(t, []string{"127.0.0.1:2", "127.0.0.1:3"}, o.replicas)
	require.True(t, o.routes())

	s := proxySettings{Primary: "127.0.0.1:1", Replicas: o.replicas, User: "gk", Password: "pw"}
	var got struct {
		Mode     string
		Backends struct {
			Primary  string
			Replicas []string
		}
		Auth struct {
			FromBackend bool `yaml:"from_backend"`
		}
		Monitor struct{ User, Password string }
		Routing struct{ Enabled bool }
		Cache   struct{ Mode string }
	}
	require.NoError(t, yaml.Unmarshal([]byte(configYAML(ms[1], s, "127.0.0.1:8", "127.0.0.1:9")), &got))
	require.Equal(t, "pooled", got.Mode)
	require.Equal(t, []string{"127.0.0.1:2"}, got.Backends.Replicas, "routed-1 routes to the first replica")
	require.True(t, got.Auth.FromBackend)
	require.Equal(t, "gk", got.Monitor.User)
	require.True(t, got.Routing.Enabled)
	got.Backends.Replicas = nil
	require.NoError(t, yaml.Unmarshal([]byte(configYAML(ms[0], s, "127.0.0.1:8", "127.0.0.1:9")), &got))
	require.Empty(t, got.Backends.Replicas, "pooled routes nothing")
	require.Empty(t, got.Cache.Mode, "pooled caches nothing")
	require.NoError(t, yaml.Unmarshal([]byte(configYAML(ms[3], s, "127.0.0.1:8", "127.0.0.1:9")), &got))
	require.Equal(t, "auto", got.Cache.Mode, "pooled+cache caches")
}

func TestReadsShare(t *testing.T) {
	metrics := `# HELP gatekeeper_reads_total Units by the backend they went to and why.
gatekeeper_reads_total{backend="127.0.0.1:1",reason="fell_back_to_primary"} 5
gatekeeper_reads_total{backend="127.0.0.1:1",reason="write"} 100
gatekeeper_reads_total{backend="127.0.0.1:2",reason="routed"} 90
gatekeeper_reads_total{backend="127.0.0.1:3",reason="waited"} 5
`
	share, n, err := readsShare(metrics, "127.0.0.1:1")
	require.NoError(t, err)
	require.Equal(t, 100, n)
	require.InDelta(t, 0.95, share, 1e-9)
	_, _, err = readsShare("", "127.0.0.1:1")
	require.Error(t, err)
}

func TestParseFlagsGivesTheReserveToTheMarkedModes(t *testing.T) {
	o, err := parseFlags([]string{"--primary", "127.0.0.1:1", "--modes", "direct,fifo,sjf", "--reserve-floor", "40ms"})
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, true}, []bool{o.modes[0].Reserve, o.modes[1].Reserve, o.modes[2].Reserve},
		"no mode marked: every admission mode takes the reserve")
	o, err = parseFlags([]string{"--primary", "127.0.0.1:1", "--modes", "direct,fifo,sjf+reserve", "--reserve-floor", "40ms"})
	require.NoError(t, err)
	require.Equal(t, []bool{false, false, true}, []bool{o.modes[0].Reserve, o.modes[1].Reserve, o.modes[2].Reserve})
	_, err = parseFlags([]string{"--primary", "127.0.0.1:1", "--modes", "fifo,sjf+reserve"})
	require.ErrorContains(t, err, "give --reserve-floor")
}

func TestParseFlagsCalibratesWithoutCapacity(t *testing.T) {
	o, err := parseFlags([]string{"--primary", "127.0.0.1:1", "--modes", "direct,sjf"})
	require.NoError(t, err)
	require.Zero(t, o.capacity, "no capacity: each admission mode is calibrated")
	require.Equal(t, calibration{Clients: 200, Step: 10 * time.Second, Warmup: 10 * time.Second, MaxFactor: 64}, o.calibrate)
	_, err = parseFlags([]string{"--primary", "127.0.0.1:1", "--modes", "sjf", "--calibrate-clients", "0"})
	require.ErrorContains(t, err, "--calibrate-clients")
	_, err = parseFlags([]string{"--primary", "127.0.0.1:1", "--modes", "sjf", "--capacity", "-1s"})
	require.ErrorContains(t, err, "--capacity must be positive")
	_, err = parseFlags([]string{"--primary", "127.0.0.1:1", "--modes", "direct,sjf@90ms"})
	require.NoError(t, err)
	o, err = parseFlags([]string{"--primary", "127.0.0.1:1", "--modes", "direct,passthrough", "--clients", "40,10,10"})
	require.NoError(t, err)
	require.Equal(t, []int{10, 40}, o.clients)
	_, err = parseFlags([]string{"--primary", "127.0.0.1:1", "--modes", "direct", "--clients", "10,zero"})
	require.ErrorContains(t, err, "positive whole number")
}

func TestTypeKeyFlag(t *testing.T) {
	o, err := parseFlags([]string{"--primary", "127.0.0.1:1", "--clients", "10"})
	require.NoError(t, err)
	require.Equal(t, "tag", o.typeKey)
	_, err = parseFlags([]string{"--primary", "127.0.0.1:1", "--clients", "10", "--type-key", "digest"})
	require.ErrorContains(t, err, "give tag or tag_digest")

	var got struct {
		Classify struct {
			TypeKey string `yaml:"type_key"`
		}
	}
	s := proxySettings{TypeKey: "tag_digest", Weight: 0.1}
	require.NoError(t, yaml.Unmarshal([]byte(configYAML(mode{Name: "s", Proxy: true}, s, "127.0.0.1:1", "127.0.0.1:2")), &got))
	require.Equal(t, "tag_digest", got.Classify.TypeKey)
	require.NoError(t, yaml.Unmarshal([]byte(calibrateYAML(mode{Name: "s", Admission: true, Discipline: "sjf"}, s)), &got))
	require.Equal(t, "tag_digest", got.Classify.TypeKey)
}

// Under tag_digest an interaction's cost is the sum over its statements' types.
func TestByTagSumsTheTypesOfATag(t *testing.T) {
	got := byTag([]admin.TypeStats{
		{Sample: "best_sellers SELECT MAX ( o_id ) FROM orders", Count: 10, TotalMS: 10},
		{Sample: "best_sellers SELECT i_id FROM item", Count: 10, TotalMS: 500},
		{Sample: "home", Count: 4, TotalMS: 2},
	})
	require.Equal(t, busy{"best_sellers": {20, 510}, "home": {4, 2}}, got)
}

func TestConfigYAMLIsWhatTheModeSays(t *testing.T) {
	s := proxySettings{Primary: "127.0.0.1:3306", Capacity: 40 * time.Millisecond, QueueTimeout: 30 * time.Second, Weight: 0.1}
	var got struct {
		Listen   string
		Classify struct {
			TypeKey string `yaml:"type_key"`
		}
		Admission struct {
			Enabled    bool
			Capacity   string
			Discipline string
			Aging      float64
			Stretch    float64 `yaml:"capacity_stretch"`
		}
	}
	require.NoError(t, yaml.Unmarshal([]byte(configYAML(mode{Name: "a", Proxy: true, Admission: true, Discipline: "sjf", Aging: 5}, s, "127.0.0.1:1", "127.0.0.1:2")), &got))
	require.Equal(t, "127.0.0.1:1", got.Listen)
	require.Equal(t, "tag", got.Classify.TypeKey)
	require.True(t, got.Admission.Enabled)
	require.Equal(t, "40ms", got.Admission.Capacity)
	require.Equal(t, "sjf", got.Admission.Discipline)
	require.Equal(t, 5.0, got.Admission.Aging)
	require.NoError(t, yaml.Unmarshal([]byte(configYAML(mode{Name: "f", Proxy: true, Admission: true, Discipline: "fifo", Capacity: time.Second}, s, "127.0.0.1:1", "127.0.0.1:2")), &got))
	require.Equal(t, "1s", got.Admission.Capacity)
	require.Zero(t, got.Admission.Stretch)
	require.NoError(t, yaml.Unmarshal([]byte(configYAML(mode{Name: "s", Proxy: true, Admission: true, Discipline: "sjf", Auto: true, Stretch: 2.2}, s, "127.0.0.1:1", "127.0.0.1:2")), &got))
	require.Equal(t, "auto", got.Admission.Capacity)
	require.Equal(t, 2.2, got.Admission.Stretch)

	got.Admission.Enabled = true
	require.NoError(t, yaml.Unmarshal([]byte(configYAML(mode{Name: "p", Proxy: true}, s, "127.0.0.1:1", "127.0.0.1:2")), &got))
	require.False(t, got.Admission.Enabled)
	require.NotContains(t, configYAML(mode{Name: "f", Proxy: true, Admission: true, Discipline: "fifo"}, s, "127.0.0.1:1", "127.0.0.1:2"), "reserve")

	s.Reserve = reserveSettings{Floor: 200 * time.Millisecond, QuickCutoff: 20 * time.Millisecond, LengthyLane: 2}
	var withReserve struct {
		Admission struct {
			Reserve struct {
				Floor       string
				QuickCutoff string `yaml:"quick_cutoff"`
				LengthyLane int    `yaml:"lengthy_lane"`
			}
		}
	}
	require.NotContains(t, configYAML(mode{Name: "f", Proxy: true, Admission: true, Discipline: "fifo"}, s, "127.0.0.1:1", "127.0.0.1:2"), "reserve",
		"a mode not marked +reserve runs without it")
	require.NoError(t, yaml.Unmarshal([]byte(configYAML(mode{Name: "f", Proxy: true, Admission: true, Discipline: "fifo", Reserve: true}, s, "127.0.0.1:1", "127.0.0.1:2")), &withReserve))
	require.Equal(t, "200ms", withReserve.Admission.Reserve.Floor)
	require.Equal(t, "20ms", withReserve.Admission.Reserve.QuickCutoff)
	require.Equal(t, 2, withReserve.Admission.Reserve.LengthyLane)
}

func TestChosenCapacityIsCalibratesLastWord(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		p := filepath.Join(dir, "calibrate.txt")
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	out := `calibrate: the bookstore, shopping mix, 200 clients, against 127.0.0.1:13306
  capacity 9ms             601.0 interactions/s  mean  277.01 ms  p95   65.88 ms  errors 0
  capacity 28ms            798.8 interactions/s  mean  178.69 ms  p95   80.47 ms  errors 0

chosen: the smallest capacity within 95% of the peak throughput

admission:
  capacity: 28ms
`
	c, err := chosenCapacity(write(out))
	require.NoError(t, err)
	require.Equal(t, 28*time.Millisecond, c)
	_, err = chosenCapacity(write("calibrate: interrupted\n"))
	require.ErrorContains(t, err, "no capacity chosen")
	_, err = chosenCapacity(write("admission:\n  capacity: soon\n"))
	require.ErrorContains(t, err, "bad capacity line")
}

func TestCalibrateYAMLIsTheModesPolicy(t *testing.T) {
	var got struct {
		Classify struct {
			TypeKey string `yaml:"type_key"`
		}
		Estimator struct {
			Weight      float64
			BackendCPUs int `yaml:"backend_cpus"`
		}
		Admission map[string]any
	}
	s := proxySettings{Weight: 0.1, BackendCPUs: 2, QueueTimeout: 30 * time.Second}
	m := mode{Name: "sjf-aging-5", Admission: true, Discipline: "sjf", Aging: 5, LastCall: 3 * time.Second}
	require.NoError(t, yaml.Unmarshal([]byte(calibrateYAML(m, s)), &got))
	require.Equal(t, "tag", got.Classify.TypeKey)
	require.Equal(t, 2, got.Estimator.BackendCPUs)
	require.Equal(t, 0.1, got.Estimator.Weight)
	require.Equal(t, map[string]any{"discipline": "sjf", "aging": 5, "last_call": "3s", "queue_timeout": "30s"}, got.Admission,
		"calibrate sets the capacity itself")
}

func TestCapacitiesNameEachModes(t *testing.T) {
	fifo := mode{Name: "fifo", Admission: true, Discipline: "fifo"}
	sjf := mode{Name: "sjf", Admission: true, Discipline: "sjf"}
	direct := mode{Name: "direct"}
	tests := []struct {
		o    options
		want string
	}{
		{options{capacity: 180 * time.Millisecond, modes: []mode{direct, fifo, sjf}}, "capacity 180ms"},
		{options{capacity: 180 * time.Millisecond, modes: []mode{direct, fifo,
			{Name: "sjf@60ms", Admission: true, Discipline: "sjf", Capacity: 60 * time.Millisecond}}},
			"capacity fifo 180ms, sjf@60ms"},
		{options{modes: []mode{direct,
			{Name: "fifo", Admission: true, Discipline: "fifo", Capacity: 31 * time.Millisecond, Calibrated: true},
			{Name: "sjf", Admission: true, Discipline: "sjf", Capacity: 28 * time.Millisecond, Calibrated: true}}},
			"capacity fifo 31ms*, sjf 28ms*"},
		{options{capacity: 180 * time.Millisecond, modes: []mode{
			{Name: "sjf@auto", Admission: true, Discipline: "sjf", Auto: true},
			{Name: "sjf@auto:old", Admission: true, Discipline: "sjf", Auto: true, Build: "old"}, sjf}},
			"capacity sjf@auto, sjf@auto:old, sjf 180ms"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, capacities(tt.o))
	}
	require.Equal(t, "[sjf](calibrate-sjf.txt)", calibrated(tests[2].o.modes[2:]))
}

func TestShortAndHeavyMeansWeighByCount(t *testing.T) {
	r := &bookstore.Result{Classes: []bookstore.ClassResult{
		{Name: bookstore.Home.String(), Completed: 3, Mean: 2 * time.Millisecond},
		{Name: bookstore.ProductDetail.String(), Completed: 1, Mean: 6 * time.Millisecond},
		{Name: bookstore.BestSellers.String(), Completed: 1, Mean: 100 * time.Millisecond},
		{Name: bookstore.AdminConfirm.String(), Completed: 0, Failed: 4},
	}}
	require.InDelta(t, 3.0, shortMean(r), 1e-9)
	require.InDelta(t, 100.0, heavyMean(r), 1e-9)
	require.Equal(t, -1.0, meanOf(r, func(string) bool { return false }))
}

func TestExecPerInteraction(t *testing.T) {
	before := busy{"home": {Count: 10, TotalMS: 5}}
	after := busy{"home": {Count: 30, TotalMS: 25}}
	require.InDelta(t, 2.0, execMS(before, after, "home", 10), 1e-9)
	require.Equal(t, -1.0, execMS(nil, nil, "home", 10))
	require.Equal(t, -1.0, execMS(before, after, "home", 0))
}

func TestReadCSVGivesBackWhatWriteCSVWrote(t *testing.T) {
	runs := []runResult{{Mode: "direct", Loop: "closed", Clients: 10, Round: 1, Result: &bookstore.Result{
		Classes: []bookstore.ClassResult{{Name: "home", Completed: 5, Refused: 1, Mean: 2 * time.Millisecond}},
		Total:   bookstore.ClassResult{Name: "total", Completed: 5, Refused: 1, Throughput: 1.5, Mean: 2 * time.Millisecond},
	}, ExecMS: map[string]float64{"home": -1}, CPU: cpuUse{DB: 0.875, Proxy: -1, Generator: 0.025, Idle: 0.001}},
		{Mode: "direct", Loop: "closed", Clients: 10, Round: 2, Result: &bookstore.Result{
			Classes: []bookstore.ClassResult{{Name: "home", Completed: 6}},
			Total:   bookstore.ClassResult{Name: "total", Completed: 6},
		}, ExecMS: map[string]float64{"home": -1}, CPU: unknownCPU}, {Mode: "sjf-aging-5", Loop: "open", Clients: 100, Rate: 40, Round: 1, Result: &bookstore.Result{
			Classes: []bookstore.ClassResult{{Name: "home", Completed: 7, P95: 3 * time.Millisecond}},
			Total:   bookstore.ClassResult{Name: "total", Completed: 7},
		}, ExecMS: map[string]float64{"home": 1.25}, CPU: cpuUse{DB: 0.5, Proxy: 0.125, Generator: 0.25, Idle: 0.125}}}
	path := t.TempDir() + "/results.csv"
	require.NoError(t, writeCSV(path, runs))
	got, modes, err := readCSV(path)
	require.NoError(t, err)
	require.Equal(t, runs, got)
	require.Equal(t, []string{"direct", "sjf-aging-5"}, []string{modes[0].Name, modes[1].Name})
	require.Equal(t, 5.0, modes[1].Aging)
}

func TestMediansTakeEachFigureOfARepeatedCell(t *testing.T) {
	run := func(mode string, round, completed int, tp float64, mean time.Duration, exec float64) runResult {
		c := bookstore.ClassResult{Name: "home", Completed: completed, Throughput: tp, Mean: mean}
		total := c
		total.Name = "total"
		return runResult{Mode: mode, Loop: "closed", Clients: 10, Round: round,
			Result: &bookstore.Result{Classes: []bookstore.ClassResult{c}, Total: total}, ExecMS: map[string]float64{"home": exec}}
	}
	runs := []runResult{
		run("fifo", 1, 30, 3.0, 9*time.Millisecond, 1.0),
		run("sjf", 1, 50, 5.0, 1*time.Millisecond, 0.5),
		run("fifo", 2, 10, 1.0, 5*time.Millisecond, 3.0),
		run("fifo", 3, 20, 9.0, 7*time.Millisecond, 2.0),
	}
	runs[0].CPU.DB, runs[2].CPU.DB, runs[3].CPU.DB = 0.8, 0.9, 0.85
	got := medians(runs)
	require.Len(t, got, 2)
	require.Equal(t, runs[1], got[1], "a single run stays as it is")
	fifo := got[0]
	require.Equal(t, cell{"fifo", "closed", 10, 0}, fifo.cell())
	require.Equal(t, 0, fifo.Round)
	// Figure by figure: the median count, rate and mean need not come from one run.
	require.Equal(t, 20, fifo.Result.Classes[0].Completed)
	require.Equal(t, 3.0, fifo.Result.Total.Throughput)
	require.Equal(t, 7*time.Millisecond, fifo.Result.Classes[0].Mean)
	require.Equal(t, 2.0, fifo.ExecMS["home"])
	require.Equal(t, 0.85, fifo.CPU.DB)

	// Of an even count, the mean of the middle two.
	require.Equal(t, 2.0, median([]runResult{runs[0], runs[2]}, func(r runResult) float64 { return r.Result.Total.Throughput }))

	lo, hi, n := spread(runs, fifo.cell(), func(r runResult) float64 { return r.Result.Total.Throughput })
	require.Equal(t, [3]float64{1, 9, 3}, [3]float64{lo, hi, float64(n)})
	require.Equal(t, 3, rounds(runs))
}

func TestProcessorAccountingReadsProc(t *testing.T) {
	all, idle, ok := parseCPULine("cpu  100 5 20 300 7 0 3 0 0 0\ncpu0 50 2 10 150 3 0 1 0 0 0\n")
	require.True(t, ok)
	require.Equal(t, [2]int64{435, 307}, [2]int64{all, idle})
	_, _, ok = parseCPULine("intr 1 2 3")
	require.False(t, ok)

	a := cpuSample{all: 1000, idle: 100, db: 500, generator: 10, machOK: true, dbOK: true}
	b := cpuSample{all: 3000, idle: 120, db: 2100, generator: 50, machOK: true, dbOK: true}
	require.Equal(t, cpuUse{DB: 0.8, Proxy: -1, Generator: 0.02, Idle: 0.01}, use(a, b))
	require.Equal(t, unknownCPU, use(cpuSample{}, b), "no machine totals: nothing known")

	// This process is always there to read.
	self, ok := processTicks(os.Getpid())
	require.True(t, ok)
	require.GreaterOrEqual(t, self, int64(0))
}

func TestParseFlagsRefusesNoRuns(t *testing.T) {
	_, err := parseFlags([]string{"--primary", "127.0.0.1:1", "--modes", "direct", "--repeat", "0"})
	require.ErrorContains(t, err, "--repeat")
}

func TestPlacementReadsWhereEachSideMayRun(t *testing.T) {
	require.NotEmpty(t, cpusAllowed(os.Getpid()), "this process is always there to read")

	for list, n := range map[string]int{"0": 1, "0-1": 2, "0-3,6": 5, "1,3,5-6": 4, "": 0, "x": 0, "3-1": 0} {
		require.Equal(t, n, countCPUs(list), list)
	}

	model, cpus := parseCPUInfo("processor\t: 0\nmodel name\t: AMD EPYC\n\nprocessor\t: 1\nmodel name\t: AMD EPYC\n", 9)
	require.Equal(t, "AMD EPYC", model)
	require.Equal(t, 2, cpus, "the machine's processors, not this program's share of them")
	_, cpus = parseCPUInfo("", 9)
	require.Equal(t, 9, cpus)

	shared := environment{DBCPUs: "0-1", OwnCPUs: "0-1"}
	require.Contains(t, shared.placement(), "share the machine")
	require.Contains(t, environment{}.placement(), "share the machine", "unknown: the common case")
	pinned := environment{DBCPUs: "0", OwnCPUs: "1"}
	require.Contains(t, pinned.placement(), "database ran on CPUs 0; the load generator and the proxy on CPUs 1")
}

func TestLittleRatioIsOneForASettledClosedLoop(t *testing.T) {
	// 100 clients, think 100 ms, response 400 ms: 200 interactions/s when settled.
	r := runResult{Clients: 100, Result: &bookstore.Result{Total: bookstore.ClassResult{Throughput: 200, Mean: 400 * time.Millisecond}}}
	require.InDelta(t, 1.0, littleRatio(r, 100*time.Millisecond), 1e-9)
	r.Result.Total.Throughput = 240 // more completions than the clients can make in the long run
	require.InDelta(t, 1.2, littleRatio(r, 100*time.Millisecond), 1e-9)
	require.Zero(t, littleRatio(runResult{Result: r.Result}, time.Second), "open loop: no client count")
}

func TestVerdictSaysWhenDirectHadNotSettled(t *testing.T) {
	o := options{think: 100 * time.Millisecond, modes: []mode{{Name: "direct"}}}
	run := func(throughput float64) []runResult {
		return []runResult{{Mode: "direct", Loop: "closed", Clients: 100, Round: 1,
			Result: &bookstore.Result{Total: bookstore.ClassResult{Throughput: throughput, Mean: 400 * time.Millisecond}}}}
	}
	var b bytes.Buffer
	writeVerdict(&b, o, run(240), run(240))
	require.Contains(t, b.String(), "Direct at 100 clients had not settled (X(R+Z)/N = 1.20")
	b.Reset()
	writeVerdict(&b, o, run(200), run(200))
	require.NotContains(t, b.String(), "had not settled")
}

func TestClientsHeldSplitsTheClientCount(t *testing.T) {
	// 100 clients, think 100 ms, 10 s measured: home 400/s at 50 ms holds 20, best_sellers
	// 10/s at 3 s holds 30; 9 refusals a second think too, and wait in the rest.
	r := runResult{Clients: 100, Result: &bookstore.Result{Classes: []bookstore.ClassResult{
		{Name: "home", Throughput: 400, Mean: 50 * time.Millisecond},
		{Name: "best_sellers", Throughput: 10, Mean: 3 * time.Second, Refused: 90},
	}}}
	h := clientsHeld(r, 100*time.Millisecond, 10*time.Second)
	require.InDelta(t, 41.9, h.thinking, 1e-9, "every started interaction, lost ones too, follows a think time")
	require.InDelta(t, 20, h.short, 1e-9)
	require.InDelta(t, 30, h.heavy, 1e-9)
	require.InDelta(t, 8.1, h.rest, 1e-9)
}

func TestReportSaysWhenThereWasNoOpenLoop(t *testing.T) {
	runs := []runResult{{Mode: "direct", Loop: "closed", Clients: 100, Round: 1,
		Result: &bookstore.Result{Total: bookstore.ClassResult{Throughput: 200, Mean: 400 * time.Millisecond}}}}
	o := options{think: 100 * time.Millisecond, modes: []mode{{Name: "direct"}}, openFactor: 0, openMax: 1000}
	var b bytes.Buffer
	writeReport(&b, o, environment{}, runs)
	require.Contains(t, b.String(), "No open loop (`--open 0`).")
	require.NotContains(t, b.String(), "Poisson arrivals at 0.00")
}

func TestClosedLoopReportNamesEveryPlotItDraws(t *testing.T) {
	closed := func(name string, clients int, mean time.Duration) runResult {
		classes := []bookstore.ClassResult{{Name: "home", Completed: 90, Mean: mean}, {Name: "best_sellers", Completed: 5, Mean: 20 * mean}}
		exec := map[string]float64{"home": 1, "best_sellers": 30}
		if name == "direct" {
			exec = map[string]float64{"home": -1, "best_sellers": -1} // no proxy to charge it
		}
		return runResult{Mode: name, Loop: "closed", Clients: clients, Round: 1, ExecMS: exec,
			Result: &bookstore.Result{Classes: classes, Total: bookstore.ClassResult{Throughput: 300, Mean: 2 * mean, P95: 10 * mean}}}
	}
	runs := []runResult{closed("direct", 400, 300*time.Millisecond), closed("fifo", 400, 600*time.Millisecond),
		closed("direct", 800, 800*time.Millisecond), closed("fifo", 800, 900*time.Millisecond)}
	o := options{think: 100 * time.Millisecond, clients: []int{400, 800}, out: t.TempDir(), backendCPUs: 2,
		modes: []mode{{Name: "direct"}, {Name: "fifo", Proxy: true, Admission: true, Discipline: "fifo"}}}
	require.NoError(t, writePlots(o, runs))
	var b bytes.Buffer
	writeClosedLoop(&b, o, runs)
	report := b.String()
	require.NotContains(t, report, "![", "the plots are not committed, so the report embeds none; make plots draws them")
	drawn, err := filepath.Glob(filepath.Join(o.out, "*.png"))
	require.NoError(t, err)
	require.Len(t, drawn, 8)
	for _, p := range drawn {
		require.Contains(t, report, "`"+filepath.Base(p)+"`", "the report names every plot the run and make plots draw")
	}
}

func TestOpenLoopOnlyReportAndPlots(t *testing.T) {
	open := func(name string, mean time.Duration) runResult {
		return runResult{Mode: name, Loop: "open", Rate: 580, Round: 1,
			Result: &bookstore.Result{Classes: []bookstore.ClassResult{{Name: "home", Completed: 9, Mean: mean}},
				Total: bookstore.ClassResult{Throughput: 580, Mean: mean}}}
	}
	runs := []runResult{open("direct", 400*time.Millisecond), open("fifo", 800*time.Millisecond), open("sjf", 100*time.Millisecond)}
	o := options{think: 100 * time.Millisecond, openRate: 580, openMax: 1000, out: t.TempDir(),
		modes: []mode{{Name: "direct"}, {Name: "fifo", Proxy: true, Admission: true, Discipline: "fifo"},
			{Name: "sjf", Proxy: true, Admission: true, Discipline: "sjf"}}}
	require.NoError(t, writePlots(o, runs), "no closed loop: no plot to draw, and no error")
	var b bytes.Buffer
	writeReport(&b, o, environment{}, runs)
	require.Contains(t, b.String(), "Open loop at 580.0 arrivals/s, mean response time: fifo / sjf = 8.00, direct / sjf = 4.00.")
	require.NotContains(t, b.String(), "## Closed loop")
	require.Contains(t, b.String(), "### Open loop\n\n| class | direct | fifo | sjf |\n|---|---:|---:|---:|\n| home | 400.0 | 800.0 | 100.0 |",
		"the per-class table needs no closed loop")
}

func TestOpenLoopRoundByRound(t *testing.T) {
	// Each mode's best_sellers arrivals come to 20+round: completed, refused or overflowed.
	open := func(name string, round int, mean time.Duration, done, refused, overflow int) runResult {
		return runResult{Mode: name, Loop: "open", Rate: 580, Round: round,
			Result: &bookstore.Result{Classes: []bookstore.ClassResult{
				{Name: "home", Completed: 900, Mean: mean},
				{Name: "best_sellers", Completed: done, Refused: refused, Overflow: overflow, Mean: 10 * mean},
			}, Total: bookstore.ClassResult{Throughput: 580, Mean: mean}}}
	}
	milli := time.Millisecond
	var runs []runResult
	for i, m := range [][3]time.Duration{{40 * milli, 80 * milli, 20 * milli}, {100 * milli, 300 * milli, 50 * milli}, {60 * milli, 90 * milli, 30 * milli}} {
		r := i + 1
		runs = append(runs, open("direct", r, m[0], 20+r, 0, 0), open("fifo", r, m[1], 18+r, 0, 2), open("sjf", r, m[2], 19+r, 1, 0))
	}
	o := options{think: 100 * time.Millisecond, openRate: 580, openMax: 1000,
		modes: []mode{{Name: "direct"}, {Name: "fifo", Proxy: true, Admission: true, Discipline: "fifo"},
			{Name: "sjf", Proxy: true, Admission: true, Discipline: "sjf"}}}
	var b bytes.Buffer
	writeReport(&b, o, environment{}, runs)
	out := b.String()
	require.Contains(t, out, "fifo / sjf = 3.00, direct / sjf = 2.00. Taken within each round, whose modes saw the same arrivals, the medians are fifo / sjf = 4.00, direct / sjf = 2.00.",
		"the medians of the rounds' ratios, beside the ratio of the median means")
	require.Contains(t, out, "| round | heavy arrivals | direct ms | fifo ms | sjf ms | fifo / sjf | direct / sjf |\n|---:|---:|---:|---:|---:|---:|---:|\n"+
		"| 1 | 21 | 40.0 | 80.0 | 20.0 | 4.00 | 2.00 |\n"+
		"| 2 | 22 | 100.0 | 300.0 | 50.0 | 6.00 | 2.00 |\n"+
		"| 3 | 23 | 60.0 | 90.0 | 30.0 | 3.00 | 2.00 |\n"+
		"| median | 22 | 60.0 | 90.0 | 30.0 | 4.00 | 2.00 |\n")

	b.Reset()
	writeReport(&b, o, environment{}, runs[:3])
	require.NotContains(t, b.String(), "round by round", "one round: nothing to pair")
	require.NotContains(t, b.String(), "Taken within each round")
}

func TestCapacityIsFifosClosedLoopPeak(t *testing.T) {
	run := func(mode, loop string, throughput float64) runResult {
		return runResult{Mode: mode, Loop: loop, Result: &bookstore.Result{Total: bookstore.ClassResult{Throughput: throughput}}}
	}
	runs := []runResult{run("direct", "closed", 460), run("fifo", "closed", 500), run("fifo", "closed", 510),
		run("sjf", "closed", 640), run("fifo", "open", 900)}
	require.Equal(t, 510.0, capacity(runs), "fifo keeps the mix; sjf's more comes from a changed mix")
	require.Equal(t, 460.0, capacity(runs[:1]), "without fifo, direct's")
	require.Equal(t, 640.0, capacity(runs[3:4]), "without either, any mode's")
}

func TestMetricOf(t *testing.T) {
	metrics := `# HELP gatekeeper_admission_capacity_seconds The capacity: concurrent expected work admitted at most.
# TYPE gatekeeper_admission_capacity_seconds gauge
gatekeeper_admission_capacity_seconds 0.0825
gatekeeper_backend_admission_capacity_seconds{backend="127.0.0.1:1"} 0.5
`
	v, ok := metricOf(metrics, "gatekeeper_admission_capacity_seconds")
	if !ok || v != 0.0825 {
		t.Errorf("capacity = %v, %v; want 0.0825", v, ok)
	}
	if _, ok := metricOf(metrics, "gatekeeper_admission"); ok {
		t.Error("a prefix of a name read as the metric")
	}
	metrics += `gatekeeper_admission_capacity_last_decision{decision="down"} 0
gatekeeper_admission_capacity_last_decision{decision="hold"} 1
gatekeeper_admission_capacity_stretch_ratio 2.61
gatekeeper_admission_running 17
gatekeeper_admission_load_seconds 0.09
gatekeeper_admission_queue_length 640
gatekeeper_admission_open_transactions 3
gatekeeper_admission_capacity_max_running 13
gatekeeper_admission_capacity_phase{phase="probe"} 0
gatekeeper_admission_capacity_phase{phase="settle"} 1
`
	s, ok := sampleOf(metrics)
	if !ok || s.Capacity != 0.0825 || s.Stretch != 2.61 || s.Decision != "hold" || s.Running != 17 || s.Load != 0.09 || s.Queued != 640 || s.Open != 3 || s.MaxRunning != 13 || s.Phase != "settle" {
		t.Errorf("sample = %+v, %v; want capacity 0.0825, stretch 2.61, decision hold, 17 running, load 0.09, 640 queued, 3 open, 13 at most, phase settle", s, ok)
	}
}

func TestFleetModes(t *testing.T) {
	ms, err := parseModes("sjf@auto*3,sjf@auto*2+fleet,sjf@80ms*2+reserve+pooled+cache+fleet:new,passthrough*2,routed-1*2,sjf@auto*1")
	require.NoError(t, err)
	require.Equal(t, []mode{
		{Name: "sjf@auto*3", Proxy: true, Admission: true, Discipline: "sjf", Auto: true, Proxies: 3},
		{Name: "sjf@auto*2+fleet", Proxy: true, Admission: true, Discipline: "sjf", Auto: true, Proxies: 2, Fleet: true},
		{Name: "sjf@80ms*2+reserve+pooled+cache+fleet:new", Proxy: true, Admission: true, Discipline: "sjf",
			Capacity: 80 * time.Millisecond, Reserve: true, Pooled: true, Cache: true, Build: "new", Proxies: 2, Fleet: true},
		{Name: "passthrough*2", Proxy: true, Proxies: 2},
		{Name: "routed-1*2", Proxy: true, Pooled: true, Replicas: 1, Proxies: 2},
		{Name: "sjf@auto*1", Proxy: true, Admission: true, Discipline: "sjf", Auto: true, Proxies: 1},
	}, ms)
	require.Equal(t, []int{3, 2, 2, 2, 2, 1}, []int{ms[0].proxies(), ms[1].proxies(), ms[2].proxies(), ms[3].proxies(), ms[4].proxies(), ms[5].proxies()})
	require.Equal(t, 1, mode{Name: "sjf", Proxy: true}.proxies(), "no *N: one proxy")
	require.Zero(t, mode{Name: "direct"}.proxies(), "direct: none")

	for in, msg := range map[string]string{
		"direct*2":               "runs no proxy",
		"direct+fleet":           "runs no proxy",
		"sjf@auto*0":             "positive whole number",
		"sjf@auto*x":             "positive whole number",
		"sjf@auto*":              "positive whole number",
		"sjf*3@auto":             "positive whole number",
		"sjf@auto+fleet*3":       "the suffixes are",
		"sjf@auto*2+fleet+cache": "in that order",
		"sjf@auto*2+reserve*2":   "the suffixes are",
	} {
		_, err := parseModes(in)
		require.ErrorContains(t, err, msg, in)
	}
}

func TestFleetModesNeedEtcd(t *testing.T) {
	args := []string{"--primary", "127.0.0.1:1", "--modes", "direct,sjf@auto*2+fleet"}
	_, err := parseFlags(args)
	require.ErrorContains(t, err, "--etcd is required with a +fleet mode")
	_, err = parseFlags(append(args, "--etcd", "localhost"))
	require.ErrorContains(t, err, "give host:port")
	o, err := parseFlags(append(args, "--etcd", "127.0.0.1:22379"))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:22379", o.etcd)
	_, err = parseFlags([]string{"--primary", "127.0.0.1:1", "--modes", "direct,sjf@auto*2"})
	require.NoError(t, err, "a fleet without +fleet needs no etcd")
}

func TestFleetConfigNamesEtcdAndTheRunsPrefix(t *testing.T) {
	s := proxySettings{Primary: "127.0.0.1:3306", QueueTimeout: 30 * time.Second, Weight: 0.1, Etcd: "127.0.0.1:22379",
		FleetPrefix: fleetPrefix(time.Unix(0, 1700000000123456789))}
	var got struct {
		Admission struct{ Capacity string }
		Fleet     struct {
			Etcd   []string
			Prefix string
		}
	}
	ms, err := parseModes("sjf@auto*3+fleet,sjf@auto*3")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal([]byte(configYAML(ms[0], s, "127.0.0.1:1", "127.0.0.1:2")), &got))
	require.Equal(t, "auto", got.Admission.Capacity)
	require.Equal(t, []string{"127.0.0.1:22379"}, got.Fleet.Etcd)
	require.Equal(t, s.FleetPrefix, got.Fleet.Prefix)
	require.Regexp(t, `^/bench-[0-9]+-[0-9a-z]+/$`, got.Fleet.Prefix)
	require.NotEqual(t, s.FleetPrefix, fleetPrefix(time.Unix(0, 1700000000123456790)), "each run has a prefix of its own")
	require.NotContains(t, configYAML(ms[1], s, "127.0.0.1:1", "127.0.0.1:2"), "fleet:", "proxies without +fleet do not coordinate")

	addrs, err := freePorts(6)
	require.NoError(t, err)
	require.Len(t, addrs, 6)
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(addrs))), 6, "every proxy's ports its own")
}

// Client i connects to proxy i mod N: the closed loop's clients split evenly over a fleet.
func TestClientsSplitOverTheProxies(t *testing.T) {
	o := options{user: "gk", password: "pw", database: "bookstore"}
	addrs := []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}
	var cfg bookstore.Config
	o.connect(&cfg, addrs)
	require.Empty(t, cfg.DSN)
	require.Len(t, cfg.DSNs, 3)
	for i, a := range addrs {
		require.Contains(t, cfg.DSNs[i], "tcp("+a+")/bookstore", "proxy %d", i+1)
	}
	require.NoError(t, cfg.Validate())
	o.connect(&cfg, addrs[:1])
	require.Equal(t, o.dsn(addrs[0]), cfg.DSN, "one server: DSN, as before fleets")
	require.Empty(t, cfg.DSNs)
	require.NoError(t, cfg.Validate())

	for _, tt := range []struct {
		clients, proxies int
		want             []int
	}{
		{400, 1, []int{400}},
		{400, 2, []int{200, 200}},
		{400, 3, []int{134, 133, 133}},
		{2, 3, []int{1, 1, 0}},
	} {
		require.Equal(t, tt.want, clientsPerProxy(tt.clients, tt.proxies), "%d clients, %d proxies", tt.clients, tt.proxies)
	}
}

func TestSingleIsTheModeAsOneProxy(t *testing.T) {
	ms, err := parseModes("direct,sjf@auto,sjf@auto:new,sjf@auto*3,sjf@auto*3+fleet,sjf@auto*2:new,fifo*2")
	require.NoError(t, err)
	for _, tt := range []struct{ mode, want string }{
		{"sjf@auto*3", "sjf@auto"},
		{"sjf@auto*3+fleet", "sjf@auto"},
		{"sjf@auto*2:new", "sjf@auto:new"},
		{"sjf@auto", "sjf@auto"},
		{"fifo*2", ""},
	} {
		m := ms[slices.IndexFunc(ms, func(m mode) bool { return m.Name == tt.mode })]
		b, ok := single(ms, m)
		require.Equal(t, tt.want != "", ok, tt.mode)
		require.Equal(t, tt.want, b.Name, tt.mode)
	}
	var names []string
	for _, m := range fleetModes(ms) {
		names = append(names, m.Name)
	}
	require.Equal(t, []string{"sjf@auto", "sjf@auto:new", "sjf@auto*3", "sjf@auto*3+fleet", "sjf@auto*2:new", "fifo*2"}, names)
}

// fleetTrace is a trace of n proxies over 6 seconds, the measured period seconds 3 to 5:
// proxy p holds p*10 ms + the second, and admits 100*p units a second; proxy 2 misses
// second 4.
func fleetTrace(n int) []capacitySample {
	var out []capacitySample
	for sec := 1; sec <= 6; sec++ {
		for p := 1; p <= n; p++ {
			if p == 2 && sec == 4 {
				continue
			}
			out = append(out, capacitySample{At: time.Duration(sec) * time.Second, Measured: sec >= 3 && sec <= 5, Proxy: p,
				Capacity: float64(10*p+sec) / 1000, Admitted: float64(100 * p * sec)})
		}
	}
	return out
}

func TestFleetFiguresSumTheProxiesSecondBySecond(t *testing.T) {
	samples := fleetTrace(2)
	require.Equal(t, 2, proxiesOf(samples))
	require.Equal(t, []float64{13, 14, 15}, measuredCapacity(samples, 1))
	require.Equal(t, []float64{23, 25}, measuredCapacity(samples, 2))
	seconds, sums := summedCapacity(samples, true)
	require.Equal(t, []time.Duration{3 * time.Second, 5 * time.Second}, seconds, "a second some proxy missed has no sum")
	require.Equal(t, []float64{36, 40}, sums)
	_, all := summedCapacity(samples, false)
	require.Len(t, all, 5, "warm-up and after included")
	require.InDelta(t, 100, admittedRate(samples, 1), 1e-9)
	require.InDelta(t, 200, admittedRate(samples, 2), 1e-9)
	require.Equal(t, -1.0, admittedRate(samples, 3))
	unknown := slices.Clone(samples)
	for i := range unknown {
		unknown[i].Admitted = -1
	}
	require.Equal(t, -1.0, admittedRate(unknown, 1), "metrics without the counter")

	f, ok := figuresOf(samples)
	require.True(t, ok)
	require.Equal(t, fleetFigures{Capacity: []float64{14, 24}, Admitted: []float64{100, 200}, Sum: 38}, f)
	require.Equal(t, "capacity medians 14 / 24 ms, sum 38 ms; admitted 100.0 / 200.0/s, 300.0/s in all", f.summary())
	_, ok = figuresOf(nil)
	require.False(t, ok)
}

func TestCapacityCSVKeepsEachProxy(t *testing.T) {
	result := &bookstore.Result{Total: bookstore.ClassResult{Name: "total"}}
	runs := []runResult{
		{Mode: "sjf@auto*2", Loop: "closed", Clients: 400, Round: 1, Result: result, Capacity: fleetTrace(2)},
		{Mode: "sjf@auto", Loop: "closed", Clients: 400, Round: 1, Result: result, Capacity: fleetTrace(1)},
	}
	path := filepath.Join(t.TempDir(), "capacity.csv")
	require.NoError(t, writeCapacityCSV(path, runs))
	back := []runResult{{Mode: "sjf@auto*2", Loop: "closed", Clients: 400, Round: 1}, {Mode: "sjf@auto", Loop: "closed", Clients: 400, Round: 1}}
	require.NoError(t, readCapacityCSV(path, back))
	for i := range runs {
		require.Equal(t, runs[i].Capacity, back[i].Capacity, runs[i].Mode)
	}

	old := filepath.Join(t.TempDir(), "capacity.csv")
	require.NoError(t, os.WriteFile(old, []byte("mode,loop,clients,rate,round,second,measured,capacity_s\nsjf@auto,closed,400,0,1,1,false,0.03\n"), 0o644))
	back = []runResult{{Mode: "sjf@auto", Loop: "closed", Clients: 400, Round: 1}}
	require.NoError(t, readCapacityCSV(old, back), "a file from before fleets")
	require.Nil(t, back[0].Capacity)
}

func TestFleetReportSetsTheSumBesideOneProxy(t *testing.T) {
	closed := func(name string, round int, tp float64, trace []capacitySample) runResult {
		return runResult{Mode: name, Loop: "closed", Clients: 400, Round: round, Capacity: trace,
			Result: &bookstore.Result{Classes: []bookstore.ClassResult{{Name: "home", Completed: 90, Mean: 20 * time.Millisecond}},
				Total: bookstore.ClassResult{Name: "total", Throughput: tp, Mean: 50 * time.Millisecond}}}
	}
	ms, err := parseModes("direct,sjf@auto,sjf@auto*2,sjf@auto*2+fleet")
	require.NoError(t, err)
	o := options{think: 100 * time.Millisecond, clients: []int{400}, out: t.TempDir(), warmup: 2 * time.Second, modes: ms}
	all := []runResult{closed("direct", 1, 300, nil), closed("sjf@auto", 1, 400, fleetTrace(1)),
		closed("sjf@auto*2", 1, 410, fleetTrace(2)), closed("sjf@auto*2+fleet", 1, 405, fleetTrace(2))}
	names, err := writeCapacityPlots(o, all)
	require.NoError(t, err)
	require.Equal(t, []string{"capacity-sjf-auto-x2-closed-400.png", "capacity-sjf-auto-x2-fleet-closed-400.png"}, names)
	for _, n := range names {
		require.FileExists(t, filepath.Join(o.out, n))
	}

	var b bytes.Buffer
	writeReport(&b, o, environment{}, all)
	report := b.String()
	require.Contains(t, report, "## Fleets of proxies")
	require.Contains(t, report, "| sjf@auto | 1 | 400 | 400.0 | 20.0 | 14 | 14 | - | - | 100.0 | 100.0 |\n")
	require.Contains(t, report, "| sjf@auto*2 | 2 | 400 | 410.0 | 20.0 | 14 / 24 | 38 | 14 | 2.71 | 100.0 / 200.0 | 300.0 |\n",
		"the sum of the proxies' capacities against one proxy's")
	require.Contains(t, report, "| sjf@auto*2+fleet | 2 | 400 | 405.0 | 20.0 | 14 / 24 | 38 | 14 | 2.71 |")
	require.NotContains(t, report, "| direct | 0 |", "direct has no proxy to trace")
	for _, n := range names {
		require.Contains(t, report, "`"+n+"`", "the report names every capacity plot")
	}
	require.Contains(t, report, `sjf@auto\*2, sjf@auto\*2+fleet`, "no emphasis in running text")
	require.Contains(t, report, "| sjf@auto*2 | closed 400 | 1 | sum | 38 | 36-40 |", "the trace's rows: each proxy's, and their sum")

	var single bytes.Buffer
	writeReport(&single, options{think: 100 * time.Millisecond, clients: []int{400}, modes: ms[:2]}, environment{}, all[:2])
	require.NotContains(t, single.String(), "Fleets", "no fleet: no section")
}

func TestCPUMeterAddsUpTheProxies(t *testing.T) {
	self := os.Getpid()
	one := cpuMeter{proxyPIDs: []int{self}}.takeSample()
	two := cpuMeter{proxyPIDs: []int{self, self}}.takeSample()
	require.True(t, one.proxyOK)
	require.True(t, two.proxyOK)
	require.GreaterOrEqual(t, two.proxy, 2*one.proxy)
	require.False(t, cpuMeter{}.takeSample().proxyOK, "no proxy: nothing to read")
	require.False(t, cpuMeter{proxyPIDs: []int{self, 1 << 30}}.takeSample().proxyOK, "one proxy unreadable: the share unknown")
}
