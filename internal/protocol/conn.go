package protocol

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
	"unsafe"
)

// MaxFramePayload is the largest payload of one frame. A packet whose payload is this long
// or longer continues in the next frame; a frame shorter than this ends the packet.
const MaxFramePayload = 1<<24 - 1

const headerSize = 4

// Buffer sizes. The reader of a backend connection holds many small rows at once, so one
// read syscall serves a whole point-select response.
const (
	readBufferSize  = 16 << 10
	writeBufferSize = 16 << 10
	// keepBufferCap is the largest scratch buffer a Conn keeps between packets; a larger one,
	// grown for an unusually big packet, is dropped by Trim.
	keepBufferCap = 64 << 10
)

var (
	// ErrPacketTooLarge reports a packet longer than the configured limit.
	ErrPacketTooLarge = errors.New("packet larger than the allowed maximum")
	// ErrMalformed reports bytes that do not follow the protocol.
	ErrMalformed = errors.New("malformed packet")
)

// Conn frames MySQL packets over a network connection, with buffered reads and writes and
// the sequence id of each side kept. It is owned by one goroutine at a time.
//
// The buffers are its own, and on a socket it reads and writes through rawConn's methods
// directly: a relayed statement fills and flushes them a handful of times, and every layer
// between the buffer and the system call (a buffered reader and writer, byte counters
// behind io.Reader and io.Writer, net.Conn's interface) was paid on each of those calls.
type Conn struct {
	netConn net.Conn
	// raw is netConn when it is a socket the poller manages (nil once TLS is on).
	raw *rawConn
	// rbuf[rpos:rend] holds what was read and not yet consumed; rerr is the error that
	// ended the last fill, returned once what is buffered runs out.
	rbuf       []byte
	rpos, rend int
	rerr       error
	// wbuf[:wn] holds what is written and not yet flushed; werr, once set, fails every
	// write and flush after it.
	wbuf []byte
	wn   int
	werr error
	// peer is the other side of the relay; its buffered writes are flushed before this
	// Conn blocks on a read.
	peer *Conn
	// seq is the sequence id of the next frame written; reading a frame sets it to one more
	// than the frame's id, so a reply continues the exchange.
	seq uint8
	// limit is the largest packet ReadPacket and forwarding from this Conn accept; zero means
	// no limit beyond the protocol's own.
	limit int
	// buf is the scratch buffer ReadPacket returns; reused between packets.
	buf []byte
	hdr [headerSize]byte
	// BytesRead and BytesWritten count every byte through this Conn, headers included.
	BytesRead, BytesWritten uint64
	// ioErr is the first error of the connection underneath, kept to tell which side of a
	// relay failed.
	ioErr error
	// refused is the unread length of the frame of a packet refused as too large; -1 none.
	refused int
	// CheckIdle's callback, bound once, and what it saw.
	peekFn  func(fd uintptr) bool
	peekErr error
	peekBuf [1]byte
	// capture, when set, keeps a copy of what is written (SetCapture).
	capture *Capture
}

// NewConn wraps c. Sockets get their reads and writes through rawConn.
func NewConn(c net.Conn) *Conn {
	nc := newRawConn(c)
	cc := &Conn{netConn: nc, refused: -1,
		rbuf: make([]byte, readBufferSize), wbuf: make([]byte, writeBufferSize)}
	cc.raw, _ = nc.(*rawConn)
	return cc
}

// readNet reads once from the connection underneath, counting what it read and keeping
// the first error.
func (c *Conn) readNet(p []byte) (int, error) {
	var n int
	var err error
	if c.raw != nil {
		n, err = c.raw.Read(p)
	} else {
		n, err = c.netConn.Read(p)
	}
	c.BytesRead += uint64(n)
	if err != nil && c.ioErr == nil {
		c.ioErr = err
	}
	return n, err
}

