// Package tableload creates a bench program's table straight on the primary and fills it
// with rows numbered 1..n, a thousand to an INSERT.
package tableload

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// batch is how many rows one INSERT writes.
const batch = 1000

// Load creates table afresh on the primary of dsn with create (the statement's text after
// CREATE TABLE name), then inserts rows 1..n into columns, each row's values as row writes
// them (without parentheses). It returns the primary's address, for the caller's log.
func Load(ctx context.Context, dsn, table, create, columns string, n int, row func(b *strings.Builder, id int)) (addr string, err error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("--primary-dsn: %w", err)
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return "", fmt.Errorf("--primary-dsn: %w", err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, stmt := range []string{"DROP TABLE IF EXISTS " + table, "CREATE TABLE " + table + " " + create} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return "", fmt.Errorf("%s: %w", stmt, err)
		}
	}
	for first := 1; first <= n; first += batch {
		var b strings.Builder
		fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES ", table, columns)
		for id := first; id < first+batch && id <= n; id++ {
			if id > first {
				b.WriteByte(',')
			}
			b.WriteByte('(')
			row(&b, id)
			b.WriteByte(')')
		}
		if _, err := db.ExecContext(ctx, b.String()); err != nil {
			return "", fmt.Errorf("fill %s: %w", table, err)
		}
	}
	if _, err := db.ExecContext(ctx, "ANALYZE TABLE "+table); err != nil {
		return "", fmt.Errorf("analyze %s: %w", table, err)
	}
	return cfg.Addr, nil
}
