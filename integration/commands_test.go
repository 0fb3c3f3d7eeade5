package integration

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// connect opens a go-mysql connection through addr.
func connect(t *testing.T, addr string, opts ...client.Option) *client.Conn {
	t.Helper()
	c, err := client.Connect(addr, env.User, env.Password, env.Database, opts...)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// send writes one command as a new exchange.
func send(t *testing.T, c *client.Conn, payload ...byte) {
	t.Helper()
	c.ResetSequence()
	if err := c.WritePacket(append([]byte{0, 0, 0, 0}, payload...)); err != nil {
		t.Fatalf("send 0x%02x: %v", payload[0], err)
	}
}

// read reads one response packet.
func read(t *testing.T, c *client.Conn) []byte {
	t.Helper()
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return p
}

// expectOK reads an OK (or an EOF in OK position) and returns its status flags.
func expectOK(t *testing.T, c *client.Conn, what string) uint16 {
	t.Helper()
	p := read(t, c)
	switch p[0] {
	case mysql.OK_HEADER:
		return c.HandleOKPacket(p).Status
	case mysql.EOF_HEADER:
		return binary.LittleEndian.Uint16(p[3:])
	case mysql.ERR_HEADER:
		t.Fatalf("%s: %v", what, c.HandleErrorPacket(p))
	}
	t.Fatalf("%s: unexpected packet %q", what, p)
	return 0
}

func TestCommandsThroughProxy(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		c := connect(t, p.Addr)
		table := tableName(t)
		for _, q := range []string{
			"DROP TABLE IF EXISTS " + table,
			"CREATE TABLE " + table + " (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(20), b LONGBLOB)",
			"INSERT INTO " + table + " (name) VALUES ('a'), ('b'), ('c')",
		} {
			if _, err := c.Execute(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}

		t.Run("COM_PING", func(t *testing.T) {
			if err := c.Ping(); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("COM_INIT_DB", func(t *testing.T) {
			if err := c.UseDB("mysql"); err != nil {
				t.Fatal(err)
			}
			r, err := c.Execute("SELECT DATABASE()")
			if err != nil {
				t.Fatal(err)
			}
			if db, _ := r.GetString(0, 0); db != "mysql" {
				t.Errorf("DATABASE() = %q", db)
			}
			if err := c.UseDB(env.Database); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("COM_FIELD_LIST", func(t *testing.T) {
			fields, err := c.FieldList(table, "")
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range fields {
				names = append(names, string(f.Name))
			}
			if strings.Join(names, ",") != "id,name,b" {
				t.Errorf("fields = %v", names)
			}
		})
		t.Run("COM_STATISTICS", func(t *testing.T) {
			send(t, c, mysql.COM_STATISTICS)
			if s := read(t, c); !bytes.HasPrefix(s, []byte("Uptime:")) {
				t.Errorf("statistics = %q", s)
			}
		})
		t.Run("COM_SET_OPTION", func(t *testing.T) {
			send(t, c, mysql.COM_SET_OPTION, 0, 0) // MYSQL_OPTION_MULTI_STATEMENTS_ON
			expectOK(t, c, "set option on")
			send(t, c, mysql.COM_SET_OPTION, 1, 0)
			expectOK(t, c, "set option off")
		})
		t.Run("COM_STMT_SEND_LONG_DATA and COM_STMT_RESET", func(t *testing.T) {
			stmt, err := c.Prepare("UPDATE " + table + " SET b = ? WHERE id = 1")
			if err != nil {
				t.Fatal(err)
			}
			defer stmt.Close()
			id := binary.LittleEndian.AppendUint32(nil, stmt.ID)
			// Two chunks of long data for parameter 0; no response to either.
			for _, chunk := range []string{strings.Repeat("x", 100000), "tail"} {
				send(t, c, append(append([]byte{mysql.COM_STMT_SEND_LONG_DATA}, id...), append([]byte{0, 0}, chunk...)...)...)
			}
			// Execute: no cursor, one iteration, null bitmap 0, types bound: one LONG_BLOB.
			exec := append([]byte{mysql.COM_STMT_EXECUTE}, id...)
			exec = append(exec, 0, 1, 0, 0, 0, 0, 1, mysql.MYSQL_TYPE_LONG_BLOB, 0)
			send(t, c, exec...)
			expectOK(t, c, "execute with long data")
			r, err := c.Execute("SELECT LENGTH(b) FROM " + table + " WHERE id = 1")
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := r.GetInt(0, 0); n != 100004 {
				t.Errorf("LENGTH(b) = %d, want 100004", n)
			}
			send(t, c, append([]byte{mysql.COM_STMT_RESET}, id...)...)
			expectOK(t, c, "stmt reset")
		})
		t.Run("COM_STMT_EXECUTE with a cursor and COM_STMT_FETCH", func(t *testing.T) {
			stmt, err := c.Prepare("SELECT seq FROM seq_1_to_25")
			if err != nil {
				t.Fatal(err)
			}
			defer stmt.Close()
			id := binary.LittleEndian.AppendUint32(nil, stmt.ID)
			send(t, c, append(append([]byte{mysql.COM_STMT_EXECUTE}, id...), mysql.CURSOR_TYPE_READ_ONLY, 1, 0, 0, 0)...)
			if p := read(t, c); p[0] != 1 {
				t.Fatalf("column count packet = %q", p)
			}
			read(t, c) // column definition
			status := expectOK(t, c, "metadata end")
			if status&mysql.SERVER_STATUS_CURSOR_EXISTS == 0 {
				t.Fatalf("no cursor opened (status %#x)", status)
			}
			rows := 0
			for fetches := 0; ; fetches++ {
				if fetches > 10 {
					t.Fatal("cursor never reported its last row")
				}
				send(t, c, append(append([]byte{mysql.COM_STMT_FETCH}, id...), 10, 0, 0, 0)...)
				for {
					p := read(t, c)
					if p[0] == mysql.EOF_HEADER && len(p) < 0xffffff {
						// Legacy EOF and OK-as-EOF (zero affected rows and insert id) both
						// carry the status at bytes 3-4.
						status = binary.LittleEndian.Uint16(p[3:])
						break
					}
					if p[0] == mysql.ERR_HEADER {
						t.Fatal(c.HandleErrorPacket(p))
					}
					rows++
				}
				if status&mysql.SERVER_STATUS_LAST_ROW_SEND != 0 {
					break
				}
			}
			if rows != 25 {
				t.Errorf("fetched %d rows, want 25", rows)
			}
		})
		t.Run("COM_RESET_CONNECTION", func(t *testing.T) {
			if _, err := c.Execute("SET @marker = 42"); err != nil {
				t.Fatal(err)
			}
			send(t, c, mysql.COM_RESET_CONNECTION)
			expectOK(t, c, "reset connection")
			r, err := c.Execute("SELECT @marker IS NULL")
			if err != nil {
				t.Fatal(err)
			}
			if v, _ := r.GetInt(0, 0); v != 1 {
				t.Errorf("user variable survived COM_RESET_CONNECTION")
			}
		})
		t.Run("COM_CHANGE_USER", func(t *testing.T) {
			changeUser(t, c, mode, env.EdUser, env.EdPassword, "mysql")
			r, err := c.Execute("SELECT CURRENT_USER(), DATABASE()")
			if err != nil {
				t.Fatal(err)
			}
			user, _ := r.GetString(0, 0)
			db, _ := r.GetString(0, 1)
			if !strings.HasPrefix(user, env.EdUser+"@") || db != "mysql" {
				t.Errorf("after change user: %q in %q", user, db)
			}
		})
		t.Run("unsupported command is refused, connection lives on", func(t *testing.T) {
			send(t, c, mysql.COM_BINLOG_DUMP, 4, 0, 0, 0, 0, 0, 1, 0, 0, 0)
			p := read(t, c)
			err := c.HandleErrorPacket(p)
			if p[0] != mysql.ERR_HEADER || !strings.Contains(err.Error(), "gatekeeper: command binlog_dump") {
				t.Fatalf("got %v", err)
			}
			if err := c.Ping(); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("COM_QUIT", func(t *testing.T) {
			if err := c.Quit(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 5*time.Second, "the proxy to close the connection", func() bool { return p.Open() == 0 })
		})
	})
}

// changeUser sends COM_CHANGE_USER to user, an ed25519 account, asking for
// mysql_native_password without an answer, so that the server asks for a method with a
// fresh challenge: the exchange has an extra round through the proxy. The new session is
// in schema.
func changeUser(t *testing.T, c *client.Conn, mode, user, password, schema string) {
	t.Helper()
	payload := []byte{mysql.COM_CHANGE_USER}
	payload = append(payload, user...)
	payload = append(payload, 0, 0) // user, empty auth response
	payload = append(payload, schema...)
	payload = append(payload, 0, 45, 0) // schema, charset utf8mb4
	payload = append(payload, mysql.AUTH_NATIVE_PASSWORD...)
	payload = append(payload, 0, 0) // plugin, no connection attributes
	send(t, c, payload...)
	p := read(t, c)
	if p[0] != mysql.EOF_HEADER {
		t.Fatalf("want an auth switch request, got %q", p)
	}
	plugin, rest, _ := bytes.Cut(p[1:], []byte{0})
	scramble := rest // ed25519's nonce: 32 random bytes, the last of which may be 0
	if string(plugin) == mysql.AUTH_NATIVE_PASSWORD {
		scramble = bytes.TrimSuffix(rest, []byte{0})
	}
	// The server asks for the account's own method, ed25519. Pooled mode checks the
	// password itself, from its users file, and asks for mysql_native_password, the first
	// method it can check for an account whose password it knows.
	want := map[string]string{config.ModePassthrough: mysql.AUTH_MARIADB_ED25519, config.ModePooled: mysql.AUTH_NATIVE_PASSWORD}[mode]
	if string(plugin) != want {
		t.Fatalf("switch to %q, want %s", plugin, want)
	}
	var answer []byte
	switch want {
	case mysql.AUTH_MARIADB_ED25519:
		sig, err := mysql.CalcEd25519Password(scramble, password)
		if err != nil {
			t.Fatal(err)
		}
		answer = sig
	case mysql.AUTH_NATIVE_PASSWORD:
		answer = mysql.CalcNativePassword(scramble, []byte(password))
	}
	if err := c.WritePacket(append([]byte{0, 0, 0, 0}, answer...)); err != nil {
		t.Fatal(err)
	}
	expectOK(t, c, "change user")
}
