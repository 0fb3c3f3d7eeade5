package pooled

import (
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/backend"
)

// TestRecordRestores moves a session through its record, as JSON, into a session of
// another Shared, and checks that it is the same session: what its connections must be,
// its state, and its prepared statements under the same ids, prepared in the same state.
func TestRecordRestores(t *testing.T) {
	s := NewSession(NewShared(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	s.Want = backend.Want{Credential: auth.Credential{User: "app", Password: "secret", HasPassword: true},
		Key: backend.Key{Capabilities: 0x1234}, Charset: 45, Schema: "shop"}
	s.State = backend.NewState("shop", 45)
	s.State.SetVar("sql_mode", "ANSI_QUOTES")
	s.ClientCaps = 0x5678
	snap := s.State.Snapshot()
	s.stmts[7] = &Stmt{text: []byte(`SELECT "a" FROM t WHERE id = ?`), params: 1, columns: 1, types: []byte{3, 0}, snap: snap}
	s.stmts[9] = &Stmt{text: []byte("SELECT CONNECTION_ID()"), columns: 1, snap: snap, ConnIDOnly: true, ConnIDName: "CONNECTION_ID()"}
	s.nextID = 9
	s.State.SetVar("time_zone", "+03:00")
	s.State.LastInsertID = 77
	if why := s.Movable(); why != "" {
		t.Fatalf("Movable() = %q for a session that holds nothing", why)
	}

	raw, err := json.Marshal(s.Record())
	if err != nil {
		t.Fatal(err)
	}
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	r := NewSession(NewShared(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	r.Restore(rec, nil)

	if r.Want.Credential.Password != "secret" || !r.Want.Credential.HasPassword || r.Want.Key != s.Want.Key ||
		r.Want.Charset != 45 || r.Want.Schema != "shop" || r.ClientCaps != 0x5678 {
		t.Errorf("restored want %v, caps %#x", r.Want, r.ClientCaps)
	}
	if !reflect.DeepEqual(r.State.Record(), s.State.Record()) {
		t.Errorf("restored state %+v, want %+v", r.State.Record(), s.State.Record())
	}
	for id, want := range s.stmts {
		got := r.stmts[id]
		if got == nil {
			t.Fatalf("statement %d missing", id)
		}
		if string(got.text) != string(want.text) || got.params != want.params || got.columns != want.columns ||
			string(got.types) != string(want.types) || got.ConnIDOnly != want.ConnIDOnly || got.ConnIDName != want.ConnIDName {
			t.Errorf("statement %d restored as %+v, want %+v", id, got, want)
		}
		if !reflect.DeepEqual(got.snap.Record(), want.snap.Record()) {
			t.Errorf("statement %d prepared in %+v, want %+v", id, got.snap.Record(), want.snap.Record())
		}
	}
	if id := r.NextID(); id != 10 {
		t.Errorf("the next statement id is %d, want 10", id)
	}

	s.pin(PinTemporaryTable)
	if why := s.Movable(); why != "temporary_table" {
		t.Errorf("Movable() = %q for a session pinned by a temporary table", why)
	}
}
