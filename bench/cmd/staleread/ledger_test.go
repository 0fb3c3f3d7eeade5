package main

import (
	"sync"
	"testing"
	"time"
)

func TestLedgerKeepsTheHighestAcknowledged(t *testing.T) {
	l := newLedger(3, 10)
	a, b := row{0, 1}, row{2, 10}
	if got := l.acked(a); got != 0 {
		t.Fatalf("acked before any write = %d, want 0", got)
	}
	for _, v := range []int64{5, 3, 9, 7} {
		l.record(a, v)
	}
	l.record(b, 4)
	if got := l.acked(a); got != 9 {
		t.Errorf("acked(a) = %d, want 9: an acknowledgement that comes late must not lower it", got)
	}
	if got := l.acked(b); got != 4 {
		t.Errorf("acked(b) = %d, want 4", got)
	}
	if got := l.acked(row{1, 1}); got != 0 {
		t.Errorf("acked of a row never written = %d, want 0: rows must not share a slot", got)
	}
}

func TestLedgerUnderConcurrentRecords(t *testing.T) {
	l := newLedger(1, 1)
	r := row{0, 1}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				l.record(r, int64(i*8+g+1))
			}
		})
	}
	wg.Wait()
	if got := l.acked(r); got != 8000 {
		t.Errorf("acked = %d, want 8000, the highest recorded", got)
	}
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name string
		got  int64
		want expectation
		v    verdict
	}{
		{"nothing acknowledged", 0, expectation{}, verdict{}},
		{"as new as acknowledged", 7, expectation{acked: 7}, verdict{}},
		{"newer than acknowledged", 9, expectation{acked: 7}, verdict{}},
		{"older than acknowledged", 6, expectation{acked: 7}, verdict{stale: true}},
		{"initial value, a write acknowledged", 0, expectation{acked: 1}, verdict{stale: true}},
		{"own write seen", 7, expectation{acked: 7, own: 7}, verdict{}},
		{"own write missed", 5, expectation{acked: 7, own: 6}, verdict{stale: true, ownMiss: true}},
		{"own write seen, a later write missed", 6, expectation{acked: 7, own: 6}, verdict{stale: true}},
		{"newer than seen before", 8, expectation{seen: 7, haveSeen: true}, verdict{}},
		{"same as seen before", 7, expectation{seen: 7, haveSeen: true}, verdict{}},
		{"older than seen before", 6, expectation{seen: 7, haveSeen: true}, verdict{backwards: true}},
		{"seen 0 before, then 0", 0, expectation{seen: 0, haveSeen: true}, verdict{}},
		{"all three", 1, expectation{acked: 5, own: 4, seen: 3, haveSeen: true}, verdict{true, true, true}},
	}
	for _, tt := range tests {
		if got := judge(tt.got, tt.want); got != tt.v {
			t.Errorf("%s: judge(%d, %+v) = %+v, want %+v", tt.name, tt.got, tt.want, got, tt.v)
		}
	}
}

func TestVerdictOr(t *testing.T) {
	got := verdict{stale: true}.or(verdict{backwards: true})
	if want := (verdict{stale: true, backwards: true}); got != want {
		t.Errorf("or = %+v, want %+v", got, want)
	}
}

func TestTallyCountsEachCheck(t *testing.T) {
	tl := newTally()
	tl.read(kindPoint, time.Millisecond, verdict{}, example{})
	tl.read(kindJoin, time.Millisecond, verdict{stale: true}, example{})
	tl.read(kindOwn, time.Millisecond, verdict{stale: true, ownMiss: true}, example{})
	tl.read(kindSession, time.Millisecond, verdict{backwards: true}, example{})
	reads, stale, own, backwards := tl.totals()
	if reads != 4 || stale != 2 || own != 1 || backwards != 1 {
		t.Errorf("totals = %d reads, %d stale, %d own-write misses, %d backwards; want 4, 2, 1, 1", reads, stale, own, backwards)
	}
	for range maxExamples + 3 {
		tl.read(kindPoint, time.Millisecond, verdict{stale: true}, example{})
	}
	n := 0
	for _, e := range tl.examples {
		if e.Check == "stale" {
			n++
		}
	}
	if n != maxExamples {
		t.Errorf("%d stale examples kept, want %d", n, maxExamples)
	}
}
