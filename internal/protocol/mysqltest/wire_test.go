package mysqltest_test

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol/mysqltest"
)

// These tests speak to the server packet by packet with package protocol, for what a
// driver does not show: capabilities, status flags, session tracking, terminators.

// client is a raw protocol client of the server.
type client struct {
	t    *testing.T
	pc   *protocol.Conn
	caps uint32
}

// dial logs in as user with the given client capabilities and checks the OK.
func dial(t *testing.T, s *mysqltest.Server, caps uint32, user, password, schema string) *client {
	t.Helper()
	c, p := dialAnswer(t, s, caps, user, password, schema, protocol.NativePassword, nil)
	if p[0] != mysql.OK_HEADER {
		t.Fatalf("login answered %x, want an OK", p)
	}
	return c
}

// dialAnswer sends a handshake response answering with plugin (answer, or the
// mysql_native_password answer when nil) and returns the server's next packet.
func dialAnswer(t *testing.T, s *mysqltest.Server, caps uint32, user, password, schema, plugin string, answer []byte) (*client, []byte) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.Addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	if err := nc.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	c := &client{t: t, pc: protocol.NewConn(nc)}
	g, err := protocol.ParseGreeting(c.read())
	if err != nil {
		t.Fatal(err)
	}
	if g.AuthPlugin != protocol.NativePassword || len(g.Scramble) != 20 {
		t.Fatalf("greeting offers %s with a %d-byte scramble", g.AuthPlugin, len(g.Scramble))
	}
	if g.Capabilities&mysql.CLIENT_SSL != 0 {
		t.Error("the greeting offers TLS")
	}
	if schema != "" {
		caps |= mysql.CLIENT_CONNECT_WITH_DB
	}
	c.caps = caps & g.Capabilities
	if answer == nil {
		answer = nativeAnswer(password, g.Scramble)
	}
	c.write(protocol.AppendHandshakeResponse(nil, &protocol.Login{
		Capabilities:  caps,
		MaxPacketSize: 1 << 24,
		Charset:       45,
		User:          user,
		AuthResponse:  answer,
		Database:      schema,
		AuthPlugin:    plugin,
	}))
	return c, c.read()
}

func nativeAnswer(password string, scramble []byte) []byte {
	if password == "" {
		return nil
	}
	return protocol.NativeResponse(protocol.NativeStage1(password), scramble)
}

func (c *client) read() []byte {
	c.t.Helper()
	p, err := c.pc.ReadPacket()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return append([]byte(nil), p...)
}

func (c *client) write(p []byte) {
	c.t.Helper()
	if err := c.pc.WritePacket(p); err != nil {
		c.t.Fatal(err)
	}
	if err := c.pc.Flush(); err != nil {
		c.t.Fatal(err)
	}
}

// command sends a command and returns the first packet of the answer.
func (c *client) command(p []byte) []byte {
	c.t.Helper()
	c.pc.ResetSequence()
	c.write(p)
	return c.read()
}

func (c *client) query(q string) []byte {
	c.t.Helper()
	return c.command(append([]byte{mysql.COM_QUERY}, q...))
}

// ok parses p as an OK packet.
func (c *client) ok(p []byte) protocol.OK {
	c.t.Helper()
	var ok protocol.OK
	if err := protocol.ParseOK(p, c.caps, &ok); err != nil {
		c.t.Fatalf("%x: %v", p, err)
	}
	return ok
}

// wantOK checks that p is an OK packet and returns it.
func (c *client) wantOK(p []byte) protocol.OK {
	c.t.Helper()
	if p[0] != mysql.OK_HEADER {
		c.t.Fatalf("got %x, want an OK", p)
	}
	return c.ok(p)
}

// wantError checks that p is an ERR packet with code.
func (c *client) wantError(p []byte, code uint16) *protocol.ServerError {
	c.t.Helper()
	e, err := protocol.ParseError(p)
	if err != nil || e.Code != code {
		c.t.Fatalf("got %x (%v), want ERR %d", p, e, code)
	}
	return e
}

