package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// shape is cp_items's size and the sizes of the reads of it.
type shape struct {
	// rows are the table's rows, ids 1..rows; groups the values of grp, each row's a
	// fixed scramble of its id.
	rows, groups int
	// span is the rows of a range read, width the groups of a report, buckets the buckets
	// per group of a bigreport.
	span, width, buckets int
}

func (s shape) validate() error {
	switch {
	case s.rows < 1 || s.groups < 1:
		return errors.New("--rows and --groups must be at least 1")
	case s.span < 1 || s.span > s.rows:
		return errors.New("--span must be from 1 to --rows")
	case s.width < 1 || s.width > s.groups:
		return errors.New("--width must be from 1 to --groups")
	case s.buckets < 1 || s.buckets > s.rows:
		return errors.New("--buckets must be from 1 to --rows")
	}
	return nil
}

// grp is the group of row id: ids scrambled over the groups, so that a group's rows lie
// all over the primary key and a report reads each through the index.
func (s shape) grp(id int) int { return int(uint64(id) * 2654435761 % uint64(s.groups)) }

// kind is a kind of read: its statements, one for each key 0..keys-1.
type kind struct {
	name string
	// what says what it reads, for the report.
	what string
	keys int
	// marker is an alias its text has and no other kind's has: it tells the kind's type
	// apart in /api/v1/cache, whose samples are digests.
	marker string
	text   func(key int) string
}

// Kinds' names, in the order of kinds().
const (
	pointKind     = "point"
	rangeKind     = "range"
	reportKind    = "report"
	bigReportKind = "bigreport"
)

// defaultMix is --mix's default: mostly cheap reads, a quarter costly ones.
const defaultMix = "point=55,range=20,report=15,bigreport=10"

// kinds returns the workload's kinds of read for the shape.
func (s shape) kinds() []kind {
	bucketRows := max(s.rows/s.buckets, 1)
	return []kind{{
		name: pointKind, what: "one row by primary key", keys: s.rows, marker: "point_pad",
		text: func(k int) string {
			return "SELECT id, pad AS point_pad FROM cp_items WHERE id = " + strconv.Itoa(k+1)
		},
	}, {
		name: rangeKind, what: fmt.Sprintf("%d rows by primary key", s.span), keys: s.rows / s.span, marker: "range_pad",
		text: func(k int) string {
			return fmt.Sprintf("SELECT id, pad AS range_pad FROM cp_items WHERE id BETWEEN %d AND %d", k*s.span+1, (k+1)*s.span)
		},
	}, {
		name: reportKind, what: fmt.Sprintf("totals of %d groups, one row", s.width), keys: s.groups - s.width + 1, marker: "report_rows",
		text: func(k int) string {
			return fmt.Sprintf("SELECT COUNT(*) AS report_rows, SUM(LENGTH(pad)), MAX(id) FROM cp_items WHERE grp BETWEEN %d AND %d",
				k, k+s.width-1)
		},
	}, {
		name: bigReportKind, what: fmt.Sprintf("totals of %d groups by group and bucket, up to %d rows", s.width, s.width*s.buckets),
		keys: s.groups - s.width + 1, marker: "bigreport_bucket",
		text: func(k int) string {
			return fmt.Sprintf("SELECT grp, id DIV %d AS bigreport_bucket, COUNT(*), SUM(LENGTH(pad)), MAX(id) FROM cp_items "+
				"WHERE grp BETWEEN %d AND %d GROUP BY grp, bigreport_bucket", bucketRows, k, k+s.width-1)
		},
	}}
}

// kindOf returns the index of the kind whose marker the sample (a statement or its
// digest) has, or -1.
func kindOf(kinds []kind, sample string) int {
	sample = strings.ToLower(sample)
	for i, k := range kinds {
		if strings.Contains(sample, k.marker) {
			return i
		}
	}
	return -1
}

// parseMix reads name=weight,... into a weight for each kind, in the order of kinds; a
// kind not named weighs 0.
func parseMix(s string, kinds []kind) ([]int, error) {
	w := make([]int, len(kinds))
	total := 0
	for item := range strings.SplitSeq(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		n, err := strconv.Atoi(value)
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("--mix %q: want name=weight,... with whole weights, such as %s", s, defaultMix)
		}
		i := -1
		for j, k := range kinds {
			if k.name == name {
				i = j
			}
		}
		switch {
		case i < 0:
			return nil, fmt.Errorf("--mix: unknown kind %q; they are point, range, report and bigreport", name)
		case n > 0 && kinds[i].keys < 1:
			return nil, fmt.Errorf("--mix: %s has no keys with this --rows, --groups, --span and --width", name)
		}
		w[i] = n
		total += n
	}
	if total == 0 {
		return nil, fmt.Errorf("--mix %q: every weight is 0", s)
	}
	return w, nil
}

// request is one read of the trace: a kind and its key.
type request struct {
	kind uint8
	key  int32
}

// newTrace draws n requests: each a kind by weight, then a key of that kind by a Zipf
// distribution of exponent s over its keys, the ranks mapped to keys by a shuffle, so
// that the hot keys are spread over the table. The same arguments give the same trace.
func newTrace(kinds []kind, weights []int, s float64, n int, seed uint64) []request {
	rng := rand.New(rand.NewPCG(seed, 0x63616368))
	total := 0
	for _, w := range weights {
		total += w
	}
	zipfs := make([]*rand.Zipf, len(kinds))
	perms := make([][]int32, len(kinds))
	for i, k := range kinds {
		if weights[i] == 0 {
			continue
		}
		zipfs[i] = rand.NewZipf(rng, s, 1, uint64(k.keys-1))
		perms[i] = make([]int32, k.keys)
		for j := range perms[i] {
			perms[i][j] = int32(j)
		}
		rng.Shuffle(k.keys, func(a, b int) { perms[i][a], perms[i][b] = perms[i][b], perms[i][a] })
	}
	tr := make([]request, n)
	for j := range tr {
		pick := rng.IntN(total)
		i := 0
		for pick >= weights[i] {
			pick -= weights[i]
			i++
		}
		tr[j] = request{kind: uint8(i), key: perms[i][zipfs[i].Uint64()]}
	}
	return tr
}
