package protocol

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// greeting builds a server greeting. mariadbCaps non-zero makes it a MariaDB greeting
// (CLIENT_LONG_PASSWORD cleared, extended capabilities in the reserved bytes).
func greeting(version string, caps, mariadbCaps uint32, plugin string) []byte {
	b := []byte{10}
	b = append(b, version...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 42)           // connection id
	b = append(b, []byte("abcdefgh")...)                  // scramble part 1
	b = append(b, 0)                                      // filler
	b = binary.LittleEndian.AppendUint16(b, uint16(caps)) // capabilities low
	b = append(b, 45)                                     // charset
	b = binary.LittleEndian.AppendUint16(b, autocommit)   // status
	b = binary.LittleEndian.AppendUint16(b, uint16(caps>>16))
	b = append(b, 21)                 // auth data length
	b = append(b, make([]byte, 6)...) // reserved
	b = binary.LittleEndian.AppendUint32(b, mariadbCaps)
	b = append(b, []byte("ijklmnopqrst")...) // scramble part 2
	b = append(b, 0)
	b = append(b, plugin...)
	return append(b, 0)
}

const serverCaps = mysql.CLIENT_LONG_PASSWORD | mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION |
	mysql.CLIENT_PLUGIN_AUTH | mysql.CLIENT_SSL | mysql.CLIENT_COMPRESS | mysql.CLIENT_DEPRECATE_EOF |
	mysql.CLIENT_SESSION_TRACK | mysql.CLIENT_QUERY_ATTRIBUTES | mysql.CLIENT_CONNECT_WITH_DB |
	mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | mysql.CLIENT_CONNECT_ATTRS | mysql.CLIENT_MULTI_STATEMENTS

func TestParseGreeting(t *testing.T) {
	p := greeting("8.0.36", serverCaps, 0, "caching_sha2_password")
	g, err := ParseGreeting(p)
	if err != nil {
		t.Fatal(err)
	}
	if g.ServerVersion != "8.0.36" || g.ConnectionID != 42 || g.AuthPlugin != "caching_sha2_password" {
		t.Errorf("greeting = %+v", g)
	}
	if string(g.Scramble) != "abcdefghijklmnopqrst" {
		t.Errorf("scramble = %q", g.Scramble)
	}
	if g.Capabilities != serverCaps || g.MariaDBCapabilities != 0 {
		t.Errorf("capabilities = %#x/%#x, want %#x/0", g.Capabilities, g.MariaDBCapabilities, serverCaps)
	}

	caps, ext := RelayCapabilities(g.Capabilities, g.MariaDBCapabilities, false)
	for _, masked := range []uint32{mysql.CLIENT_SSL, mysql.CLIENT_COMPRESS, mysql.CLIENT_QUERY_ATTRIBUTES} {
		if caps&masked != 0 {
			t.Errorf("capability %s relayed, want masked", mysql.CapNames[masked])
		}
	}
	for _, kept := range []uint32{mysql.CLIENT_DEPRECATE_EOF, mysql.CLIENT_SESSION_TRACK, mysql.CLIENT_PLUGIN_AUTH} {
		if caps&kept == 0 {
			t.Errorf("capability %s masked, want relayed", mysql.CapNames[kept])
		}
	}
	g.SetCapabilities(caps, ext)
	again, err := ParseGreeting(g.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if again.Capabilities != caps {
		t.Errorf("rewritten capabilities = %#x, want %#x", again.Capabilities, caps)
	}
	if len(g.Raw) != len(p) {
		t.Errorf("rewrite changed the length")
	}
}

func TestParseGreetingMariaDB(t *testing.T) {
	const bulk, cacheMeta, extMeta = 1 << 2, 1 << 4, 1 << 3
	p := greeting("5.5.5-10.11.19-MariaDB", serverCaps&^mysql.CLIENT_LONG_PASSWORD, bulk|cacheMeta|extMeta, "mysql_native_password")
	g, err := ParseGreeting(p)
	if err != nil {
		t.Fatal(err)
	}
	if g.MariaDBCapabilities != bulk|cacheMeta|extMeta {
		t.Fatalf("extended capabilities = %#x", g.MariaDBCapabilities)
	}
	caps, ext := RelayCapabilities(g.Capabilities, g.MariaDBCapabilities, true)
	if ext != extMeta {
		t.Errorf("relayed extended capabilities = %#x, want only extended metadata", ext)
	}
	if caps&mysql.CLIENT_SSL == 0 {
		t.Errorf("TLS not offered although the proxy has a certificate")
	}
	g.SetCapabilities(caps, ext)
	again, _ := ParseGreeting(g.Raw)
	if again.MariaDBCapabilities != extMeta {
		t.Errorf("rewritten extended capabilities = %#x", again.MariaDBCapabilities)
	}
}

func handshakeResponse(caps uint32, user string, auth []byte, db, plugin string, attrs ...string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, caps)
	b = binary.LittleEndian.AppendUint32(b, 1<<24)
	b = append(b, 45)
	b = append(b, make([]byte, 23)...)
	b = append(b, user...)
	b = append(b, 0)
	b = append(b, byte(len(auth)))
	b = append(b, auth...)
	b = append(b, db...)
	b = append(b, 0)
	b = append(b, plugin...)
	b = append(b, 0)
	var kv []byte
	for _, s := range attrs {
		kv = append(kv, byte(len(s)))
		kv = append(kv, s...)
	}
	b = append(b, byte(len(kv)))
	return append(b, kv...)
}

