package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gatekeeperdb/gatekeeper/bench/tableload"
)

// prepare creates cf_t afresh on the primary and fills it: ids 1..rows, each with a pad of
// 40 characters.
func prepare(ctx context.Context, dsn string, rows int, stderr io.Writer) error {
	began := time.Now()
	addr, err := tableload.Load(ctx, dsn, "cf_t",
		"(id INT NOT NULL PRIMARY KEY, pad VARCHAR(100) NOT NULL) ENGINE=InnoDB", "id, pad", rows,
		func(b *strings.Builder, id int) { fmt.Fprintf(b, "%d,'%040d'", id, id) })
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "cacheflood: cf_t, %d rows, on %s, in %s\n", rows, addr, time.Since(began).Round(time.Millisecond))
	return nil
}
