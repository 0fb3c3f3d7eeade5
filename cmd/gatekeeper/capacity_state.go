package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
)

// The adaptive capacity is kept across restarts beside the estimates: the state file
// estimates.json has capacity.json's figures in estimates.capacity.json, saved with it.

// capacityStateVersion is the version of the format saveCapacity writes.
const capacityStateVersion = 1

// maxCapacityStateBytes bounds what loadCapacity reads.
const maxCapacityStateBytes = 64 << 20

// capacityState is the saved form of every backend's adaptive capacity. Shapes are 16
// hexadecimal digits, since JSON numbers do not carry 64 bits.
type capacityState struct {
	Version  int              `json:"version"`
	SavedAt  time.Time        `json:"saved_at"`
	Backends []savedBackendAC `json:"backends"`
}

type savedBackendAC struct {
	Backend    string       `json:"backend"`
	CapacityNS int64        `json:"capacity_ns"`
	Alone      []savedAlone `json:"alone"`
}

type savedAlone struct {
	Shape string `json:"shape"`
	NS    int64  `json:"ns"`
}

// capacityFile is where the adaptive capacity is kept beside the estimates' state file, ""
// for nowhere.
func capacityFile(estimates string) string {
	if estimates == "" {
		return ""
	}
	ext := filepath.Ext(estimates)
	return strings.TrimSuffix(estimates, ext) + ".capacity" + ext
}

// writeCapacity writes kept as the saved form.
func writeCapacity(w io.Writer, kept map[string]admission.AutoMemory, now time.Time) error {
	st := capacityState{Version: capacityStateVersion, SavedAt: now.UTC(), Backends: []savedBackendAC{}}
	for name, m := range kept {
		b := savedBackendAC{Backend: name, CapacityNS: int64(m.Capacity), Alone: []savedAlone{}}
		for shape, d := range m.Alone {
			b.Alone = append(b.Alone, savedAlone{Shape: fmt.Sprintf("%016x", shape), NS: int64(d)})
		}
		st.Backends = append(st.Backends, b)
	}
	return json.NewEncoder(w).Encode(st)
}

// readCapacity reads a saved form.
func readCapacity(r io.Reader) (map[string]admission.AutoMemory, error) {
	var st capacityState
	if err := json.NewDecoder(io.LimitReader(r, maxCapacityStateBytes)).Decode(&st); err != nil {
		return nil, fmt.Errorf("corrupt capacity state: %w", err)
	}
	if st.Version != capacityStateVersion {
		return nil, fmt.Errorf("capacity state version %d: this build reads version %d", st.Version, capacityStateVersion)
	}
	kept := make(map[string]admission.AutoMemory, len(st.Backends))
	for _, b := range st.Backends {
		if b.CapacityNS <= 0 {
			return nil, fmt.Errorf("corrupt capacity state: backend %q has capacity %d ns", b.Backend, b.CapacityNS)
		}
		m := admission.AutoMemory{Capacity: time.Duration(b.CapacityNS), Alone: make(map[uint64]time.Duration, len(b.Alone))}
		for _, a := range b.Alone {
			shape, err := strconv.ParseUint(a.Shape, 16, 64)
			if err != nil || a.NS <= 0 {
				return nil, fmt.Errorf("corrupt capacity state: backend %q: shape %q, %d ns", b.Backend, a.Shape, a.NS)
			}
			m.Alone[shape] = time.Duration(a.NS)
		}
		kept[b.Backend] = m
	}
	return kept, nil
}

// capacityKeeper saves and resumes the adaptive capacity of a server.
type capacityKeeper interface {
	CapacityMemory() map[string]admission.AutoMemory
	ResumeCapacity(map[string]admission.AutoMemory) int
}

// resumeCapacity starts srv's adaptive capacity from path. Like the estimates it is soft
// state: a missing or unreadable file means starting cold, with a log line saying why.
func resumeCapacity(srv capacityKeeper, path string, log *slog.Logger) {
	if path == "" {
		return
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		log.Warn("cannot read the saved capacity; starting cold", "file", path, "err", err)
		return
	}
	defer f.Close()
	kept, err := readCapacity(f)
	if err != nil {
		log.Warn("cannot load the saved capacity; starting cold", "file", path, "err", err)
		return
	}
	if n := srv.ResumeCapacity(kept); n > 0 {
		log.Info("resumed the adaptive capacity", "file", path, "backends", n)
	}
}

// saveCapacity writes srv's adaptive capacity to path atomically; nothing when it is static.
func saveCapacity(srv capacityKeeper, path string) error {
	kept := srv.CapacityMemory()
	if path == "" || len(kept) == 0 {
		return nil
	}
	return writeAtomically(path, ".capacity-*.json", func(w io.Writer) error { return writeCapacity(w, kept, time.Now()) })
}
