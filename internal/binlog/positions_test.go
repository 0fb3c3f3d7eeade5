package binlog

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// fakePrimary answers position reads one at a time, each when the test releases it, and
// records when each began and how many were in flight at once.
type fakePrimary struct {
	mu       sync.Mutex
	seq      uint64
	began    []time.Time
	inFlight int
	most     int
	release  chan struct{}
}

func (f *fakePrimary) read(ctx context.Context) (replicas.Pos, error) {
	f.mu.Lock()
	f.inFlight++
	f.most = max(f.most, f.inFlight)
	f.began = append(f.began, time.Now())
	f.seq++
	p := replicas.Pos{{Domain: 0, Server: 1, Seq: f.seq}}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	select {
	case <-f.release:
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func newTestPositions(f *fakePrimary) *Positions {
	m := NewMetrics(prometheus.NewRegistry(), nil)
	return &Positions{read: f.read, m: &m.positions}
}

// TestPositionsReadIndex: one read in flight at a time; a caller that arrives while a read
// is in flight joins the next one, which starts after it arrived; every caller that arrives
// before a read starts shares it.
func TestPositionsReadIndex(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakePrimary{release: make(chan struct{})}
		p := newTestPositions(f)
		type got struct {
			arrived time.Time
			pos     replicas.Pos
		}
		results := make(chan got, 20)
		call := func() {
			arrived := time.Now()
			pos, err := p.Read(context.Background())
			assert.NoError(t, err)
			results <- got{arrived, pos}
		}
		go call() // starts read 1
		synctest.Wait()
		time.Sleep(time.Millisecond)
		for range 9 { // arrive while read 1 is in flight: they share read 2
			go call()
		}
		synctest.Wait()
		time.Sleep(time.Millisecond)
		f.release <- struct{}{} // read 1 ends; read 2 starts
		synctest.Wait()
		time.Sleep(time.Millisecond)
		for range 10 { // arrive while read 2 is in flight: they share read 3
			go call()
		}
		synctest.Wait()
		f.release <- struct{}{}
		synctest.Wait()
		f.release <- struct{}{}
		synctest.Wait()

		close(results)
		bySeq := map[uint64]int{}
		for r := range results {
			require.Len(t, r.pos, 1)
			bySeq[r.pos[0].Seq]++
			began := f.began[r.pos[0].Seq-1]
			assert.False(t, began.Before(r.arrived), "a read that began at %v answered a caller that arrived at %v", began, r.arrived)
		}
		assert.Equal(t, map[uint64]int{1: 1, 2: 9, 3: 10}, bySeq)
		assert.Equal(t, 1, f.most, "one read in flight at most")
		reads, served := p.Stats()
		assert.Equal(t, [2]uint64{3, 20}, [2]uint64{reads, served})
	})
}

// TestPositionsReadGivesUpWithItsContext: a caller whose context ends stops waiting; the
// reads go on for the others, and the round it left is read all the same.
func TestPositionsReadGivesUpWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakePrimary{release: make(chan struct{})}
		p := newTestPositions(f)
		done := make(chan error, 1)
		go func() { // the read in flight
			_, err := p.Read(context.Background())
			done <- err
		}()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		_, err := p.Read(ctx) // joins the next read, and leaves before it starts
		assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
		f.release <- struct{}{}
		assert.NoError(t, <-done)
		f.release <- struct{}{} // the round it left
		synctest.Wait()
		reads, served := p.Stats()
		assert.Equal(t, [2]uint64{2, 2}, [2]uint64{reads, served})
	})
}
