package main

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// insertBatch is how many rows one INSERT of prepare writes.
const insertBatch = 1000

// tableName is the name of table t, counted from 0: m1, m2, ...
func tableName(t int) string { return "m" + strconv.Itoa(t+1) }

// prepare creates the database if it is missing and the tables afresh, each with rows rows
// (id 1..rows, v 0).
func prepare(ctx context.Context, cfg *mysql.Config, tables, rows int) error {
	server := cfg.Clone()
	server.DBName = ""
	connector, err := mysql.NewConnector(server)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+quoteName(cfg.DBName)); err != nil {
		return fmt.Errorf("create database %s: %w", cfg.DBName, err)
	}
	for t := range tables {
		name := quoteName(cfg.DBName) + "." + tableName(t)
		for _, stmt := range []string{
			"DROP TABLE IF EXISTS " + name,
			"CREATE TABLE " + name + " (id INT NOT NULL PRIMARY KEY, v BIGINT NOT NULL) ENGINE=InnoDB",
		} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("%s: %w", stmt, err)
			}
		}
		for first := 1; first <= rows; first += insertBatch {
			var b strings.Builder
			b.WriteString("INSERT INTO " + name + " (id, v) VALUES ")
			for id := first; id < first+insertBatch && id <= rows; id++ {
				if id > first {
					b.WriteByte(',')
				}
				b.WriteString("(" + strconv.Itoa(id) + ",0)")
			}
			if _, err := db.ExecContext(ctx, b.String()); err != nil {
				return fmt.Errorf("fill %s: %w", name, err)
			}
		}
	}
	return nil
}

// quoteName quotes an identifier for MySQL.
func quoteName(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
