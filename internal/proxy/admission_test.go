package proxy

import (
	"strconv"
	"testing"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"

	"github.com/stretchr/testify/assert"
)

func TestSessionTag(t *testing.T) {
	cases := map[string]string{
		"SELECT 1":                          "",
		"/* gk:session=abc-123 */ SELECT 1": "abc-123",
		"SELECT /* gk:type=home gk:session=u42.s7 */ 1":  "u42.s7",
		"SELECT 1 /* gk:session= */":                     "",
		"SELECT 1 /* gk:session=x'; DROP TABLE t; -- */": "x",
		"SELECT 1 /*gk:session=a:b_c*/":                  "a:b_c",
	}
	for sql, want := range cases {
		assert.Equal(t, want, string(sessionTag([]byte(sql))), sql)
	}
}

func TestTagSetForgetsTheOldestHalfPastItsBound(t *testing.T) {
	var s tagSet
	for i := range tagSetGeneration {
		s.add([]byte(strconv.Itoa(i)))
	}
	assert.True(t, s.has([]byte("0")))
	s.add([]byte("next")) // starts a new generation; the old one is still known
	assert.True(t, s.has([]byte("0")))
	assert.True(t, s.has([]byte("next")))
	for i := range tagSetGeneration {
		s.add([]byte("g2-" + strconv.Itoa(i)))
	}
	assert.False(t, s.has([]byte("0")), "two generations back is forgotten")
	assert.True(t, s.has([]byte("next")))
	assert.False(t, s.has([]byte("never")))
}

// TestUnitShape: under the keys that gather statements of different costs into one type
// (a tag, a user), each statement keeps a shape of its own for the adaptive capacity's
// solo times; under the digest keys the type is the statement's already.
func TestUnitShape(t *testing.T) {
	shape := func(key typeKey, txn bool, sql string) (uint64, uint64) {
		r := classify.New().Classify([]byte(sql))
		s := &session{connState: connState{user: "app"}, collaborators: &collaborators{rec: &recorder{typeKey: key}}}
		st := statement{valid: true, hash: r.Hash, digest: r.Digest, tag: r.Tag, Statement: routing.Statement{Kind: r.Kind}}
		k := s.unitKey(&st, txn)
		return k, s.unitShape(&st, k, txn)
	}
	lookup := "/* gk:type=search */ SELECT * FROM item WHERE i_id = 5"
	scan := "/* gk:type=search */ SELECT * FROM item WHERE i_title LIKE '%a%'"
	for _, key := range []typeKey{keyTag, keyUser} {
		k1, s1 := shape(key, false, lookup)
		k2, s2 := shape(key, false, scan)
		assert.Equal(t, k1, k2, "key %d: one type", key)
		assert.NotZero(t, s1)
		assert.NotEqual(t, s1, s2, "key %d: a shape each", key)
		_, again := shape(key, false, "/* gk:type=search */ SELECT * FROM item WHERE i_id = 77")
		assert.Equal(t, s1, again, "key %d: other literals, the same shape", key)
		_, inTxn := shape(key, true, lookup)
		assert.NotEqual(t, s1, inTxn, "key %d: a transaction is a shape of its own", key)
	}
	for _, key := range []typeKey{keyDigest, keyTransaction} {
		_, s := shape(key, false, scan)
		assert.Zero(t, s, "key %d: the type is the digest's", key)
		_, s = shape(key, true, scan)
		assert.Zero(t, s, "key %d, in a transaction: the type is the digest's", key)
	}
	_, s := shape(keyTagDigest, false, scan)
	assert.Zero(t, s, "tag_digest: an autocommit statement's type holds its digest")
	_, s = shape(keyTagDigest, true, scan)
	assert.NotZero(t, s, "tag_digest: a transaction's type is its tag")
	_, s = shape(keyTag, false, "SELECT * FROM item WHERE i_id = 5")
	assert.Zero(t, s, "untagged: typed by the digest")
}
