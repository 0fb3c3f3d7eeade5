// Command stepplot draws bench/stepchange.sh's trace: the adaptive capacity of each round
// through the schedule, and each policy's throughput over it.
//
//	stepplot -trace DIR/trace.csv -phase 60 [-out DIR]
//
// It writes capacity.png (the capacity of every auto run, a line a round, on a log scale)
// and throughput.png (units completed a second, over the 10 seconds up to each second,
// the median over the rounds of each policy) into -out, by default the trace's directory.
// The schedule's phases are warm-up, full, half and full again, -phase seconds each; the
// charts' titles say where they change.
package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/gatekeeperdb/gatekeeper/bench/plot"
	"github.com/gatekeeperdb/gatekeeper/bench/stats"
)

// rollSeconds is the span of the throughput's rolling rate: a second's completions on a
// shared 2-processor machine spread too widely to read a line through.
const rollSeconds = 10

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "stepplot:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("stepplot", flag.ContinueOnError)
	trace := fs.String("trace", "", "bench/stepchange.sh's trace.csv")
	phase := fs.Int("phase", 60, "seconds a phase of the schedule lasts (bench/stepchange.sh --phase)")
	out := fs.String("out", "", "directory for the charts (default: the trace's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *trace == "" || *phase <= 0 {
		return errors.New("give -trace FILE and a positive -phase, as in -trace bench/results/stepchange/trace.csv -phase 60")
	}
	if *out == "" {
		*out = filepath.Dir(*trace)
	}
	f, err := os.Open(*trace)
	if err != nil {
		return err
	}
	defer f.Close()
	runs, err := readTrace(f)
	if err != nil {
		return fmt.Errorf("%s: %w", *trace, err)
	}
	when := fmt.Sprintf("warm-up, then full from %d s, half from %d s, full again from %d s", *phase, 2**phase, 3**phase)
	if err := plot.Lines(filepath.Join(*out, "capacity.png"), plot.Chart{
		Title:  "capacity: auto, each round (" + when + ")",
		X:      "second of the schedule",
		Y:      "capacity (ms)",
		LogY:   true,
		Series: capacitySeries(runs),
	}); err != nil {
		return err
	}
	return plot.Lines(filepath.Join(*out, "throughput.png"), plot.Chart{
		Title:    fmt.Sprintf("units/s over %d s, median of the rounds (%s)", rollSeconds, when),
		X:        "second of the schedule",
		Y:        "units completed a second",
		FromZero: true,
		Series:   throughputSeries(runs),
	})
}

// key names one run of the schedule.
type key struct {
	policy string // auto, or a static capacity such as 25ms
	round  int
}

// sample is one second of a run.
type sample struct {
	second   int
	capacity time.Duration
	units    float64 // completed since the proxy started
}

// readTrace reads the trace's rows into runs, each in the order of its seconds.
func readTrace(r io.Reader) (map[key][]sample, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) < 2 {
		return nil, errors.New("no rows")
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, name := range []string{"second", "capacity_s", "units", "policy", "round"} {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("no %s column: not a trace of bench/stepchange.sh", name)
		}
	}
	runs := map[key][]sample{}
	for n, row := range rows[1:] {
		s, err1 := strconv.Atoi(row[col["second"]])
		c, err2 := strconv.ParseFloat(row[col["capacity_s"]], 64)
		u, err3 := strconv.ParseFloat(row[col["units"]], 64)
		rd, err4 := strconv.Atoi(row[col["round"]])
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return nil, fmt.Errorf("row %d: %w", n+2, err)
		}
		k := key{row[col["policy"]], rd}
		runs[k] = append(runs[k], sample{second: s, capacity: time.Duration(c * float64(time.Second)), units: u})
	}
	for _, v := range runs {
		sort.Slice(v, func(i, j int) bool { return v[i].second < v[j].second })
	}
	return runs, nil
}

// sortedKeys are the runs' keys, auto first, then the statics by name, each by round.
func sortedKeys(runs map[key][]sample) []key {
	keys := make([]key, 0, len(runs))
	for k := range runs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if (a.policy == "auto") != (b.policy == "auto") {
			return a.policy == "auto"
		}
		if a.policy != b.policy {
			return staticLess(a.policy, b.policy)
		}
		return a.round < b.round
	})
	return keys
}

// staticLess orders static capacities by their size, 25ms before 100ms before 1s.
func staticLess(a, b string) bool {
	da, ea := time.ParseDuration(a)
	db, eb := time.ParseDuration(b)
	if ea != nil || eb != nil {
		return a < b
	}
	return da < db
}

// capacitySeries is a line a round of the auto runs, their capacity in ms.
func capacitySeries(runs map[key][]sample) []plot.Series {
	var out []plot.Series
	for _, k := range sortedKeys(runs) {
		if k.policy != "auto" {
			continue
		}
		pts := make([][2]float64, 0, len(runs[k]))
		for _, s := range runs[k] {
			pts = append(pts, [2]float64{float64(s.second), s.capacity.Seconds() * 1000})
		}
		out = append(out, plot.Series{Name: fmt.Sprintf("round %d", k.round), Points: pts})
	}
	return out
}

// throughputSeries is a line a policy: at each second the median, over its rounds, of the
// units completed a second over the rollSeconds up to it.
func throughputSeries(runs map[key][]sample) []plot.Series {
	rates := map[string]map[int][]float64{} // policy: second: each round's rate
	var policies []string
	for _, k := range sortedKeys(runs) {
		if rates[k.policy] == nil {
			rates[k.policy] = map[int][]float64{}
			policies = append(policies, k.policy)
		}
		v := runs[k]
		for i := rollSeconds; i < len(v); i++ {
			if span := v[i].second - v[i-rollSeconds].second; span > 0 {
				rates[k.policy][v[i].second] = append(rates[k.policy][v[i].second], (v[i].units-v[i-rollSeconds].units)/float64(span))
			}
		}
	}
	out := make([]plot.Series, 0, len(policies))
	for i, p := range policies {
		seconds := make([]int, 0, len(rates[p]))
		for s := range rates[p] {
			seconds = append(seconds, s)
		}
		slices.Sort(seconds)
		pts := make([][2]float64, 0, len(seconds))
		for _, s := range seconds {
			pts = append(pts, [2]float64{float64(s), stats.Median(rates[p][s])})
		}
		name := "capacity " + p
		out = append(out, plot.Series{Name: name, Points: pts, Dashed: i > 0})
	}
	return out
}
