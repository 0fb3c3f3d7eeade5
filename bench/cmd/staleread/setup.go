package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// schema is the checker's tables, each named by an index: sr_t0..sr_t(N-1) are 0..N-1;
// sr_parent is N; sr_audit and sr_child, which only triggers and cascades write, are N+1
// and N+2. Every table has the ids 1..rows.
//
// sr_audit holds, for each row of sr_t0, the version an AFTER UPDATE trigger on sr_t0 copied
// into it; sr_child holds, for each row of sr_parent, the version a foreign key's ON UPDATE
// CASCADE carried into it: sr_child (pid, v) references sr_parent (id, v), so an UPDATE of
// the parent's v rewrites the child's v in the same statement.
//
// With hotWrites, every write goes to one hot table, the last of sr_t0..sr_t(N-1) (so that
// no trigger or cascade carries its writes elsewhere), and no read goes to it.
type schema struct {
	tables, rows int
	hotWrites    bool
}

// hot is the hot table, -1 when there is none.
func (s schema) hot() int {
	if !s.hotWrites {
		return -1
	}
	return s.tables - 1
}

func (s schema) parent() int { return s.tables }
func (s schema) audit() int  { return s.tables + 1 }
func (s schema) child() int  { return s.tables + 2 }

// written is how many tables writes go to: sr_t0..sr_t(N-1) and sr_parent.
func (s schema) written() int { return s.tables + 1 }

// all is how many tables there are.
func (s schema) all() int { return s.tables + 3 }

// name is the name of table t.
func (s schema) name(t int) string {
	switch t {
	case s.parent():
		return "sr_parent"
	case s.audit():
		return "sr_audit"
	case s.child():
		return "sr_child"
	}
	return "sr_t" + strconv.Itoa(t)
}

// create drops the checker's tables and creates them afresh on the primary, every version
// 0.
func (s schema) create(ctx context.Context, db *sql.DB) error {
	drop := []string{s.name(s.child()), s.name(s.parent()), s.name(s.audit())}
	for t := range s.tables {
		drop = append(drop, s.name(t))
	}
	stmts := []string{"DROP TABLE IF EXISTS " + strings.Join(drop, ", ")}
	for t := range s.tables {
		stmts = append(stmts,
			"CREATE TABLE "+s.name(t)+" (id INT NOT NULL PRIMARY KEY, v BIGINT NOT NULL) ENGINE=InnoDB",
			s.fill(t, "(%d, 0)"))
	}
	stmts = append(stmts,
		"CREATE TABLE sr_audit (tbl INT NOT NULL, id INT NOT NULL, v BIGINT NOT NULL, PRIMARY KEY (tbl, id)) ENGINE=InnoDB",
		s.fill(s.audit(), "(0, %d, 0)"),
		"CREATE TRIGGER sr_t0_audit AFTER UPDATE ON sr_t0 FOR EACH ROW "+
			"INSERT INTO sr_audit (tbl, id, v) VALUES (0, NEW.id, NEW.v) ON DUPLICATE KEY UPDATE v = NEW.v",
		"CREATE TABLE sr_parent (id INT NOT NULL PRIMARY KEY, v BIGINT NOT NULL, UNIQUE KEY sr_parent_id_v (id, v)) ENGINE=InnoDB",
		s.fill(s.parent(), "(%d, 0)"),
		"CREATE TABLE sr_child (id INT NOT NULL PRIMARY KEY, pid INT NOT NULL, v BIGINT NOT NULL, "+
			"KEY sr_child_pid_v (pid, v), CONSTRAINT sr_child_parent FOREIGN KEY (pid, v) "+
			"REFERENCES sr_parent (id, v) ON UPDATE CASCADE) ENGINE=InnoDB",
		s.fill(s.child(), "(%[1]d, %[1]d, 0)"),
	)
	for _, stmt := range stmts {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%.80s: %w", stmt, err)
		}
	}
	return nil
}

// fill is an INSERT of every row of table t, each row's values the format applied to its id.
func (s schema) fill(t int, format string) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + s.name(t) + " VALUES ")
	for id := 1; id <= s.rows; id++ {
		if id > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, format, id)
	}
	return b.String()
}

// pollEvery is how often a replica is asked whether it has the tables yet.
const pollEvery = 100 * time.Millisecond

// waitReplica waits until the replica has every table with every row, or until timeout; the
// error then says what it was missing.
func (s schema) waitReplica(ctx context.Context, db *sql.DB, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		missing := s.missing(ctx, db)
		if missing == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the tables had not replicated after %s (is replication running? SHOW SLAVE STATUS): %w", timeout, missing)
		case <-tick.C:
		}
	}
}

// errRowsMissing says a replica has a table without all of its rows yet.
var errRowsMissing = errors.New("rows missing")

// missing is nil when the replica has every table with every row, else what it lacks first.
func (s schema) missing(ctx context.Context, db *sql.DB) error {
	for t := range s.all() {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+s.name(t)).Scan(&n); err != nil {
			return fmt.Errorf("%s: %w", s.name(t), err)
		}
		if n != s.rows {
			return fmt.Errorf("%s: %d of %d: %w", s.name(t), n, s.rows, errRowsMissing)
		}
	}
	return nil
}
