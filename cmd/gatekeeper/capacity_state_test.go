package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
)

func TestCapacityFile(t *testing.T) {
	require.Equal(t, "/var/lib/gatekeeper/estimates.capacity.json", capacityFile("/var/lib/gatekeeper/estimates.json"))
	require.Equal(t, "/tmp/state.capacity", capacityFile("/tmp/state"))
	require.Empty(t, capacityFile(""))
}

func TestCapacityStateRoundTrip(t *testing.T) {
	kept := map[string]admission.AutoMemory{
		"127.0.0.1:3306": {Capacity: 180 * time.Millisecond, Alone: map[uint64]time.Duration{1: time.Millisecond, 0xfedcba9876543210: 40 * time.Millisecond}},
		"127.0.0.1:3307": {Capacity: 90 * time.Millisecond, Alone: map[uint64]time.Duration{}},
	}
	var b bytes.Buffer
	require.NoError(t, writeCapacity(&b, kept, time.Now()))
	got, err := readCapacity(&b)
	require.NoError(t, err)
	require.Equal(t, kept, got)
}

func TestCapacityStateRefusesBadInput(t *testing.T) {
	for _, in := range []string{
		`{"version":1,`,
		`{"version":2,"backends":[]}`,
		`{"version":1,"backends":[{"backend":"a","capacity_ns":0}]}`,
		`{"version":1,"backends":[{"backend":"a","capacity_ns":5,"alone":[{"shape":"zz","ns":1}]}]}`,
	} {
		_, err := readCapacity(strings.NewReader(in))
		require.Error(t, err, in)
	}
}

// fakeKeeper is a server's adaptive capacity, for the keeper's tests.
type fakeKeeper struct {
	kept    map[string]admission.AutoMemory
	resumed map[string]admission.AutoMemory
}

func (f *fakeKeeper) CapacityMemory() map[string]admission.AutoMemory { return f.kept }
func (f *fakeKeeper) ResumeCapacity(m map[string]admission.AutoMemory) int {
	f.resumed = m
	return len(m)
}

// TestCapacityKeptAcrossARestart saves a server's adaptive capacity and resumes another
// from the file; a corrupt file starts cold.
func TestCapacityKeptAcrossARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "estimates.capacity.json")
	before := &fakeKeeper{kept: map[string]admission.AutoMemory{"p": {Capacity: time.Second, Alone: map[uint64]time.Duration{7: time.Millisecond}}}}
	require.NoError(t, saveCapacity(before, path))
	after := &fakeKeeper{}
	resumeCapacity(after, path, slog.New(slog.DiscardHandler))
	require.Equal(t, before.kept, after.resumed)

	require.NoError(t, os.WriteFile(path, []byte("not json"), 0o644))
	cold := &fakeKeeper{}
	resumeCapacity(cold, path, slog.New(slog.DiscardHandler))
	require.Nil(t, cold.resumed)
}
