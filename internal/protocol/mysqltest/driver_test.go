package mysqltest_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	mysqldriver "github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol/mysqltest"
)

// These tests drive the server with go-sql-driver/mysql through database/sql, to show it
// speaks the protocol as a real client expects.

// testTimeout bounds every wait in these tests.
const testTimeout = 10 * time.Second

func config(s *mysqltest.Server, user, password string) *mysqldriver.Config {
	cfg := mysqldriver.NewConfig()
	cfg.User, cfg.Passwd = user, password
	cfg.Net, cfg.Addr = "tcp", s.Addr
	cfg.Logger = &mysqldriver.NopLogger{} // dropping dead connections is expected here
	return cfg
}

func openDB(t *testing.T, cfg *mysqldriver.Config) *sql.DB {
	t.Helper()
	connector, err := mysqldriver.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// session returns one connection of db, for statements that must share a session.
func session(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func wantErrorNumber(t *testing.T, err error, number uint16) {
	t.Helper()
	var me *mysqldriver.MySQLError
	if !errors.As(err, &me) || me.Number != number {
		t.Fatalf("error = %v, want MySQL error %d", err, number)
	}
}

func TestLogin(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "secret", "root": ""}})
	for _, tc := range []struct {
		user, password string
		wantErr        uint16
	}{
		{user: "app", password: "secret"},
		{user: "root"},
		{user: "app", password: "wrong", wantErr: mysql.ER_ACCESS_DENIED_ERROR},
		{user: "app", wantErr: mysql.ER_ACCESS_DENIED_ERROR},
		{user: "nobody", password: "secret", wantErr: mysql.ER_ACCESS_DENIED_ERROR},
	} {
		t.Run(tc.user+"/"+tc.password, func(t *testing.T) {
			err := openDB(t, config(s, tc.user, tc.password)).Ping()
			if tc.wantErr == 0 {
				if err != nil {
					t.Fatalf("Ping: %v", err)
				}
				return
			}
			wantErrorNumber(t, err, tc.wantErr)
		})
	}
	if got, want := s.Logins(), 2; got != want {
		t.Errorf("Logins = %d, want %d", got, want)
	}
}

func TestSessionVariables(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{})
	conn := session(t, openDB(t, config(s, "root", "")))
	ctx := context.Background()
	if _, err := conn.ExecContext(ctx, "SET SESSION sql_mode='ANSI'"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "SET @greeting = 'it''s me'"); err != nil {
		t.Fatal(err)
	}
	var mode, session, greeting string
	var unset sql.NullString
	err := conn.QueryRowContext(ctx, "SELECT @@sql_mode, @@session.sql_mode, @greeting, @@time_zone").
		Scan(&mode, &session, &greeting, &unset)
	if err != nil {
		t.Fatal(err)
	}
	if mode != "ANSI" || session != "ANSI" || greeting != "it's me" || unset.Valid {
		t.Errorf("got %q %q %q %v, want ANSI ANSI \"it's me\" NULL", mode, session, greeting, unset)
	}
	c := s.Conns()[0]
	if got := c.Vars()["sql_mode"]; got != "ANSI" {
		t.Errorf("Vars[sql_mode] = %q, want ANSI", got)
	}
	if got := c.UserVars()["greeting"]; got != "it's me" {
		t.Errorf("UserVars[greeting] = %q, want \"it's me\"", got)
	}
}

func TestUseSchema(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{})
	conn := session(t, openDB(t, config(s, "root", "")))
	ctx := context.Background()
	if _, err := conn.ExecContext(ctx, "USE `shop`"); err != nil {
		t.Fatal(err)
	}
	var schema string
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if schema != "shop" || s.Conns()[0].Schema() != "shop" {
		t.Errorf("DATABASE() = %q, Schema() = %q, want shop", schema, s.Conns()[0].Schema())
	}
	_, err := conn.ExecContext(ctx, "USE "+mysqltest.UnknownSchema)
	wantErrorNumber(t, err, mysql.ER_BAD_DB_ERROR)
}

func TestLoginWithSchema(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{})
	cfg := config(s, "root", "")
	cfg.DBName = "shop"
	if err := openDB(t, cfg).Ping(); err != nil {
		t.Fatal(err)
	}
	if got := s.Conns()[0].Schema(); got != "shop" {
		t.Errorf("Schema() = %q, want shop", got)
	}
	cfg.DBName = mysqltest.UnknownSchema
	wantErrorNumber(t, openDB(t, cfg).Ping(), mysql.ER_BAD_DB_ERROR)
}

func TestTransaction(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{})
	db := openDB(t, config(s, "root", ""))
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	c := s.Conns()[0]
	if !c.InTransaction() {
		t.Error("InTransaction() = false after BEGIN")
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if c.InTransaction() {
		t.Error("InTransaction() = true after COMMIT")
	}
	if got, want := c.Queries(), []string{"START TRANSACTION", "COMMIT"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Queries() = %q, want %q", got, want)
	}
}

func TestHandlerRows(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{
		Handler: func(c *mysqltest.Conn, query string) mysqltest.Reply {
			switch query {
			case "SELECT id, name FROM books":
				return mysqltest.Reply{Columns: []string{"id", "name"}, Rows: [][]any{{1, "Dune"}, {2, nil}}}
			case "INSERT INTO books (name) VALUES ('Emma')":
				return mysqltest.Reply{AffectedRows: 1, LastInsertID: 3}
			}
			return mysqltest.Error(mysql.ER_NO_SUCH_TABLE, "Table 'shop.%s' doesn't exist", "x")
		},
	})
	db := openDB(t, config(s, "root", ""))
	rows, err := db.Query("SELECT id, name FROM books")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var id int
		var name sql.NullString
		if err := rows.Scan(&id, &name); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d:%s:%v", id, name.String, name.Valid))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := "[1:Dune:true 2::false]"; fmt.Sprint(got) != want {
		t.Errorf("rows = %v, want %s", got, want)
	}
	res, err := db.Exec("INSERT INTO books (name) VALUES ('Emma')")
	if err != nil {
		t.Fatal(err)
	}
	affected, _ := res.RowsAffected()
	id, _ := res.LastInsertId()
	if affected != 1 || id != 3 {
		t.Errorf("affected, id = %d, %d, want 1, 3", affected, id)
	}
	_, err = db.Exec("DELETE FROM x")
	wantErrorNumber(t, err, mysql.ER_NO_SUCH_TABLE)
}

