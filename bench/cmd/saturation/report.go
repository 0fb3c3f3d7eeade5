package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatekeeperdb/gatekeeper/bench/stats"
)

// columns is the CSV's header; runs are read back by these names.
var columns = []string{
	"route", "round", "short_count", "short_mean_ms", "short_p50_ms", "short_p95_ms", "short_errors",
	"scans", "scans_per_s", "scan_mean_ms", "scan_errors", "errors", "proxy_cpu_s", "proxy_cores",
}

// record is a result as a CSV line, in the order of columns.
func (r result) record() []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	msOf := func(d time.Duration) string { return f(float64(d) / 1e6) }
	var reasons []string
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		reasons = append(reasons, k+":"+strconv.Itoa(r.Errors[k]))
	}
	cpu, cores := "", ""
	if r.HasProxy {
		cpu, cores = f(r.ProxyCPU.Seconds()), f(r.ProxyCPU.Seconds()/r.Period.Seconds())
	}
	return []string{
		r.Route, strconv.Itoa(r.Round),
		strconv.Itoa(r.Short.Count), msOf(r.Short.Mean), msOf(r.Short.P50), msOf(r.Short.P95), strconv.Itoa(r.ShortErrors),
		strconv.Itoa(r.Scans.Count), f(r.scansPerSecond()), msOf(r.Scans.Mean), strconv.Itoa(r.ScanErrors),
		strings.Join(reasons, " "), cpu, cores,
	}
}

// appendRun appends the result to the CSV at path, with the header first when the file is
// new or empty; an empty path writes both to standard output.
func appendRun(path string, r result) error {
	var out io.Writer = os.Stdout
	header := true
	if path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			return err
		}
		out, header = f, info.Size() == 0
	}
	w := csv.NewWriter(out)
	if header {
		w.Write(columns)
	}
	w.Write(r.record())
	w.Flush()
	return w.Error()
}

// row is a line of the CSV: its route and round, and its numbers by column name (an empty
// cell, as proxy_cpu_s of direct, is absent).
type row struct {
	route  string
	round  int
	values map[string]float64
}

func readRuns(path string) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: empty", path)
	}
	index := map[string]int{}
	for i, name := range rows[0] {
		index[name] = i
	}
	for _, name := range columns {
		if _, ok := index[name]; !ok {
			return nil, fmt.Errorf("%s: no column %q", path, name)
		}
	}
	var runs []row
	for n, line := range rows[1:] {
		r := row{route: line[index["route"]], values: map[string]float64{}}
		if r.round, err = strconv.Atoi(line[index["round"]]); err != nil {
			return nil, fmt.Errorf("%s line %d: round: %w", path, n+2, err)
		}
		for _, name := range columns {
			cell := line[index[name]]
			if name == "route" || name == "round" || name == "errors" || cell == "" {
				continue
			}
			if r.values[name], err = strconv.ParseFloat(cell, 64); err != nil {
				return nil, fmt.Errorf("%s line %d: %s: %w", path, n+2, name, err)
			}
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// writeReport prints a markdown table with a row per route, in the order the routes first
// appear: the medians over its rounds, and the errors summed over them.
func writeReport(w io.Writer, runs []row) error {
	if len(runs) == 0 {
		return errors.New("no runs to report")
	}
	var routes []string
	byRoute := map[string][]row{}
	for _, r := range runs {
		if _, seen := byRoute[r.route]; !seen {
			routes = append(routes, r.route)
		}
		byRoute[r.route] = append(byRoute[r.route], r)
	}
	med := func(route, column string) float64 {
		var vs []float64
		for _, r := range byRoute[route] {
			if v, ok := r.values[column]; ok {
				vs = append(vs, v)
			}
		}
		return stats.Median(vs)
	}
	num := func(v float64, format string) string {
		if math.IsNaN(v) {
			return "—"
		}
		return fmt.Sprintf(format, v)
	}
	direct := math.NaN()
	if _, ok := byRoute["direct"]; ok {
		direct = med("direct", "short_mean_ms")
	}
	fmt.Fprintln(w, "| route | rounds | short mean ms | short p50 ms | short p95 ms | short count | short mean / direct's | scans/s | scan mean ms | errors (short, scans) | proxy CPU (processors) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, route := range routes {
		var shortErrors, scanErrors float64
		for _, r := range byRoute[route] {
			shortErrors += r.values["short_errors"]
			scanErrors += r.values["scan_errors"]
		}
		ratio := math.NaN()
		if mean := med(route, "short_mean_ms"); direct > 0 {
			ratio = mean / direct
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %.0f, %.0f | %s |\n",
			route, len(byRoute[route]),
			num(med(route, "short_mean_ms"), "%.2f"), num(med(route, "short_p50_ms"), "%.2f"),
			num(med(route, "short_p95_ms"), "%.2f"), num(med(route, "short_count"), "%.0f"),
			num(ratio, "%.2fx"), num(med(route, "scans_per_s"), "%.1f"), num(med(route, "scan_mean_ms"), "%.0f"),
			shortErrors, scanErrors, num(med(route, "proxy_cores"), "%.2f"))
	}
	return nil
}