// noTracking are client capabilities without session tracking or CLIENT_DEPRECATE_EOF.
const noTracking = mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION |
	mysql.CLIENT_PLUGIN_AUTH | mysql.CLIENT_TRANSACTIONS | mysql.CLIENT_LONG_PASSWORD

type record struct {
	typ         byte
	name, value string
}

func records(ok protocol.OK) []record {
	var out []record
	for rest := ok.StateChanges; len(rest) > 0; {
		sc, r, good := protocol.NextStateChange(rest)
		if !good {
			break
		}
		out = append(out, record{sc.Type, string(sc.Name), string(sc.Value)})
		rest = r
	}
	return out
}

func equalRecords(a, b []record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSessionTracking(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{})
	c := dial(t, s, noTracking|mysql.CLIENT_SESSION_TRACK, "root", "", "")
	const (
		sysvar = mysql.SESSION_TRACK_SYSTEM_VARIABLES
		schema = mysql.SESSION_TRACK_SCHEMA
		state  = mysql.SESSION_TRACK_STATE_CHANGE
	)
	for _, tc := range []struct {
		query string
		want  []record
	}{
		// Before tracking is enabled only the schema is reported.
		{"SET SESSION time_zone='+00:00'", nil},
		{"USE shop", []record{{schema, "", "shop"}}},
		{
			"SET SESSION session_track_system_variables='*', session_track_state_change=ON",
			[]record{
				{sysvar, "session_track_system_variables", "*"},
				{sysvar, "session_track_state_change", "ON"},
				{state, "", "1"},
			},
		},
		{"SET SESSION time_zone='+01:00'", []record{{sysvar, "time_zone", "+01:00"}, {state, "", "1"}}},
		{"SET NAMES utf8mb4", []record{
			{sysvar, "character_set_client", "utf8mb4"},
			{sysvar, "character_set_connection", "utf8mb4"},
			{sysvar, "character_set_results", "utf8mb4"},
			{state, "", "1"},
		}},
		{"SET @cart = 7", []record{{state, "", "1"}}},
		{"USE `books`;", []record{{schema, "", "books"}, {state, "", "1"}}},
		{"CREATE TEMPORARY TABLE t (id INT)", []record{{state, "", "1"}}},
		{"SELECT 1 FROM DUAL WHERE 0", nil},
		{"DO 1", nil},
		{"SET session_track_system_variables='sql_mode', session_track_schema=OFF", []record{{state, "", "1"}}},
		{"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", []record{{state, "", "1"}}},
		{"SET sql_mode = 'ANSI'", []record{{sysvar, "sql_mode", "ANSI"}, {state, "", "1"}}},
		{"USE shop", []record{{state, "", "1"}}},
	} {
		ok := c.wantOK(c.query(tc.query))
		got := records(ok)
		if !equalRecords(got, tc.want) {
			t.Errorf("%s: records %q, want %q", tc.query, got, tc.want)
		}
		if changed := ok.Status&mysql.SERVER_SESSION_STATE_CHANGED != 0; changed != (len(tc.want) > 0) {
			t.Errorf("%s: SERVER_SESSION_STATE_CHANGED is %v", tc.query, changed)
		}
	}
	if got := s.Conns()[0].Vars()["tx_isolation"]; got != "READ-COMMITTED" {
		t.Errorf("tx_isolation = %q, want READ-COMMITTED", got)
	}

	// Without the capability the same statements get plain OKs.
	plain := dial(t, s, noTracking, "root", "", "")
	for _, q := range []string{
		"SET SESSION session_track_system_variables='*', session_track_state_change=ON",
		"SET time_zone='+01:00'",
		"USE shop",
	} {
		if p := plain.query(q); len(p) != 7 || p[0] != mysql.OK_HEADER {
			t.Errorf("%s without CLIENT_SESSION_TRACK: got %x, want a 7-byte OK", q, p)
		}
	}
}

func TestLoginReportsSchema(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{})
	c, p := dialAnswer(t, s, noTracking|mysql.CLIENT_SESSION_TRACK, "root", "", "shop", protocol.NativePassword, nil)
	ok := c.wantOK(p)
	if string(ok.Schema) != "shop" {
		t.Errorf("login OK reports schema %q, want shop", ok.Schema)
	}
}

