package estimator

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string // empty: valid
	}{
		{"zero value", Config{}, ""},
		{"weight one", Config{Weight: 1}, ""},
		{"weight small", Config{Weight: 0.001}, ""},
		{"weight negative", Config{Weight: -0.1}, "Weight"},
		{"weight above one", Config{Weight: 1.5}, "Weight"},
		{"weight NaN", Config{Weight: math.NaN()}, "Weight"},
		{"window minimum", Config{Window: MinWindow}, ""},
		{"window short", Config{Window: 500 * time.Millisecond}, "Window"},
		{"window negative", Config{Window: -time.Second}, "Window"},
		{"max types one", Config{MaxTypes: 1}, ""},
		{"max types largest", Config{MaxTypes: MaxMaxTypes}, ""},
		{"max types too many", Config{MaxTypes: MaxMaxTypes + 1}, "MaxTypes"},
		{"max types negative", Config{MaxTypes: -1}, "MaxTypes"},
		{"default cost negative", Config{DefaultCost: -time.Millisecond}, "DefaultCost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("New(%+v) = %v, want no error", tt.cfg, err)
				}
				return
			}
			if !errors.Is(err, ErrBadConfig) {
				t.Fatalf("New(%+v) = %v, want an error wrapping ErrBadConfig", tt.cfg, err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("New(%+v) = %q, want the message to name %s", tt.cfg, err, tt.field)
			}
		})
	}
}

func TestEstimateOfUnseenTypeIsDefault(t *testing.T) {
	tests := []struct {
		cfg  Config
		want time.Duration
	}{
		{Config{}, 10 * time.Millisecond},
		{Config{DefaultCost: 3 * time.Millisecond}, 3 * time.Millisecond},
		{Config{DefaultCost: 3 * time.Millisecond, Window: 10 * time.Second}, 3 * time.Millisecond},
	}
	for _, tt := range tests {
		tab, _ := newTable(t, tt.cfg)
		tab.Record(1, []byte("seen"), time.Second)
		if got := tab.Estimate(2); got != tt.want {
			t.Errorf("%+v: Estimate(unseen) = %v, want %v", tt.cfg, got, tt.want)
		}
	}
}

func TestFirstSampleIsTheEstimate(t *testing.T) {
	for _, window := range []time.Duration{0, 10 * time.Second} {
		tab, _ := newTable(t, Config{Window: window})
		tab.Record(7, []byte("q"), 42*time.Millisecond)
		if got, want := tab.Estimate(7), 42*time.Millisecond; got != want {
			t.Errorf("Window %v: Estimate after one sample = %v, want %v", window, got, want)
		}
	}
}

func TestNegativeCostCountsAsZero(t *testing.T) {
	tab, _ := newTable(t, Config{Weight: 1})
	tab.Record(1, nil, -time.Second)
	if got := tab.Estimate(1); got != 0 {
		t.Errorf("Estimate after a negative sample = %v, want 0", got)
	}
}

