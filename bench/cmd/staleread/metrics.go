package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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

// scrapeReads reads readsMetric from the proxy's Prometheus endpoint, in the text format;
// found is false when the endpoint answered without it.
func scrapeReads(ctx context.Context, url string) (reads map[route]float64, found bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseReads(resp.Body)
}

// parseReads picks the series of readsMetric out of a Prometheus text exposition.
func parseReads(r io.Reader) (map[route]float64, bool, error) {
	reads := map[route]float64{}
	found := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, readsMetric)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue // another metric, or a comment
		}
		found = true
		labels, value, err := parseSample(rest)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %q: %w", readsMetric, line, err)
		}
		reads[route{labels["backend"], labels["reason"]}] += value
	}
	return reads, found, sc.Err()
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
