package bookstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// loadWorkers is the number of connections that insert at once while loading.
const loadWorkers = 4

// loadRetries is how many times a worker runs again an INSERT that the server rolled back
// as a deadlock (1213) or a lock wait timeout (1205): the workers insert into the same
// tables at once, and InnoDB, which rolls the whole statement back, once in some dozens of
// loads chose one of them as a deadlock's victim and failed the load.
const loadRetries = 5

// Load creates the bookstore's tables in db's current database, dropping them first if
// they exist, and loads the data of scale (zero fields take DefaultScale's values). It
// reports its progress to progress, which may be nil.
func Load(ctx context.Context, db *sql.DB, scale Scale, progress io.Writer) error {
	scale = scale.withDefaults()
	if err := scale.validate(); err != nil {
		return err
	}
	if progress == nil {
		progress = io.Discard
	}
	start := time.Now()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("load: connect: %w", err)
	}
	defer conn.Close()
	var current sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&current); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if !current.Valid {
		return fmt.Errorf("load: the connection has no current database; name one in the DSN (user:pass@tcp(host:port)/DATABASE)")
	}
	fmt.Fprintf(progress, "creating the bookstore tables in %s\n", current.String)
	drop := "DROP TABLE IF EXISTS " + strings.Join(tables, ", ")
	if _, err := conn.ExecContext(ctx, drop); err != nil {
		return fmt.Errorf("load: %s: %w", drop, err)
	}
	for _, ddl := range createTables {
		if _, err := conn.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("load: %s: %w", firstLine(ddl), err)
		}
	}

	fmt.Fprintf(progress, "loading %d items, %d authors, %d customers, %d addresses, %d orders with 1-5 lines each (seed %d)\n",
		scale.Items, scale.Authors(), scale.Customers, scale.Addresses(), scale.Orders(), scale.Seed)
	if err := insertAll(ctx, db, generator{s: scale}); err != nil {
		return err
	}
	loaded := time.Since(start)
	fmt.Fprintf(progress, "rows inserted in %.1fs; adding the indexes\n", loaded.Seconds())

	if err := runParallel(ctx, db, secondaryIndexes, 2); err != nil {
		return err
	}
	analyze := "ANALYZE TABLE " + strings.Join(tables, ", ")
	if err := drain(conn.QueryContext(ctx, analyze)); err != nil {
		return fmt.Errorf("load: %s: %w", analyze, err)
	}
	fmt.Fprintf(progress, "loaded in %.1fs\n", time.Since(start).Seconds())
	return nil
}

// insertAll generates the groups of g in parallel and sends their INSERT statements to
// loadWorkers connections.
func insertAll(ctx context.Context, db *sql.DB, g generator) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stmts := make(chan []byte, loadWorkers)
	send := func(b []byte) error {
		select {
		case stmts <- b:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	var producers sync.WaitGroup
	for _, group := range g.groups() {
		producers.Go(func() { // ends when its group is generated or the load fails
			if err := group(send); err != nil {
				cancel(err)
			}
		})
	}
	var workers sync.WaitGroup
	for range loadWorkers {
		workers.Go(func() { // ends when stmts is closed or the load fails
			if err := insertWorker(ctx, db, stmts); err != nil {
				cancel(err)
			}
		})
	}
	producers.Wait()
	close(stmts)
	workers.Wait()
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return nil
}

// insertWorker executes statements from stmts on a connection of its own until stmts is
// closed.
func insertWorker(ctx context.Context, db *sql.DB, stmts <-chan []byte) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SESSION unique_checks = 0, foreign_key_checks = 0"); err != nil {
		return err
	}
	for {
		select {
		case b, ok := <-stmts:
			if !ok {
				return nil
			}
			if err := execRetrying(ctx, conn, string(b)); err != nil {
				return fmt.Errorf("%s: %w", firstWords(b), err)
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// execRetrying executes stmt on conn, again up to loadRetries times while the server rolls
// it back as a deadlock's victim or after a lock wait timeout.
func execRetrying(ctx context.Context, conn *sql.Conn, stmt string) error {
	for try := 0; ; try++ {
		_, err := conn.ExecContext(ctx, stmt)
		var me *mysql.MySQLError
		if err == nil || try == loadRetries || !errors.As(err, &me) || me.Number != 1213 && me.Number != 1205 {
			return err
		}
	}
}

// runParallel executes stmts, at most n at once.
func runParallel(ctx context.Context, db *sql.DB, stmts []string, n int) error {
	sem := make(chan struct{}, n)
	errs := make([]error, len(stmts))
	var wg sync.WaitGroup
	for i, s := range stmts {
		sem <- struct{}{}
		wg.Go(func() { // ends when its statement has run
			defer func() { <-sem }()
			if _, err := db.ExecContext(ctx, s); err != nil {
				errs[i] = fmt.Errorf("load: %s: %w", s, err)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// drain reads and discards the rows of a query.
func drain(rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	return rows.Close()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(strings.TrimSuffix(s, "("))
}

// firstWords is the start of an INSERT statement, to name it in an error.
func firstWords(b []byte) string {
	const n = 40
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