func TestPreparedStatement(t *testing.T) {
	const query = "SELECT title FROM books WHERE id = ? AND shelf = ?"
	handler := func(c *mysqltest.Conn, q string) mysqltest.Reply {
		return mysqltest.Reply{Columns: []string{"title"}, Rows: [][]any{{q}}}
	}
	t.Run("binary", func(t *testing.T) {
		s := mysqltest.NewServer(t, mysqltest.Options{Handler: handler})
		cfg := config(s, "root", "")
		cfg.InterpolateParams = false
		conn := session(t, openDB(t, cfg))
		ctx := context.Background()
		stmt, err := conn.PrepareContext(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []int{1, 2} {
			var title string
			if err := stmt.QueryRowContext(ctx, id, "top").Scan(&title); err != nil {
				t.Fatal(err)
			}
			if title != query {
				t.Errorf("title = %q, want %q", title, query)
			}
		}
		c := s.Conns()[0]
		var executes int
		for _, cmd := range c.Commands() {
			if cmd.Byte == mysql.COM_STMT_EXECUTE {
				executes++
				if cmd.StmtID != 1 || cmd.Text != query {
					t.Errorf("execute of statement %d %q, want 1 %q", cmd.StmtID, cmd.Text, query)
				}
			}
		}
		if executes != 2 {
			t.Errorf("%d executes, want 2", executes)
		}
		id, types, bound := c.LastExecute()
		if id != 1 || len(types) != 4 || !bound {
			t.Errorf("LastExecute() = %d, %x, %v, want 1, two types, true", id, types, bound)
		}
		if got := c.Prepared(); got[1] != query {
			t.Errorf("Prepared() = %v, want statement 1", got)
		}
		if err := stmt.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("text", func(t *testing.T) {
		s := mysqltest.NewServer(t, mysqltest.Options{Handler: handler})
		cfg := config(s, "root", "")
		cfg.InterpolateParams = true
		db := openDB(t, cfg)
		for _, id := range []int{1, 2} {
			var title string
			if err := db.QueryRow(query, id, "top").Scan(&title); err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("SELECT title FROM books WHERE id = %d AND shelf = 'top'", id); title != want {
				t.Errorf("title = %q, want %q", title, want)
			}
		}
	})
}

func TestKillQuery(t *testing.T) {
	started := make(chan struct{})
	s := mysqltest.NewServer(t, mysqltest.Options{
		Handler: func(c *mysqltest.Conn, query string) mysqltest.Reply {
			if query == "SELECT SLEEP(60)" {
				close(started)
				return mysqltest.Reply{Delay: time.Minute}
			}
			return mysqltest.Reply{}
		},
	})
	db := openDB(t, config(s, "root", ""))
	victim := session(t, db)
	ctx := context.Background()
	var id uint32
	if err := victim.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { // ends when the statement is answered
		_, err := victim.ExecContext(ctx, "SELECT SLEEP(60)")
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(testTimeout):
		t.Fatal("the statement did not start")
	}
	if _, err := db.Exec(fmt.Sprintf("KILL QUERY %d", id)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		wantErrorNumber(t, err, mysql.ER_QUERY_INTERRUPTED)
	case <-time.After(testTimeout):
		t.Fatal("KILL QUERY did not interrupt the statement")
	}
	_, err := db.Exec("KILL 999")
	wantErrorNumber(t, err, mysql.ER_NO_SUCH_THREAD)
}

func TestRefuseLogins(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{RefuseLogins: true})
	db := openDB(t, config(s, "root", ""))
	wantErrorNumber(t, db.Ping(), mysql.ER_ACCESS_DENIED_ERROR)
	s.SetRefuseLogins(false)
	if err := db.Ping(); err != nil {
		t.Fatalf("Ping after SetRefuseLogins(false): %v", err)
	}
	if got := s.Logins(); got != 1 {
		t.Errorf("Logins = %d, want 1", got)
	}
}

func TestCloseAll(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{})
	ctx := context.Background()

	// The driver finds the connection dead when it takes it for the next query.
	connector, err := mysqldriver.NewConnector(config(s, "root", ""))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := connector.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s.CloseAll()
	<-s.Conns()[0].Done()
	if got := s.Open(); got != 0 {
		t.Errorf("Open() = %d after CloseAll, want 0", got)
	}
	if err := conn.(driver.SessionResetter).ResetSession(ctx); !errors.Is(err, driver.ErrBadConn) {
		t.Errorf("ResetSession after CloseAll = %v, want driver.ErrBadConn", err)
	}

	// database/sql then retries on a new connection.
	db := openDB(t, config(s, "root", ""))
	if _, err := db.Exec("DO 1"); err != nil {
		t.Fatal(err)
	}
	s.CloseAll()
	if _, err := db.Exec("DO 1"); err != nil {
		t.Fatalf("Exec after CloseAll: %v", err)
	}
	if got, want := s.Logins(), 3; got != want {
		t.Errorf("Logins() = %d, want %d", got, want)
	}
	if got := s.Open(); got != 1 {
		t.Errorf("Open() = %d, want 1", got)
	}
}
