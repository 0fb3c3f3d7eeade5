package proxy

import (
	"context"
	"net/netip"
	"testing"
	"time"
)

func TestHandshakeGate(t *testing.T) {
	g := newHandshakeGate(3, 2)
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	enter := func(addr netip.Addr, wait time.Duration) (func(), string) {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		return g.enter(ctx, addr)
	}
	a1, r := enter(a, time.Second)
	a2, r2 := enter(a, time.Second)
	if r != "" || r2 != "" {
		t.Fatalf("the first two logins of a were refused: %q %q", r, r2)
	}
	if _, r := enter(a, 10*time.Millisecond); r != "max_handshakes_per_client" {
		t.Errorf("a third login of a: %q, want refused by max_handshakes_per_client", r)
	}
	b1, r := enter(b, time.Second)
	if r != "" {
		t.Fatalf("b was refused: %q", r)
	}
	if _, r := enter(b, 10*time.Millisecond); r != "max_handshakes" {
		t.Errorf("a fourth login in all: %q, want refused by max_handshakes", r)
	}
	if g.inProgress() != 3 {
		t.Errorf("in progress = %d, want 3", g.inProgress())
	}
	// A login that waits gets the slot given back.
	done := make(chan string)
	go func() {
		leave, r := enter(a, 5*time.Second)
		if leave != nil {
			leave()
		}
		done <- r
	}()
	a1()
	if r := <-done; r != "" {
		t.Errorf("a waiting login was refused after a slot came free: %q", r)
	}
	a2()
	b1()
	if g.inProgress() != 0 || len(g.byAddr) != 0 {
		t.Errorf("after every login ended: %d in progress, %d addresses kept", g.inProgress(), len(g.byAddr))
	}
	free := newHandshakeGate(0, 0)
	for range 100 {
		if _, r := free.enter(context.Background(), a); r != "" {
			t.Fatal("a gate without bounds refused a login")
		}
	}
}

// 2000 sockets whose handshakes time out write a line a minute, not 2000 lines.
func TestLogEvery(t *testing.T) {
	l := logEvery{period: time.Minute}
	start := time.Unix(1000, 0)
	lines, counted := 0, 0
	for i := range 2000 {
		if n, ok := l.allow(start.Add(time.Duration(i) * 10 * time.Millisecond)); ok {
			lines++
			counted += n
		}
	}
	if lines != 1 || counted != 1 {
		t.Errorf("%d lines counting %d timeouts in 20 s, want 1 line", lines, counted)
	}
	if n, ok := l.allow(start.Add(2 * time.Minute)); !ok || n != 2000 {
		t.Errorf("the next line after a minute: %v, %d; want it, counting 2000 (the 1999 left out and itself)", ok, n)
	}
}
