package proxy

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// clientWatch notices clients that hang up, so that a unit waiting for admission leaves the
// queue at once when its client goes. One epoll instance holds the sockets of the clients
// whose units have waited, registered once per connection for the peer's hang-up only (data
// the client sends does not count), and one goroutine reads its events through the
// runtime's poller and cancels the session's context. A wait costs nothing more: under
// overload most units wait, at the rate of the whole workload. A socket leaves the epoll
// instance when it is closed.
type clientWatch struct {
	epfd int
	ep   *os.File // epfd, in the runtime's poller
	rc   syscall.RawConn
	// done is closed when run ends; started says run was started.
	done    chan struct{}
	started atomic.Bool

	mu      sync.Mutex
	next    uint64
	cancels map[uint64]context.CancelFunc
}

func newClientWatch() (*clientWatch, error) {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	ep := os.NewFile(uintptr(fd), "client-watch")
	rc, err := ep.SyscallConn()
	if err != nil {
		_ = ep.Close()
		return nil, err
	}
	return &clientWatch{epfd: fd, ep: ep, rc: rc, done: make(chan struct{}), cancels: map[uint64]context.CancelFunc{}}, nil
}

// start runs the watch in a goroutine of its own until close.
func (w *clientWatch) start() {
	w.started.Store(true)
	go w.run()
}

// run cancels the waits of the clients that hang up, until close.
func (w *clientWatch) run() {
	defer close(w.done)
	var events [64]syscall.EpollEvent
	for {
		var n int
		var werr error
		err := w.rc.Read(func(fd uintptr) bool {
			n, werr = syscall.EpollWait(int(fd), events[:], 0)
			return n > 0 || werr != nil && !errors.Is(werr, syscall.EINTR)
		})
		if err != nil || werr != nil {
			return // closed
		}
		w.mu.Lock()
		for _, ev := range events[:n] {
			token := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if cancel, ok := w.cancels[token]; ok {
				delete(w.cancels, token)
				cancel()
			}
		}
		w.mu.Unlock()
	}
}

// close stops run and releases the epoll instance; no wait may be watched any more.
func (w *clientWatch) close() {
	_ = w.ep.Close()
	if w.started.Load() {
		<-w.done
	}
}

// watch calls cancel when the client of conn hangs up, until forget; it returns the token
// for forget, 0 when conn has no socket underneath and is not watched.
func (w *clientWatch) watch(conn net.Conn, cancel context.CancelFunc) uint64 {
	rc := socketOf(conn)
	if rc == nil {
		return 0
	}
	w.mu.Lock()
	w.next++
	token := w.next
	w.cancels[token] = cancel
	w.mu.Unlock()
	ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | epollET, Fd: int32(uint32(token)), Pad: int32(uint32(token >> 32))}
	var cerr error
	err := rc.Control(func(fd uintptr) { // the descriptor cannot be closed and reused meanwhile
		cerr = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err != nil || cerr != nil {
		w.forget(token)
		return 0
	}
	return token
}

// epollET is EPOLLET as the event mask's type: one event per hang-up.
const epollET = 1 << 31

// forget drops a watch; its socket leaves the epoll instance when it is closed.
func (w *clientWatch) forget(token uint64) {
	if token == 0 {
		return
	}
	w.mu.Lock()
	delete(w.cancels, token)
	w.mu.Unlock()
}

// socketOf returns the raw socket under conn (under TLS, the connection it runs on), or nil.
func socketOf(conn net.Conn) syscall.RawConn {
	conn = underTLS(conn)
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}