func TestStatusFlags(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{})
	c := dial(t, s, noTracking, "root", "", "")
	const (
		auto = mysql.SERVER_STATUS_AUTOCOMMIT
		tx   = mysql.SERVER_STATUS_IN_TRANS
	)
	for _, tc := range []struct {
		query string
		want  uint16
	}{
		{"BEGIN", auto | tx},
		{"COMMIT", auto},
		{"START TRANSACTION READ ONLY", auto | tx},
		{"ROLLBACK", auto},
		{"SET autocommit=0", 0},
		{"begin work", tx},
		{"SET @@session.autocommit = ON", auto}, // commits
		{"SET autocommit = off", 0},
		{"COMMIT", 0},
	} {
		if got := c.wantOK(c.query(tc.query)).Status; got != tc.want {
			t.Errorf("%s: status %#x, want %#x", tc.query, got, tc.want)
		}
	}
	rows, end := c.readResultSet(c.query("SELECT @@autocommit"))
	if len(rows) != 1 || string(rows[0]) != "\x010" {
		t.Errorf("@@autocommit rows %q, want 0", rows)
	}
	if st, err := protocol.ParseEOF(end); err != nil || st != 0 {
		t.Errorf("final EOF %x, want status 0", end)
	}
}

// readResultSet reads a result set whose first packet (the column count) is p and returns
// the rows and the terminator.
func (c *client) readResultSet(p []byte) (rows [][]byte, end []byte) {
	c.t.Helper()
	n := int(p[0])
	for range n {
		c.read()
	}
	if c.caps&mysql.CLIENT_DEPRECATE_EOF == 0 {
		if p := c.read(); p[0] != mysql.EOF_HEADER || len(p) != 5 {
			c.t.Fatalf("after the column definitions: %x, want an EOF", p)
		}
	}
	for {
		p := c.read()
		if p[0] == mysql.EOF_HEADER && len(p) < 9 || p[0] == mysql.EOF_HEADER && c.caps&mysql.CLIENT_DEPRECATE_EOF != 0 {
			return rows, p
		}
		rows = append(rows, p)
	}
}

func TestDeprecateEOF(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{})
	c := dial(t, s, noTracking|mysql.CLIENT_DEPRECATE_EOF|mysql.CLIENT_SESSION_TRACK, "root", "", "")
	c.wantOK(c.query("SET session_track_state_change=1"))
	p := c.query("SELECT CONNECTION_ID() AS id, @@version")
	if p[0] != 2 {
		t.Fatalf("column count %x, want 2", p)
	}
	if col := c.read(); col[0] != 3 || string(col[1:4]) != "def" {
		t.Fatalf("column definition %q", col)
	}
	c.read()
	row := c.read()
	if want := "\x011\x1910.11.0-MariaDB-mysqltest"; string(row) != want {
		t.Errorf("row %q, want %q", row, want)
	}
	end := c.read()
	if end[0] != mysql.EOF_HEADER {
		t.Fatalf("terminator %x, want 0xFE-led OK", end)
	}
	if ok := c.ok(end); ok.Status != mysql.SERVER_STATUS_AUTOCOMMIT || ok.StateChanges != nil {
		t.Errorf("terminator status %#x, records %x", ok.Status, ok.StateChanges)
	}
}

