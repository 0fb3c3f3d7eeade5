// Package promtext reads metrics out of Prometheus's text exposition format, as the bench
// programs scrape them from gatekeeper's /metrics.
package promtext

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Sums picks the samples of the named metrics out of a Prometheus text exposition, summing
// the samples of a name (its series, whatever their labels). A name with no sample is
// absent from the map.
func Sums(r io.Reader, names []string) (map[string]float64, error) {
	got := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end < 0 {
			end = len(line)
		}
		if !slices.Contains(names, line[:end]) {
			continue
		}
		rest := line[end:]
		if strings.HasPrefix(rest, "{") {
			// Label values may hold a brace; the value follows the last one.
			i := strings.LastIndexByte(rest, '}')
			if i < 0 {
				return nil, fmt.Errorf("%q: unterminated labels", line)
			}
			rest = rest[i+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("%q: no value", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		got[line[:end]] += v
	}
	return got, sc.Err()
}
