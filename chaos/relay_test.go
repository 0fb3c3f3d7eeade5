package chaos

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// delayRelay forwards TCP connections to a server and, while its delay is set, holds every
// chunk of bytes for that long in each direction before passing it on, in order: a long
// pipe, with no bound on bandwidth. It stands in for tc netem's delay where the kernel has
// no netem.
type delayRelay struct {
	ln     net.Listener
	target string
	delay  atomic.Int64 // nanoseconds

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// startDelayRelay listens on loopback for connections to target; it is closed, with every
// connection it relays, when the test ends.
func startDelayRelay(t *testing.T, target string) *delayRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &delayRelay{ln: ln, target: target}
	r.wg.Go(r.serve)
	t.Cleanup(func() {
		_ = ln.Close()
		r.mu.Lock()
		for _, c := range r.conns {
			_ = c.Close()
		}
		r.mu.Unlock()
		r.wg.Wait()
	})
	return r
}

func (r *delayRelay) Addr() string { return r.ln.Addr().String() }

// set makes every chunk read from now on wait d before it is passed on; 0 passes at once.
func (r *delayRelay) set(d time.Duration) { r.delay.Store(int64(d)) }

func (r *delayRelay) serve() {
	for {
		client, err := r.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.DialTimeout("tcp", r.target, 5*time.Second)
		if err != nil {
			_ = client.Close()
			continue
		}
		r.mu.Lock()
		r.conns = append(r.conns, client, server)
		r.mu.Unlock()
		r.wg.Go(func() { r.pipe(server, client) })
		r.wg.Go(func() { r.pipe(client, server) })
	}
}

// chunk is bytes read and when they may be written.
type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst, each chunk once the delay in force when it was read has passed;
// the end of either side closes both.
func (r *delayRelay) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	held := make(chan chunk, 1024)
	go func() {
		defer close(held)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				held <- chunk{b: buf[:n], due: time.Now().Add(time.Duration(r.delay.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range held {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.b); err != nil {
			_ = src.Close()
			for range held { // let the reader end
			}
			return
		}
	}
	if tcp, ok := dst.(*net.TCPConn); ok {
		_ = tcp.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, src)
}
