package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/procstat"
)

// cpuUse is where the machine's processor time went during a measured period, as shares
// of all of it (every processor, busy or idle): the database server, the proxy, this
// program (the load generator) and idle. A share is -1 when it could not be read (not
// Linux, or the database is not on this machine).
type cpuUse struct {
	DB, Proxy, Generator, Idle float64
}

// unknownCPU is the cpuUse of a run whose accounting could not be read.
var unknownCPU = cpuUse{DB: -1, Proxy: -1, Generator: -1, Idle: -1}

// cpuSample is the cumulative processor time, in clock ticks, at one moment.
type cpuSample struct {
	all, idle             int64
	db, proxy, generator  int64
	dbOK, proxyOK, machOK bool
}

// cpuMeter samples the processor time of the machine and of the processes of a run.
type cpuMeter struct {
	dbPID int // 0: not known
	// proxyPIDs are the run's proxies, whose times add up to the proxy's share.
	proxyPIDs []int
}

// takeSample reads the machine's totals from /proc/stat and each process's user and system
// time from /proc/PID/stat.
func (m cpuMeter) takeSample() cpuSample {
	var s cpuSample
	s.all, s.idle, s.machOK = machineTicks()
	s.generator, _ = processTicks(os.Getpid())
	if m.dbPID > 0 {
		s.db, s.dbOK = processTicks(m.dbPID)
	}
	s.proxyOK = len(m.proxyPIDs) > 0
	for _, pid := range m.proxyPIDs {
		ticks, ok := processTicks(pid)
		s.proxy += ticks
		s.proxyOK = s.proxyOK && ok
	}
	return s
}

// use is the share of each part between two samples.
func use(a, b cpuSample) cpuUse {
	total := float64(b.all - a.all)
	if !a.machOK || !b.machOK || total <= 0 {
		return unknownCPU
	}
	share := func(x, y int64, ok bool) float64 {
		if !ok {
			return -1
		}
		return float64(y-x) / total
	}
	return cpuUse{
		DB:        share(a.db, b.db, a.dbOK && b.dbOK),
		Proxy:     share(a.proxy, b.proxy, a.proxyOK && b.proxyOK),
		Generator: share(a.generator, b.generator, true),
		Idle:      share(a.idle, b.idle, true),
	}
}

// machineTicks returns all and idle ticks of the machine's processors, from /proc/stat.
func machineTicks() (all, idle int64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	return parseCPULine(string(b))
}

// parseCPULine reads the first line of /proc/stat, "cpu" and the ticks of each state: all is
// their sum, idle that of idle and iowait.
func parseCPULine(stat string) (all, idle int64, ok bool) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0, false
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		all += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	return all, idle, true
}

// processTicks returns the user plus system ticks of process pid, its threads included.
func processTicks(pid int) (int64, bool) {
	ticks, err := procstat.Ticks(pid)
	return ticks, err == nil
}

// cpusAllowed is the list of processors process pid may run on, from /proc/PID/status
// ("0-1"); empty when it cannot be read.
func cpusAllowed(pid int) string {
	v, _ := procstat.Status(pid, "Cpus_allowed_list")
	return v
}

// countCPUs is the number of processors in a Linux CPU list such as "0-3,6"; 0 when the
// list is empty or malformed.
func countCPUs(list string) int {
	n := 0
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0
			}
		}
		n += b - a + 1
	}
	return n
}

// serverPID finds the process id of the database server behind db from its pid file, when
// the server runs on this machine and the file is readable; 0 otherwise.
func serverPID(ctx context.Context, db *sql.DB) (int, error) {
	var path sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT @@pid_file").Scan(&path); err != nil {
		return 0, fmt.Errorf("read the server's pid_file: %w", err)
	}
	if !path.Valid || path.String == "" {
		return 0, nil
	}
	b, err := os.ReadFile(path.String)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		return 0, nil // another machine's, or not ours to read
	}
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, nil
	}
	if _, ok := processTicks(pid); !ok {
		return 0, nil
	}
	return pid, nil
}

// meterPeriod samples m now and again after d (or when stop is closed, if sooner) and
// returns a channel that receives the use between the two samples.
func meterPeriod(m cpuMeter, d time.Duration, stop <-chan struct{}) <-chan cpuUse {
	out := make(chan cpuUse, 1)
	first := m.takeSample()
	go func() { // ends after d or when stop is closed
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-stop:
		}
		out <- use(first, m.takeSample())
	}()
	return out
}