// ExpectMeasured tells a measured estimate from the default: a type is measured once it has
// a sample of its own, and is not while it is unseen, waits for a second sight to get into
// a full table, or has been evicted into the other bucket.
func TestExpectMeasuredTellsTheDefaultFromAMeasurement(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		record   func(tab *Table)
		key      Key
		wantCost time.Duration
		want     bool
	}{
		{"unseen", Config{}, func(*Table) {}, 1, DefaultDefaultCost, false},
		{"one sample", Config{}, func(tab *Table) { tab.Record(1, nil, 3*time.Millisecond) }, 1, 3 * time.Millisecond, true},
		{"a sample of zero", Config{}, func(tab *Table) { tab.Record(1, nil, 0) }, 1, 0, true},
		{"window: a sample", Config{Window: 10 * time.Second}, func(tab *Table) { tab.Record(1, nil, 3*time.Millisecond) },
			1, 3 * time.Millisecond, true},
		{"full table, first sight", Config{MaxTypes: 1}, func(tab *Table) {
			tab.Record(2, nil, time.Millisecond)
			tab.Record(1, nil, 3*time.Millisecond) // to the other bucket
		}, 1, DefaultDefaultCost, false},
		{"full table, second sight", Config{MaxTypes: 1}, func(tab *Table) {
			tab.Record(2, nil, time.Millisecond)
			tab.Record(1, nil, 3*time.Millisecond)
			tab.Record(1, nil, 5*time.Millisecond) // in, evicting 2
		}, 1, 5 * time.Millisecond, true},
		{"evicted", Config{MaxTypes: 1}, func(tab *Table) {
			tab.Record(2, nil, time.Millisecond)
			tab.Record(1, nil, 3*time.Millisecond)
			tab.Record(1, nil, 5*time.Millisecond)
		}, 2, DefaultDefaultCost, false},
		{"reset", Config{}, func(tab *Table) { tab.Record(1, nil, 3*time.Millisecond); tab.Reset() }, 1, DefaultDefaultCost, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, _ := newTable(t, tt.cfg)
			tt.record(tab)
			cost, busy, measured := tab.ExpectMeasured(tt.key)
			if cost != tt.wantCost || measured != tt.want {
				t.Errorf("ExpectMeasured = %v, %v, %t; want %v, _, %t", cost, busy, measured, tt.wantCost, tt.want)
			}
			if c, b := tab.Expect(tt.key); c != cost || b != busy {
				t.Errorf("Expect = %v, %v; ExpectMeasured said %v, %v", c, b, cost, busy)
			}
		})
	}
}

func TestExpectGivesCostAndBusyTime(t *testing.T) {
	const def = 10 * time.Millisecond
	tests := []struct {
		name     string
		window   time.Duration
		record   func(tab *Table)
		wantCost time.Duration
		wantBusy time.Duration
	}{
		{"unseen", 0, func(*Table) {}, def, def},
		{"busy time is the cost", 0, func(tab *Table) { tab.Record(1, nil, 4*time.Millisecond) },
			4 * time.Millisecond, 4 * time.Millisecond},
		{"processor share", 0, func(tab *Table) { tab.RecordBusy(1, nil, 2*time.Millisecond, 30*time.Millisecond) },
			2 * time.Millisecond, 30 * time.Millisecond},
		{"moving averages", 0, func(tab *Table) {
			tab.RecordBusy(1, nil, 2*time.Millisecond, 30*time.Millisecond)
			tab.RecordBusy(1, nil, 4*time.Millisecond, 10*time.Millisecond) // weight 0.5
		}, 3 * time.Millisecond, 20 * time.Millisecond},
		{"window mean and busy average", 10 * time.Second, func(tab *Table) {
			tab.RecordBusy(1, nil, 2*time.Millisecond, 30*time.Millisecond)
			tab.RecordBusy(1, nil, 6*time.Millisecond, 10*time.Millisecond)
		}, 4 * time.Millisecond, 20 * time.Millisecond},
		{"negative busy counts as zero", 0, func(tab *Table) { tab.RecordBusy(1, nil, time.Millisecond, -time.Second) },
			time.Millisecond, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, _ := newTable(t, Config{Weight: 0.5, Window: tt.window})
			tt.record(tab)
			cost, busy := tab.Expect(1)
			if cost != tt.wantCost || busy != tt.wantBusy {
				t.Errorf("Expect = %v, %v; want %v, %v", cost, busy, tt.wantCost, tt.wantBusy)
			}
			if got := tab.Estimate(1); got != cost {
				t.Errorf("Estimate = %v, Expect's cost %v", got, cost)
			}
			if tt.wantCost != def {
				if got := statsOf(t, tab, nameOf(1)).Busy; got != tt.wantBusy {
					t.Errorf("snapshot Busy = %v, want %v", got, tt.wantBusy)
				}
			}
		})
	}
}

// samplesToWithin is the number of samples after which a moving average of weight w is
// within a fraction f of a step: the least n with (1-w)^n <= f.
func samplesToWithin(w, f float64) int {
	if w == 1 {
		return 1
	}
	return int(math.Ceil(math.Log(f) / math.Log(1-w)))
}

