package replicas

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
)

// systemSchemas hold no tables the version map tracks.
const systemSchemas = "('mysql','information_schema','performance_schema','sys')"

// LoadClosure reads the triggers, the foreign keys that cascade and the views of every
// schema from information_schema, as the account of db sees them.
func LoadClosure(ctx context.Context, db *sql.DB) (*Closure, error) {
	c := NewClosure()
	var cls classify.Classifier
	if err := loadTriggers(ctx, db, c, &cls); err != nil {
		return nil, err
	}
	if err := loadCascades(ctx, db, c); err != nil {
		return nil, err
	}
	if err := loadViews(ctx, db, c, &cls); err != nil {
		return nil, err
	}
	c.Close()
	return c, nil
}

func key(schema, table string) string {
	return string(TableKey(nil, []byte(schema), []byte(table)))
}

// tableKeys returns the keys of tables, qualified with schema where they are not.
func tableKeys(schema string, tables []classify.Table) []string {
	keys := make([]string, 0, len(tables))
	for _, t := range tables {
		s := t.Schema
		if len(s) == 0 {
			s = []byte(schema)
		}
		keys = append(keys, string(TableKey(nil, s, t.Name)))
	}
	return keys
}

// loadTriggers: a write to a table with a trigger also writes what the trigger's body
// writes. A body the classifier cannot read whole (BEGIN ... END, a CALL) may write
// anything.
func loadTriggers(ctx context.Context, db *sql.DB, c *Closure, cls *classify.Classifier) error {
	rows, err := db.QueryContext(ctx, "SELECT EVENT_OBJECT_SCHEMA, EVENT_OBJECT_TABLE, ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA NOT IN "+systemSchemas)
	if err != nil {
		return fmt.Errorf("replicas: reading triggers: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var schema, table, body string
		if err := rows.Scan(&schema, &table, &body); err != nil {
			return fmt.Errorf("replicas: reading triggers: %w", err)
		}
		t := key(schema, table)
		fields := strings.Fields(body)
		if len(fields) == 0 || strings.EqualFold(fields[0], "BEGIN") {
			c.AddUnknownWrite(t)
			continue
		}
		r := cls.Classify([]byte(body))
		switch {
		case r.Unsure || r.UnknownTables || r.MultiStatement:
			c.AddUnknownWrite(t)
		case r.Kind == classify.Write:
			for _, u := range tableKeys(schema, r.Written) {
				c.AddWrite(t, u)
			}
		}
	}
	return rows.Err()
}

// loadCascades: a write to a parent table writes the child tables whose foreign keys
// cascade or set values on update or delete.
func loadCascades(ctx context.Context, db *sql.DB, c *Closure) error {
	rows, err := db.QueryContext(ctx, "SELECT CONSTRAINT_SCHEMA, TABLE_NAME, UNIQUE_CONSTRAINT_SCHEMA, REFERENCED_TABLE_NAME, UPDATE_RULE, DELETE_RULE FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA NOT IN "+systemSchemas)
	if err != nil {
		return fmt.Errorf("replicas: reading foreign keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var schema, child, parentSchema, parent, onUpdate, onDelete string
		if err := rows.Scan(&schema, &child, &parentSchema, &parent, &onUpdate, &onDelete); err != nil {
			return fmt.Errorf("replicas: reading foreign keys: %w", err)
		}
		if writesChild(onUpdate) || writesChild(onDelete) {
			c.AddWrite(key(parentSchema, parent), key(schema, child))
		}
	}
	return rows.Err()
}

func writesChild(rule string) bool {
	return rule == "CASCADE" || rule == "SET NULL" || rule == "SET DEFAULT"
}

// loadViews: a read of a view reads its tables, and a write through it writes them. A
// definition the account may not see, or the classifier cannot read, may read anything.
func loadViews(ctx context.Context, db *sql.DB, c *Closure, cls *classify.Classifier) error {
	rows, err := db.QueryContext(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS WHERE TABLE_SCHEMA NOT IN "+systemSchemas)
	if err != nil {
		return fmt.Errorf("replicas: reading views: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var schema, view, def string
		if err := rows.Scan(&schema, &view, &def); err != nil {
			return fmt.Errorf("replicas: reading views: %w", err)
		}
		v := key(schema, view)
		r := cls.Classify([]byte(def))
		if len(bytes.TrimSpace([]byte(def))) == 0 || r.Unsure || r.UnknownTables || r.Kind != classify.Read {
			c.AddUnknownView(v)
			c.AddUnknownWrite(v)
			continue
		}
		for _, u := range tableKeys(schema, r.Read) {
			c.AddView(v, u)
			c.AddWrite(v, u)
		}
	}
	return rows.Err()
}
