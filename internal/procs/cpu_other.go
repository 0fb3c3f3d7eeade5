//go:build !linux

package procs

import "time"

// ProcessCPU would return the processor time the process has used and the time its
// threads waited for a processor; it reads /proc, so elsewhere the processors stay as the
// runtime set them.
func ProcessCPU() (ran, waited time.Duration, ok bool) { return 0, 0, false }