func TestMovingAverageFollowsStepWithinImpliedSamples(t *testing.T) {
	tests := []struct {
		weight, within float64
		want           int
	}{
		{0.1, 0.10, 22},
		{0.1, 0.01, 44},
		{0.05, 0.10, 45},
		{0.2, 0.10, 11},
		{0.5, 0.10, 4},
		{1, 0.10, 1},
	}
	const before, after = 10 * time.Millisecond, 110 * time.Millisecond
	for _, tt := range tests {
		if got := samplesToWithin(tt.weight, tt.within); got != tt.want {
			t.Errorf("samplesToWithin(%v, %v) = %d, want %d", tt.weight, tt.within, got, tt.want)
		}
		tab, clock := newTable(t, Config{Weight: tt.weight})
		tab.Record(1, nil, before)
		tolerance := time.Duration(tt.within * float64(after-before))
		for n := 1; n <= tt.want; n++ {
			clock.Advance(time.Second)
			tab.Record(1, nil, after)
			miss := after - tab.Estimate(1)
			switch {
			case n < tt.want && miss <= tolerance:
				t.Errorf("weight %v: within %v of the new cost after %d samples, sooner than the %d stated",
					tt.weight, tolerance, n, tt.want)
			case n == tt.want && miss > tolerance:
				t.Errorf("weight %v: %v from the new cost after %d samples, want at most %v",
					tt.weight, miss, n, tolerance)
			}
		}
	}
}

func TestWindowMeanEqualsNewCostOnceWindowHasPassed(t *testing.T) {
	const before, after = 10 * time.Millisecond, 100 * time.Millisecond
	for _, window := range []time.Duration{time.Second * 10, time.Minute, 5 * time.Minute} {
		tab, clock := newTable(t, Config{Window: window})
		width := window / numBuckets
		for elapsed := time.Duration(0); elapsed < 2*window; elapsed += time.Second {
			tab.Record(1, nil, before)
			clock.Advance(time.Second)
		}
		stepAt := clock.Now().Add(-time.Second) // the last old sample
		for clock.Now().Sub(stepAt) <= 2*window {
			tab.Record(1, nil, after)
			got := tab.Estimate(1)
			switch since := clock.Now().Sub(stepAt); {
			case since >= window && got != after:
				t.Fatalf("Window %v: %v after the last old sample, estimate %v, want %v", window, since, got, after)
			case since < window-width && (got >= after || got <= before):
				t.Fatalf("Window %v: %v after the last old sample, estimate %v, want a mix strictly between %v and %v",
					window, since, got, before, after)
			}
			clock.Advance(time.Second)
		}
	}
}

func TestWindowWithoutSamplesFallsBackToMovingAverage(t *testing.T) {
	tab, clock := newTable(t, Config{Window: 10 * time.Second, Weight: 0.5})
	tab.Record(1, nil, 20*time.Millisecond)
	tab.Record(1, nil, 40*time.Millisecond)
	if got, want := tab.Estimate(1), 30*time.Millisecond; got != want {
		t.Fatalf("window mean = %v, want %v", got, want)
	}
	clock.Advance(time.Minute)
	if got, want := tab.Estimate(1), 30*time.Millisecond; got != want {
		t.Errorf("estimate with an empty window = %v, want the moving average %v", got, want)
	}
}

func TestSampleIsCopiedAndClipped(t *testing.T) {
	tab, _ := newTable(t, Config{})
	buf := []byte("SELECT * FROM t WHERE id = ?")
	tab.Record(1, buf, time.Millisecond)
	copy(buf, "XXXXXX")
	tab.Record(1, []byte("ignored for a known type"), time.Millisecond)
	if got, want := statsOf(t, tab, nameOf(1)).Sample, "SELECT * FROM t WHERE id = ?"; got != want {
		t.Errorf("Sample = %q, want %q", got, want)
	}

	long := []byte(strings.Repeat("é", 1000)) // 2000 bytes of two-byte runes
	tab.Record(2, long[1:], time.Millisecond) // starts mid-rune: still must not panic
	tab.Record(3, long, time.Millisecond)
	got := statsOf(t, tab, nameOf(3)).Sample
	if len(got) > maxSampleLen || !utf8.ValidString(got) || !strings.HasPrefix(string(long), got) {
		t.Errorf("clipped sample: %d bytes, valid UTF-8 %v; want a prefix of at most %d bytes cut at a rune",
			len(got), utf8.ValidString(got), maxSampleLen)
	}
}

