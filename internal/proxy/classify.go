package proxy

import (
	"bytes"
	"encoding/binary"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
	"github.com/gatekeeperdb/gatekeeper/internal/pooled"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
)

// typeKey is what makes a request type (classify.type_key).
type typeKey uint8

const (
	// keyDigest: each statement is typed and costed by its digest.
	keyDigest typeKey = iota
	// keyTransaction: a unit is typed by its first statement after BEGIN and costed whole.
	keyTransaction
	// keyTag: a unit is typed by the first gk:type tag of its statements, else as under
	// keyTransaction.
	keyTag
	// keyTagDigest: as keyTag, but a tagged autocommit statement is typed by its tag and
	// its digest, so that the statements of one tagged interaction keep their own costs.
	keyTagDigest
	// keyUser, keySchema, keyProgram: a unit is typed by who runs it. They stay last:
	// typeStatement tells them by typeKey >= keyUser.
	keyUser
	keySchema
	keyProgram
)

var typeKeys = map[string]typeKey{
	"digest": keyDigest, "transaction": keyTransaction, "tag": keyTag, "tag_digest": keyTagDigest,
	"user": keyUser, "schema": keySchema, "program_name": keyProgram,
}

// Keys of types that are not digests are salted, so that a tag or a user never shares a key
// with a statement whose digest happens to read the same.
const (
	saltTransaction = 0x5452414e53414354 // "TRANSACT"
	saltTag         = 0x0000000074616721 // "tag!"
	saltIdentity    = 0x4944454e54495459 // "IDENTITY"
)

// statement is what the classifier found in a statement: that of the current command, or
// one prepared earlier (kept so that each execution is typed by its text). What routing
// reads of it is its embedded routing.Statement.
type statement struct {
	valid  bool
	hash   uint64
	digest []byte // of the current command: valid until the next command
	tag    []byte
	// A KILL of a thread id, and SELECT CONNECTION_ID() alone, with its column name
	// (valid until the next command): what pooled mode answers in the proxy.
	killID     uint64
	killQuery  bool
	connIDOnly bool
	connIDName []byte
	// volatile: the result may differ over the same data (classify.Result.Volatile).
	volatile bool
	routing.Statement
}

// routed returns what routing reads of the statement, nil when the command carries none.
func (st *statement) routed() *routing.Statement {
	if !st.valid {
		return nil
	}
	return &st.Statement
}

// routedBy returns what routing reads of the statement when the command is a statement
// that runs (COM_QUERY, COM_STMT_EXECUTE), else nil.
func (st *statement) routedBy(cmd byte) *routing.Statement {
	if cmd != mysql.COM_QUERY && cmd != mysql.COM_STMT_EXECUTE {
		return nil
	}
	return st.routed()
}

// pooled returns what pooled mode reads of the statement.
func (st *statement) pooled() pooled.Statement {
	return pooled.Statement{Valid: st.valid, Kind: st.Kind, Uses: st.Uses, Opaque: st.Opaque,
		ForOne: st.valid && bytes.HasPrefix(st.digest, setStatementFor)}
}

// setStatementFor starts the digest of SET STATEMENT ... FOR statement.
var setStatementFor = []byte("SET STATEMENT ")

// unitType collects what types a unit under the unit-wide keys.
type unitType struct {
	// typed: a statement (COM_QUERY or COM_STMT_EXECUTE) ran in the unit.
	typed bool
	// settled: the unit's type is known (a statement other than transaction control, or
	// a tag, was seen).
	settled bool
	tagged  bool
	hash    uint64
	// stmtHash is the digest hash of the tagged statement, and tagLen the length of the tag
	// at the start of sample, under keyTagDigest.
	stmtHash uint64
	tagLen   int
	// sample is the type's sample text; a buffer the session keeps.
	sample []byte
}

