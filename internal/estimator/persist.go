package estimator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// stateVersion is the version of the format Save writes and Load reads.
const stateVersion = 1

// maxStateBytes bounds what Load reads: MaxMaxTypes types with samples of the longest kept.
const maxStateBytes = 256 << 20

// Errors of Load, to check with errors.Is.
var (
	// ErrStateVersion means the state was written in a version of the format this build
	// does not read.
	ErrStateVersion = errors.New("unknown estimator state version")
	// ErrCorruptState means the state is not a well-formed state of a known version.
	ErrCorruptState = errors.New("corrupt estimator state")
)

// state is the saved form of a table (version 1). Costs are integer nanoseconds; keys are
// 16 hexadecimal digits, since JSON numbers do not carry 64 bits.
type state struct {
	Version int         `json:"version"`
	SavedAt time.Time   `json:"saved_at,omitzero"`
	Types   []savedType `json:"types"`
	Other   *savedType  `json:"other,omitempty"`
}

type savedType struct {
	Key    string `json:"key,omitempty"`
	Sample string `json:"sample,omitempty"`
	Count  uint64 `json:"count"`
	MeanNS int64  `json:"mean_ns"`
	// BusyNS is the moving average of the busy time; absent in states saved before it was
	// kept, or when unknown.
	BusyNS     int64     `json:"busy_ns,omitempty"`
	LastUpdate time.Time `json:"last_update,omitzero"`
}

// Save writes the table's estimates as versioned JSON: for each type its key, sample, count,
// estimate and last update, in the order of Snapshot, and the same aggregate for the other
// bucket. The recent statistics (window buckets, rate, share, percentiles) are not saved.
func (t *Table) Save(w io.Writer) error {
	st := state{Version: stateVersion, SavedAt: t.clock.Now().UTC(), Types: []savedType{}}
	for _, ts := range t.Snapshot() {
		sv := savedType{
			Sample:     ts.Sample,
			Count:      ts.Count,
			MeanNS:     int64(ts.Mean),
			BusyNS:     int64(ts.Busy),
			LastUpdate: ts.LastUpdate.UTC(),
		}
		if ts.Name == OtherName {
			st.Other = &sv
			continue
		}
		sv.Key = ts.Name
		st.Types = append(st.Types, sv)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&st); err != nil {
		return fmt.Errorf("estimator: save: %w", err)
	}
	return nil
}

// Load replaces the table's contents with a state written by Save. Types beyond MaxTypes (the
// file lists the most loaded first) are folded into the other bucket. A loaded type's
// estimate is its saved estimate until new samples move it; its recent statistics start
// empty. If the state is of an unknown version ([ErrStateVersion]) or corrupt
// ([ErrCorruptState]), Load returns the error and leaves the table empty and usable.
func (t *Table) Load(r io.Reader) error {
	st, err := decodeState(r)
	t.Reset()
	if err != nil {
		return err
	}
	s := t.cfg.Load()
	tick := s.tick(t.clock.Now())
	for _, sv := range st.Types {
		key, _ := parseKey(sv.Key) // validated by decodeState
		e := loadedEntry(key, sv)
		if !t.reserve(s.maxTypes) {
			t.fold(e, tick)
			continue
		}
		sh := t.shardOf(key)
		sh.mu.Lock()
		live := sh.load()[key] != nil // recorded since the Reset: the live type wins
		if !live {
			sh.putLocked(key, e)
		}
		sh.mu.Unlock()
		if live {
			t.n.Add(-1)
		}
	}
	if st.Other != nil {
		t.fold(loadedEntry(0, *st.Other), tick)
	}
	return nil
}

// loadedEntry builds the entry of a saved type.
func loadedEntry(key Key, sv savedType) *entry {
	e := newEntry(key, []byte(sv.Sample))
	e.mean.Store(math.Float64bits(float64(sv.MeanNS)))
	if sv.BusyNS > 0 {
		e.busy.Store(math.Float64bits(float64(sv.BusyNS)))
	}
	e.count.Store(sv.Count)
	total := float64(sv.MeanNS) * float64(sv.Count)
	if total >= math.MaxUint64 {
		total = math.MaxUint64
	}
	e.total.Store(uint64(total))
	if !sv.LastUpdate.IsZero() {
		e.last.Store(sv.LastUpdate.UnixNano())
	}
	return e
}

// decodeState reads and validates a saved state.
func decodeState(r io.Reader) (*state, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxStateBytes+1))
	if err != nil {
		return nil, fmt.Errorf("estimator: load: %w", err)
	}
	if len(data) > maxStateBytes {
		return nil, fmt.Errorf("estimator: load: state larger than %d bytes: %w", maxStateBytes, ErrCorruptState)
	}
	// The version first, so that a newer format is reported as such rather than by the
	// first field this build does not know.
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("estimator: load: %w: %w", ErrCorruptState, err)
	}
	if head.Version == nil {
		return nil, fmt.Errorf("estimator: load: no version field: %w", ErrCorruptState)
	}
	if *head.Version != stateVersion {
		return nil, fmt.Errorf("estimator: load: state version %d, this build reads version %d: %w",
			*head.Version, stateVersion, ErrStateVersion)
	}

	var st state
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("estimator: load: %w: %w", ErrCorruptState, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("estimator: load: data after the state: %w", ErrCorruptState)
	}
	seen := make(map[Key]bool, len(st.Types))
	for i, sv := range st.Types {
		key, err := parseKey(sv.Key)
		if err != nil {
			return nil, fmt.Errorf("estimator: load: type %d: %w: %w", i, ErrCorruptState, err)
		}
		if seen[key] {
			return nil, fmt.Errorf("estimator: load: type %d: key %s listed twice: %w", i, sv.Key, ErrCorruptState)
		}
		seen[key] = true
		if sv.MeanNS < 0 || sv.BusyNS < 0 {
			return nil, fmt.Errorf("estimator: load: type %s: negative mean_ns %d or busy_ns %d: %w", sv.Key, sv.MeanNS, sv.BusyNS, ErrCorruptState)
		}
	}
	if o := st.Other; o != nil {
		if o.Key != "" || o.Sample != "" {
			return nil, fmt.Errorf("estimator: load: other bucket with a key or sample: %w", ErrCorruptState)
		}
		if o.MeanNS < 0 || o.BusyNS < 0 {
			return nil, fmt.Errorf("estimator: load: other bucket: negative mean_ns %d or busy_ns %d: %w", o.MeanNS, o.BusyNS, ErrCorruptState)
		}
	}
	return &st, nil
}

// parseKey parses a key written as 16 hexadecimal digits.
func parseKey(s string) (Key, error) {
	if len(s) != 16 {
		return 0, fmt.Errorf("key %q: want 16 hexadecimal digits", s)
	}
	k, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("key %q: want 16 hexadecimal digits", s)
	}
	return Key(k), nil
}