func TestEvictionKeepsHotTypesAndFoldsTheRestIntoOther(t *testing.T) {
	const maxTypes, hot, hotSamples, cold = 8, 7, 100, 1000
	tab, clock := newTable(t, Config{MaxTypes: maxTypes, Weight: 1})
	for k := Key(1); k <= hot; k++ {
		for range hotSamples {
			tab.Record(k, []byte("hot"), time.Millisecond)
		}
	}
	// Each cold type is seen twice: the first time a full table counts it as other, the
	// second time it takes the place of the least used type.
	for i := range cold {
		tab.Record(Key(1000+i), []byte("cold"), 5*time.Millisecond)
		tab.Record(Key(1000+i), []byte("cold"), 5*time.Millisecond)
		clock.Advance(10 * time.Millisecond)
	}
	if got := tab.Len(); got != maxTypes {
		t.Errorf("Len() = %d, want %d", got, maxTypes)
	}
	if got, want := tab.Evictions(), uint64(cold-(maxTypes-hot)); got != want {
		t.Errorf("Evictions() = %d, want %d", got, want)
	}
	var total uint64
	for _, ts := range tab.Snapshot() {
		total += ts.Count
	}
	if want := uint64(hot*hotSamples + 2*cold); total != want {
		t.Errorf("samples in the snapshot = %d, want %d (none lost to eviction)", total, want)
	}
	for k := Key(1); k <= hot; k++ {
		if got := statsOf(t, tab, nameOf(k)).Count; got != hotSamples {
			t.Errorf("hot type %d: Count = %d, want %d", k, got, hotSamples)
		}
	}
	if got, want := statsOf(t, tab, nameOf(1000+cold-1)).Count, uint64(1); got != want {
		t.Errorf("latest cold type: Count = %d, want %d (its first sample went to other)", got, want)
	}
	other := statsOf(t, tab, OtherName)
	if want := uint64(2*cold - 1); other.Count != want || other.Mean != 5*time.Millisecond || other.Sample != "" {
		t.Errorf("other = {Count %d, Mean %v, Sample %q}, want {%d, %v, \"\"}",
			other.Count, other.Mean, other.Sample, want, 5*time.Millisecond)
	}
	if got := tab.Estimate(1000); got != DefaultDefaultCost {
		t.Errorf("Estimate(evicted) = %v, want the default %v", got, DefaultDefaultCost)
	}
}

func TestFullTableTakesTypeOnSecondSight(t *testing.T) {
	tab, _ := newTable(t, Config{MaxTypes: 2})
	tab.Record(1, nil, time.Millisecond)
	tab.Record(2, nil, time.Millisecond)

	tab.Record(3, nil, 7*time.Millisecond)
	if got := tab.Len(); got != 2 {
		t.Fatalf("Len() after a first sight = %d, want 2", got)
	}
	if got := tab.Estimate(3); got != DefaultDefaultCost {
		t.Errorf("Estimate after a first sight = %v, want the default %v", got, DefaultDefaultCost)
	}
	if got := statsOf(t, tab, OtherName).Count; got != 1 {
		t.Errorf("other Count = %d, want 1", got)
	}

	tab.Record(3, nil, 9*time.Millisecond)
	if got := tab.Estimate(3); got != 9*time.Millisecond {
		t.Errorf("Estimate after a second sight = %v, want 9ms", got)
	}
	if got := tab.Len(); got != 2 {
		t.Errorf("Len() = %d, want 2", got)
	}
	if got := tab.Evictions(); got != 1 {
		t.Errorf("Evictions() = %d, want 1", got)
	}
}

