package protocol

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawConn does the reads and writes of a socket with raw system calls inside the runtime
// poller's callbacks (syscall.RawConn), instead of through os-level Read and Write.
//
// The difference is what the Go scheduler does around the call. A regular read or write
// enters the scheduler's syscall bookkeeping, and when the process has just been idle (the
// usual state of a proxy between two statements) that bookkeeping wakes the runtime's
// monitor thread, which then spins in short sleeps before going back to sleep. Per relayed
// statement that is a thread wake-up and several sleeps more than the relay itself needs,
// and on virtual machines where waking a thread costs tens of microseconds it was the
// largest part of the proxy's added latency. Reads and writes on a non-blocking socket never
// block, so they do not need the bookkeeping; waiting for readiness is still the poller's
// job, and deadlines and Close work as on any net.Conn.
type rawConn struct {
	net.Conn
	rc syscall.RawConn
	// The callbacks are bound once so that each call allocates nothing.
	readFn, writeFn func(fd uintptr) bool
	buf             []byte // of the call in progress
	n               int
	errno           syscall.Errno
}

// newRawConn wraps c when it is a socket the poller manages; otherwise it returns c.
func newRawConn(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	r := &rawConn{Conn: c, rc: rc}
	r.readFn, r.writeFn = r.read, r.write
	return r
}

// SyscallConn gives access to the socket, as the connection it wraps does.
func (r *rawConn) SyscallConn() (syscall.RawConn, error) { return r.rc, nil }

func (r *rawConn) read(fd uintptr) bool {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&r.buf[0])), uintptr(len(r.buf)))
	if e == syscall.EAGAIN {
		return false // wait for readiness
	}
	if e == syscall.EINTR {
		return r.read(fd)
	}
	r.n, r.errno = int(n), e
	return true
}

func (r *rawConn) write(fd uintptr) bool {
	for len(r.buf) > 0 {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&r.buf[0])), uintptr(len(r.buf)))
		switch e {
		case 0:
			r.n += int(n)
			r.buf = r.buf[n:]
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false // wait until the socket can take more
		default:
			r.errno = e
			return true
		}
	}
	return true
}

// Read reads like net.Conn's Read.
func (r *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.buf, r.n, r.errno = p, 0, 0
	err := r.rc.Read(r.readFn)
	r.buf = nil
	if err != nil {
		return 0, opError("read", r.Conn, err)
	}
	if r.errno != 0 {
		return 0, opError("read", r.Conn, r.errno)
	}
	if r.n == 0 {
		return 0, io.EOF
	}
	return r.n, nil
}

// Write writes like net.Conn's Write: all of p, or an error.
func (r *rawConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.buf, r.n, r.errno = p, 0, 0
	err := r.rc.Write(r.writeFn)
	n := r.n
	r.buf = nil
	if err != nil {
		return n, opError("write", r.Conn, err)
	}
	if r.errno != 0 {
		return n, opError("write", r.Conn, r.errno)
	}
	return n, nil
}

// opError wraps err as net.Conn's methods do, so that callers can tell a timeout, a closed
// connection or a reset apart.
func opError(op string, c net.Conn, err error) error {
	if errno, ok := err.(syscall.Errno); ok {
		err = os.NewSyscallError(op, errno)
	}
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
