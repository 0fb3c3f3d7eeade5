package integration

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// shapesSetup creates the tables and procedures the shapes use, directly on the primary.
var shapesSetup = []string{
	"DROP TABLE IF EXISTS shapes_t1, shapes_t2, shapes_types, shapes_blob, shapes_load",
	"CREATE TABLE shapes_t1 (id CHAR(16) NOT NULL DEFAULT '', data INT NOT NULL)",
	"CREATE TABLE shapes_t2 (s CHAR(16), i INT, d DOUBLE)",
	"INSERT INTO shapes_t1 VALUES ('x', 1)",
	"INSERT INTO shapes_t2 VALUES ('y', 2, 0.0)",
	`CREATE TABLE shapes_types (id INT PRIMARY KEY, d DECIMAL(10,3), f DOUBLE, dt DATETIME(6),
		v VARCHAR(20), b BLOB, j JSON, bits BIT(5), e ENUM('a','b'), t TIME)`,
	`INSERT INTO shapes_types VALUES
		(1, 12.345, 1.5e300, '2024-02-29 12:34:56.789012', 'héllo', X'00FEFF', '{"a": [1, 2]}', b'10101', 'b', '-838:59:59'),
		(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
	// One row of 17 MiB whose packet frames all start with 0xFE, the first byte of an EOF.
	"CREATE TABLE shapes_blob (id INT PRIMARY KEY, b LONGBLOB)",
	"INSERT INTO shapes_blob VALUES (1, REPEAT(X'FE', 17 << 20)), (2, 'small')",
	"CREATE TABLE shapes_load (a INT, b VARCHAR(10))",
	"DROP PROCEDURE IF EXISTS shapes_cursors",
	// Cursors opened inside a procedure set SERVER_STATUS_CURSOR_EXISTS in the result sets
	// the CALL sends afterwards, whose rows follow all the same.
	`CREATE PROCEDURE shapes_cursors() BEGIN
		DECLARE x INT; DECLARE c1 CURSOR FOR SELECT data FROM shapes_t1 LIMIT 1;
		BEGIN DECLARE y INT; DECLARE c2 CURSOR FOR SELECT i FROM shapes_t2 LIMIT 1;
			OPEN c2; FETCH c2 INTO y; CLOSE c2; SELECT 2, y; END;
		OPEN c1; FETCH c1 INTO x; CLOSE c1; SELECT 1, x; END`,
	// Created in strict mode, it fails once the statement runs: after the metadata of a
	// cursor it fills.
	"DROP FUNCTION IF EXISTS shapes_overflow",
	"CREATE FUNCTION shapes_overflow() RETURNS TINYINT DETERMINISTIC NO SQL RETURN 1e200",
	"DROP PROCEDURE IF EXISTS shapes_out",
	"CREATE PROCEDURE shapes_out(OUT a INT, INOUT b VARCHAR(20)) BEGIN SET a = 42; SET b = CONCAT(b, '!'); END",
	"DROP PROCEDURE IF EXISTS shapes_none",
	"CREATE PROCEDURE shapes_none() BEGIN DECLARE x INT; SET x = 1; UPDATE shapes_t1 SET data = data WHERE 1 = 0; END",
	"DROP PROCEDURE IF EXISTS shapes_one",
	"CREATE PROCEDURE shapes_one() SELECT 'one' AS only_one",
	"DROP PROCEDURE IF EXISTS shapes_three",
	`CREATE PROCEDURE shapes_three() BEGIN
		SELECT id, data FROM shapes_t1;
		SELECT * FROM shapes_t2 WHERE 1 = 0;
		SELECT CAST('12abc' AS INT) AS warned, 'x' AS y; END`,
	"DROP PROCEDURE IF EXISTS shapes_fails",
	`CREATE PROCEDURE shapes_fails() BEGIN
		SELECT 'before' AS b;
		SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'shapes_fails: refused after one result set';
		SELECT 'never' AS n; END`,
}

// shapeStep is one command of a shape.
type shapeStep struct {
	query string // COM_QUERY with this text
	// prepare names a statement to prepare with the text of query; execute, fetch, reset and
	// close name a prepared statement.
	prepare, execute, fetch, reset, close string
	cursor                                bool  // execute asks for a read-only cursor
	params                                []any // execute's parameters: nil or string
	rows                                  int   // fetch asks for this many rows
}

func shapeQuery(q string) shapeStep { return shapeStep{query: q} }

type shape struct {
	name string
	// setup runs directly on the primary before each run, its answers ignored.
	setup []string
	steps []shapeStep
	// sets is how many result sets the server sends for the whole shape, to make sure it is
	// the shape it is meant to be.
	sets int
}

func shapes() []shape {
	var wide strings.Builder
	wide.WriteString("SELECT ")
	for i := range 300 {
		if i > 0 {
			wide.WriteString(", ")
		}
		fmt.Fprintf(&wide, "%d AS column_%d", i, i)
	}
	return []shape{
		{name: "procedure with cursors", steps: []shapeStep{shapeQuery("CALL shapes_cursors()")}, sets: 2},
		{name: "prepared procedure with cursors", sets: 5, steps: []shapeStep{
			{prepare: "p", query: "CALL shapes_cursors()"},
			{execute: "p"},
			{execute: "p", cursor: true}, // a CALL opens no cursor: its rows follow
			{close: "p"},
			shapeQuery("SELECT 'after'"),
		}},
		{name: "procedure with OUT parameters", sets: 2, steps: []shapeStep{
			shapeQuery("SET @b = 'in'"),
			shapeQuery("CALL shapes_out(@a, @b)"),
			shapeQuery("SELECT @a, @b"),
			{prepare: "p", query: "CALL shapes_out(?, ?)"},
			{execute: "p", params: []any{nil, "ps"}}, // the OUT parameters come as a result set
			{close: "p"},
		}},
		{name: "procedures with 0, 1 and 3 result sets", sets: 5, steps: []shapeStep{
			shapeQuery("CALL shapes_none()"),
			shapeQuery("CALL shapes_one()"),
			shapeQuery("CALL shapes_three()"),
			shapeQuery("SHOW WARNINGS"),
		}},
		{name: "procedure failing after its first result set", sets: 2, steps: []shapeStep{
			shapeQuery("CALL shapes_fails()"),
			shapeQuery("SELECT 'after'"),
		}},
		{name: "multi-statements", sets: 6,
			setup: []string{"DROP TABLE IF EXISTS shapes_ms", "CREATE TABLE shapes_ms (id INT AUTO_INCREMENT PRIMARY KEY, v INT)"},
			steps: []shapeStep{
				shapeQuery("SELECT 1 AS a; INSERT INTO shapes_ms (v) VALUES (1), (2); SELECT * FROM shapes_no_such_table; SELECT 2"),
				shapeQuery("SET @x = 5; SELECT @x; DO 1; CALL shapes_one(); UPDATE shapes_ms SET v = v + 1; SELECT id, v FROM shapes_ms ORDER BY id"),
				shapeQuery("SELECT 1; CALL shapes_fails(); SELECT 3"),
			}},
		{name: "empty result set", sets: 2, steps: []shapeStep{
			shapeQuery("SELECT * FROM shapes_t1 WHERE 1 = 0"),
			{prepare: "p", query: "SELECT * FROM shapes_t2 WHERE 1 = 0"},
			{execute: "p"},
		}},
		{name: "column types", sets: 2, steps: []shapeStep{
			shapeQuery("SELECT * FROM shapes_types ORDER BY id"),
			{prepare: "p", query: "SELECT * FROM shapes_types ORDER BY id"},
			{execute: "p"},
		}},
		{name: "300 columns", sets: 2, steps: []shapeStep{
			shapeQuery(wide.String()),
			{prepare: "p", query: wide.String()},
			{execute: "p"},
		}},
		{name: "rows over 16 MiB", sets: 3, steps: []shapeStep{
			shapeQuery("SELECT id, b FROM shapes_blob ORDER BY id"),
			{prepare: "p", query: "SELECT b, id FROM shapes_blob ORDER BY id DESC"},
			{execute: "p"},
			shapeQuery("SELECT LENGTH(b) FROM shapes_blob ORDER BY id"),
		}},
		{name: "prepared statements with cursors", sets: 4, steps: []shapeStep{
			{prepare: "p", query: "SELECT seq, seq * 2 AS twice FROM seq_1_to_25"},
			{execute: "p", cursor: true},
			{fetch: "p", rows: 10},
			{fetch: "p", rows: 10},
			{fetch: "p", rows: 10},
			{fetch: "p", rows: 10}, // past the end
			{execute: "p", cursor: true},
			{fetch: "p", rows: 3},
			{reset: "p"},
			{fetch: "p", rows: 3}, // the cursor is gone
			{prepare: "empty", query: "SELECT * FROM shapes_t1 WHERE 1 = 0"},
			{execute: "empty", cursor: true},
			{fetch: "empty", rows: 5},
			{prepare: "set", query: "SET @z = 5"},
			{execute: "set", cursor: true},
			{close: "p"},
			shapeQuery("SELECT @z"),
		}},
		{name: "cursor whose statement fails after its metadata", sets: 3, steps: []shapeStep{
			{prepare: "p", query: "SELECT shapes_overflow()"},
			{execute: "p", cursor: true},
			{fetch: "p", rows: 1},
			{execute: "p"},
			{close: "p"},
			shapeQuery("SELECT 'after'"),
		}},
		{name: "warnings", sets: 4, steps: []shapeStep{
			shapeQuery("SELECT CAST('12abc' AS INT) AS v, CAST('x' AS DOUBLE) AS w"),
			shapeQuery("SHOW WARNINGS"),
			shapeQuery("SHOW COUNT(*) WARNINGS"),
			shapeQuery("DROP TABLE IF EXISTS shapes_no_such_table"),
			shapeQuery("SHOW WARNINGS"),
		}},
		{name: "LOAD DATA LOCAL INFILE refused by the client", sets: 1, steps: []shapeStep{
			shapeQuery("LOAD DATA LOCAL INFILE '/nonexistent/shapes.csv' INTO TABLE shapes_load"),
			shapeQuery("SELECT COUNT(*) FROM shapes_load"),
		}},
	}
}

// shapeClient is a set of client capabilities the shapes run with.
type shapeClient struct {
	name         string
	deprecateEOF bool
}

// shapeClients: go-mysql's own capabilities, and those of libmariadb (the mariadb client,
// PHP, Python's mysqlclient), which never asks for CLIENT_DEPRECATE_EOF.
var shapeClients = []shapeClient{{"deprecate_eof", true}, {"eof", false}}

// TestShapes runs the same commands directly against the primary and through the proxy,
// with the same client, and compares everything the client gets back: every result and
// result set, column definitions, rows, warnings, affected rows, info strings, status
// flags and errors. The go-mysql connection is only used for its handshake: the commands
// are written and the responses read packet by packet, so that nothing a client library
// smooths over can hide a difference, and so that cursors and LOCAL INFILE refusals can be
// driven.
func TestShapes(t *testing.T) {
	setupShapes(t)
	all := shapes()
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		for _, sc := range shapeClients {
			t.Run(sc.name, func(t *testing.T) {
				for _, sh := range all {
					t.Run(sh.name, func(t *testing.T) {
						want := runShape(t, env.Primary, sc, sh)
						got := runShape(t, p.Addr, sc, sh)
						compareTranscripts(t, got, want)
						if n := strings.Count(want, "\nresult set "); n != sh.sets {
							t.Errorf("the primary sent %d result sets, want %d:\n%s", n, sh.sets, want)
						}
					})
				}
			})
		}
	})
}

// TestShapesKilledMidResult kills a statement while its rows stream: the client gets the
// rows sent before the kill and the same error, directly and through the proxy.
func TestShapesKilledMidResult(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		sc := shapeClients[1]
		want := killedMidResult(t, env.Primary, sc)
		got := killedMidResult(t, p.Addr, sc)
		compareTranscripts(t, got, want)
		if !strings.Contains(want, "error 1317") {
			t.Errorf("the primary did not report the statement interrupted:\n%s", want)
		}
	})
}

// killedMidResult runs a statement whose 500th row sleeps, kills it from another
// connection while it sleeps, and returns what the client got.
func killedMidResult(t *testing.T, addr string, sc shapeClient) string {
	t.Helper()
	marker := fmt.Sprintf("shapes-kill-%d", time.Now().UnixNano())
	killed := make(chan error, 1)
	killer := connect(t, env.Primary)
	go func() { // ends once it has killed the statement or given up
		killed <- killStatement(killer, marker, 20*time.Second)
	}()
	s := newShapeConn(t, addr, sc)
	s.run(shapeQuery(fmt.Sprintf("SELECT /* %s */ seq, REPEAT('r', 200) AS pad, IF(seq = 500, SLEEP(60), 0) AS slept FROM seq_1_to_1000", marker)))
	if err := <-killed; err != nil {
		t.Fatal(err)
	}
	s.run(shapeQuery("SELECT 'still usable'"))
	return strings.ReplaceAll(s.out.String(), marker, "marker")
}

// killStatement waits for the statement marked with marker to sleep, then kills it.
func killStatement(c *client.Conn, marker string, within time.Duration) error {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		r, err := c.Execute(`SELECT ID FROM information_schema.PROCESSLIST
			WHERE INFO LIKE ? AND STATE = 'User sleep' AND ID <> CONNECTION_ID()`, "%"+marker+"%")
		if err != nil {
			return err
		}
		if r.RowNumber() > 0 {
			id, err := r.GetInt(0, 0)
			if err != nil {
				return err
			}
			_, err = c.Execute(fmt.Sprintf("KILL QUERY %d", id))
			return err
		}
		select {
		case <-deadline.C:
			return fmt.Errorf("statement %s never reached its sleep", marker)
		case <-tick.C:
		}
	}
}

// TestShapesMariaDBClient compares what the mariadb command-line client (libmariadb, the
// client of the original report) prints for the same scripts, directly and through the
// proxy, with the type of every column.
func TestShapesMariaDBClient(t *testing.T) {
	setupShapes(t)
	scripts := []string{
		"CALL shapes_cursors();\nSELECT 'after';\n",
		"SET @b = 'in';\nCALL shapes_out(@a, @b);\nSELECT @a, @b;\n",
		"CALL shapes_none();\nCALL shapes_one();\nCALL shapes_three();\nSHOW WARNINGS;\n",
		"CALL shapes_fails();\nSELECT 'after';\n",
		"SELECT 1 AS a; SELECT * FROM shapes_no_such_table; SELECT 2;\nSELECT * FROM shapes_t1 WHERE 1 = 0;\n",
		"SELECT * FROM shapes_types ORDER BY id;\n",
		"SELECT CAST('12abc' AS INT) AS v;\nSHOW WARNINGS;\n",
		"CREATE OR REPLACE TABLE shapes_cli (id INT);\nINSERT INTO shapes_cli VALUES (1), (2);\nUPDATE shapes_cli SET id = id + 1;\n",
		"LOAD DATA LOCAL INFILE '/nonexistent/shapes.csv' INTO TABLE shapes_load;\nSELECT COUNT(*) FROM shapes_load;\n",
	}
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		for i, script := range scripts {
			want := runMariaDB(t, env.Primary, script)
			got := runMariaDB(t, p.Addr, script)
			if got != want {
				t.Errorf("script %d:\n%s", i, script)
				compareTranscripts(t, got, want)
			}
		}
	})
}

// runMariaDB runs script with the mariadb client, carrying on after errors, and returns its
// output and its errors.
func runMariaDB(t *testing.T, addr, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// -vvv prints what the client learns of each statement: rows affected, the info
	// string, the warnings count; --show-warnings reads the warnings after each statement.
	args := cliArgs(t, addr, "--batch", "--column-type-info", "--force", "--local-infile=1",
		"--show-warnings", "-vvv", "-D", env.Database)
	cmd := exec.CommandContext(ctx, needTool(t, "mariadb"), args...)
	cmd.Stdin = strings.NewReader(script)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("mariadb: %v", err)
	}
	return timing.ReplaceAllString(stdout.String(), "(time)") + "-- stderr\n" + stderr.String()
}

// timing is how long a statement took, as the mariadb client prints it.
var timing = regexp.MustCompile(`\(\d+\.\d+ sec\)`)

func setupShapes(t *testing.T) {
	t.Helper()
	c := connect(t, env.Primary)
	for _, q := range shapesSetup {
		if _, err := c.Execute(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// runShape runs sh's setup directly on the primary, then its steps on a new connection to
// addr, and returns what the client got.
func runShape(t *testing.T, addr string, sc shapeClient, sh shape) string {
	t.Helper()
	if len(sh.setup) > 0 {
		c := connect(t, env.Primary)
		for _, q := range sh.setup {
			if _, err := c.Execute(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	s := newShapeConn(t, addr, sc)
	for _, step := range sh.steps {
		if !s.run(step) {
			break
		}
	}
	return s.out.String()
}

// compareTranscripts reports the first line where got differs from want, with what comes
// before it.
func compareTranscripts(t *testing.T, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	from := max(0, i-8)
	line := func(l []string, i int) string {
		if i < len(l) {
			return l[i]
		}
		return "(end)"
	}
	t.Errorf("through the proxy, the client got something else at line %d:\n%s\n got: %s\nwant: %s",
		i+1, strings.Join(w[from:i], "\n"), line(g, i), line(w, i))
}

// shapeConn is a client connection whose commands and responses are written and read
// packet by packet, with a transcript of what it got.
type shapeConn struct {
	t            *testing.T
	c            *client.Conn
	deprecateEOF bool
	stmts        map[string]shapeStmt
	out          strings.Builder
	// lastStatus is the status of the last OK or EOF; lastErr tells that an error came
	// after it.
	lastStatus uint16
	lastErr    bool
}

type shapeStmt struct {
	id     uint32
	params int
}

func newShapeConn(t *testing.T, addr string, sc shapeClient) *shapeConn {
	t.Helper()
	c := connect(t, addr, func(c *client.Conn) error {
		for _, flag := range []uint32{mysql.CLIENT_MULTI_STATEMENTS, mysql.CLIENT_MULTI_RESULTS,
			mysql.CLIENT_PS_MULTI_RESULTS, mysql.CLIENT_LOCAL_FILES} {
			if err := c.SetCapability(flag); err != nil {
				return err
			}
		}
		if !sc.deprecateEOF {
			c.UnsetCapability(mysql.CLIENT_DEPRECATE_EOF)
		}
		return nil
	})
	return &shapeConn{t: t, c: c, deprecateEOF: sc.deprecateEOF, stmts: map[string]shapeStmt{}}
}

// run sends one command and records its response; it returns false when the connection
// is lost.
func (s *shapeConn) run(step shapeStep) bool {
	if err := s.c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		s.t.Fatal(err)
	}
	var err error
	switch {
	case step.prepare != "":
		fmt.Fprintf(&s.out, "> prepare %s: %s\n", step.prepare, shorten(step.query))
		err = s.prepare(step.prepare, step.query)
	case step.execute != "":
		fmt.Fprintf(&s.out, "> execute %s cursor=%v params=%v\n", step.execute, step.cursor, step.params)
		st := s.stmts[step.execute]
		err = s.send(executePacket(st, step.cursor, step.params))
		if err == nil {
			err = s.response(true, step.cursor)
		}
	case step.fetch != "":
		fmt.Fprintf(&s.out, "> fetch %s %d\n", step.fetch, step.rows)
		p := binary.LittleEndian.AppendUint32([]byte{mysql.COM_STMT_FETCH}, s.stmts[step.fetch].id)
		if err = s.send(binary.LittleEndian.AppendUint32(p, uint32(step.rows))); err == nil {
			err = s.rows(true)
		}
	case step.reset != "":
		fmt.Fprintf(&s.out, "> reset %s\n", step.reset)
		if err = s.send(binary.LittleEndian.AppendUint32([]byte{mysql.COM_STMT_RESET}, s.stmts[step.reset].id)); err == nil {
			err = s.response(false, false)
		}
	case step.close != "":
		fmt.Fprintf(&s.out, "> close %s\n", step.close)
		err = s.send(binary.LittleEndian.AppendUint32([]byte{mysql.COM_STMT_CLOSE}, s.stmts[step.close].id))
	default:
		fmt.Fprintf(&s.out, "> query: %s\n", shorten(step.query))
		if err = s.send(append([]byte{mysql.COM_QUERY}, step.query...)); err == nil {
			err = s.response(false, false)
		}
	}
	if err != nil {
		// The error's text (EOF, reset, timeout) does not matter: the connection is gone.
		s.t.Logf("%s: %v", s.c.RemoteAddr(), err)
		s.out.WriteString("connection lost\n")
		return false
	}
	return true
}

func shorten(q string) string {
	if len(q) > 100 {
		return fmt.Sprintf("%s... (%d bytes)", q[:100], len(q))
	}
	return q
}

func (s *shapeConn) send(payload []byte) error {
	s.c.ResetSequence()
	return s.c.WritePacket(append([]byte{0, 0, 0, 0}, payload...))
}

func executePacket(st shapeStmt, cursor bool, params []any) []byte {
	p := binary.LittleEndian.AppendUint32([]byte{mysql.COM_STMT_EXECUTE}, st.id)
	flags := byte(mysql.CURSOR_TYPE_NO_CURSOR)
	if cursor {
		flags = mysql.CURSOR_TYPE_READ_ONLY
	}
	p = binary.LittleEndian.AppendUint32(append(p, flags), 1)
	if st.params == 0 {
		return p
	}
	nulls := make([]byte, (st.params+7)/8)
	types := []byte{}
	var values []byte
	for i := range st.params {
		var v any
		if i < len(params) {
			v = params[i]
		}
		switch v := v.(type) {
		case string:
			types = append(types, mysql.MYSQL_TYPE_VAR_STRING, 0)
			values = mysql.AppendLengthEncodedInteger(values, uint64(len(v)))
			values = append(values, v...)
		default:
			nulls[i/8] |= 1 << (i % 8)
			types = append(types, mysql.MYSQL_TYPE_NULL, 0)
		}
	}
	p = append(append(p, nulls...), 1)
	return append(append(p, types...), values...)
}

func (s *shapeConn) read() ([]byte, error) {
	p, err := s.c.ReadPacket()
	if err == nil && len(p) == 0 {
		err = errors.New("empty packet")
	}
	return p, err
}

func (s *shapeConn) prepare(name, q string) error {
	if err := s.send(append([]byte{mysql.COM_STMT_PREPARE}, q...)); err != nil {
		return err
	}
	p, err := s.read()
	if err != nil {
		return err
	}
	if p[0] == mysql.ERR_HEADER {
		s.errPacket(p)
		return nil
	}
	if p[0] != mysql.OK_HEADER || len(p) < 12 {
		return fmt.Errorf("response to COM_STMT_PREPARE: %x", p)
	}
	// The statement id is the proxy's own in pooled mode: it is not part of the transcript.
	st := shapeStmt{id: binary.LittleEndian.Uint32(p[1:]), params: int(binary.LittleEndian.Uint16(p[7:]))}
	columns := int(binary.LittleEndian.Uint16(p[5:]))
	s.stmts[name] = st
	fmt.Fprintf(&s.out, "prepared columns=%d params=%d warnings=%d\n", columns, st.params, binary.LittleEndian.Uint16(p[10:]))
	for _, n := range []int{st.params, columns} {
		if n == 0 {
			continue
		}
		if _, err := s.definitions(n); err != nil {
			return err
		}
	}
	return nil
}

// definitions records n column definitions and the EOF after them, or the error that
// takes its place; failed tells that it was an error, which ends the response.
func (s *shapeConn) definitions(n int) (failed bool, err error) {
	for range n {
		p, err := s.read()
		if err != nil {
			return false, err
		}
		s.column(p)
	}
	if s.deprecateEOF {
		return false, nil
	}
	p, err := s.read()
	if err != nil {
		return false, err
	}
	if p[0] == mysql.ERR_HEADER {
		s.errPacket(p)
		return true, nil
	}
	if !isEOFPacket(p) {
		return false, fmt.Errorf("expected EOF after column definitions: %x", p)
	}
	s.eof("metadata end", p)
	return false, nil
}

// response records the results of a COM_QUERY or COM_STMT_EXECUTE (binary) up to the last.
func (s *shapeConn) response(binaryRows, cursor bool) error {
	for {
		p, err := s.read()
		if err != nil {
			return err
		}
		var status uint16
		switch p[0] {
		case mysql.OK_HEADER:
			status = s.ok("ok", p)
		case mysql.ERR_HEADER:
			s.errPacket(p)
			return nil
		case mysql.LocalInFile_HEADER:
			// The client cannot read the file the server asks for: it sends no data, as
			// libmariadb does, and the server answers.
			fmt.Fprintf(&s.out, "local infile %q: refused\n", p[1:])
			if err := s.c.WritePacket([]byte{0, 0, 0, 0}); err != nil {
				return err
			}
			continue
		default:
			n, _, _ := mysql.LengthEncodedInt(p)
			fmt.Fprintf(&s.out, "result set of %d columns (%x)\n", n, p)
			if failed, err := s.definitions(int(n)); failed || err != nil {
				return err
			}
			if !s.deprecateEOF {
				st := s.lastStatus
				if cursor && st&mysql.SERVER_STATUS_CURSOR_EXISTS != 0 && st&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
					return nil // the rows come with COM_STMT_FETCH
				}
			}
			if err := s.rows(binaryRows); err != nil {
				return err
			}
			status = s.lastStatus
			if s.lastErr {
				return nil
			}
		}
		if status&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
			return nil
		}
	}
}

// rows records rows up to the EOF or error after them.
func (s *shapeConn) rows(binaryRows bool) error {
	for {
		p, err := s.read()
		if err != nil {
			return err
		}
		switch {
		case p[0] == mysql.ERR_HEADER:
			s.errPacket(p)
			return nil
		case isEOFPacket(p):
			s.eof("end", p)
			return nil
		case binaryRows:
			fmt.Fprintf(&s.out, "row %s\n", shortBytes(p))
		default:
			s.textRow(p)
		}
	}
}

func isEOFPacket(p []byte) bool {
	return p[0] == mysql.EOF_HEADER && len(p) < 0xffffff
}

// The last status and whether the last terminal packet was an error.
func (s *shapeConn) setLast(status uint16, isErr bool) { s.lastStatus, s.lastErr = status, isErr }

// eof records an EOF, or an OK in its place under CLIENT_DEPRECATE_EOF.
func (s *shapeConn) eof(what string, p []byte) {
	if len(p) == 5 {
		warnings, status := binary.LittleEndian.Uint16(p[1:]), binary.LittleEndian.Uint16(p[3:])
		fmt.Fprintf(&s.out, "%s: eof warnings=%d status=%s\n", what, warnings, statusString(status))
		s.setLast(status, false)
		return
	}
	s.ok(what, p)
}

// ok records an OK packet and returns its status.
func (s *shapeConn) ok(what string, p []byte) uint16 {
	affected, _, n := mysql.LengthEncodedInt(p[1:])
	pos := 1 + n
	insertID, _, n := mysql.LengthEncodedInt(p[pos:])
	pos += n
	if len(p) < pos+4 {
		fmt.Fprintf(&s.out, "%s: short ok %x\n", what, p)
		return 0
	}
	status, warnings := binary.LittleEndian.Uint16(p[pos:]), binary.LittleEndian.Uint16(p[pos+2:])
	fmt.Fprintf(&s.out, "%s: ok affected=%d insert_id=%d warnings=%d status=%s info=%q\n",
		what, affected, insertID, warnings, statusString(status), p[pos+4:])
	s.setLast(status, false)
	return status
}

// stmtInMessage is a statement id in an error message: the server's own directly, the
// proxy's in pooled mode, where the proxy numbers a session's statements.
var stmtInMessage = regexp.MustCompile(`statement \(\d+\)`)

func (s *shapeConn) errPacket(p []byte) {
	code := binary.LittleEndian.Uint16(p[1:])
	msg := stmtInMessage.ReplaceAll(p[3:], []byte("statement (id)"))
	if len(msg) > 0 && msg[0] == '#' && len(msg) >= 6 {
		fmt.Fprintf(&s.out, "error %d (%s): %s\n", code, msg[1:6], msg[6:])
	} else {
		fmt.Fprintf(&s.out, "error %d: %s\n", code, msg)
	}
	s.setLast(0, true)
}

// column records a column definition.
func (s *shapeConn) column(p []byte) {
	var names []string
	rest := p
	for range 6 {
		v, _, n, err := mysql.LengthEncodedString(rest)
		if err != nil {
			fmt.Fprintf(&s.out, "  column %x\n", p)
			return
		}
		names = append(names, string(v))
		rest = rest[n:]
	}
	if len(rest) < 13 {
		fmt.Fprintf(&s.out, "  column %q %x\n", names, rest)
		return
	}
	fmt.Fprintf(&s.out, "  column %q charset=%d length=%d type=%d flags=%#x decimals=%d%s\n", names,
		binary.LittleEndian.Uint16(rest[1:]), binary.LittleEndian.Uint32(rest[3:]), rest[7],
		binary.LittleEndian.Uint16(rest[8:]), rest[10], shortBytes(rest[13:]))
}

func (s *shapeConn) textRow(p []byte) {
	var b strings.Builder
	b.WriteString("row")
	for rest := p; len(rest) > 0; {
		v, isNull, n, err := mysql.LengthEncodedString(rest)
		switch {
		case err != nil:
			fmt.Fprintf(&b, " malformed %s", shortBytes(rest))
			rest = nil
			continue
		case isNull:
			b.WriteString(" NULL")
		default:
			b.WriteString(" " + shortBytes(v))
		}
		rest = rest[n:]
	}
	s.out.WriteString(b.String() + "\n")
}

// shortBytes shows a value, or its length and digest when it is long.
func shortBytes(v []byte) string {
	if len(v) > 64 {
		return fmt.Sprintf("<%d bytes, sha256 %x>", len(v), sha256.Sum256(v))
	}
	return fmt.Sprintf("%q", v)
}

var statusNames = []struct {
	flag uint16
	name string
}{
	{mysql.SERVER_STATUS_IN_TRANS, "in_trans"},
	{mysql.SERVER_STATUS_AUTOCOMMIT, "autocommit"},
	{mysql.SERVER_MORE_RESULTS_EXISTS, "more_results"},
	{mysql.SERVER_STATUS_NO_GOOD_INDEX_USED, "no_good_index_used"},
	{mysql.SERVER_STATUS_NO_INDEX_USED, "no_index_used"},
	{mysql.SERVER_STATUS_CURSOR_EXISTS, "cursor_exists"},
	{mysql.SERVER_STATUS_LAST_ROW_SEND, "last_row_sent"},
	{mysql.SERVER_STATUS_DB_DROPPED, "db_dropped"},
	{mysql.SERVER_STATUS_NO_BACKSLASH_ESCAPED, "no_backslash_escapes"},
	{mysql.SERVER_STATUS_METADATA_CHANGED, "metadata_changed"},
	{mysql.SERVER_QUERY_WAS_SLOW, "query_was_slow"},
	{mysql.SERVER_PS_OUT_PARAMS, "ps_out_params"},
	{mysql.SERVER_STATUS_IN_TRANS_READONLY, "in_trans_readonly"},
	{mysql.SERVER_SESSION_STATE_CHANGED, "session_state_changed"},
}

func statusString(st uint16) string {
	var names []string
	for _, f := range statusNames {
		if st&f.flag != 0 {
			names = append(names, f.name)
			st &^= f.flag
		}
	}
	if st != 0 {
		names = append(names, fmt.Sprintf("%#x", st))
	}
	return strings.Join(names, "|")
}
