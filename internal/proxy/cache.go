package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/cache"
	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
	"github.com/gatekeeperdb/gatekeeper/internal/rules"
)

// The result cache answers a read from memory, between classification and admission: a
// hit takes no admission charge, no backend and no lease. A result is kept with the
// version of the tables it read (routing.Policy.Fresh); a strong hit is served only when
// no write to those tables, from any writer, was committed between the result's version
// and the read's arrival (docs/cache.md).

// refusal is why a read is not cached: the reason label of
// gatekeeper_cache_refusals_total.
type refusal uint8

const (
	refusedNone refusal = iota
	refusedTransaction
	refusedVolatile
	refusedState
	refusedUnsure
	refusedSystemSchema
	refusedPinned
	refusedStatement
	refusedRule
	refusedMode
	refusedUnversioned
	refusedError
	refusedWarnings
	refusedTooLarge
	refusedStateChanged
	numRefusals
)

var refusalNames = [numRefusals]string{"", "in_transaction", "volatile", "session_state", "unsure", "system_schema",
	"session_pinned", "statement", "rule", "mode", "unversioned", "error", "warnings", "too_large", "state_changed"}

func (r refusal) String() string { return refusalNames[r] }

// resultCache is the server's result cache: the store, where versions come from, and what
// it counts.
type resultCache struct {
	store *cache.Store
	// versions tells the version of what a read sees.
	versions *routing.Policy
	// eventual serves hits without reading the primary's position (cache.consistency).
	eventual bool
	// wait bounds how long a lookup waits for the primary's position and the follower, or
	// for a fill of the same statement (nanoseconds); maxEntry is the largest result kept
	// (bytes). A reload sets both.
	wait, maxEntry atomic.Int64
	// auto fills the results of the types whose results are reused (cache.mode auto);
	// otherwise only what a rule asks for.
	auto bool
	m    *cacheMetrics
	// types are what the cache did per statement type, by digest hash (*typeCache).
	types sync.Map
}

// cacheFill is a command's part in the cache: the key it was looked up by and, when it
// fills the entry, the fill and the version its result sees.
type cacheFill struct {
	key   []byte
	fill  *cache.Fill
	stamp replicas.Pos
	ttl   time.Duration
	typ   *typeCache
}

// lookup is the cache's step in the statement path: a read that may be cached is answered
// from memory when a fresh result is there, or becomes the fill of its key. hit tells
// that the command was answered; keep that the session goes on.
func (s *session) lookup(p *plan) (hit, keep bool) {
	c := s.cache
	p.cache.fill = nil
	if r := s.cacheable(p); r != refusedNone {
		if r != refusedStatement {
			c.m.refused[r].Inc()
		}
		return false, true
	}
	key, ok := s.cacheKey(p)
	if !ok {
		c.m.refused[refusedStatement].Inc()
		return false, true
	}
	t := c.typeOf(p)
	t.lookups.Add(1)
	p.cache.typ = t
	if e := c.store.Get(key, time.Now()); e != nil {
		switch fresh, known := s.fresh(p, e); {
		case fresh:
			t.hits.Add(1)
			return true, s.serveHit(p, e)
		case known:
			c.store.Remove(key)
			t.stale.Add(1)
			c.m.stale.Inc()
		}
	}
	if !c.fills(p, t) {
		c.m.misses.Inc()
		return false, true
	}
	f, leader := c.store.Fill(key)
	if !leader {
		ctx, cancel := context.WithTimeout(s.ctx, time.Duration(c.wait.Load()))
		e, _ := f.Wait(ctx)
		cancel()
		if fresh, _ := s.fresh(p, e); e != nil && fresh {
			c.m.joined.Inc()
			t.hits.Add(1)
			return true, s.serveHit(p, e)
		}
		c.m.misses.Inc()
		return false, true // runs on its own, filling nothing
	}
	c.m.misses.Inc()
	p.cache.fill, p.cache.ttl = f, p.rules.verdict.TTL
	return false, true
}

// fills tells whether a miss of the command's read fills the cache: a query rule says so,
// else cache.mode (rules: only what a rule asks for; auto: the types whose results are
// reused).
func (c *resultCache) fills(p *plan, t *typeCache) bool {
	switch p.rules.verdict.Cache {
	case rules.CacheOn:
		return true
	case rules.CacheOff:
		return false
	}
	worth, _ := t.worth()
	return c.auto && worth
}