func TestConcurrentChurn(t *testing.T) {
	const workers, perWorker, keys, maxTypes = 4, 5000, 300, 50
	tab, clock := newTable(t, Config{MaxTypes: maxTypes})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			x := uint64(w + 1)
			for range perWorker {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				k := Key(x % keys)
				if x%4 == 0 {
					k %= 10 // a few hot types
				}
				tab.Record(k, nil, time.Duration(k+1)*time.Microsecond)
				_ = tab.Estimate(k)
				if n := tab.Len(); n > maxTypes {
					t.Errorf("Len() = %d, want at most %d", n, maxTypes)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			_ = tab.Snapshot()
			clock.Advance(100 * time.Millisecond)
		}
	})
	wg.Wait()
	snap := tab.Snapshot()
	var total uint64
	for _, ts := range snap {
		total += ts.Count
	}
	// A sample that races with the eviction of its type may be lost; no other.
	if want := uint64(workers * perWorker); total > want || total < want*99/100 {
		t.Errorf("samples in the snapshot = %d, want %d (at most 1%% lost to racing evictions)", total, want)
	}
	if got := len(snap); got > maxTypes+1 {
		t.Errorf("snapshot of %d types, want at most %d", got, maxTypes+1)
	}
}

func TestMillionDistinctKeysStayBounded(t *testing.T) {
	const hot, keys = 20, 1_000_000
	tab, clock := newTable(t, Config{})
	sample := []byte("SELECT c FROM sbtest1 WHERE id = ?")
	for k := Key(1); k <= hot; k++ {
		tab.Record(k, sample, time.Millisecond)
	}
	for i := 0; tab.Len() < DefaultMaxTypes; i++ {
		tab.Record(Key(1<<40+i), sample, time.Millisecond)
	}
	full := heapInUse()

	// Most keys occur once and stay out of the full table; one in 64 occurs twice and gets
	// in, evicting another.
	for i := range keys {
		tab.Record(Key(1<<32+i), sample, time.Millisecond)
		if i%64 == 0 {
			tab.Record(Key(1<<32+i), sample, time.Millisecond)
		}
		if i%16 == 0 {
			tab.Record(Key(1+i/16%hot), sample, time.Millisecond)
		}
		if i%1024 == 0 {
			clock.Advance(10 * time.Millisecond)
			if n := tab.Len(); n > DefaultMaxTypes {
				t.Fatalf("after %d keys: Len() = %d, want at most %d", i, n, DefaultMaxTypes)
			}
		}
	}
	snap := tab.Snapshot()
	if len(snap) > DefaultMaxTypes+1 {
		t.Errorf("snapshot of %d types, want at most %d", len(snap), DefaultMaxTypes+1)
	}
	var total uint64
	names := make(map[string]bool)
	for _, ts := range snap {
		total += ts.Count
		names[ts.Name] = true
	}
	if want := uint64(DefaultMaxTypes + keys + keys/64 + keys/16); total != want {
		t.Errorf("samples in the snapshot = %d, want %d", total, want)
	}
	for k := Key(1); k <= hot; k++ {
		if !names[nameOf(k)] {
			t.Errorf("hot type %d was evicted", k)
		}
	}
	if got, want := tab.Evictions(), uint64(keys/64); got < want {
		t.Errorf("Evictions() = %d, want at least the %d keys seen twice", got, want)
	}
	t.Logf("%d evictions", tab.Evictions())
	// The heap must be what a full table takes, not what a million types would.
	after := heapInUse()
	t.Logf("heap: %.1f MiB with a full table, %.1f MiB after %d distinct keys", float64(full)/(1<<20), float64(after)/(1<<20), keys)
	if grown := int64(after) - int64(full); grown > 8<<20 {
		t.Errorf("heap grew by %d MiB over a full table while recording %d distinct keys", grown>>20, keys)
	}
	runtime.KeepAlive(tab)
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func TestConcurrentUse(t *testing.T) {
	const workers, perWorker, types = 8, 4000, 40
	const defaultCost = 100 * time.Microsecond // below every type's cost
	tab, clock := newTable(t, Config{DefaultCost: defaultCost})
	cost := func(k Key) time.Duration { return time.Duration(k+1) * time.Millisecond }

	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				k := Key((w*perWorker + i) % types)
				tab.Record(k, []byte("q"), cost(k))
				// A window mean read while samples of the type are in flight may be off
				// by those; it must still be an estimate of the type, not the default.
				if got := tab.Estimate(k); got <= defaultCost {
					t.Errorf("Estimate(%s) = %v while recording %v", nameOf(k), got, cost(k))
					return
				}
			}
		})
	}
	var side sync.WaitGroup
	stop := make(chan struct{})
	side.Go(func() {
		// Moving average and windows of several widths: a constant cost is the estimate
		// under every one of them.
		configs := []Config{
			{Weight: 0.2, DefaultCost: defaultCost},
			{Window: 10 * time.Second, DefaultCost: defaultCost},
			{Weight: 0.5, Window: 20 * time.Second, DefaultCost: defaultCost},
		}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = tab.Snapshot()
			if err := tab.Reconfigure(configs[i%len(configs)]); err != nil {
				t.Error(err)
				return
			}
			clock.Advance(time.Second)
		}
	})
	wg.Wait()
	close(stop)
	side.Wait()

	for round, cfg := range []Config{{Window: 10 * time.Second, DefaultCost: defaultCost}, {DefaultCost: defaultCost}} {
		if err := tab.Reconfigure(cfg); err != nil {
			t.Fatal(err)
		}
		for k := range Key(types) {
			tab.Record(k, nil, cost(k))
		}
		var total uint64
		for _, ts := range tab.Snapshot() {
			total += ts.Count
			if want := cost(ts.Key); ts.Mean != want || tab.Estimate(ts.Key) != want {
				t.Errorf("Window %v: type %s: Mean %v, Estimate %v, want %v",
					cfg.Window, ts.Name, ts.Mean, tab.Estimate(ts.Key), want)
			}
		}
		if want := uint64(workers*perWorker + (round+1)*types); total != want {
			t.Errorf("samples = %d, want %d", total, want)
		}
		if got := tab.Len(); got != types {
			t.Errorf("Len() = %d, want %d", got, types)
		}
	}
}