// writeNet writes all of p to the connection underneath, or fails.
func (c *Conn) writeNet(p []byte) error {
	var n int
	var err error
	if c.raw != nil {
		n, err = c.raw.Write(p)
	} else {
		n, err = c.netConn.Write(p)
		if err == nil && n < len(p) {
			err = io.ErrShortWrite
		}
	}
	c.BytesWritten += uint64(n)
	if err != nil && c.ioErr == nil {
		c.ioErr = err
	}
	return err
}

// maxEmptyReads is how many reads in a row may return nothing and no error before a fill
// gives up with io.ErrNoProgress.
const maxEmptyReads = 100

// fill moves what is buffered to the front of the read buffer and reads once more into
// the rest; it returns the error of a read that brought nothing.
func (c *Conn) fill() error {
	if c.rerr != nil {
		return c.rerr
	}
	if c.rpos > 0 {
		c.rend = copy(c.rbuf, c.rbuf[c.rpos:c.rend])
		c.rpos = 0
	}
	for range maxEmptyReads {
		n, err := c.readNet(c.rbuf[c.rend:])
		c.rend += n
		if err != nil {
			c.rerr = err
			if n > 0 {
				return nil
			}
			return err
		}
		if n > 0 {
			return nil
		}
	}
	c.rerr = io.ErrNoProgress
	return c.rerr
}

// peekN returns the next n bytes without consuming them, reading until they are all
// buffered; n must fit the read buffer.
func (c *Conn) peekN(n int) ([]byte, error) {
	for c.Buffered() < n {
		if err := c.fill(); err != nil {
			return nil, err
		}
	}
	return c.rbuf[c.rpos : c.rpos+n], nil
}

// skip consumes n buffered bytes.
func (c *Conn) skip(n int) { c.rpos += n }

// write buffers p, flushing the buffer when p does not fit; a p larger than the buffer
// goes out directly once what was buffered before it has.
func (c *Conn) write(p []byte) error {
	if c.werr != nil {
		return c.werr
	}
	if c.capture != nil {
		c.capture.add(p)
	}
	for len(p) > len(c.wbuf)-c.wn {
		if c.wn == 0 {
			if err := c.writeNet(p); err != nil {
				c.werr = err
				return err
			}
			return nil
		}
		k := copy(c.wbuf[c.wn:], p)
		c.wn += k
		p = p[k:]
		if err := c.Flush(); err != nil {
			return err
		}
	}
	c.wn += copy(c.wbuf[c.wn:], p)
	return nil
}

// Flush writes out what is buffered for this side.
func (c *Conn) Flush() error {
	if c.werr != nil {
		return c.werr
	}
	if c.wn == 0 {
		return nil
	}
	if err := c.writeNet(c.wbuf[:c.wn]); err != nil {
		c.werr = err
		return err
	}
	c.wn = 0
	return nil
}

// Pair makes a and b each other's peer: before either blocks on a read, the buffered writes
// of both are flushed.
func Pair(a, b *Conn) {
	a.peer, b.peer = b, a
}

// Unpair removes c from its pairing.
func (c *Conn) Unpair() {
	if c.peer != nil && c.peer.peer == c {
		c.peer.peer = nil
	}
	c.peer = nil
}

// NetConn returns the connection underneath (a *tls.Conn after an upgrade).
func (c *Conn) NetConn() net.Conn { return c.netConn }

// SetLimit sets the largest packet accepted from this side; zero means no limit.
func (c *Conn) SetLimit(n int) { c.limit = n }

// ResetSequence starts a new exchange: the next frame written carries sequence id 0.
func (c *Conn) ResetSequence() { c.seq = 0 }

// Sequence returns the sequence id the next frame written will carry.
func (c *Conn) Sequence() uint8 { return c.seq }

// Close closes the connection underneath.
func (c *Conn) Close() error { return c.netConn.Close() }

// Trim drops a scratch buffer that grew past what a connection keeps between packets.
func (c *Conn) Trim() {
	if cap(c.buf) > keepBufferCap {
		c.buf = nil
	}
}

