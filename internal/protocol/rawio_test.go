package protocol

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() { // ends after one accept
		c, _ := ln.Accept()
		accepted <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-accepted
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestRawConnReadWrite(t *testing.T) {
	a, b := tcpPair(t)
	ra, rb := newRawConn(a), newRawConn(b)
	if _, ok := ra.(*rawConn); !ok {
		t.Fatalf("a TCP connection was not given raw I/O")
	}
	// More than the socket buffers hold: the writer must wait for the reader.
	payload := bytes.Repeat([]byte("0123456789abcdef"), 4<<20)
	done := make(chan error, 1)
	go func() { // ends when the write completes or fails
		n, err := ra.Write(payload)
		if err == nil && n != len(payload) {
			err = io.ErrShortWrite
		}
		done <- err
	}()
	got := make([]byte, len(payload))
	if _, err := io.ReadFull(rb, got); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("data changed on the way")
	}

	// A deadline in the past ends a read with the usual timeout error.
	_ = rb.SetReadDeadline(time.Now().Add(-time.Second))
	if _, err := rb.Read(got[:10]); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
	_ = rb.SetReadDeadline(time.Time{})

	// The peer closing is io.EOF; reading a closed connection is net.ErrClosed.
	ra.Close()
	if _, err := rb.Read(got[:10]); err != io.EOF {
		t.Fatalf("read after the peer closed: %v", err)
	}
	rb.Close()
	if _, err := rb.Read(got[:10]); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
}

func TestRawConnAllocatesNothing(t *testing.T) {
	a, b := tcpPair(t)
	ra, rb := newRawConn(a), newRawConn(b)
	msg, buf := []byte("ping"), make([]byte, 4)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ra.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(rb, buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("a write and a read allocate %.1f times", allocs)
	}
}
