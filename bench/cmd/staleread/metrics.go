package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// readsMetric is the proxy's counter of reads by the backend that served them and the
// reason it was picked.
const readsMetric = "gatekeeper_reads_total"

// scrapeTimeout bounds one scrape of the proxy's metrics.
const scrapeTimeout = 5 * time.Second

// route is one series of readsMetric.
type route struct{ backend, reason string }

// Unlabelled series a run reads besides readsMetric, from a proxy that counts every
// writer (routing.strong_rule per_table or global): the reads of the primary's position and
// the strong reads they served, the strong reads sent to the primary because that could not
// be learnt in time, and the time taken to learn it.
const (
	positionReadsMetric     = "gatekeeper_binlog_position_reads_total"
	positionServedMetric    = "gatekeeper_binlog_position_read_statements_total"
	unvouchedMetric         = "gatekeeper_reads_unvouched_total"
	followerWaitSumMetric   = "gatekeeper_causal_wait_follower_seconds_sum"
	followerWaitCountMetric = "gatekeeper_causal_wait_follower_seconds_count"
	// cacheHitsMetric counts the reads the result cache answered (cache.mode on).
	cacheHitsMetric = "gatekeeper_cache_hits_total"
)

// scalarSeries are the unlabelled series a scrape keeps.
var scalarSeries = []string{positionReadsMetric, positionServedMetric, unvouchedMetric, followerWaitSumMetric, followerWaitCountMetric,
	cacheHitsMetric}

// exposition is what one scrape of a proxy read: its reads by route, whether it has
// readsMetric at all, and the scalarSeries it has.
type exposition struct {
	reads      map[route]float64
	readsFound bool
	scalars    map[string]float64
}

// scrape reads the proxy's Prometheus endpoint, in the text format.
func scrape(ctx context.Context, url string) (exposition, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return exposition{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return exposition{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return exposition{}, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseExposition(resp.Body)
}

// parseReads picks the series of readsMetric out of a Prometheus text exposition.
func parseReads(r io.Reader) (map[route]float64, bool, error) {
	e, err := parseExposition(r)
	return e.reads, e.readsFound, err
}

// parseExposition picks the series of readsMetric and the scalarSeries out of a Prometheus
// text exposition.
func parseExposition(r io.Reader) (exposition, error) {
	e := exposition{reads: map[route]float64{}, scalars: map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := seriesName(line)
		if !ok {
			continue
		}
		keep := name == readsMetric || slices.Contains(scalarSeries, name)
		if !keep {
			continue
		}
		labels, value, err := parseSample(rest)
		if err != nil {
			return exposition{}, fmt.Errorf("%s: %q: %w", name, line, err)
		}
		if name == readsMetric {
			e.readsFound = true
			e.reads[route{labels["backend"], labels["reason"]}] += value
			continue
		}
		e.scalars[name] += value
	}
	return e, sc.Err()
}

// seriesName splits a sample line into its metric's name and the rest; ok is false for a
// comment or a blank line.
func seriesName(line string) (name, rest string, ok bool) {
	if line == "" || line[0] == '#' {
		return "", "", false
	}
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return "", "", false
	}
	return line[:end], line[end:], true
}

// errSample says a sample line does not read as labels and a value.
var errSample = errors.New("not a sample line")

// parseSample reads `{name="value",...} number [timestamp]`, the part of a sample line
// after the metric's name; the labels are optional.
func parseSample(s string) (map[string]string, float64, error) {
	labels := map[string]string{}
	s = strings.TrimLeft(s, " ")
	if strings.HasPrefix(s, "{") {
		var err error
		if s, err = parseLabels(s[1:], labels); err != nil {
			return nil, 0, err
		}
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return nil, 0, fmt.Errorf("no value: %w", errSample)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return nil, 0, fmt.Errorf("value: %w", err)
	}
	return labels, v, nil
}

// parseLabels reads `name="value",...}` into labels and returns what follows the brace.
func parseLabels(s string, labels map[string]string) (string, error) {
	for {
		s = strings.TrimLeft(s, " ,")
		if rest, ok := strings.CutPrefix(s, "}"); ok {
			return rest, nil
		}
		name, rest, ok := strings.Cut(s, "=")
		if !ok || !strings.HasPrefix(rest, `"`) {
			return "", fmt.Errorf("label %q: %w", s, errSample)
		}
		value, rest, err := unquoteLabel(rest[1:])
		if err != nil {
			return "", err
		}
		labels[strings.TrimSpace(name)] = value
		s = rest
	}
}

// unquoteLabel reads a label value up to its closing quote, undoing the escapes \\, \" and
// \n, and returns it and what follows the quote.
func unquoteLabel(s string) (string, string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return b.String(), s[i+1:], nil
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] == 'n' {
				b.WriteByte('\n')
			} else {
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("unterminated label value: %w", errSample)
}

// readsSince is what each series counted after before, an earlier scrape of the same proxy.
func readsSince(after, before map[route]float64) map[route]float64 {
	d := map[route]float64{}
	for k, v := range after {
		if n := v - before[k]; n > 0 {
			d[k] = n
		}
	}
	return d
}

// writeReason is the reason of the units readsMetric counts that are writes, which only the
// primary can serve: they are left out of the replica share.
const writeReason = "write"

// elsewhere is the share of reads (the units of every reason but writeReason) that
// backends other than primary served; ok is false when there were none.
func elsewhere(reads map[route]float64, primary string) (share float64, ok bool) {
	var total, others float64
	for k, v := range reads {
		if k.reason == writeReason {
			continue
		}
		total += v
		if k.backend != primary {
			others += v
		}
	}
	if total == 0 {
		return 0, false
	}
	return others / total, true
}
