package routing

import (
	"bytes"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// Tables is what routing keeps of a statement's tables: the keys of the tables it reads
// and writes, whether others may hide behind them, and its routing hints.
type Tables struct {
	read, written             [][]byte
	readUnknown, writeUnknown bool
	// consistency is the statement's /* gk:consistency=... */; -1: none given.
	consistency int8
	// sessionKey is its /* gk:session=KEY */.
	sessionKey []byte
}

// Fill sets t from a classifier's result, reusing t's buffers; schema qualifies
// unqualified names.
func (t *Tables) Fill(r *classify.Result, schema string) {
	t.read = keysOf(t.read[:0], r.Read, schema)
	t.written = keysOf(t.written[:0], r.Written, schema)
	// A function the classifier does not know may read or write any table.
	t.readUnknown = r.Unsure || r.UnknownTables || r.MultiStatement || r.CallsFunction
	t.writeUnknown = t.readUnknown || r.Kind == classify.DDL
	t.consistency = -1
	if r.Consistency != nil {
		if c, err := replicas.ParseConsistency(string(r.Consistency)); err == nil {
			t.consistency = int8(c)
		}
	}
	t.sessionKey = append(t.sessionKey[:0], r.SessionKey...)
}

// Clone returns a copy of t that owns its buffers, for a prepared statement.
func (t *Tables) Clone() *Tables {
	c := &Tables{readUnknown: t.readUnknown, writeUnknown: t.writeUnknown, consistency: t.consistency,
		sessionKey: bytes.Clone(t.sessionKey)}
	for _, k := range t.read {
		c.read = append(c.read, bytes.Clone(k))
	}
	for _, k := range t.written {
		c.written = append(c.written, bytes.Clone(k))
	}
	return c
}

// keysOf appends the keys of tables to dst, reusing its buffers.
func keysOf(dst [][]byte, tables []classify.Table, schema string) [][]byte {
	for _, tb := range tables {
		s := tb.Schema
		if len(s) == 0 {
			s = []byte(schema)
		}
		dst = grow(dst)
		i := len(dst) - 1
		dst[i] = replicas.TableKey(dst[i][:0], s, tb.Name)
	}
	return dst
}

// appendKeys appends copies of keys to dst, reusing its buffers.
func appendKeys(dst, keys [][]byte) [][]byte {
	for _, k := range keys {
		dst = grow(dst)
		i := len(dst) - 1
		dst[i] = append(dst[i][:0], k...)
	}
	return dst
}

// grow extends dst by one buffer, reusing the one past its end when there is one.
func grow(dst [][]byte) [][]byte {
	if len(dst) < cap(dst) {
		return dst[:len(dst)+1]
	}
	return append(dst, nil)
}
