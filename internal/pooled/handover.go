package pooled

import (
	"sort"

	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// Record is a session's pooled side as a hand-over to a new process carries it: what its
// connections must be, its state and its prepared statements. Only a session that holds
// no connection and has no pin is handed over (Movable).
type Record struct {
	Credential auth.SecretCredential `json:"credential"`
	Key        backend.Key           `json:"key"`
	Charset    byte                  `json:"charset"`
	Schema     string                `json:"schema,omitempty"`
	State      backend.StateRecord   `json:"state"`
	ClientCaps uint32                `json:"client_caps"`
	Stmts      []StmtRecord          `json:"stmts,omitempty"`
	NextID     uint32                `json:"next_id"`
}

// StmtRecord is a prepared statement under the id its client knows it by.
type StmtRecord struct {
	ID         uint32              `json:"id"`
	Text       []byte              `json:"text"`
	Params     uint16              `json:"params"`
	Columns    uint16              `json:"columns"`
	Types      []byte              `json:"types,omitempty"`
	Snapshot   backend.StateRecord `json:"snapshot"`
	ConnIDOnly bool                `json:"conn_id_only,omitempty"`
	ConnIDName string              `json:"conn_id_name,omitempty"`
}

// Movable says why the session cannot move to another process, or "" when it can: a
// connection it holds carries state no other connection has (its first pin's name).
func (s *Session) Movable() string {
	if s.Pins.Bits != 0 {
		return Names(s.Pins.Bits)[0]
	}
	if s.lease != nil || s.unflushed {
		return "held"
	}
	return ""
}

// Record returns the session as a record. Call it on a session Movable allows.
func (s *Session) Record() Record {
	r := Record{Credential: s.Want.Credential.Secret(), Key: s.Want.Key, Charset: s.Want.Charset, Schema: s.Want.Schema,
		State: s.State.Record(), ClientCaps: s.ClientCaps, NextID: s.nextID}
	for id, cs := range s.stmts {
		r.Stmts = append(r.Stmts, StmtRecord{ID: id, Text: cs.text, Params: cs.params, Columns: cs.columns,
			Types: cs.types, Snapshot: cs.snap.Record(), ConnIDOnly: cs.ConnIDOnly, ConnIDName: cs.ConnIDName})
	}
	sort.Slice(r.Stmts, func(i, j int) bool { return r.Stmts[i].ID < r.Stmts[j].ID })
	return r
}

// Restore makes the session the one r records, with attrs as the connection attributes
// of the connections it opens.
func (s *Session) Restore(r Record, attrs []protocol.Attribute) {
	s.Want = backend.Want{Credential: r.Credential.Credential(), Key: r.Key, Charset: r.Charset, Schema: r.Schema, Attributes: attrs}
	s.State = backend.StateOf(r.State)
	s.ClientCaps = r.ClientCaps
	s.nextID = r.NextID
	for _, st := range r.Stmts {
		cs := &Stmt{text: st.Text, params: st.Params, columns: st.Columns, types: st.Types,
			snap: backend.StateOf(st.Snapshot).Snapshot(), ConnIDOnly: st.ConnIDOnly, ConnIDName: st.ConnIDName}
		s.stmts[st.ID] = cs
		s.stmtBytes += len(st.Text)
	}
}
