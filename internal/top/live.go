package top

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// Live redraws the view every interval on out, a terminal, until ctx ends or q is pressed.
// Keys are read from in when it is a terminal (it is put in raw mode meanwhile).
func Live(ctx context.Context, c *Client, v View, interval time.Duration, in *os.File, out *os.File) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	keys := make(chan byte, 8)
	if term.IsTerminal(int(in.Fd())) {
		old, err := term.MakeRaw(int(in.Fd()))
		if err != nil {
			return fmt.Errorf("terminal: %w", err)
		}
		defer func() { _ = term.Restore(int(in.Fd()), old) }()
		go readKeys(ctx, in, keys) // ends when in is closed or at exit
	}
	_, _ = io.WriteString(out, "\x1b[?1049h\x1b[?25l") // alternate screen, hide the cursor
	defer func() { _, _ = io.WriteString(out, "\x1b[?25h\x1b[?1049l") }()

	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last *Frame
	var lastErr error
	for {
		f, err := c.Fetch(ctx)
		if err == nil {
			last, lastErr = f, nil
		} else if ctx.Err() == nil {
			lastErr = err
		}
		draw(out, v, last, lastErr)
		select {
		case <-ctx.Done():
			return nil
		case k := <-keys:
			switch {
			case k == 'q' || k == 3: // q or Ctrl-C
				return nil
			case sortKeys[k] != "":
				v.Sort = sortKeys[k]
			}
		case <-tick.C:
		}
	}
}

func draw(out *os.File, v View, f *Frame, err error) {
	if w, h, e := term.GetSize(int(out.Fd())); e == nil {
		v.Width = w
		v.Limit = max(h-7, 1)
	}
	var b rawWriter
	b.WriteString("\x1b[H\x1b[2J")
	if err != nil {
		fmt.Fprintf(&b, "%v (retrying every second)\n", err)
	}
	if f != nil {
		v.Render(&b, f)
	}
	_, _ = out.Write(b.bytes())
}

// rawWriter turns \n into \r\n, as a terminal in raw mode needs.
type rawWriter struct{ buf []byte }

func (w *rawWriter) Write(p []byte) (int, error) {
	for _, c := range p {
		if c == '\n' {
			w.buf = append(w.buf, '\r')
		}
		w.buf = append(w.buf, c)
	}
	return len(p), nil
}

func (w *rawWriter) WriteString(s string) { _, _ = w.Write([]byte(s)) }

func (w *rawWriter) bytes() []byte { return w.buf }

func readKeys(ctx context.Context, in io.Reader, keys chan<- byte) {
	buf := make([]byte, 16)
	for {
		n, err := in.Read(buf)
		if err != nil {
			return
		}
		for _, k := range buf[:n] {
			select {
			case keys <- k:
			case <-ctx.Done():
				return
			}
		}
	}
}