// cacheable tells why the command's read may not be cached, or refusedNone.
func (s *session) cacheable(p *plan) refusal {
	st := &p.stmt
	switch {
	case p.op != mysql.COM_QUERY && p.op != mysql.COM_STMT_EXECUTE, !st.valid, st.Kind != classify.Read,
		!s.cmd.Complete(), st.Tables == nil:
		return refusedStatement // not a read: not counted
	case s.inTxn || !s.autocommit || s.unit.open:
		return refusedTransaction
	case st.volatile:
		return refusedVolatile
	case st.Uses != 0:
		return refusedState
	case st.Opaque || st.Multi:
		return refusedUnsure
	case s.link.held():
		return refusedPinned
	case p.rules.verdict.Cache == rules.CacheOff:
		return refusedRule
	case p.rules.verdict.Cache != rules.CacheOn && !s.cache.auto:
		return refusedMode
	}
	tables, unknown := st.Tables.ReadTables()
	if unknown {
		return refusedUnsure
	}
	for _, t := range tables {
		if systemSchema(t) {
			return refusedSystemSchema
		}
	}
	if !s.cache.versions.Follows() {
		return refusedUnversioned
	}
	return refusedNone
}

// systemSchemas are the schemas whose tables change without a write in the binary log.
var systemSchemas = [][]byte{[]byte("information_schema."), []byte("performance_schema."), []byte("mysql."), []byte("sys.")}

func systemSchema(table []byte) bool {
	for _, s := range systemSchemas {
		if bytes.HasPrefix(table, s) {
			return true
		}
	}
	return false
}

// cacheKey builds the key of the command's result: who asks and in what session state
// (the link's scope: user, character set, schema, session variables, the capabilities
// that shape the bytes), then the statement: its text, or for an execution the prepared
// text and the bound values. ok is false when the link cannot tell the scope.
func (s *session) cacheKey(p *plan) (key []byte, ok bool) {
	k := append(p.cache.key[:0], p.op)
	k = append(k, s.user...)
	k = append(k, 0)
	if k, ok = s.link.cacheScope(p, k); !ok {
		return nil, false
	}
	if p.op == mysql.COM_QUERY {
		k = append(k, s.cmd.Text()...)
	}
	p.cache.key = k
	return k, true
}

// fresh tells whether entry e (nil: none) may answer the command's read: with strong
// consistency, the version of the tables it read, with every write committed before the
// read arrived, is one the entry's result saw. An eventual read of an entry a rule gave a
// time to live takes it until it expires, whatever was written since (TTL caching). known
// is false when the version could not be told in time: the entry may still be fresh.
func (s *session) fresh(p *plan, e *cache.Entry) (fresh, known bool) {
	if e == nil {
		return false, false
	}
	c := s.cache
	mode := s.routes.ModeOf(p.stmt.Tables, p.rules.mode)
	if mode == replicas.Eventual && !e.Expires.IsZero() {
		return true, true
	}
	seen, _ := e.Stamp.(replicas.Pos)
	// What the follower recorded already may tell it stale, without the position read.
	var ok bool
	p.cache.stamp, ok = c.versions.Fresh(s.ctx, p.stmt.Tables, false, 0, p.cache.stamp)
	if ok && !seen.Covers(p.cache.stamp) {
		return false, true
	}
	if ok && (c.eventual || mode == replicas.Eventual) {
		return true, true
	}
	if ok {
		p.cache.stamp, ok = c.versions.Fresh(s.ctx, p.stmt.Tables, true, time.Duration(c.wait.Load()), p.cache.stamp)
	}
	if !ok {
		c.m.unvouched.Inc()
		return false, false
	}
	return seen.Covers(p.cache.stamp), true
}

// serveHit answers the command with entry e's result.
func (s *session) serveHit(p *plan, e *cache.Entry) bool {
	c := s.cache
	c.m.hits.Inc() // counted before the client has its answer
	c.m.saved.Add(e.Cost.Seconds())
	p.cache.typ.savedNanos.Add(int64(e.Cost))
	if err := s.client.WriteFrames(e.Response); err != nil {
		return false
	}
	if err := s.client.Flush(); err != nil {
		return false
	}
	s.countBytes()
	s.relayedAt = time.Now()
	return true
}

// startFill readies the command that fills its key: the version its result will have seen,
// taken before it runs, and the capture of what it answers. A read routed to a replica
// under a consistency weaker than strong fills nothing: its result may be older than any
// version the proxy can name.
func (s *session) startFill(p *plan) {
	f := &p.cache
	if f.fill == nil {
		return
	}
	switch {
	case p.route.Replica() && p.route.Mode == replicas.Strong:
		f.stamp = append(f.stamp[:0], p.route.Need...)
	case p.route.Replica():
		s.endFill(p, nil)
		return
	default:
		// On the primary the result sees every write the version map holds now.
		var ok bool
		if f.stamp, ok = s.cache.versions.Fresh(s.ctx, p.stmt.Tables, false, 0, f.stamp); !ok {
			s.endFill(p, nil)
			return
		}
	}
	s.capture.Start(int(s.cache.maxEntry.Load()))
	s.client.SetCapture(&s.capture)
}