func TestKnownTypeAllocatesNothing(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"moving average, system clock", Config{Clock: systemClock{}}},
		{"window, system clock", Config{Clock: systemClock{}, Window: 10 * time.Second}},
		{"moving average, manual clock", Config{Clock: newManualClock()}},
	}
	sample := []byte("SELECT 1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			tab.Record(1, sample, time.Millisecond)
			var sink time.Duration
			got := testing.AllocsPerRun(1000, func() {
				tab.Record(1, sample, time.Millisecond)
				tab.RecordBusy(1, sample, time.Millisecond, 2*time.Millisecond)
				sink += tab.Estimate(1)
				sink += tab.Estimate(2) // unseen: the default
				c, b := tab.Expect(1)
				sink += c + b
				c, b, _ = tab.ExpectMeasured(1)
				sink += c + b
			})
			if got != 0 {
				t.Errorf("Record+Estimate+Expect of a known type: %v allocations, want 0", got)
			}
		})
	}
}

func TestReset(t *testing.T) {
	tab, _ := newTable(t, Config{MaxTypes: 2})
	for k := Key(1); k <= 5; k++ {
		tab.Record(k, nil, time.Second)
	}
	evicted := tab.Evictions()
	tab.Reset()
	if got := tab.Len(); got != 0 {
		t.Errorf("Len() after Reset = %d, want 0", got)
	}
	if got := tab.Snapshot(); len(got) != 0 {
		t.Errorf("Snapshot() after Reset = %d types, want none", len(got))
	}
	if got := tab.Estimate(5); got != DefaultDefaultCost {
		t.Errorf("Estimate after Reset = %v, want the default", got)
	}
	if got := tab.Evictions(); got != evicted {
		t.Errorf("Evictions() after Reset = %d, want it kept at %d", got, evicted)
	}
	tab.Record(9, nil, time.Millisecond)
	if got := tab.Estimate(9); got != time.Millisecond {
		t.Errorf("Estimate after Reset and a sample = %v, want 1ms", got)
	}
}

