package procs

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// ProcessCPU returns the processor time, user and system, the process has used so far, and
// the time its threads have waited, runnable, for a processor (the run_delay of
// /proc/self/task/*/schedstat; threads that have exited do not count).
func ProcessCPU() (ran, waited time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, false
	}
	ran = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	tasks, _ := filepath.Glob("/proc/self/task/*/schedstat")
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread has exited
		}
		// The fields: time on a processor, time waiting on a run queue (ns), slices.
		if fields := bytes.Fields(b); len(fields) >= 2 {
			if ns, err := strconv.ParseInt(string(fields[1]), 10, 64); err == nil {
				waited += time.Duration(ns)
			}
		}
	}
	return ran, waited, true
}
