package topology

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// roles is a fake cluster: the role each server answers with.
type roles struct {
	mu sync.Mutex
	by map[string]Server
}

func (r *roles) set(addr string, s Server) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.Addr = addr
	r.by[addr] = s
}

func (r *roles) read(ctx context.Context, addr string) Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.by[addr]
}

var (
	primary = Server{Up: true, Pos: "0-1-10"}
	replica = Server{Up: true, ReadOnly: true, Replicating: true, Source: "a:1"}
	down    = Server{Err: "connection refused"}
)

func newTopology(t *testing.T, expected string, bufferTimeout time.Duration, bufferMax int) (*Topology, *roles) {
	t.Helper()
	r := &roles{by: map[string]Server{}}
	r.set("a:1", primary)
	r.set("b:1", replica)
	r.set("c:1", replica)
	top := New(Config{Servers: []string{"a:1", "b:1", "c:1"}, Expected: expected, Interval: time.Hour,
		BufferTimeout: bufferTimeout, BufferMax: bufferMax},
		r.read, slog.New(slog.NewTextHandler(io.Discard, nil)), NewMetrics(prometheus.NewRegistry()))
	return top, r
}

func TestDiscoversThePrimary(t *testing.T) {
	top, _ := newTopology(t, "", time.Second, 0)
	if v := top.View(); v.State != StateFailover {
		t.Fatalf("before a read, with no primary configured: state %s, want failover", v.State)
	}
	top.Check(context.Background())
	got, err := top.Writer(context.Background())
	if err != nil || got != "a:1" {
		t.Fatalf("Writer = %q, %v; want a:1", got, err)
	}
}

func TestFailoverHoldsWritesUntilAPromotion(t *testing.T) {
	top, r := newTopology(t, "a:1", 5*time.Second, 0)
	var changes []Change
	top.OnChange(func(c Change) { changes = append(changes, c) })
	top.Check(context.Background())

	r.set("a:1", down)
	top.Suspect("a:1")
	type result struct {
		addr string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		a, err := top.Writer(context.Background())
		done <- result{a, err}
	}()
	top.Check(context.Background())
	waitFor(t, func() bool { return top.View().Waiting == 1 })
	if v := top.View(); v.State != StateFailover {
		t.Fatalf("state %s with the primary down, want failover", v.State)
	}
	select {
	case res := <-done:
		t.Fatalf("a write went on with no primary: %+v", res)
	default:
	}

	if p, r := top.Holds("a:1"); !p || r {
		t.Fatalf("a:1 down: Holds = %v, %v; want still the primary, unreachable", p, r)
	}
	promoted := primary
	promoted.Pos = "0-1-12"
	r.set("b:1", promoted)
	top.Check(context.Background())
	res := <-done
	if res.err != nil || res.addr != "b:1" {
		t.Fatalf("the write that waited went to %q (%v), want b:1", res.addr, res.err)
	}
	if len(changes) != 1 || changes[0] != (Change{Old: "a:1", New: "b:1", Pos: "0-1-12"}) {
		t.Fatalf("changes %+v, want one from a:1 to b:1 at 0-1-12", changes)
	}
	if p, _ := top.Holds("a:1"); p {
		t.Fatal("a:1 is still the primary after b:1 was promoted")
	}
	if v := top.View(); v.Failovers != 1 || v.Primary != "b:1" || v.State != StateOK {
		t.Fatalf("view %+v, want one failover, primary b:1, ok", v)
	}
}

func TestBufferBounds(t *testing.T) {
	top, r := newTopology(t, "a:1", 20*time.Millisecond, 1)
	r.set("a:1", down)
	top.Check(context.Background())
	errs := make(chan error, 2)
	go func() { _, err := top.Writer(context.Background()); errs <- err }()
	waitFor(t, func() bool { return top.View().Waiting == 1 })
	_, err := top.Writer(context.Background())
	var e *Error
	if !errors.As(err, &e) || !e.Full {
		t.Fatalf("a second write past failover.buffer_max 1: %v, want a full buffer", err)
	}
	err = <-errs
	if !errors.As(err, &e) || e.Full || e.State != StateFailover || e.Waited < 20*time.Millisecond {
		t.Fatalf("the write that waited: %v, want a timeout after 20ms naming the failover", err)
	}
}

func TestSplitBrainFailsWrites(t *testing.T) {
	top, r := newTopology(t, "a:1", time.Second, 0)
	r.set("b:1", Server{Up: true})
	top.Check(context.Background())
	_, err := top.Writer(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.State != StateSplitBrain || len(e.Servers) != 2 {
		t.Fatalf("two writable servers: %v, want a split brain naming both", err)
	}
	r.set("b:1", replica)
	top.Check(context.Background())
	if got, err := top.Writer(context.Background()); err != nil || got != "a:1" {
		t.Fatalf("after b:1 is read-only again: %q, %v; want a:1", got, err)
	}
}

func TestSuspectOfALivePrimaryReopensAfterARead(t *testing.T) {
	top, _ := newTopology(t, "a:1", time.Second, 0)
	top.Suspect("a:1")
	if top.open.Load() != nil {
		t.Fatal("writes go on right after a connection error to the primary")
	}
	top.Check(context.Background())
	if got, err := top.Writer(context.Background()); err != nil || got != "a:1" {
		t.Fatalf("after a read finds the primary up: %q, %v", got, err)
	}
}

func TestPauseDrainsThenResumeFindsThePromotedPrimary(t *testing.T) {
	top, r := newTopology(t, "a:1", 5*time.Second, 0)
	top.Check(context.Background())
	inflight := 2
	var mu sync.Mutex
	res := make(chan error, 1)
	go func() {
		_, err := top.Pause(context.Background(), 5*time.Second, func() int { mu.Lock(); defer mu.Unlock(); return inflight })
		res <- err
	}()
	waitFor(t, func() bool { return top.View().State == StatePaused })
	if _, err := top.Pause(context.Background(), time.Second, func() int { return 0 }); !errors.Is(err, ErrPaused) {
		t.Fatalf("a second pause: %v, want ErrPaused", err)
	}
	mu.Lock()
	inflight = 0
	mu.Unlock()
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	write := make(chan string, 1)
	go func() { a, _ := top.Writer(context.Background()); write <- a }()
	// The operator promotes b:1 and makes a:1 read-only.
	r.set("a:1", replica)
	r.set("b:1", primary)
	top.Check(context.Background())
	if v := top.View(); v.State != StatePaused || v.Primary != "b:1" {
		t.Fatalf("paused with b:1 promoted: %+v", v)
	}
	if !top.Resume() {
		t.Fatal("Resume says writes were not paused")
	}
	top.Check(context.Background())
	if got := <-write; got != "b:1" {
		t.Fatalf("the paused write went to %q, want b:1", got)
	}
}

func TestPauseGivesUpWhenWritesDoNotEnd(t *testing.T) {
	top, _ := newTopology(t, "a:1", 5*time.Second, 0)
	top.Check(context.Background())
	_, err := top.Pause(context.Background(), 30*time.Millisecond, func() int { return 1 })
	if err == nil {
		t.Fatal("a pause with a unit that never ends succeeded")
	}
	top.Check(context.Background())
	if got, err := top.Writer(context.Background()); err != nil || got != "a:1" {
		t.Fatalf("after the pause gave up: %q, %v; want writes to a:1", got, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
