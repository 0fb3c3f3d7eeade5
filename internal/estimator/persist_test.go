package estimator

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	for _, window := range []time.Duration{0, 10 * time.Second} {
		cfg := Config{Window: window, MaxTypes: 5}
		src, clock := newTable(t, cfg)
		for i := range 400 {
			k := Key(i%7 + 1)
			cost := time.Duration(k)*time.Millisecond + time.Duration(i)*time.Microsecond
			src.RecordBusy(k, []byte("SELECT "+nameOf(k)), cost, 3*cost)
			clock.Advance(50 * time.Millisecond)
		}
		var buf bytes.Buffer
		if err := src.Save(&buf); err != nil {
			t.Fatalf("Save: %v", err)
		}
		dst, _ := newTable(t, cfg)
		dst.Record(99, nil, time.Second) // replaced by the load
		if err := dst.Load(bytes.NewReader(buf.Bytes())); err != nil {
			t.Fatalf("Load: %v\n%s", err, buf.Bytes())
		}
		want, got := src.Snapshot(), dst.Snapshot()
		if len(got) != len(want) {
			t.Fatalf("Window %v: loaded %d types, saved %d", window, len(got), len(want))
		}
		byName := make(map[string]TypeStats)
		for _, ts := range got {
			byName[ts.Name] = ts
		}
		for _, w := range want {
			g, ok := byName[w.Name]
			if !ok {
				t.Errorf("Window %v: type %s lost", window, w.Name)
				continue
			}
			if g.Key != w.Key || g.Sample != w.Sample || g.Count != w.Count || g.Mean != w.Mean ||
				g.Busy != w.Busy || !g.LastUpdate.Equal(w.LastUpdate) {
				t.Errorf("Window %v: loaded %+v\nsaved %+v", window, g, w)
			}
			if w.Name != OtherName {
				if ge, we := dst.Estimate(w.Key), src.Estimate(w.Key); ge != we {
					t.Errorf("Window %v: Estimate(%s) = %v after load, %v before", window, w.Name, ge, we)
				}
				_, gb := dst.Expect(w.Key)
				_, wb := src.Expect(w.Key)
				if gb != wb || gb == 0 {
					t.Errorf("Window %v: busy of %s = %v after load, %v before", window, w.Name, gb, wb)
				}
			}
		}
		if got := dst.Estimate(99); got != DefaultDefaultCost {
			t.Errorf("Estimate of a type recorded before the load = %v, want the default", got)
		}
	}
}

func TestLoadAndSaveMatchFormat(t *testing.T) {
	golden, err := os.ReadFile("testdata/state-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	tab, _ := newTable(t, Config{}) // the manual clock reads the golden saved_at
	if err := tab.Load(bytes.NewReader(golden)); err != nil {
		t.Fatalf("Load: %v", err)
	}
	tests := []struct {
		key  Key
		want time.Duration
	}{
		{0x9f86d081884c7d65, 180 * time.Microsecond},
		{0xff, 42 * time.Millisecond},
		{0xa1b2c3d4e5f60718, 2500 * time.Millisecond},
		{0x1234, DefaultDefaultCost},
	}
	for _, tt := range tests {
		if got := tab.Estimate(tt.key); got != tt.want {
			t.Errorf("Estimate(%016x) = %v, want %v", uint64(tt.key), got, tt.want)
		}
		// A state saved before busy times were kept: expected to be busy for its cost.
		if _, busy := tab.Expect(tt.key); busy != tt.want {
			t.Errorf("Expect(%016x) busy = %v, want %v", uint64(tt.key), busy, tt.want)
		}
		// A loaded type keeps its measurement across the restart.
		if _, _, measured := tab.ExpectMeasured(tt.key); measured != (tt.key != 0x1234) {
			t.Errorf("ExpectMeasured(%016x) measured = %t after load", uint64(tt.key), measured)
		}
	}
	var buf bytes.Buffer
	if err := tab.Save(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), golden) {
		t.Errorf("Save after Load:\n%s\nwant testdata/state-v1.json:\n%s", buf.Bytes(), golden)
	}
}