func TestMultiStatements(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{})
	c := dial(t, s, noTracking|mysql.CLIENT_MULTI_STATEMENTS|mysql.CLIENT_MULTI_RESULTS, "root", "", "")
	ok := c.wantOK(c.query("SET @a = 'x;y'; SELECT @a; DO 1;"))
	if ok.Status&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
		t.Fatalf("first OK status %#x, want SERVER_MORE_RESULTS_EXISTS", ok.Status)
	}
	rows, end := c.readResultSet(c.read())
	if len(rows) != 1 || string(rows[0]) != "\x03x;y" {
		t.Errorf("rows %q, want x;y", rows)
	}
	if st, _ := protocol.ParseEOF(end); st&mysql.SERVER_MORE_RESULTS_EXISTS == 0 {
		t.Errorf("result set EOF status %#x, want SERVER_MORE_RESULTS_EXISTS", st)
	}
	if ok := c.wantOK(c.read()); ok.Status&mysql.SERVER_MORE_RESULTS_EXISTS != 0 {
		t.Errorf("last OK status %#x", ok.Status)
	}
	// An error ends the sequence.
	c.wantError(c.query("USE nosuchdb; DO 1"), mysql.ER_BAD_DB_ERROR)
	c.wantOK(c.query("DO 2"))

	single := dial(t, s, noTracking, "root", "", "")
	single.wantError(single.query("DO 1; DO 2"), mysql.ER_PARSE_ERROR)
	single.wantError(single.query(" ; "), mysql.ER_EMPTY_QUERY)
}

func TestAuthSwitch(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "secret"}})
	c, p := dialAnswer(t, s, noTracking, "app", "", "", protocol.Ed25519, make([]byte, 64))
	plugin, scramble, err := protocol.ParseAuthSwitch(p)
	if err != nil || plugin != protocol.NativePassword || len(scramble) != 20 {
		t.Fatalf("got %x (%v), want a switch to mysql_native_password", p, err)
	}
	c.write(nativeAnswer("secret", scramble))
	c.wantOK(c.read())
	if got := s.Conns()[0].User(); got != "app" {
		t.Errorf("User() = %q, want app", got)
	}

	c, p = dialAnswer(t, s, noTracking, "app", "", "", protocol.Ed25519, make([]byte, 64))
	_, scramble, _ = protocol.ParseAuthSwitch(p)
	c.write(nativeAnswer("wrong", scramble))
	e := c.wantError(c.read(), mysql.ER_ACCESS_DENIED_ERROR)
	if want := "Access denied for user 'app'@'127.0.0.1' (using password: YES)"; e.Message != want || e.State != "28000" {
		t.Errorf("error %s %q, want 28000 %q", e.State, e.Message, want)
	}
	<-s.Conns()[1].Done()
}

func changeUser(c *client, user, password, schema string) []byte {
	c.t.Helper()
	p := c.command(protocol.AppendChangeUser(nil, &protocol.Login{
		Capabilities: c.caps,
		Charset:      45,
		User:         user,
		AuthResponse: make([]byte, 20), // against the login's scramble: the server asks again
		Database:     schema,
		AuthPlugin:   protocol.NativePassword,
	}))
	plugin, scramble, err := protocol.ParseAuthSwitch(p)
	if err != nil || plugin != protocol.NativePassword {
		c.t.Fatalf("COM_CHANGE_USER answered %x, want an authentication switch", p)
	}
	c.write(nativeAnswer(password, scramble))
	return c.read()
}

func TestChangeUserAndReset(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"root": "", "app": "secret"}})
	c := dial(t, s, noTracking, "root", "", "shop")
	conn := s.Conns()[0]
	c.wantOK(c.query("SET sql_mode='ANSI', @a=1"))
	c.wantOK(c.query("BEGIN"))
	if p := c.command(append([]byte{mysql.COM_STMT_PREPARE}, "DO ?"...)); p[0] != mysql.OK_HEADER {
		t.Fatalf("prepare answered %x", p)
	}
	c.read() // parameter definition
	c.read() // EOF

	p := c.command([]byte{mysql.COM_RESET_CONNECTION})
	if ok := c.wantOK(p); ok.Status != mysql.SERVER_STATUS_AUTOCOMMIT {
		t.Errorf("reset OK status %#x", ok.Status)
	}
	if len(conn.Vars()) != 0 || len(conn.UserVars()) != 0 || len(conn.Prepared()) != 0 || conn.InTransaction() {
		t.Errorf("after reset: vars %v, user vars %v, statements %v, in transaction %v",
			conn.Vars(), conn.UserVars(), conn.Prepared(), conn.InTransaction())
	}
	if conn.Schema() != "shop" {
		t.Errorf("Schema() = %q after reset, want shop", conn.Schema())
	}

	c.wantOK(c.query("SET sql_mode='ANSI'"))
	c.wantOK(changeUser(c, "app", "secret", "books"))
	if conn.User() != "app" || conn.Schema() != "books" || len(conn.Vars()) != 0 {
		t.Errorf("after COM_CHANGE_USER: user %q, schema %q, vars %v", conn.User(), conn.Schema(), conn.Vars())
	}
	if got := s.Logins(); got != 1 {
		t.Errorf("Logins() = %d, want 1", got)
	}
	cmds := conn.Commands()
	if last := cmds[len(cmds)-1]; last.Byte != mysql.COM_CHANGE_USER || last.Text != "app" {
		t.Errorf("last command %d %q, want COM_CHANGE_USER app", last.Byte, last.Text)
	}

	c.wantError(changeUser(c, "app", "wrong", ""), mysql.ER_ACCESS_DENIED_ERROR)
	<-conn.Done()
}

