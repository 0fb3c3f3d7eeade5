package estimator

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// manualClock is a Clock that moves only when told to.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newTable returns a table on a manual clock, failing the test on a config error.
func newTable(t testing.TB, cfg Config) (*Table, *manualClock) {
	t.Helper()
	clock := newManualClock()
	cfg.Clock = clock
	tab, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return tab, clock
}

// statsOf returns the snapshot entry named name.
func statsOf(t testing.TB, tab *Table, name string) TypeStats {
	t.Helper()
	for _, ts := range tab.Snapshot() {
		if ts.Name == name {
			return ts
		}
	}
	t.Fatalf("no type %s in the snapshot", name)
	return TypeStats{}
}

// nameOf is the Name of key.
func nameOf(key Key) string {
	return fmt.Sprintf("%016x", uint64(key))
}
