package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gatekeeperdb/gatekeeper/bench/tableload"
)

// prepare creates cp_items afresh on the primary and fills it: ids 1..rows, grp the id's
// group, pad a string of 100 to 199 characters fixed by the id.
func prepare(ctx context.Context, dsn string, s shape, stderr io.Writer) error {
	began := time.Now()
	addr, err := tableload.Load(ctx, dsn, "cp_items",
		"(id INT NOT NULL PRIMARY KEY, grp INT NOT NULL, pad VARCHAR(200) NOT NULL, KEY (grp)) ENGINE=InnoDB",
		"id, grp, pad", s.rows,
		func(b *strings.Builder, id int) { fmt.Fprintf(b, "%d,%d,'%s'", id, s.grp(id), pad(id)) })
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "cachepolicy: cp_items, %d rows in %d groups, on %s, in %s\n",
		s.rows, s.groups, addr, time.Since(began).Round(time.Millisecond))
	return nil
}

// pad is row id's pad: 100 to 199 characters, the id's digits repeated.
func pad(id int) string {
	n := 100 + id%100
	d := strconv.Itoa(id) + "-"
	return strings.Repeat(d, n/len(d)+1)[:n]
}