func TestPreparedParameterTypes(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{})
	c := dial(t, s, noTracking, "root", "", "")
	conn := s.Conns()[0]
	p := c.command(append([]byte{mysql.COM_STMT_PREPARE}, "INSERT INTO t VALUES (?, '?', ? /* ? */)"...))
	if p[0] != mysql.OK_HEADER || len(p) != 12 {
		t.Fatalf("prepare answered %x", p)
	}
	id := binary.LittleEndian.Uint32(p[1:])
	columns, params := binary.LittleEndian.Uint16(p[5:]), binary.LittleEndian.Uint16(p[7:])
	if id != 1 || columns != 0 || params != 2 {
		t.Fatalf("statement %d with %d columns, %d parameters, want 1, 0, 2", id, columns, params)
	}
	for range params + 1 { // definitions and EOF
		c.read()
	}

	execute := func(id uint32, types []byte) []byte {
		p := []byte{mysql.COM_STMT_EXECUTE}
		p = binary.LittleEndian.AppendUint32(p, id)
		p = append(p, 0, 1, 0, 0, 0) // no cursor, one iteration
		p = append(p, 0)             // NULL bitmap
		if types == nil {
			return c.command(append(p, 0))
		}
		p = append(append(p, 1), types...)
		return c.command(append(p, 7, 7)) // two TINY values
	}
	tiny := []byte{mysql.MYSQL_TYPE_TINY, 0, mysql.MYSQL_TYPE_TINY, 0}

	c.wantError(execute(id, nil), mysql.ER_WRONG_ARGUMENTS)
	c.wantOK(execute(id, tiny))
	if gotID, types, bound := conn.LastExecute(); gotID != id || string(types) != string(tiny) || !bound {
		t.Errorf("LastExecute() = %d, %x, %v after binding", gotID, types, bound)
	}
	c.wantOK(execute(id, nil))
	if _, types, bound := conn.LastExecute(); string(types) != string(tiny) || bound {
		t.Errorf("LastExecute() = %x, %v without binding, want the earlier types, false", types, bound)
	}
	c.wantError(execute(9, nil), mysql.ER_UNKNOWN_STMT_HANDLER)

	reset := binary.LittleEndian.AppendUint32([]byte{mysql.COM_STMT_RESET}, id)
	c.wantOK(c.command(reset))
	c.pc.ResetSequence()
	c.write(binary.LittleEndian.AppendUint32([]byte{mysql.COM_STMT_CLOSE}, id))
	c.wantError(c.command(reset), mysql.ER_UNKNOWN_STMT_HANDLER)
	if got := conn.Prepared(); len(got) != 0 {
		t.Errorf("Prepared() = %v after COM_STMT_CLOSE", got)
	}
}

