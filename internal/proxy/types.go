package proxy

import (
	"bytes"
	"encoding/binary"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
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
// one prepared earlier (kept so that each execution is typed by its text).
type statement struct {
	valid  bool
	hash   uint64
	kind   classify.Kind
	digest []byte // of the current command: valid until the next command
	tag    []byte
	// uses is what the statement does with connection state; multi that the text holds
	// several statements; opaque that it may do more than the classifier can see (a
	// CALL, several statements, a statement it is unsure of).
	uses   classify.Uses
	multi  bool
	opaque bool
	// startsTxn: BEGIN, START TRANSACTION and the like; readOnly and readWrite: START
	// TRANSACTION named its access mode.
	startsTxn, readOnly, readWrite bool
	// A KILL of a thread id, and SELECT CONNECTION_ID() alone, with its column name
	// (valid until the next command): what pooled mode answers in the proxy.
	killID     uint64
	killQuery  bool
	connIDOnly bool
	connIDName []byte
	// tables are the statement's tables, kept when reads are routed: the session's buffer
	// for a text statement, a copy of its own for a prepared one.
	tables *tableSet
}

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

// classifyCommand classifies the statement the current command carries, if it carries one.
func (s *session) classifyCommand(cmd byte) {
	s.stmt.valid = false
	switch cmd {
	case mysql.COM_QUERY, mysql.COM_STMT_PREPARE:
		r := s.cls.Classify(s.cmd.Text())
		s.hot.classified[r.Kind].add(1)
		if r.Unsure {
			s.hot.unsure.add(1)
		}
		s.stmt = statement{valid: true, hash: r.Hash, kind: r.Kind, digest: r.Digest, tag: r.Tag,
			uses: r.Uses, multi: r.MultiStatement, opaque: r.Unsure || r.MultiStatement || r.Kind == classify.Write && r.UnknownTables,
			killID: r.KillID, killQuery: r.KillQuery, startsTxn: r.TxnStart, readOnly: r.TxnReadOnly, readWrite: r.TxnReadWrite,
			connIDOnly: r.ConnectionIDOnly, connIDName: r.ConnectionIDName}
		s.noteTables(r)
	case mysql.COM_STMT_EXECUTE:
		if p := s.cmd.Payload; len(p) >= 5 {
			s.stmt = s.stmts[binary.LittleEndian.Uint32(p[1:])]
		}
	}
}

// rememberPrepared keeps the classification of a statement the backend just prepared.
func (s *session) rememberPrepared(id uint32) {
	ps := s.stmt
	ps.digest, ps.tag = bytes.Clone(ps.digest), bytes.Clone(ps.tag)
	ps.connIDName, ps.connIDOnly, ps.killID = nil, false, 0
	if ps.tables != nil {
		ps.tables = ps.tables.clone()
	}
	s.stmts[id] = ps
}

// typeStatement accounts for a statement that cost the backend cost and kept it busy for
// busy: under the digest key it is recorded at once; under every key but the identity ones
// it may give the unit its type (under the digest key, that of a transaction).
func (s *session) typeStatement(cmd byte, cost, busy time.Duration, end time.Time) {
	if s.rec.costs == nil || !s.stmt.valid || cmd == mysql.COM_STMT_PREPARE {
		return
	}
	st := &s.stmt
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
	case first || st.kind != classify.Transaction:
		// BEGIN gives the type only to a transaction with nothing else in it.
		u.settled = st.kind != classify.Transaction
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
