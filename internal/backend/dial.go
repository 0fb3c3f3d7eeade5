package backend

import (
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// NetDialer returns the dialer of connections to databases. deadAfter bounds how long a
// connection may go without any answer from the server's machine before it is given up:
// TCP keepalive probes start after half of it, and TCP_USER_TIMEOUT aborts a connection
// whose data or probes stay unacknowledged that long. A server that runs a long statement
// still answers probes, at the TCP level; one behind a dead link or a blackhole does not,
// and the read waiting for its answer fails instead of hanging. Zero keeps the system's
// defaults (which take minutes to give up).
func NetDialer(connectTimeout, deadAfter time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}
	if deadAfter <= 0 {
		return d
	}
	d.KeepAliveConfig = net.KeepAliveConfig{Enable: true, Idle: deadAfter / 2, Interval: deadAfter / 6, Count: 3}
	ms := int(deadAfter.Milliseconds())
	d.Control = func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, ms)
		})
		if err != nil {
			return err
		}
		return serr
	}
	return d
}
