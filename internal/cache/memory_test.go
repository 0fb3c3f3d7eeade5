package cache

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"
)

// heapBytes returns the bytes of live objects and of the spans that hold them, after a
// collection.
func heapBytes() (live, inuse int64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc), int64(m.HeapInuse)
}

// TestMillionDistinctKeys floods a small store with a million distinct statements, as a
// client that never repeats one would, and checks that the store keeps to its bound and
// that the heap it holds is near that bound.
func TestMillionDistinctKeys(t *testing.T) {
	const (
		maxBytes  = 16 << 20
		puts      = 1_000_000
		gcPercent = 25
	)
	// The heap's spans hold the live entries and the garbage of the entries evicted since
	// the last collection, which GOGC sizes; a lower GOGC keeps them near the live bytes.
	defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
	liveBefore, before := heapBytes()
	s := New(Config{MaxBytes: maxBytes, MaxEntryBytes: 4 << 10})
	r := rand.New(rand.NewPCG(8, 9))
	key := make([]byte, 0, 128)
	for i := range puts {
		key = append(key[:0], "SELECT c, pad FROM sbtest WHERE id BETWEEN "...)
		key = strconv.AppendInt(key, int64(i), 10)
		e := &Entry{
			Response: make([]byte, 100+r.IntN(900)),
			Tables:   []string{tableNames[i%8]},
			Cost:     time.Duration(r.IntN(10_000)) * time.Microsecond,
			Filled:   t0,
		}
		if !s.Put(key, e) {
			t.Fatalf("put %d refused", i)
		}
		if i%100_000 == 0 {
			if b := s.Stats().Bytes; b > maxBytes {
				t.Fatalf("after %d puts the store holds %d bytes, bound %d", i, b, maxBytes)
			}
		}
	}
	st := s.Stats()
	checkStore(t, s, maxBytes)
	if st.Bytes < maxBytes*9/10 {
		t.Errorf("store holds %d bytes of %d; the flood should fill it", st.Bytes, maxBytes)
	}
	live, inuse := heapBytes()
	live -= liveBefore
	held := inuse - before
	t.Logf("%d entries, %d bytes charged, %d bytes live (%.3f of MaxBytes), %d bytes of spans (%.3f)",
		st.Entries, st.Bytes, live, float64(live)/maxBytes, held, float64(held)/maxBytes)
	// The charges are honest: they cover what the store keeps alive, and not by much.
	if live > maxBytes*21/20 || live < st.Bytes*17/20 {
		t.Errorf("live heap grew %d bytes for %d charged, bound %d", live, st.Bytes, maxBytes)
	}
	if held > maxBytes*(100+gcPercent)/100*11/10 {
		t.Errorf("heap spans grew %d bytes for a store bounded by %d at GOGC=%d", held, maxBytes, gcPercent)
	}
	runtime.KeepAlive(s)
}

// tableNames are the sysbench tables, as the classifier would name them.
var tableNames = func() []string {
	names := make([]string, 8)
	for i := range names {
		names[i] = fmt.Sprintf("sbtest.sbtest%d", i)
	}
	return names
}()
