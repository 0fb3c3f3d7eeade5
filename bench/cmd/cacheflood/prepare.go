package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// insertBatch is how many rows one INSERT of prepare writes.
const insertBatch = 1000

// prepare creates cf_t afresh on the primary and fills it: ids 1..rows, each with a pad of
// 40 characters.
func prepare(ctx context.Context, dsn string, rows int, stderr io.Writer) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("--primary-dsn: %w", err)
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return fmt.Errorf("--primary-dsn: %w", err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	db.SetMaxOpenConns(1)
	began := time.Now()
	for _, stmt := range []string{
		"DROP TABLE IF EXISTS cf_t",
		"CREATE TABLE cf_t (id INT NOT NULL PRIMARY KEY, pad VARCHAR(100) NOT NULL) ENGINE=InnoDB",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	for first := 1; first <= rows; first += insertBatch {
		var b strings.Builder
		b.WriteString("INSERT INTO cf_t (id, pad) VALUES ")
		for id := first; id < first+insertBatch && id <= rows; id++ {
			if id > first {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "(%d,'%040d')", id, id)
		}
		if _, err := db.ExecContext(ctx, b.String()); err != nil {
			return fmt.Errorf("fill cf_t: %w", err)
		}
	}
	fmt.Fprintf(stderr, "cacheflood: cf_t, %d rows, on %s, in %s\n", rows, cfg.Addr, time.Since(began).Round(time.Millisecond))
	return nil
}
