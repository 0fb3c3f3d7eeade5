package protocol

import (
	"bytes"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// TestCaptureReplays relays responses with a capture on and sends what it kept again on a
// connection whose sequence ids differ: the bytes are the relayed ones, renumbered.
func TestCaptureReplays(t *testing.T) {
	big := textRow(string(bytes.Repeat([]byte{'x'}, MaxFramePayload+10)))
	for _, tc := range []struct {
		name string
		rows [][]byte
	}{
		{"empty", nil},
		{"rows", [][]byte{textRow("a"), textRow("b")}},
		{"row over one frame", [][]byte{big}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s stream
			s.seq = 1
			s.resultSet(true, autocommit, tc.rows...)
			client := newMemConn(nil)
			x := Relay{Client: NewConn(client), Backend: NewConn(newMemConn(s.b)), Capabilities: mysql.CLIENT_DEPRECATE_EOF}
			x.Client.seq = 1
			var k Capture
			k.Start(1 << 30)
			x.Client.SetCapture(&k)
			var res Response
			if err := x.ForwardResponse(mysql.COM_QUERY, &res); err != nil {
				t.Fatal(err)
			}
			if k.Over || !bytes.Equal(k.Buf, client.w.Bytes()) {
				t.Fatalf("captured %d bytes (over %v), relayed %d", len(k.Buf), k.Over, client.w.Len())
			}
			again := newMemConn(nil)
			c := NewConn(again)
			c.seq = 7
			if err := c.WriteFrames(k.Buf); err != nil {
				t.Fatal(err)
			}
			if err := c.Flush(); err != nil {
				t.Fatal(err)
			}
			got, want := again.w.Bytes(), k.Buf
			if len(got) != len(want) {
				t.Fatalf("replayed %d bytes, want %d", len(got), len(want))
			}
			seq := uint8(7)
			for rest, i := want, 0; len(rest) > 0; seq++ {
				n := int(rest[0]) | int(rest[1])<<8 | int(rest[2])<<16
				if got[i+3] != seq {
					t.Fatalf("frame at %d has sequence id %d, want %d", i, got[i+3], seq)
				}
				if !bytes.Equal(got[i:i+3], rest[:3]) || !bytes.Equal(got[i+4:i+4+n], rest[4:4+n]) {
					t.Fatalf("frame at %d differs", i)
				}
				i += 4 + n
				rest = rest[4+n:]
			}
		})
	}
}

// TestCaptureLimit keeps nothing of a response over the limit.
func TestCaptureLimit(t *testing.T) {
	var k Capture
	k.Start(10)
	k.add(make([]byte, 6))
	k.add(make([]byte, 6))
	k.add(make([]byte, 1))
	if !k.Over || len(k.Buf) != 0 {
		t.Fatalf("over %v with %d bytes kept, want over with none", k.Over, len(k.Buf))
	}
	k.Start(10)
	if k.Over {
		t.Fatal("Start did not clear Over")
	}
}

// TestWriteFramesRefusesPartial refuses bytes that end inside a frame.
func TestWriteFramesRefusesPartial(t *testing.T) {
	c := NewConn(newMemConn(nil))
	if err := c.WriteFrames([]byte{5, 0, 0, 1, 'a'}); err != ErrFrames {
		t.Fatalf("got %v, want ErrFrames", err)
	}
}