func TestPreparedSelectColumns(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{
		Handler: func(c *mysqltest.Conn, q string) mysqltest.Reply {
			return mysqltest.Reply{Columns: []string{"a", "b", "c"}, Delay: time.Hour}
		},
	})
	c := dial(t, s, noTracking|mysql.CLIENT_DEPRECATE_EOF, "root", "", "")
	for _, tc := range []struct {
		query   string
		columns uint16
	}{
		{"SELECT a, b, c FROM t WHERE id = ?", 3}, // the Handler's columns, without its delay
		{"SELECT @@sql_mode, @x", 2},
		{"UPDATE t SET a = ?", 0},
	} {
		p := c.command(append([]byte{mysql.COM_STMT_PREPARE}, tc.query...))
		if got := binary.LittleEndian.Uint16(p[5:]); p[0] != mysql.OK_HEADER || got != tc.columns {
			t.Errorf("%s: %x, want %d columns", tc.query, p, tc.columns)
		}
		for range int(binary.LittleEndian.Uint16(p[7:])) + int(tc.columns) {
			c.read()
		}
	}
}

func TestKillConnection(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{})
	victim := dial(t, s, noTracking, "root", "", "")
	killer := dial(t, s, noTracking, "root", "", "")
	killer.wantOK(killer.query("KILL CONNECTION 1"))
	<-s.Conns()[0].Done()
	if _, err := victim.pc.ReadPacket(); err == nil {
		t.Error("the killed connection is still open")
	}
	killer.wantError(killer.query("KILL 1"), mysql.ER_NO_SUCH_THREAD)
	e := killer.wantError(killer.query("KILL 2"), 1927)
	if e.State != "70100" {
		t.Errorf("killing itself: state %s", e.State)
	}
	<-s.Conns()[1].Done()
	if got := s.Open(); got != 0 {
		t.Errorf("Open() = %d, want 0", got)
	}
}

func TestUnknownCommand(t *testing.T) {
	s := mysqltest.NewServer(t, mysqltest.Options{})
	c := dial(t, s, noTracking, "root", "", "")
	e := c.wantError(c.command([]byte{mysql.COM_FIELD_LIST, 't', 0}), mysql.ER_UNKNOWN_COM_ERROR)
	if e.Message != "Unknown command" {
		t.Errorf("message %q", e.Message)
	}
	c.wantOK(c.command([]byte{mysql.COM_PING}))
	c.wantOK(c.command(append([]byte{mysql.COM_INIT_DB}, "shop"...)))
	c.wantError(c.command(append([]byte{mysql.COM_INIT_DB}, mysqltest.UnknownSchema...)), mysql.ER_BAD_DB_ERROR)
	c.pc.ResetSequence()
	c.write([]byte{mysql.COM_QUIT})
	<-s.Conns()[0].Done()
	var bytes []byte
	for _, cmd := range s.Conns()[0].Commands() {
		bytes = append(bytes, cmd.Byte)
	}
	if want := []byte{mysql.COM_FIELD_LIST, mysql.COM_PING, mysql.COM_INIT_DB, mysql.COM_INIT_DB, mysql.COM_QUIT}; string(bytes) != string(want) {
		t.Errorf("commands %x, want %x", bytes, want)
	}
}

func TestCleanupClosesConnections(t *testing.T) {
	var s *mysqltest.Server
	outer := t
	t.Run("server", func(t *testing.T) {
		s = mysqltest.NewServer(t, mysqltest.Options{
			Handler: func(*mysqltest.Conn, string) mysqltest.Reply { return mysqltest.Reply{Delay: time.Hour} },
		})
		// The clients belong to the outer test, so that only the server closes connections.
		dial(outer, s, noTracking, "root", "", "")
		c := dial(outer, s, noTracking, "root", "", "")
		c.pc.ResetSequence()
		c.write(append([]byte{mysql.COM_QUERY}, "SELECT SLEEP(3600)"...))
	})
	// The subtest's cleanup stopped the server: every connection is closed, the statement
	// that was running included, and nothing listens any more.
	for _, conn := range s.Conns() {
		select {
		case <-conn.Done():
		default:
			t.Errorf("connection %d still open", conn.ID())
		}
	}
	if got := s.Open(); got != 0 {
		t.Errorf("Open() = %d, want 0", got)
	}
	if nc, err := net.DialTimeout("tcp", s.Addr, testTimeout); err == nil {
		_ = nc.Close()
		t.Error("the server still listens")
	}
}