// finishFill stores the result the command's fill relayed, when it may be cached; it runs
// once the response is read whole, before its end is flushed to the client.
func (s *session) finishFill(p *plan) {
	f := &p.cache
	if f.fill == nil {
		return
	}
	s.client.SetCapture(nil)
	if r := s.fillRefusal(p); r != refusedNone {
		s.cache.m.refused[r].Inc()
		s.endFill(p, nil)
		return
	}
	tables, _ := p.stmt.Tables.ReadTables()
	now := time.Now()
	e := &cache.Entry{Response: bytes.Clone(s.capture.Buf), Stamp: append(replicas.Pos(nil), f.stamp...),
		Cost: now.Sub(p.start), Type: p.stmt.hash, Filled: now}
	e.Tables = make([]string, len(tables))
	for i, t := range tables {
		e.Tables[i] = string(t)
	}
	if f.ttl > 0 {
		e.Expires = now.Add(f.ttl)
	}
	if s.cache.store.Put(f.key, e) {
		f.typ.filled.Add(1)
	} else {
		s.cache.m.refused[refusedTooLarge].Inc()
	}
	s.endFill(p, e) // those waiting get it, stored or not
}

// fillRefusal tells why the response just relayed may not be cached, or refusedNone.
func (s *session) fillRefusal(p *plan) refusal {
	res := &s.res
	switch {
	case res.Err != nil:
		return refusedError
	case s.capture.Over:
		return refusedTooLarge
	case res.Warnings > 0:
		// SHOW WARNINGS after a hit would tell of another statement.
		return refusedWarnings
	case res.StateChanged || res.Cursor || s.inTxn:
		return refusedStateChanged
	case !res.HasStatus || res.Status&(mysql.SERVER_STATUS_IN_TRANS|mysql.SERVER_MORE_RESULTS_EXISTS) != 0:
		return refusedStateChanged
	}
	return refusedNone
}

// endFill ends the command's fill with e (nil: nothing was cached; those waiting run on
// their own).
func (s *session) endFill(p *plan, e *cache.Entry) {
	if p.cache.fill == nil {
		return
	}
	s.client.SetCapture(nil)
	p.cache.fill.Done(e)
	p.cache.fill = nil
}

// executeScope appends to k what identifies an execution of prepared statement text with
// params parameters, whose command is payload: the text, then the execution's flags and
// bound values. ok is false for an execution that opens a cursor, or whose parameter types
// were sent with an earlier one.
func executeScope(k, text []byte, params int, payload []byte) ([]byte, bool) {
	if len(payload) < 10 || payload[5] != 0 {
		return k, false
	}
	if params > 0 {
		bound := 10 + (params+7)/8
		if len(payload) <= bound || payload[bound] != 1 {
			return k, false
		}
	}
	k = binary.LittleEndian.AppendUint32(k, uint32(len(text)))
	k = append(k, text...)
	return append(k, payload[5:]...), true
}

// typeCache is what the cache did for one statement type (digest), for /api/v1/cache and
// for cache.mode auto.
type typeCache struct {
	sample                       string
	lookups, hits, stale, filled atomic.Uint64
	savedNanos                   atomic.Int64
}

// Auto mode's rule: a type is cached while its results are reused. After autoProbation
// lookups, a type whose hit ratio is under autoMinHits stops filling; it is tried again
// every autoRetry lookups, since what a workload reads changes.
const (
	autoProbation = 200
	autoMinHits   = 0.05
	autoRetry     = 10000
)

// typeOf returns the statistics of the command's statement type, adding them.
func (c *resultCache) typeOf(p *plan) *typeCache {
	if t, ok := c.types.Load(p.stmt.hash); ok {
		return t.(*typeCache)
	}
	t, _ := c.types.LoadOrStore(p.stmt.hash, &typeCache{sample: string(p.stmt.digest[:min(len(p.stmt.digest), 1024)])})
	return t.(*typeCache)
}

// worth tells whether auto mode fills results of type t, and why.
func (t *typeCache) worth() (bool, string) {
	n, h := t.lookups.Load(), t.hits.Load()
	switch {
	case n < autoProbation:
		return true, "probation: reuse not known yet"
	case float64(h) >= autoMinHits*float64(n):
		return true, "reused"
	case n%autoRetry < autoProbation:
		return true, "tried again"
	}
	return false, "not reused: hit ratio under 5%"
}
