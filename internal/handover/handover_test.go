package handover

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
)

// TestChannelCarriesMessagesAndSockets sends messages with and without sockets, one longer
// than a socket buffer, and checks that each arrives whole with its own sockets, usable.
func TestChannelCarriesMessagesAndSockets(t *testing.T) {
	old, theirs, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	ch, err := Open(theirs)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	lnFile, err := Dup(ln)
	if err != nil {
		t.Fatal(err)
	}
	connFile, err := Dup(server)
	if err != nil {
		t.Fatal(err)
	}
	server.Close() // the duplicate keeps the connection open

	big := bytes.Repeat([]byte("x"), 3<<20)
	sent := make(chan error, 1)
	go func() {
		defer lnFile.Close()
		defer connFile.Close()
		if err := old.Send(KindHello, Hello{Format: Format, Version: "v1"}); err != nil {
			sent <- err
			return
		}
		if err := old.Send(KindSession, map[string][]byte{"pending": big}, connFile); err != nil {
			sent <- err
			return
		}
		sent <- old.Send(KindListeners, Listeners{NextID: 41, Admin: false}, lnFile)
	}()

	m, err := ch.Receive()
	if err != nil {
		t.Fatal(err)
	}
	var h Hello
	if m.Kind != KindHello || m.Decode(&h) != nil || h.Version != "v1" || len(m.Files) != 0 {
		t.Fatalf("first message: %s %+v with %d files", m.Kind, h, len(m.Files))
	}
	m, err = ch.Receive()
	if err != nil {
		t.Fatal(err)
	}
	var body map[string][]byte
	if m.Kind != KindSession || m.Decode(&body) != nil || !bytes.Equal(body["pending"], big) || len(m.Files) != 1 {
		t.Fatalf("session message: %s, %d bytes, %d files", m.Kind, len(body["pending"]), len(m.Files))
	}
	moved, err := net.FileConn(m.Files[0])
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer moved.Close()
	if _, err := client.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(moved, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("the moved connection read %q, %v", buf, err)
	}

	m, err = ch.Receive()
	if err != nil {
		t.Fatal(err)
	}
	var l Listeners
	if m.Kind != KindListeners || m.Decode(&l) != nil || l.NextID != 41 || len(m.Files) != 1 {
		t.Fatalf("listeners message: %s %+v with %d files", m.Kind, l, len(m.Files))
	}
	movedLn, err := net.FileListener(m.Files[0])
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer movedLn.Close()
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			c.Close()
		}
	}()
	c, err := movedLn.Accept()
	if err != nil {
		t.Fatalf("the moved listener: %v", err)
	}
	c.Close()
	if err := <-sent; err != nil {
		t.Fatal(err)
	}

	old.Close()
	if _, err := ch.Receive(); !errors.Is(err, io.EOF) {
		t.Errorf("after the other end closed: %v, want EOF", err)
	}
}

// TestInheritedWithoutHandover: a process started without a hand-over has no channel.
func TestInheritedWithoutHandover(t *testing.T) {
	os.Unsetenv(EnvFD)
	ch, err := Inherited()
	if ch != nil || err != nil {
		t.Fatalf("Inherited() = %v, %v; want nil, nil", ch, err)
	}
	t.Setenv(EnvFD, "x")
	if _, err := Inherited(); err == nil {
		t.Error("a descriptor that is not a number was taken")
	}
}