// IOErr returns the first error the connection underneath returned, or nil.
func (c *Conn) IOErr() error { return c.ioErr }

// Written returns the bytes written so far, including those still buffered.
func (c *Conn) Written() uint64 { return c.BytesWritten + uint64(c.wn) }

// Buffered reports how many bytes have been read from the network but not yet consumed.
func (c *Conn) Buffered() int { return c.rend - c.rpos }

// flushBeforeBlock flushes the buffered writes of both sides when fewer than n bytes are
// buffered for reading, that is when a read of n bytes would block on the network.
func (c *Conn) flushBeforeBlock(n int) error {
	if c.Buffered() >= n {
		return nil
	}
	if err := c.Flush(); err != nil {
		return err
	}
	if c.peer != nil {
		return c.peer.Flush()
	}
	return nil
}

// readHeader reads the next frame header and returns the frame's payload length.
func (c *Conn) readHeader() (int, error) {
	if err := c.flushBeforeBlock(headerSize); err != nil {
		return 0, err
	}
	h, err := c.peekN(headerSize)
	if err != nil {
		return 0, err
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	c.seq = h[3] + 1
	c.skip(headerSize)
	return n, nil
}

// readWholeHeader reads the next frame header, as readHeader does, once the whole frame is
// buffered when it fits the read buffer: a read cut short leaves nothing of the frame
// consumed.
func (c *Conn) readWholeHeader() (int, error) {
	if err := c.flushBeforeBlock(headerSize); err != nil {
		return 0, err
	}
	h, err := c.peekN(headerSize)
	if err != nil {
		return 0, err
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	if whole := headerSize + n; whole <= len(c.rbuf) {
		if err := c.flushBeforeBlock(whole); err != nil {
			return 0, err
		}
		if h, err = c.peekN(whole); err != nil {
			return 0, err
		}
	}
	c.seq = h[3] + 1
	c.skip(headerSize)
	return n, nil
}

// Consumed returns the bytes read and consumed so far: what was read, less what is
// buffered.
func (c *Conn) Consumed() uint64 { return c.BytesRead - uint64(c.Buffered()) }

// Unread returns a copy of what was read from the connection and not consumed yet.
func (c *Conn) Unread() []byte { return bytes.Clone(c.rbuf[c.rpos:c.rend]) }

// Prime puts p, bytes the peer sent that another reader took off the connection
// (Unread), in front of what is read next. Call it before the first read.
func (c *Conn) Prime(p []byte) {
	if len(p) > len(c.rbuf) {
		c.rbuf = make([]byte, len(p))
	}
	c.rpos, c.rend = 0, copy(c.rbuf, p)
	c.BytesRead += uint64(len(p))
}

// Unflushed returns the bytes written and not flushed yet.
func (c *Conn) Unflushed() int { return c.wn }

// peekByte returns the next byte without consuming it.
func (c *Conn) peekByte() (byte, error) {
	if err := c.flushBeforeBlock(1); err != nil {
		return 0, err
	}
	b, err := c.peekN(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// awaitPayload waits, when the n bytes of a payload whose header was read fit the read
// buffer, until they are all buffered: a packet then relayed from the buffer reaches the
// other side whole or, if the connection fails first, not at all.
func (c *Conn) awaitPayload(n int) error {
	if n > len(c.rbuf) || c.Buffered() >= n {
		return nil
	}
	if err := c.flushBeforeBlock(n); err != nil {
		return err
	}
	_, err := c.peekN(n)
	return err
}

// readFull reads exactly len(p) bytes.
func (c *Conn) readFull(p []byte) error {
	if err := c.flushBeforeBlock(len(p)); err != nil {
		return err
	}
	for {
		k := copy(p, c.rbuf[c.rpos:c.rend])
		c.rpos += k
		p = p[k:]
		if len(p) == 0 {
			return nil
		}
		var err error
		if len(p) >= len(c.rbuf) && c.rerr == nil {
			// As much as the buffer holds or more: straight into p.
			var n int
			n, err = c.readNet(p)
			p = p[n:]
			if err != nil {
				c.rerr = err
				if len(p) == 0 {
					return nil
				}
			}
		} else {
			err = c.fill()
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
}

// appendPayload reads n bytes of payload, appending them to c.buf.
func (c *Conn) appendPayload(n int) error {
	old := len(c.buf)
	if cap(c.buf)-old < n {
		grown := make([]byte, old, old+n)
		copy(grown, c.buf)
		c.buf = grown
	}
	c.buf = c.buf[:old+n]
	return c.readFull(c.buf[old:])
}

// ReadPacket reads one whole packet, joining the frames of a packet of 16 MiB or more, and
// returns its payload. The slice is valid until the next read from c.
func (c *Conn) ReadPacket() ([]byte, error) {
	c.buf = c.buf[:0]
	for {
		n, err := c.readHeader()
		if err != nil {
			return nil, err
		}
		if c.limit > 0 && len(c.buf)+n > c.limit {
			c.refused = n
			return nil, fmt.Errorf("%w: more than %d bytes", ErrPacketTooLarge, c.limit)
		}
		if err := c.appendPayload(n); err != nil {
			return nil, err
		}
		if n < MaxFramePayload {
			return c.buf, nil
		}
	}
}

// writeHeader writes a frame header for a payload of n bytes with the next sequence id.
func (c *Conn) writeHeader(n int) error {
	c.hdr = [headerSize]byte{byte(n), byte(n >> 8), byte(n >> 16), c.seq}
	c.seq++
	return c.write(c.hdr[:])
}

// WritePacket buffers payload as one packet, split into frames as the protocol requires.
// Call Flush (or read from either side of a pair) to send it.
func (c *Conn) WritePacket(payload []byte) error {
	for {
		n := min(len(payload), MaxFramePayload)
		if err := c.writeHeader(n); err != nil {
			return err
		}
		if err := c.write(payload[:n]); err != nil {
			return err
		}
		payload = payload[n:]
		if n < MaxFramePayload {
			return nil
		}
	}
}

// copyPayload streams n bytes of the current frame from c to dst without holding more than
// what the read buffer holds.
func (c *Conn) copyPayload(dst *Conn, n int) error {
	for n > 0 {
		if c.Buffered() == 0 {
			if err := c.flushBeforeBlock(1); err != nil {
				return err
			}
			if err := c.fill(); err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return err
			}
		}
		k := min(n, c.Buffered())
		if err := dst.write(c.rbuf[c.rpos : c.rpos+k]); err != nil {
			return err
		}
		c.skip(k)
		n -= k
	}
	return nil
}

// forwardFrames streams a packet whose first frame header has been read (n is that frame's
// length) from c to dst, frame by frame, with dst's sequence ids. It enforces c's limit.
func (c *Conn) forwardFrames(dst *Conn, n int) error {
	total := 0
	for {
		total += n
		if c.limit > 0 && total > c.limit {
			c.refused = n
			return fmt.Errorf("%w: more than %d bytes", ErrPacketTooLarge, c.limit)
		}
		if err := dst.writeHeader(n); err != nil {
			return err
		}
		if err := c.copyPayload(dst, n); err != nil {
			return err
		}
		if n < MaxFramePayload {
			return nil
		}
		var err error
		if n, err = c.readHeader(); err != nil {
			return err
		}
	}
}

// ForwardPacket streams the next whole packet from c to dst without decoding it and returns
// the length of its first frame.
func (c *Conn) ForwardPacket(dst *Conn) (int, error) {
	n, err := c.readHeader()
	if err != nil {
		return 0, err
	}
	return n, c.forwardFrames(dst, n)
}

// UpgradeServer starts TLS as the server on this connection (the proxy facing a client that
// asked for TLS). The client may have sent its first TLS bytes right after the SSLRequest;
// what is already buffered goes to the TLS layer first.
func (c *Conn) UpgradeServer(ctx context.Context, cfg *tls.Config) error {
	under := c.netConn
	if n := c.Buffered(); n > 0 {
		under = &prefixedConn{Conn: c.netConn, prefix: bytes.Clone(c.rbuf[c.rpos:c.rend])}
		c.skip(n)
	}
	return c.upgrade(ctx, tls.Server(under, cfg))
}

// prefixedConn reads prefix before reading from the connection.
type prefixedConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixedConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// UpgradeClient starts TLS as the client on this connection (the proxy facing a backend).
func (c *Conn) UpgradeClient(ctx context.Context, cfg *tls.Config) error {
	if err := c.Flush(); err != nil {
		return err
	}
	if c.Buffered() > 0 {
		return fmt.Errorf("%w: the server sent data before the TLS handshake", ErrMalformed)
	}
	return c.upgrade(ctx, tls.Client(c.netConn, cfg))
}

func (c *Conn) upgrade(ctx context.Context, t *tls.Conn) error {
	if err := t.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("tls handshake: %w", err)
	}
	c.netConn, c.raw = t, nil
	c.rpos, c.rend, c.rerr = 0, 0, nil
	c.wn, c.werr = 0, nil
	return nil
}

// SetReadDeadline sets the read deadline of the connection underneath.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.netConn.SetReadDeadline(t) }

// SetWriteDeadline sets the write deadline of the connection underneath.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.netConn.SetWriteDeadline(t) }

// SetDeadline sets both deadlines of the connection underneath.
func (c *Conn) SetDeadline(t time.Time) error { return c.netConn.SetDeadline(t) }

// ErrNotIdle reports a connection that should be quiet between commands but is not: the
// peer closed it, or sent something unasked (a server's error before it hangs up).
var ErrNotIdle = errors.New("connection is not idle")

// CheckIdle tells, without blocking, whether a connection that sits between commands is
// still usable: nothing is buffered and the socket has neither data nor end of stream
// waiting. It is how a pooled connection is checked before it is handed out.
func (c *Conn) CheckIdle() error {
	if c.Buffered() > 0 {
		return fmt.Errorf("%w: %d bytes arrived unasked", ErrNotIdle, c.Buffered())
	}
	under := c.netConn
	if t, ok := under.(*tls.Conn); ok {
		under = t.NetConn()
	}
	sc, ok := under.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotIdle, err)
	}
	if c.peekFn == nil {
		c.peekFn = c.peek
	}
	c.peekErr = nil
	if err := rc.Read(c.peekFn); err != nil {
		return fmt.Errorf("%w: %w", ErrNotIdle, err)
	}
	if c.peekErr != nil {
		return fmt.Errorf("%w: %w", ErrNotIdle, c.peekErr)
	}
	return nil
}

// peek looks at the socket without waiting and without consuming, for CheckIdle.
func (c *Conn) peek(fd uintptr) bool {
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&c.peekBuf[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	switch {
	case e == syscall.EAGAIN:
	case e != 0:
		c.peekErr = e
	case n == 0:
		c.peekErr = io.EOF
	default:
		c.peekErr = errors.New("data arrived unasked")
	}
	return true
}

// DiscardRefused reads and drops the rest of a packet refused as too large (after
// ReadPacket or ReadCommand returned ErrPacketTooLarge), frame by frame, until the deadline.
// A connection closed with an error message must first take in what the peer is still
// sending: closing on unread data makes the kernel reset the connection, and the peer would
// see the reset, not the message.
func (c *Conn) DiscardRefused(deadline time.Time) error {
	if c.refused < 0 {
		return nil
	}
	_ = c.SetReadDeadline(deadline)
	err := c.discardFrames(c.refused, c.refused) // refused before any of the frame was read
	c.refused = -1
	return err
}