// classify is the path's first step: what the statement the command carries is, if it
// carries one.
func (s *session) classify(p *plan) {
	p.stmt.valid = false
	switch p.op {
	case mysql.COM_QUERY, mysql.COM_STMT_PREPARE:
		r := s.cls.Classify(s.cmd.Text())
		s.hot.classified[r.Kind].add(1)
		if r.Unsure {
			s.hot.unsure.add(1)
		}
		p.stmt = s.statementOf(r, s.schema)
	case mysql.COM_STMT_EXECUTE:
		if c := s.cmd.Payload; len(c) >= 5 {
			p.stmt = s.stmts[binary.LittleEndian.Uint32(c[1:])]
		}
	}
}

// statementOf is what the path keeps of the statement r classified, run in schema.
func (s *session) statementOf(r *classify.Result, schema string) statement {
	return statement{valid: true, hash: r.Hash, digest: r.Digest, tag: r.Tag,
		killID: r.KillID, killQuery: r.KillQuery, connIDOnly: r.ConnectionIDOnly, connIDName: r.ConnectionIDName,
		volatile: r.Volatile,
		Statement: routing.Statement{Kind: r.Kind, Uses: r.Uses, Multi: r.MultiStatement,
			Opaque:    r.Unsure || r.MultiStatement || r.Kind == classify.Write && r.UnknownTables,
			StartsTxn: r.TxnStart, ReadOnly: r.TxnReadOnly, ReadWrite: r.TxnReadWrite,
			Tables: s.routes.Fill(r, schema)}}
}

// rememberPrepared keeps the classification of a statement the backend just prepared.
func (s *session) rememberPrepared(st statement, id uint32) {
	st.digest, st.tag = bytes.Clone(st.digest), bytes.Clone(st.tag)
	st.connIDName, st.connIDOnly, st.killID = nil, false, 0
	if st.Tables != nil {
		st.Tables = st.Tables.Clone()
	}
	s.stmts[id] = st
}

// typeStatement accounts for a statement that cost the backend cost and kept it busy for
// busy: under the digest key it is recorded at once; under every key but the identity ones
// it may give the unit its type (under the digest key, that of a transaction).
func (s *session) typeStatement(p *plan, cost, busy time.Duration, end time.Time) {
	st := &p.stmt
	if s.rec.costs == nil || !st.valid || p.op == mysql.COM_STMT_PREPARE {
		return
	}
	if s.rec.typeKey == keyDigest {
		s.rec.costs.RecordBusyAt(end, estimator.Key(st.hash), st.digest, cost, busy)
	}
	u := &s.unit.typ
	first := !u.typed
	u.typed = true
	if u.settled || s.rec.typeKey >= keyUser {
		return // identity keys need no statement text
	}
	switch {
	case (s.rec.typeKey == keyTag || s.rec.typeKey == keyTagDigest) && st.tag != nil:
		u.settled, u.tagged = true, true
		u.hash = classify.Hash(st.tag) ^ saltTag
		u.sample = append(u.sample[:0], st.tag...)
		if s.rec.typeKey == keyTagDigest {
			u.stmtHash, u.tagLen = st.hash, len(st.tag)
			u.sample = append(append(u.sample, ' '), st.digest...)
		}
	case first || st.Kind != classify.Transaction:
		// BEGIN gives the type only to a transaction with nothing else in it.
		u.settled = st.Kind != classify.Transaction
		u.hash = st.hash
		u.sample = append(u.sample[:0], st.digest...)
	}
}

// recordUnit records the cost of the unit that just ended at end under the unit-wide
// keys; under the digest key, a transaction's whole cost is recorded as well, for its
// admission.
func (s *session) recordUnit(end time.Time) {
	costs := s.rec.costs
	u := &s.unit.typ
	if costs == nil || !u.typed {
		return
	}
	key, sample := u.hash, u.sample
	switch {
	case s.rec.typeKey >= keyUser:
		key, sample = s.identityKey()
	case s.unit.txn && !u.tagged:
		s.sampleBuf = append(append(s.sampleBuf[:0], "TRANSACTION "...), u.sample...)
		key, sample = key^saltTransaction, s.sampleBuf
	case s.rec.typeKey == keyTagDigest && u.tagged:
		if s.unit.txn {
			sample = sample[:u.tagLen]
		} else {
			key = tagDigestKey(key, u.stmtHash)
		}
	case s.rec.typeKey == keyDigest:
		return // the statement is recorded already
	}
	costs.RecordBusyAt(end, estimator.Key(key), sample, s.unit.work, s.unit.busy)
}

