package chaos

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// relay forwards TCP connections to a server. While its delay is set, it holds every chunk
// of bytes for that long in each direction before passing it on, in order: a long pipe,
// with no bound on bandwidth. It stands in for tc netem's delay where the kernel has no
// netem. While it is cut, it resets every connection it relays and every new one: a link
// whose connections fail at once, where a blackhole lets them time out.
type relay struct {
	ln     net.Listener
	target string
	delay  atomic.Int64 // nanoseconds

	// mu guards the fields below it.
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
	wg    sync.WaitGroup
}

// startRelay listens on loopback for connections to target; it is closed, with every
// connection it relays, when the test ends.
func startRelay(t *testing.T, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return relayFrom(t, ln, target)
}

// relayFrom relays the connections ln accepts to target; ln, and every connection relayed,
// is closed when the test ends.
func relayFrom(t *testing.T, ln net.Listener, target string) *relay {
	r := &relay{ln: ln, target: target}
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

func (r *relay) Addr() string { return r.ln.Addr().String() }

// set makes every chunk read from now on wait d before it is passed on; 0 passes at once.
func (r *relay) set(d time.Duration) { r.delay.Store(int64(d)) }

// cutAll resets every connection relayed, and every new one until restore.
func (r *relay) cutAll() {
	r.mu.Lock()
	conns := r.conns
	r.conns, r.cut = nil, true
	r.mu.Unlock()
	for _, c := range conns {
		reset(c)
	}
}

// restore relays new connections again.
func (r *relay) restore() {
	r.mu.Lock()
	r.cut = false
	r.mu.Unlock()
}

// reset closes c with a TCP reset rather than a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

func (r *relay) serve() {
	for {
		client, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		cut := r.cut
		r.mu.Unlock()
		if cut {
			reset(client)
			continue
		}
		server, err := net.DialTimeout("tcp", r.target, 5*time.Second)
		if err != nil {
			_ = client.Close()
			continue
		}
		r.mu.Lock()
		if cut = r.cut; !cut { // a cut while dialling resets this pair too
			r.conns = append(r.conns, client, server)
		}
		r.mu.Unlock()
		if cut {
			reset(client)
			reset(server)
			continue
		}
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
func (r *relay) pipe(dst, src net.Conn) {
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