func TestLoadRespectsMaxTypes(t *testing.T) {
	golden, err := os.ReadFile("testdata/state-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	tab, _ := newTable(t, Config{MaxTypes: 2})
	if err := tab.Load(bytes.NewReader(golden)); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := tab.Len(); got != 2 {
		t.Errorf("Len() = %d, want 2", got)
	}
	if got := tab.Estimate(0xa1b2c3d4e5f60718); got != DefaultDefaultCost {
		t.Errorf("Estimate of the type past MaxTypes = %v, want the default", got)
	}
	other := statsOf(t, tab, OtherName)
	wantMean := (5*3*time.Millisecond + 12*2500*time.Millisecond) / 17
	if other.Count != 17 || other.Mean != wantMean {
		t.Errorf("other = {Count %d, Mean %v}, want {17, %v}", other.Count, other.Mean, wantMean)
	}
}

func TestLoadRefusesBadState(t *testing.T) {
	v2, err := os.ReadFile("testdata/state-v2.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		state string
		want  error
		says  string
	}{
		{"newer version", string(v2), ErrStateVersion, "version 2"},
		{"version zero", `{"version": 0, "types": []}`, ErrStateVersion, "version 0"},
		{"no version", `{"types": []}`, ErrCorruptState, "no version"},
		{"empty", ``, ErrCorruptState, ""},
		{"not JSON", `gatekeeper`, ErrCorruptState, ""},
		{"truncated", `{"version": 1, "types": [{"key": "00000000000000ff", "cou`, ErrCorruptState, ""},
		{"unknown field", `{"version": 1, "types": [], "capacity": 5}`, ErrCorruptState, "capacity"},
		{"wrong type", `{"version": 1, "types": [{"key": "00000000000000ff", "count": "many"}]}`, ErrCorruptState, ""},
		{"short key", `{"version": 1, "types": [{"key": "ff", "count": 1, "mean_ns": 1}]}`, ErrCorruptState, "16 hexadecimal"},
		{"key not hex", `{"version": 1, "types": [{"key": "zz000000000000ff", "count": 1, "mean_ns": 1}]}`, ErrCorruptState, "16 hexadecimal"},
		{"duplicate key", `{"version": 1, "types": [{"key": "00000000000000ff", "mean_ns": 1}, {"key": "00000000000000ff", "mean_ns": 2}]}`, ErrCorruptState, "twice"},
		{"negative mean", `{"version": 1, "types": [{"key": "00000000000000ff", "mean_ns": -1}]}`, ErrCorruptState, "negative"},
		{"keyed other", `{"version": 1, "types": [], "other": {"key": "00000000000000ff", "count": 1, "mean_ns": 1}}`, ErrCorruptState, "other"},
		{"trailing data", `{"version": 1, "types": []} {"version": 1}`, ErrCorruptState, "after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, _ := newTable(t, Config{})
			tab.Record(1, nil, time.Second)
			err := tab.Load(strings.NewReader(tt.state))
			if !errors.Is(err, tt.want) {
				t.Fatalf("Load = %v, want an error wrapping %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Load = %q, want it to say %q", err, tt.says)
			}
			if n, snap := tab.Len(), tab.Snapshot(); n != 0 || len(snap) != 0 {
				t.Errorf("after a failed load: Len() %d, %d in the snapshot; want an empty table", n, len(snap))
			}
			tab.Record(2, nil, 3*time.Millisecond)
			if got := tab.Estimate(2); got != 3*time.Millisecond {
				t.Errorf("after a failed load: Estimate = %v, want 3ms from the sample recorded since", got)
			}
		})
	}
}

type failingWriter struct{}

var errDiskFull = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskFull }

func TestSaveReportsWriteError(t *testing.T) {
	tab, _ := newTable(t, Config{})
	tab.Record(1, nil, time.Millisecond)
	if err := tab.Save(failingWriter{}); !errors.Is(err, errDiskFull) {
		t.Errorf("Save to a failing writer = %v, want it to wrap %v", err, errDiskFull)
	}
}

func FuzzLoad(f *testing.F) {
	for _, name := range []string{"testdata/state-v1.json", "testdata/state-v2.json"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"version": 1, "types": [{"key": "00000000000000ff", "count": 18446744073709551615, "mean_ns": 9223372036854775807}]}`))
	f.Add([]byte(`{"version": 1, "types": [], "other": {"count": 3, "mean_ns": 7, "last_update": "1970-01-01T00:00:00Z"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, _ := newTable(t, Config{MaxTypes: 4})
		if err := tab.Load(bytes.NewReader(data)); err != nil {
			if tab.Len() != 0 || len(tab.Snapshot()) != 0 {
				t.Fatalf("failed load %v left %d types", err, tab.Len())
			}
			return
		}
		// What loads must save and load again to the same table.
		var first, second bytes.Buffer
		if err := tab.Save(&first); err != nil {
			t.Fatal(err)
		}
		again, _ := newTable(t, Config{MaxTypes: 4})
		if err := again.Load(bytes.NewReader(first.Bytes())); err != nil {
			t.Fatalf("reloading a saved state: %v\n%s", err, first.Bytes())
		}
		if err := again.Save(&second); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("save, load, save differs:\n%s\n%s", first.Bytes(), second.Bytes())
		}
	})
}
