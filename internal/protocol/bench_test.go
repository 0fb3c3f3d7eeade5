package protocol

import (
	"net"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// loopConn replays the same bytes forever and discards what is written: a backend that
// always answers with the same response, and a client that always takes it.
type loopConn struct {
	data []byte
	pos  int
}

func (l *loopConn) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.pos:])
	l.pos = (l.pos + n) % len(l.data)
	return n, nil
}
func (l *loopConn) Write(p []byte) (int, error)      { return len(p), nil }
func (l *loopConn) Close() error                     { return nil }
func (l *loopConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (l *loopConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (l *loopConn) SetDeadline(time.Time) error      { return nil }
func (l *loopConn) SetReadDeadline(time.Time) error  { return nil }
func (l *loopConn) SetWriteDeadline(time.Time) error { return nil }

// relayLoop returns a relay whose backend answers every command with a result set of rows
// rows (each rowBytes long), and the number of packets in that response.
func relayLoop(rows, rowBytes int) (*Relay, int) {
	s := &stream{seq: 1}
	var rs [][]byte
	for range rows {
		rs = append(rs, textRow(string(make([]byte, rowBytes-1))))
	}
	s.resultSet(true, autocommit, rs...)
	x := &Relay{
		Client:       NewConn(&loopConn{data: []byte{0}}),
		Backend:      NewConn(&loopConn{data: s.b}),
		Capabilities: baseCaps | mysql.CLIENT_DEPRECATE_EOF,
	}
	Pair(x.Client, x.Backend)
	return x, rows + 3
}

func BenchmarkForwardResponse(b *testing.B) {
	for _, bc := range []struct {
		name           string
		rows, rowBytes int
	}{
		{"point_select", 1, 8},
		{"range_100_rows", 100, 64},
		{"rows_of_64KiB", 16, 64 << 10},
	} {
		b.Run(bc.name, func(b *testing.B) {
			x, packets := relayLoop(bc.rows, bc.rowBytes)
			var res Response
			b.ReportAllocs()
			b.SetBytes(int64(bc.rows * bc.rowBytes))
			for b.Loop() {
				x.Client.seq = 1
				if err := x.ForwardResponse(mysql.COM_QUERY, &res); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*packets), "ns/packet")
		})
	}
}

// TestRelayAllocatesNothing keeps the steady-state relay free of allocations: a command
// forwarded and its response of many packets relayed, over and over.
func TestRelayAllocatesNothing(t *testing.T) {
	x, _ := relayLoop(50, 100)
	s := &stream{}
	s.packet(append([]byte{mysql.COM_QUERY}, "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 50"...))
	x.Client = NewConn(&loopConn{data: s.b})
	Pair(x.Client, x.Backend)
	var cmd Command
	var res Response
	run := func() {
		if err := x.Client.ReadCommand(&cmd); err != nil {
			t.Fatal(err)
		}
		if err := x.Client.ForwardCommand(&cmd, x.Backend); err != nil {
			t.Fatal(err)
		}
		if err := x.ForwardResponse(mysql.COM_QUERY, &res); err != nil {
			t.Fatal(err)
		}
	}
	run() // warm the buffers
	if allocs := testing.AllocsPerRun(200, run); allocs != 0 {
		t.Fatalf("relaying a command and its 53-packet response allocates %.1f times, want 0", allocs)
	}
}
