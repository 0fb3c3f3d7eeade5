// Command cpuspeed tells how fast the processor it runs on goes, from moment to moment:
// every -every it runs a fixed loop and prints the time (Unix seconds) and the loop's
// iterations per microsecond of its own thread's processor time, a line each.
//
//	cpuspeed [-every 200ms] [-loop 100000]
//
// On a shared virtual machine a second of processor time does a varying amount of work
// (another tenant's load on the same physical core, its clock), and a benchmark whose
// database is bound by its processor moves with it: on a 2-processor VM one such loop read
// from 3161 to 7067 iterations a millisecond within twenty seconds, the two processors
// independently. bench/stepchange.sh runs it on the database's processor, so that a
// throughput can be read against the speed the processor had over the same seconds.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "cpuspeed:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("cpuspeed", flag.ContinueOnError)
	every := fs.Duration("every", 200*time.Millisecond, "how often to measure")
	loop := fs.Int("loop", 100_000, "iterations of the loop a measure runs (100000 take some 0.3 ms)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *every <= 0 || *loop <= 0 {
		return fmt.Errorf("-every and -loop must be positive (got %s and %d)", *every, *loop)
	}
	runtime.LockOSThread() // the thread whose processor time is read
	for {
		speed, err := measure(*loop)
		if err != nil {
			return err
		}
		if _, err := fmt.Printf("%.3f %.2f\n", float64(time.Now().UnixMicro())/1e6, speed); err != nil {
			return err // the reader went away
		}
		time.Sleep(*every)
	}
}

// measure runs n iterations of a chain of dependent multiplications and shifts (each needs
// the last, so the processor cannot overlap them) and returns iterations per microsecond
// of the calling thread's processor time. The thread must be locked to its OS thread.
func measure(n int) (float64, error) {
	t0, err := threadCPU()
	if err != nil {
		return 0, err
	}
	x := uint64(88172645463325252)
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		x *= 2685821657736338717
	}
	runtime.KeepAlive(x) // the loop's result is used: the compiler keeps the loop
	t1, err := threadCPU()
	if err != nil {
		return 0, err
	}
	return float64(n) / max(t1-t0, time.Microsecond).Seconds() / 1e6, nil
}

// threadCPU is the processor time the calling thread has used (CLOCK_THREAD_CPUTIME_ID,
// to the nanosecond; getrusage's RUSAGE_THREAD counts in scheduler ticks of 4 ms here).
func threadCPU() (time.Duration, error) {
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, fmt.Errorf("clock_gettime: %w", errno)
	}
	return time.Duration(ts.Nano()), nil
}