// tagDigestKey is the type key of an autocommit statement under keyTagDigest, from its
// tag's key and its digest hash.
func tagDigestKey(tag, digest uint64) uint64 {
	return tag ^ digest*0x9e3779b97f4a7c15
}

// identityKey is the type key and sample of the session under the identity keys (user,
// schema, program_name). The sample is in the session's sample buffer.
func (s *session) identityKey() (uint64, []byte) {
	var who, name string
	switch s.rec.typeKey {
	case keyUser:
		who, name = "user ", s.user
	case keySchema:
		who, name = "schema ", s.schema
	default:
		who, name = "program_name ", s.programName
	}
	s.sampleBuf = append(append(s.sampleBuf[:0], who...), name...)
	return classify.Hash(s.sampleBuf) ^ saltIdentity, s.sampleBuf
}

// unitKey is the request type a unit that starts with st is costed by at admission: what
// recordUnit will record it under, as far as its first statement tells.
func (s *session) unitKey(st *statement, txn bool) uint64 {
	switch s.rec.typeKey {
	case keyUser, keySchema, keyProgram:
		key, _ := s.identityKey()
		return key
	case keyTag, keyTagDigest:
		if u := &s.unit.typ; u.tagged {
			return u.hash // the transaction's BEGIN carried the tag
		}
		if st.valid && st.tag != nil {
			key := classify.Hash(st.tag) ^ saltTag
			if s.rec.typeKey == keyTagDigest && !txn {
				key = tagDigestKey(key, st.hash)
			}
			return key
		}
	}
	if txn {
		return st.hash ^ saltTransaction
	}
	return st.hash
}

// unitShape is what the adaptive capacity times the unit alone by (admission.Request.Shape),
// the unit's type being key: 0 where the type is its first statement's digest already,
// else the type with that digest, so that an interaction's cheap and costly statements,
// or one user's, keep solo times of their own.
func (s *session) unitShape(st *statement, key uint64, txn bool) uint64 {
	if !st.valid {
		return 0
	}
	digest := st.hash
	if txn {
		digest ^= saltTransaction
	}
	if key == digest || s.rec.typeKey == keyTagDigest && !txn {
		return 0 // typed by the statement's digest (a tag_digest key holds it too)
	}
	return tagDigestKey(key, digest)
}

// update applies what the response said to the session's protocol state.
func (s *session) update(p *plan) {
	res := &s.res
	if res.HasStatus {
		s.inTxn = res.Status&mysql.SERVER_STATUS_IN_TRANS != 0
		s.autocommit = res.Status&mysql.SERVER_STATUS_AUTOCOMMIT != 0
	}
	if res.SchemaChanged && string(res.Schema) != s.schema {
		s.schema = string(res.Schema)
	}
	if res.Err != nil {
		return
	}
	switch p.op {
	case mysql.COM_INIT_DB:
		if s.cmd.Complete() {
			s.schema = string(s.cmd.Text())
		}
	case mysql.COM_STMT_PREPARE:
		s.rememberPrepared(p.stmt, res.StmtID)
	case mysql.COM_STMT_CLOSE:
		if c := s.cmd.Payload; len(c) >= 5 {
			delete(s.stmts, binary.LittleEndian.Uint32(c[1:]))
		}
	case mysql.COM_RESET_CONNECTION:
		clear(s.stmts)
	case mysql.COM_CHANGE_USER:
		clear(s.stmts)
		if cu, err := protocol.ParseChangeUser(s.cmd.Payload, s.wire.Capabilities); err == nil {
			s.user, s.schema = cu.User, cu.Database
		}
	}
}
