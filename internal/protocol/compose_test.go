package protocol

import (
	"bytes"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

func TestGreetingRoundTrip(t *testing.T) {
	for _, caps := range []uint32{
		mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_PLUGIN_AUTH | mysql.CLIENT_LONG_PASSWORD,
		mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_PLUGIN_AUTH, // MariaDB
	} {
		h := &Hello{ServerVersion: "5.5.5-10.11.19-MariaDB", ConnectionID: 42, Capabilities: caps,
			MariaDBCapabilities: 1 << 3, Charset: 45, Status: mysql.SERVER_STATUS_AUTOCOMMIT,
			Scramble: NewScramble(), AuthPlugin: NativePassword}
		g, err := ParseGreeting(AppendGreeting(nil, h))
		if err != nil {
			t.Fatal(err)
		}
		if g.ServerVersion != h.ServerVersion || g.ConnectionID != 42 || g.Capabilities != caps ||
			!bytes.Equal(g.Scramble, h.Scramble) || g.AuthPlugin != NativePassword || g.Charset != 45 {
			t.Errorf("greeting = %+v, want what was written: %+v", g, h)
		}
		if caps&mysql.CLIENT_LONG_PASSWORD == 0 && g.MariaDBCapabilities != 1<<3 {
			t.Errorf("MariaDB capabilities = %#x, want 0x8", g.MariaDBCapabilities)
		}
	}
}

func TestHandshakeResponseRoundTrip(t *testing.T) {
	l := &Login{
		Capabilities: mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_PLUGIN_AUTH |
			mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | mysql.CLIENT_CONNECT_WITH_DB | mysql.CLIENT_CONNECT_ATTRS,
		MaxPacketSize: 1 << 24, Charset: 45, User: "app", AuthResponse: NativeResponse(NativeStage1("pw"), NewScramble()),
		Database: "shop", AuthPlugin: NativePassword, Attributes: []Attribute{{Key: "program_name", Value: "gatekeeper"}},
	}
	r, err := ParseHandshakeResponse(AppendHandshakeResponse(nil, l))
	if err != nil {
		t.Fatal(err)
	}
	if r.User != "app" || r.Database != "shop" || r.AuthPlugin != NativePassword || !bytes.Equal(r.AuthResponse, l.AuthResponse) ||
		r.Attribute("program_name") != "gatekeeper" || r.Charset != 45 {
		t.Errorf("response = %+v", r)
	}
	cu, err := ParseChangeUser(AppendChangeUser(nil, l), l.Capabilities|mysql.CLIENT_SECURE_CONNECTION)
	if err != nil {
		t.Fatal(err)
	}
	if cu.User != "app" || cu.Database != "shop" || cu.AuthPlugin != NativePassword || cu.Charset != 45 || !bytes.Equal(cu.AuthResponse, l.AuthResponse) {
		t.Errorf("change user = %+v", cu)
	}
}

func TestAuthSwitchRoundTrip(t *testing.T) {
	scramble := NewScramble()
	plugin, data, err := ParseAuthSwitch(AppendAuthSwitch(nil, NativePassword, scramble))
	if err != nil || plugin != NativePassword || !bytes.Equal(data, scramble) {
		t.Errorf("switch = %q %q %v", plugin, data, err)
	}
	// An ed25519 nonce is 32 random bytes without a terminator: a last byte of 0 is its own.
	nonce := bytes.Repeat([]byte{7}, 31)
	nonce = append(nonce, 0)
	plugin, data, err = ParseAuthSwitch(AppendAuthSwitch(nil, Ed25519, nonce))
	if err != nil || plugin != Ed25519 || !bytes.Equal(data, nonce) {
		t.Errorf("ed25519 switch = %q %x %v, want the 32-byte nonce %x", plugin, data, err, nonce)
	}
}

// okWithState is an OK as a server with CLIENT_SESSION_TRACK sends it after SET NAMES.
func okWithState() []byte {
	var rec []byte
	rec = append(rec, mysql.SESSION_TRACK_SYSTEM_VARIABLES)
	v := AppendLenencString(AppendLenencString(nil, "character_set_client"), "latin1")
	rec = AppendLenencString(rec, string(v))
	rec = append(rec, mysql.SESSION_TRACK_SCHEMA)
	rec = AppendLenencString(rec, string(AppendLenencString(nil, "shop")))
	rec = append(rec, mysql.SESSION_TRACK_STATE_CHANGE, 1, '1')
	p := AppendOK(nil, 3, 7, mysql.SERVER_STATUS_AUTOCOMMIT|mysql.SERVER_SESSION_STATE_CHANGED, 1)
	p = AppendLenencString(p, "info")
	return AppendLenencString(p, string(rec))
}

func TestStateChanges(t *testing.T) {
	var ok OK
	if err := ParseOK(okWithState(), mysql.CLIENT_PROTOCOL_41|mysql.CLIENT_SESSION_TRACK, &ok); err != nil {
		t.Fatal(err)
	}
	var got []StateChange
	for rest := ok.StateChanges; len(rest) > 0; {
		c, next, good := NextStateChange(rest)
		if !good {
			t.Fatalf("bad record at %x", rest)
		}
		got = append(got, c)
		rest = next
	}
	if len(got) != 3 || string(got[0].Name) != "character_set_client" || string(got[0].Value) != "latin1" ||
		string(got[1].Value) != "shop" || got[2].Type != mysql.SESSION_TRACK_STATE_CHANGE || string(got[2].Value) != "1" {
		t.Errorf("records = %q", got)
	}
	if string(ok.Schema) != "shop" {
		t.Errorf("schema = %q", ok.Schema)
	}
}

func TestStripSessionState(t *testing.T) {
	p, err := StripSessionState(nil, okWithState())
	if err != nil {
		t.Fatal(err)
	}
	var ok OK
	if err := ParseOK(p, mysql.CLIENT_PROTOCOL_41, &ok); err != nil {
		t.Fatal(err)
	}
	if ok.AffectedRows != 3 || ok.LastInsertID != 7 || ok.Status != mysql.SERVER_STATUS_AUTOCOMMIT || ok.Warnings != 1 {
		t.Errorf("stripped OK = %+v", ok)
	}
	if !bytes.HasSuffix(p, []byte("\x04info")) || bytes.Contains(p, []byte("latin1")) {
		t.Errorf("stripped OK %q: want the info, length-prefixed as the server sends it, and no records", p)
	}
	// State changed, no info: the server sends an empty info only beside records.
	empty := append(AppendOK(nil, 0, 0, mysql.SERVER_SESSION_STATE_CHANGED, 0), 0, 3, 2, 1, '1')
	if q, err := StripSessionState(nil, empty); err != nil || !bytes.Equal(q, AppendOK(nil, 0, 0, 0, 0)) {
		t.Errorf("an OK with records and no info: %x, %v; want %x", q, err, AppendOK(nil, 0, 0, 0, 0))
	}
	short := AppendOK(nil, 0, 0, 2, 0)
	if q, err := StripSessionState(nil, short); err != nil || !bytes.Equal(q, short) {
		t.Errorf("an OK without info: %x, %v; want it unchanged", q, err)
	}
}

func TestNativeVerifyDerivesStage1(t *testing.T) {
	scramble := NewScramble()
	stage1 := NativeStage1("secret")
	got, ok := NativeVerify(NativeStage2(stage1), scramble, NativeResponse(stage1, scramble))
	if !ok || !bytes.Equal(got, stage1) {
		t.Fatalf("NativeVerify = %x, %v; want %x", got, ok, stage1)
	}
	if _, ok := NativeVerify(NativeStage2(stage1), scramble, NativeResponse(NativeStage1("other"), scramble)); ok {
		t.Error("a wrong password verified")
	}
	if !SHA2Verify("secret", scramble, SHA2Response("secret", scramble)) || SHA2Verify("secret", scramble, SHA2Response("x", scramble)) {
		t.Error("caching_sha2_password answers")
	}
	if !Ed25519Verify(Ed25519PublicKey("secret"), scramble, Ed25519Response("secret", scramble)) ||
		Ed25519Verify(Ed25519PublicKey("secret"), scramble, Ed25519Response("x", scramble)) {
		t.Error("client_ed25519 answers")
	}
	for range 100 {
		for _, c := range NewScramble() {
			if c == 0 || c == '$' || c > 126 {
				t.Fatalf("scramble byte %q", c)
			}
		}
	}
}
