package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
)

// calibrate measures what each kind of read costs the database on its own: the mean time
// of up to n of the kind's requests of the trace (its first ones, so the same keys' mix),
// sent one at a time straight to the primary. It gives each hit a value that does not
// depend on how busy the database was when the result was filled, as the proxy's measured
// cost does: an arm with more misses loads the database more, measures its fills slower,
// and so counts its hits as saving more.
func calibrate(ctx context.Context, dsn string, kinds []kind, tr []request, n int) ([]time.Duration, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("--primary-dsn: %w", err)
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("--primary-dsn: %w", err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("calibrate: connect to %s: %w", cfg.Addr, err)
	}
	defer c.Close()
	var scan []any
	var cols []sql.RawBytes
	took := make([]time.Duration, len(kinds))
	count := make([]int, len(kinds))
	for _, r := range tr {
		if count[r.kind] >= n {
			continue
		}
		start := time.Now()
		if _, err := read(ctx, c, kinds[r.kind].text(int(r.key)), &scan, &cols); err != nil {
			return nil, fmt.Errorf("calibrate %s: %w", kinds[r.kind].name, err)
		}
		took[r.kind] += time.Since(start)
		count[r.kind]++
	}
	for k := range took {
		if count[k] > 0 {
			took[k] /= time.Duration(count[k])
		}
	}
	return took, nil
}
