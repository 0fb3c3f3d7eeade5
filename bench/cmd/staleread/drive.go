package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"
)

// progressEvery is how often a line tells how the run is going.
const progressEvery = 5 * time.Second

// newRand is client i's source of random choices.
func newRand(seed uint64, i int) *rand.Rand { return rand.New(rand.NewPCG(seed, uint64(i))) }

// drive runs the clients until the reads run out (with several arms: until the switch at
// which enough reports that every arm has had its reads), --duration passes or ctx is done,
// with the timetable (lag injections, switches of arms) beside them; it returns how long
// the clients ran and what the timetable did. Everything it starts has ended when it
// returns.
func drive(ctx context.Context, o options, clients []*client, rs *replicaSet, ph *phases, enough func() bool, t *tally, log io.Writer) (time.Duration, timetable) {
	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var tt timetable
	var timetabled sync.WaitGroup
	if arms := len(o.dsns); o.injectLag > 0 || arms > 1 {
		var t *turns
		if arms > 1 {
			t = &turns{ph: ph, arms: arms, enough: enough}
		}
		rs.injected = o.injectLag > 0 // before the goroutine: restore reads it
		// Ends with ctx or at the last switch, after starting the replica it holds back.
		inj := injection{lag: o.injectLag, period: o.injectEvery, all: o.injectAll}
		timetabled.Go(func() { tt = rs.schedule(ctx, inj, t) })
	}
	start := time.Now()
	done := make(chan struct{})
	var running sync.WaitGroup
	for _, c := range clients {
		running.Go(func() { c.run(ctx) }) // ends when the reads run out or ctx is done
	}
	go func() { running.Wait(); close(done) }() // ends with the last client
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-tick.C:
			progress(log, time.Since(start), t)
		}
	}
	elapsed := time.Since(start)
	cancel()
	timetabled.Wait()
	return elapsed, tt
}

// progress writes a line of the counts so far.
func progress(log io.Writer, elapsed time.Duration, t *tally) {
	reads, stale, ownMisses, backwards := t.totals()
	errs, _, _ := t.errorsByKey()
	var failed int64
	for _, n := range errs {
		failed += n
	}
	fmt.Fprintf(log, "staleread: %3.0fs: %d reads, %d writes, %d stale, %d own-write misses, %d monotonic violations, %d errors\n",
		elapsed.Seconds(), reads, t.writes.Load(), stale, ownMisses, backwards, failed)
}
