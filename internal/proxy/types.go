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
	// keyUser, keySchema, keyProgram: a unit is typed by who runs it.
	keyUser
	keySchema
	keyProgram
)

var typeKeys = map[string]typeKey{
	"digest": keyDigest, "transaction": keyTransaction, "tag": keyTag,
	"user": keyUser, "schema": keySchema, "program_name": keyProgram,
}

// Keys of types that are not digests are salted, so that a tag or a user never shares a key
// with a statement whose digest happens to read the same.
const (
	saltTransaction = 0x5452414e53414354 // "TRANSACT"
	saltTag         = 0x0000000074616721 // "tag!"
	saltIdentity    = 0x4944454e54495459 // "IDENTITY"
)

// statement is what the classifier found in the statement of the current command.
type statement struct {
	valid  bool
	hash   uint64
	kind   classify.Kind
	digest []byte // valid until the next command
	tag    []byte // valid until the next command
}

// prepared is a prepared statement, remembered so that each execution is typed by its text.
type prepared struct {
	hash   uint64
	kind   classify.Kind
	digest []byte
	tag    []byte
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
	// sample is the type's sample text; a buffer the session keeps.
	sample []byte
}

// classifyCommand classifies the statement the current command carries, if it carries one.
func (s *session) classifyCommand(cmd byte) {
	s.stmt.valid = false
	switch cmd {
	case mysql.COM_QUERY, mysql.COM_STMT_PREPARE:
		r := s.cls.Classify(s.cmd.Text())
		m := s.srv.metrics
		m.classified[r.Kind].Inc()
		if r.Unsure {
			m.unsure.Inc()
		}
		s.stmt = statement{valid: true, hash: r.Hash, kind: r.Kind, digest: r.Digest, tag: r.Tag}
	case mysql.COM_STMT_EXECUTE:
		if p := s.cmd.Payload; len(p) >= 5 {
			if ps, ok := s.stmts[binary.LittleEndian.Uint32(p[1:])]; ok {
				s.stmt = statement{valid: true, hash: ps.hash, kind: ps.kind, digest: ps.digest, tag: ps.tag}
			}
		}
	}
}

// rememberPrepared keeps the classification of a statement the backend just prepared.
func (s *session) rememberPrepared(id uint32) {
	ps := prepared{}
	if s.stmt.valid {
		ps = prepared{hash: s.stmt.hash, kind: s.stmt.kind, digest: bytes.Clone(s.stmt.digest)}
		if s.stmt.tag != nil {
			ps.tag = bytes.Clone(s.stmt.tag)
		}
	}
	s.stmts[id] = ps
}

// typeStatement accounts for a statement that took elapsed on the backend: under the digest
// key it is recorded at once; under the others it may give the unit its type.
func (s *session) typeStatement(cmd byte, elapsed time.Duration) {
	if s.srv.costs == nil || !s.stmt.valid || cmd == mysql.COM_STMT_PREPARE {
		return
	}
	st := &s.stmt
	if s.srv.typeKey == keyDigest {
		s.srv.costs.Record(estimator.Key(st.hash), st.digest, elapsed)
		return
	}
	u := &s.unit.typ
	first := !u.typed
	u.typed = true
	if u.settled {
		return
	}
	switch {
	case s.srv.typeKey == keyTag && st.tag != nil:
		u.settled, u.tagged = true, true
		u.hash = classify.Hash(st.tag) ^ saltTag
		u.sample = append(u.sample[:0], st.tag...)
	case first || st.kind != classify.Transaction:
		// BEGIN gives the type only to a transaction with nothing else in it.
		u.settled = st.kind != classify.Transaction
		u.hash = st.hash
		u.sample = append(u.sample[:0], st.digest...)
	}
}

// recordUnit records the cost of the unit that just ended under the unit-wide keys.
func (s *session) recordUnit() {
	costs := s.srv.costs
	u := &s.unit.typ
	if costs == nil || !u.typed {
		return
	}
	var who string
	switch s.srv.typeKey {
	case keyDigest:
		return
	case keyUser:
		who = "user "
		u.sample = append(append(u.sample[:0], who...), s.user...)
	case keySchema:
		who = "schema "
		u.sample = append(append(u.sample[:0], who...), s.schema...)
	case keyProgram:
		who = "program_name "
		u.sample = append(append(u.sample[:0], who...), s.programName...)
	}
	key, sample := u.hash, u.sample
	switch {
	case who != "":
		key = classify.Hash(u.sample) ^ saltIdentity
	case s.unit.txn && !u.tagged:
		s.sampleBuf = append(append(s.sampleBuf[:0], "TRANSACTION "...), u.sample...)
		key, sample = key^saltTransaction, s.sampleBuf
	}
	costs.Record(estimator.Key(key), sample, s.unit.busy)
}