func TestReconfigure(t *testing.T) {
	t.Run("weight applies to later samples", func(t *testing.T) {
		tab, _ := newTable(t, Config{Weight: 0.5})
		tab.Record(1, nil, 10*time.Millisecond)
		if err := tab.Reconfigure(Config{Weight: 1}); err != nil {
			t.Fatal(err)
		}
		if got, want := tab.Estimate(1), 10*time.Millisecond; got != want {
			t.Errorf("estimate after reconfigure = %v, want it kept at %v", got, want)
		}
		tab.Record(1, nil, 30*time.Millisecond)
		if got, want := tab.Estimate(1), 30*time.Millisecond; got != want {
			t.Errorf("estimate after a sample with weight 1 = %v, want %v", got, want)
		}
	})
	t.Run("default cost", func(t *testing.T) {
		tab, _ := newTable(t, Config{})
		if err := tab.Reconfigure(Config{DefaultCost: time.Second}); err != nil {
			t.Fatal(err)
		}
		if got := tab.Estimate(1); got != time.Second {
			t.Errorf("Estimate(unseen) = %v, want 1s", got)
		}
	})
	t.Run("smaller max types evicts at once", func(t *testing.T) {
		tab, _ := newTable(t, Config{})
		for k := Key(1); k <= 50; k++ {
			tab.Record(k, nil, time.Millisecond)
		}
		if err := tab.Reconfigure(Config{MaxTypes: 10}); err != nil {
			t.Fatal(err)
		}
		if got := tab.Len(); got != 10 {
			t.Errorf("Len() = %d, want 10", got)
		}
		if got := statsOf(t, tab, OtherName).Count; got != 40 {
			t.Errorf("other Count = %d, want 40", got)
		}
	})
	t.Run("new window keeps estimates and restarts recent statistics", func(t *testing.T) {
		tab, clock := newTable(t, Config{Window: 10 * time.Second})
		tab.Record(1, nil, 10*time.Millisecond)
		tab.Record(1, nil, 30*time.Millisecond)
		clock.Advance(time.Second)
		if err := tab.Reconfigure(Config{Window: 20 * time.Second, Weight: 1}); err != nil {
			t.Fatal(err)
		}
		ts := statsOf(t, tab, nameOf(1))
		if ts.Mean != 12*time.Millisecond || ts.Rate != 0 || ts.P50 != 0 || ts.Count != 2 {
			t.Errorf("after a new window: {Mean %v, Rate %v, P50 %v, Count %d}, want {12ms (the moving average), 0, 0, 2}",
				ts.Mean, ts.Rate, ts.P50, ts.Count)
		}
		tab.Record(1, nil, 50*time.Millisecond)
		if got, want := tab.Estimate(1), 50*time.Millisecond; got != want {
			t.Errorf("estimate after a sample in the new window = %v, want %v", got, want)
		}
	})
	t.Run("invalid config changes nothing", func(t *testing.T) {
		tab, _ := newTable(t, Config{DefaultCost: time.Millisecond})
		err := tab.Reconfigure(Config{Weight: 2, DefaultCost: time.Second})
		if !errors.Is(err, ErrBadConfig) {
			t.Fatalf("Reconfigure(Weight 2) = %v, want ErrBadConfig", err)
		}
		if got := tab.Estimate(1); got != time.Millisecond {
			t.Errorf("Estimate(unseen) = %v, want the old default 1ms", got)
		}
	})
}

func TestShardCount(t *testing.T) {
	tests := []struct{ maxTypes, want int }{
		{1, 64},
		{1000, 64},
		{1024, 64},
		{1025, 128},
		{10000, 1024},
		{MaxMaxTypes, 8192},
	}
	for _, tt := range tests {
		if got := shardCount(tt.maxTypes); got != tt.want {
			t.Errorf("shardCount(%d) = %d, want %d", tt.maxTypes, got, tt.want)
		}
	}
}
