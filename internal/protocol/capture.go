package protocol

import "errors"

// Capture keeps a copy of what is written to a connection, frame headers included, up to
// a limit: a response relayed to a client, to be sent again later (WriteFrames). Past the
// limit it keeps nothing more and says so.
type Capture struct {
	// Buf holds what was written since Start; nil once over the limit.
	Buf []byte
	// Over tells that more than the limit was written.
	Over  bool
	limit int
}

// Start readies the capture for a response of at most limit bytes, reusing its buffer.
func (k *Capture) Start(limit int) {
	k.Buf, k.Over, k.limit = k.Buf[:0], false, limit
}

func (k *Capture) add(p []byte) {
	if k.Over {
		return
	}
	if len(k.Buf)+len(p) > k.limit {
		k.Over, k.Buf = true, k.Buf[:0]
		return
	}
	k.Buf = append(k.Buf, p...)
}

// SetCapture makes every byte written to c from now on go to k as well; nil stops it.
func (c *Conn) SetCapture(k *Capture) { c.capture = k }

// ErrFrames: bytes given to WriteFrames do not split into whole frames.
var ErrFrames = errors.New("protocol: not a sequence of whole frames")

// WriteFrames writes frames, as a Capture kept them, with this connection's sequence ids in
// place of those they were written with. A response sent once is sent again this way.
func (c *Conn) WriteFrames(frames []byte) error {
	for rest := frames; len(rest) > 0; {
		if len(rest) < headerSize {
			return ErrFrames
		}
		n := int(rest[0]) | int(rest[1])<<8 | int(rest[2])<<16
		if len(rest) < headerSize+n {
			return ErrFrames
		}
		if err := c.writeHeader(n); err != nil {
			return err
		}
		if err := c.write(rest[headerSize : headerSize+n]); err != nil {
			return err
		}
		rest = rest[headerSize+n:]
	}
	return nil
}