func TestParseHandshakeResponse(t *testing.T) {
	p := handshakeResponse(serverCaps, "app", bytes.Repeat([]byte{7}, 20), "shop", "mysql_native_password",
		"_client_name", "libmariadb", "program_name", "checkout")
	r, err := ParseHandshakeResponse(p)
	if err != nil {
		t.Fatal(err)
	}
	if r.User != "app" || r.Database != "shop" || r.AuthPlugin != "mysql_native_password" || len(r.AuthResponse) != 20 {
		t.Errorf("response = %+v", r)
	}
	if got := r.Attribute("program_name"); got != "checkout" {
		t.Errorf("program_name = %q", got)
	}
	r.SetCapabilities(r.Capabilities&^mysql.CLIENT_COMPRESS, 0)
	if binary.LittleEndian.Uint32(r.Raw)&mysql.CLIENT_COMPRESS != 0 {
		t.Errorf("capability not rewritten")
	}
	ssl := r.SSLRequest()
	if !IsSSLRequest(ssl) || IsSSLRequest(p) {
		t.Errorf("SSLRequest detection wrong")
	}
}

func TestParseHandshakeResponseRejects(t *testing.T) {
	good := handshakeResponse(serverCaps, "app", []byte{1, 2}, "db", "mysql_native_password")
	for _, tt := range []struct {
		name string
		p    []byte
	}{
		{"empty", nil},
		{"no protocol 4.1", handshakeResponse(serverCaps&^mysql.CLIENT_PROTOCOL_41, "a", nil, "", "")},
		{"user not terminated", good[:sslRequestLen+2]},
		{"auth length past the end", good[:sslRequestLen+5]},
	} {
		if _, err := ParseHandshakeResponse(tt.p); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

func TestParseChangeUser(t *testing.T) {
	p := []byte{mysql.COM_CHANGE_USER}
	p = append(p, "bob\x00"...)
	p = append(p, 3, 1, 2, 3)
	p = append(p, "inventory\x00"...)
	p = append(p, 45, 0)
	p = append(p, "client_ed25519\x00"...)
	cu, err := ParseChangeUser(p, serverCaps)
	if err != nil {
		t.Fatal(err)
	}
	if cu.User != "bob" || cu.Database != "inventory" || cu.AuthPlugin != "client_ed25519" {
		t.Errorf("change user = %+v", cu)
	}
}

func TestParseOKSessionTrack(t *testing.T) {
	// OK with info "" and a schema change to "shop" plus a system variable.
	var state []byte
	schema := append([]byte{4}, "shop"...)
	state = append(state, mysql.SESSION_TRACK_SCHEMA, byte(len(schema)))
	state = append(state, schema...)
	sysvar := append(append([]byte{9}, "last_gtid"...), append([]byte{5}, "0-1-7"...)...)
	state = append(state, mysql.SESSION_TRACK_SYSTEM_VARIABLES, byte(len(sysvar)))
	state = append(state, sysvar...)
	status := autocommit | mysql.SERVER_SESSION_STATE_CHANGED
	p := []byte{0x00, 1, 0, byte(status), byte(status >> 8), 0, 0, 0, byte(len(state))}
	p = append(p, state...)
	var ok OK
	if err := ParseOK(p, mysql.CLIENT_SESSION_TRACK|mysql.CLIENT_PROTOCOL_41, &ok); err != nil {
		t.Fatal(err)
	}
	if string(ok.Schema) != "shop" || ok.AffectedRows != 1 || ok.Status != status {
		t.Errorf("OK = %+v", ok)
	}
	if err := ParseOK(p[:len(p)-3], mysql.CLIENT_SESSION_TRACK, &ok); err == nil {
		t.Errorf("truncated session state: no error")
	}
}
