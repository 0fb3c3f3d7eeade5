package protocol

import (
	"bytes"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

func FuzzReadPacket(f *testing.F) {
	s := &stream{}
	s.packet([]byte("hello")).packet(nil).packet(bytes.Repeat([]byte{1}, 300))
	f.Add(s.b)
	f.Add([]byte{0xff, 0xff, 0xff, 0x00, 1, 2, 3})
	f.Fuzz(func(t *testing.T, in []byte) {
		c := NewConn(newMemConn(in))
		c.SetLimit(1 << 16)
		var cmd Command
		for range 64 {
			p, err := c.ReadPacket()
			if err != nil {
				break
			}
			if len(p) > 1<<16 {
				t.Fatalf("packet of %d bytes over the limit", len(p))
			}
		}
		c = NewConn(newMemConn(in))
		c.SetLimit(1 << 16)
		for range 64 {
			if err := c.ReadCommand(&cmd); err != nil {
				break
			}
			if err := c.ForwardCommand(&cmd, NewConn(newMemConn(nil))); err != nil {
				break
			}
		}
	})
}

func FuzzParseGreeting(f *testing.F) {
	f.Add(greeting("8.0.36", serverCaps, 0, "caching_sha2_password"))
	f.Add(greeting("5.5.5-10.11.19-MariaDB", serverCaps&^mysql.CLIENT_LONG_PASSWORD, 1<<3, "mysql_native_password"))
	f.Fuzz(func(t *testing.T, in []byte) {
		g, err := ParseGreeting(in)
		if err != nil {
			return
		}
		caps, ext := RelayCapabilities(g.Capabilities, g.MariaDBCapabilities, true)
		g.SetCapabilities(caps, ext)
		if _, err := ParseGreeting(g.Raw); err != nil {
			t.Fatalf("rewritten greeting no longer parses: %v", err)
		}
	})
}

func FuzzParseHandshakeResponse(f *testing.F) {
	f.Add(handshakeResponse(serverCaps, "app", bytes.Repeat([]byte{7}, 20), "shop", "mysql_native_password", "program_name", "x"))
	f.Add(handshakeResponse(serverCaps&^mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA, "u", nil, "", ""))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := ParseHandshakeResponse(in)
		if err != nil {
			return
		}
		if len(r.Attributes) > maxAttributes {
			t.Fatalf("%d attributes kept", len(r.Attributes))
		}
		r.SetCapabilities(r.Capabilities, r.MariaDBCapabilities)
		if !IsSSLRequest(r.SSLRequest()) {
			t.Fatal("SSLRequest not recognised")
		}
		_, _ = ParseChangeUser(append([]byte{mysql.COM_CHANGE_USER}, in[sslRequestLen:]...), r.Capabilities)
	})
}

func FuzzParseOK(f *testing.F) {
	f.Add(okPacket(autocommit))
	f.Add([]byte{0x00, 1, 0, 0x02, 0x40, 0, 0, 0, 7, 1, 5, 4, 's', 'h', 'o', 'p'})
	f.Fuzz(func(t *testing.T, in []byte) {
		var ok OK
		tracked := ParseOK(in, mysql.CLIENT_SESSION_TRACK|mysql.CLIENT_PROTOCOL_41, &ok)
		_, _ = ParseEOF(in)
		_, _ = ParseError(in)
		for rest := ok.StateChanges; len(rest) > 0; {
			_, next, good := NextStateChange(rest)
			if !good {
				break
			}
			if len(next) >= len(rest) {
				t.Fatalf("NextStateChange did not advance over %x", rest)
			}
			rest = next
		}
		// What a client without session tracking gets is an OK it can read, with the same
		// counts and no state.
		stripped, err := StripSessionState(nil, in)
		if err != nil || tracked != nil {
			return
		}
		var plain OK
		if err := ParseOK(stripped, mysql.CLIENT_PROTOCOL_41, &plain); err != nil {
			t.Fatalf("stripped %x into %x, which does not parse: %v", in, stripped, err)
		}
		if plain.AffectedRows != ok.AffectedRows || plain.LastInsertID != ok.LastInsertID ||
			plain.Warnings != ok.Warnings || plain.Status != ok.Status&^mysql.SERVER_SESSION_STATE_CHANGED {
			t.Fatalf("stripped %x into %x: %+v, want the counts of %+v", in, stripped, plain, ok)
		}
		if len(stripped) > len(in) {
			t.Fatalf("stripped %x grew into %x", in, stripped)
		}
	})
}

// FuzzForwardResponse feeds arbitrary server bytes to the response state machine: it must
// end (with an error or not) without panicking, and never write more to the client than it
// read from the backend plus the headers it renumbers.
func FuzzForwardResponse(f *testing.F) {
	s := &stream{seq: 1}
	s.resultSet(false, autocommit|more, textRow("a"))
	s.packet(okPacket(autocommit))
	f.Add(s.b, byte(mysql.COM_QUERY), false)
	s = &stream{seq: 1}
	s.packet(prepareOK(1, 1, 1)).packet(columnDef("?")).packet(columnDef("a"))
	f.Add(s.b, byte(mysql.COM_STMT_PREPARE), true)
	f.Fuzz(func(t *testing.T, in []byte, cmd byte, deprecateEOF bool) {
		caps := uint32(baseCaps)
		if deprecateEOF {
			caps |= mysql.CLIENT_DEPRECATE_EOF
		}
		x, client, _ := relayOver(in, in, caps)
		var res Response
		_ = x.ForwardResponse(cmd, &res)
		if client.w.Len() > 2*len(in)+64 {
			t.Fatalf("wrote %d bytes to the client from %d", client.w.Len(), len(in))
		}
	})
}
