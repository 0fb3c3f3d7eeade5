// Package procstat reads what Linux's /proc says of a process: its processor time, its
// resident memory, whether it still runs. The benchmarks and the fault-injection suite
// measure the proxy and the database with it.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the times in /proc/PID/stat: Linux reports them in USER_HZ ticks,
// which it fixes at 100 whatever the kernel's own tick rate.
const userHZ = 100

func read(pid int, name string) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + name)
	return string(b), err
}

// Ticks returns the user plus system time, in USER_HZ ticks, that process pid and its
// threads have used.
func Ticks(pid int) (int64, error) {
	stat, err := read(pid, "stat")
	if err != nil {
		return 0, err
	}
	ticks, err := ParseTicks(stat)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return ticks, nil
}

// CPU returns the processor time, user plus system, that process pid and its threads have
// used.
func CPU(pid int) (time.Duration, error) {
	ticks, err := Ticks(pid)
	return time.Duration(ticks) * time.Second / userHZ, err
}

// fields returns the fields of a /proc/PID/stat line after the command name, the state
// first. The name, in parentheses, may hold spaces and parentheses: the fields are counted
// after the last closing parenthesis.
func fields(stat string) ([]string, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return nil, fmt.Errorf("no command name in %q", stat)
	}
	return strings.Fields(stat[i+1:]), nil
}

// ParseTicks reads utime plus stime (fields 14 and 15) from a /proc/PID/stat line.
func ParseTicks(stat string) (int64, error) {
	f, err := fields(stat)
	if err != nil {
		return 0, err
	}
	if len(f) < 13 {
		return 0, fmt.Errorf("too few fields in %q", stat)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("utime %q, stime %q are not numbers", f[11], f[12])
	}
	return u + s, nil
}

// Running reports whether pid is a live process: not gone, not a zombie.
func Running(pid int) bool {
	stat, err := read(pid, "stat")
	if err != nil {
		return false
	}
	f, err := fields(stat)
	return err != nil || len(f) == 0 || (f[0] != "Z" && f[0] != "X")
}

// Status returns the value of a line of /proc/PID/status, such as "VmRSS" or
// "Cpus_allowed_list", without its name and the spaces around it.
func Status(pid int, name string) (string, error) {
	status, err := read(pid, "status")
	if err != nil {
		return "", err
	}
	if v, ok := StatusField(status, name); ok {
		return v, nil
	}
	return "", fmt.Errorf("/proc/%d/status: no %s line", pid, name)
}

// StatusField returns the value of the line name of a /proc/PID/status text.
func StatusField(status, name string) (string, bool) {
	for line := range strings.SplitSeq(status, "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// RSS returns the resident memory of process pid in bytes, VmRSS of /proc/PID/status.
func RSS(pid int) (int64, error) {
	v, err := Status(pid, "VmRSS")
	if err != nil {
		return 0, err
	}
	kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/status: VmRSS %q: %w", pid, v, err)
	}
	return kb << 10, nil
}
