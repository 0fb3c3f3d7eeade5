package backend

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A connection to a database gives up on a silent peer after deadAfter: TCP_USER_TIMEOUT
// is set on its socket.
func TestNetDialerBoundsASilentPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		deadAfter time.Duration
		want      int
	}{{30 * time.Second, 30000}, {0, 0}} {
		c, err := NetDialer(time.Second, tc.deadAfter).DialContext(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		rc, err := c.(syscall.Conn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var got int
		var gerr error
		_ = rc.Control(func(fd uintptr) { got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT) })
		c.Close()
		if gerr != nil || got != tc.want {
			t.Errorf("dead after %v: TCP_USER_TIMEOUT = %d ms (%v), want %d", tc.deadAfter, got, gerr, tc.want)
		}
	}
}
