package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatekeeperdb/gatekeeper/chaos"
)

// writeReport writes the results as markdown: a table of the lines, grouped by check, each
// group with its check's setup, then the failures' messages. command is markdown.
func writeReport(w io.Writer, r *results, command string, date time.Time, machine string) {
	fmt.Fprintln(w, "# Fault injection: what clients see when things break")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The suite in [`chaos/`](../../../chaos) kills, stops, delays and floods what gatekeeper depends on "+
		"and measures what clients see. Each check prints one line, `chaos: <check>: <figure>`; the table "+
		"gives each line with the setup of its check and the verdict of its assertion (the setup says what is asserted). "+
		"A check that cannot run on the machine says why and is skipped.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| check | setup | figure | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|")
	seen := map[string]bool{}
	for _, l := range r.ordered() {
		setup := ""
		if c, ok := chaos.CheckOf(l.test); ok && !seen[c.Test] {
			seen[c.Test] = true
			setup = "**" + c.Title + ".** " + c.Setup
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", cell(l.check), cell(setup), cell(l.figure), r.verdict(l))
	}
	fmt.Fprintln(w)

	var failed []string
	for _, l := range r.ordered() {
		if r.verdicts[l.test] == "fail" && len(r.failures[l.test]) > 0 {
			failed = append(failed, l.test)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintln(w, "What the failed checks said:")
		fmt.Fprintln(w)
		for _, test := range failed {
			for _, msg := range r.failures[test] {
				fmt.Fprintf(w, "- `%s`: %s\n", test, msg)
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Command: %s (%s UTC; the suite took %s)\n", command, date.Format("2006-01-02 15:04"), r.duration.Round(time.Second))
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Machine: %s\n", machine)
}

// ordered returns the lines in the order of the checks in chaos.Checks (the tests run in
// the order of their files), each check's lines in the order they came.
func (r *results) ordered() []line {
	rank := func(l line) int {
		for i, c := range chaos.Checks {
			if top, _, _ := strings.Cut(l.test, "/"); top == c.Test {
				return i
			}
		}
		return len(chaos.Checks)
	}
	out := slices.Clone(r.lines)
	slices.SortStableFunc(out, func(a, b line) int { return rank(a) - rank(b) })
	return out
}

// cell makes text safe in a markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// machine describes where the suite ran: processors, memory, kernel, the database server,
// Go and the checkout.
func machine(root string) string {
	var parts []string
	cpus := fmt.Sprintf("%d CPUs", runtime.NumCPU())
	if model := cpuModel(); model != "" {
		cpus += " (" + model + ")"
	}
	parts = append(parts, cpus)
	if kb := memTotalKB(); kb > 0 {
		parts = append(parts, strconv.Itoa(int((kb+(1<<19))>>20))+" GiB")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		parts = append(parts, "Linux "+strings.TrimSpace(string(b)))
	}
	for _, path := range []string{"mariadbd", "/usr/sbin/mariadbd"} {
		// "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)"
		if f := strings.Fields(commandLine(root, path, "--version")); len(f) > 2 {
			parts = append(parts, "mariadbd "+f[2])
			break
		}
	}
	parts = append(parts, runtime.Version())
	if v := commandLine(root, "git", "describe", "--always", "--dirty"); v != "" {
		parts = append(parts, "gatekeeper "+v)
	}
	return strings.Join(parts, "; ") + "."
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func memTotalKB() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// commandLine runs a command in dir and returns the first line it prints, or "".
func commandLine(dir, name string, args ...string) string {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return first
}
