// Package procs sizes the Go runtime's processors (GOMAXPROCS) to the proxy's own load.
//
// A relay does little work per packet and waits on the network between packets. With more
// processors than that work fills, every goroutine the network makes ready has the runtime
// wake another thread to look for it, which spins and sleeps again: processor time and a
// thread hand-off on every statement, for nothing. Measured on two processors, a client
// running one read-write transaction at a time cost gatekeeper 44.8 µs of processor time a
// statement on both and 33.8 with the Sizer, which gave it one, and the transaction's added
// latency fell from 561 to 266 µs (bench/results/overhead). Under load the other processors
// are needed, and the Sizer gives them back as soon as the proxy's demand calls for them.
//
// Demand is the processor time the proxy used plus the time its threads waited, runnable,
// for a processor, over wall time. The wait counts because on a database's host the kernel
// shares the processors per thread: beside a busy database, a proxy on one thread gets one
// thread's share and waits for the rest, and a thread more is what gets it more.
package procs

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"time"
)

const (
	// UpAt: an interval that used more than this share of the processors in use adds
	// processors at once.
	UpAt = 0.6
	// FillTo is the share of its processors the load fills after a change: the Sizer
	// wants ceil(used / FillTo) processors.
	FillTo = 0.5
	// DownAfter intervals in a row that wanted fewer processors take them away.
	DownAfter = 3
	// Interval is how often Run measures.
	Interval = time.Second
)

// Sizer decides how many processors the proxy runs on, from its demand in each interval.
// It starts at Max. It adds processors as soon as an interval's demand exceeds UpAt of
// those in use, going to the count the demand would fill to FillTo; it takes them away
// only after DownAfter intervals in a row that all wanted fewer, going to the most that
// any of them wanted. Between the two marks it holds, so a load near one mark does not
// make the count flap.
type Sizer struct {
	// Max is the most processors it gives: GOMAXPROCS as the runtime set it at start, from
	// the GOMAXPROCS environment variable or the processors the process may use.
	Max int
	n   int
	// fewer counts the intervals in a row that wanted fewer than n; want is the most
	// they wanted.
	fewer, want int
}

// NewSizer returns a Sizer at most processors.
func NewSizer(most int) *Sizer {
	most = max(most, 1)
	return &Sizer{Max: most, n: most}
}

// N returns the processors it gives now.
func (s *Sizer) N() int { return s.n }

// Next takes the demand of the last interval (processors' worth: processor time used plus
// time waited for one, over wall time) and returns the processors to give from now on.
func (s *Sizer) Next(demand float64) int {
	want := min(s.Max, max(1, int(math.Ceil(demand/FillTo-1e-9))))
	switch {
	case demand > UpAt*float64(s.n) && s.n < s.Max:
		s.n, s.fewer = want, 0 // past UpAt, FillTo wants more than n
	case want < s.n:
		if s.fewer == 0 || want > s.want {
			s.want = want
		}
		if s.fewer++; s.fewer >= DownAfter {
			s.n, s.fewer = s.want, 0
		}
	default:
		s.fewer = 0
	}
	return s.n
}

// Run sizes the runtime's processors every Interval until ctx ends, starting from those
// the runtime has now, and gives that count back when it ends. cpu returns the processor
// time the process has used so far and the time its threads have waited for a processor
// (ProcessCPU); without them (false), Run does nothing.
func Run(ctx context.Context, cpu func() (ran, waited time.Duration, ok bool), log *slog.Logger) {
	start := runtime.GOMAXPROCS(0)
	ran0, waited0, ok := cpu()
	if !ok {
		return
	}
	s := NewSizer(start)
	defer runtime.GOMAXPROCS(start)
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	at := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			ran, waited, ok := cpu()
			if !ok {
				return
			}
			wall := now.Sub(at)
			if wall <= 0 {
				continue
			}
			used, wait := float64(ran-ran0)/float64(wall), float64(waited-waited0)/float64(wall)
			was := s.N()
			if n := s.Next(used + wait); n != was {
				runtime.GOMAXPROCS(n)
				log.Debug("processors resized", "from", was, "to", n, "used", used, "waited", wait)
			}
			ran0, waited0, at = ran, waited, now
		}
	}
}
