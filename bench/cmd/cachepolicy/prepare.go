package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// insertBatch is how many rows one INSERT of prepare writes.
const insertBatch = 1000

// prepare creates cp_items afresh on the primary and fills it: ids 1..rows, grp the id's
// group, pad a string of 100 to 199 characters fixed by the id.
func prepare(ctx context.Context, dsn string, s shape, stderr io.Writer) error {
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
		"DROP TABLE IF EXISTS cp_items",
		"CREATE TABLE cp_items (id INT NOT NULL PRIMARY KEY, grp INT NOT NULL, pad VARCHAR(200) NOT NULL, KEY (grp)) ENGINE=InnoDB",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	for first := 1; first <= s.rows; first += insertBatch {
		var b strings.Builder
		b.WriteString("INSERT INTO cp_items (id, grp, pad) VALUES ")
		for id := first; id < first+insertBatch && id <= s.rows; id++ {
			if id > first {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "(%d,%d,'%s')", id, s.grp(id), pad(id))
		}
		if _, err := db.ExecContext(ctx, b.String()); err != nil {
			return fmt.Errorf("fill cp_items: %w", err)
		}
	}
	if _, err := db.ExecContext(ctx, "ANALYZE TABLE cp_items"); err != nil {
		return fmt.Errorf("analyze cp_items: %w", err)
	}
	fmt.Fprintf(stderr, "cachepolicy: cp_items, %d rows in %d groups, on %s, in %s\n",
		s.rows, s.groups, cfg.Addr, time.Since(began).Round(time.Millisecond))
	return nil
}

// pad is row id's pad: 100 to 199 characters, the id's digits repeated.
func pad(id int) string {
	n := 100 + id%100
	d := strconv.Itoa(id) + "-"
	return strings.Repeat(d, n/len(d)+1)[:n]
}
