package proxy

import (
	"sort"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/cache"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/rules"
)

// SetRules puts rules in force for every statement from now on (a reload); nil: none.
func (s *Server) SetRules(set *rules.Set) { s.rules.Store(set) }

// Rules returns the query rules in force, for a reload to compile the next ones from and
// for /api/v1/rules.
func (s *Server) Rules() *rules.Set { return s.rules.Load() }

// ReconfigureCache applies cache.max_bytes, max_entry_bytes and wait while running; the
// other cache keys need a restart.
func (s *Server) ReconfigureCache(c config.Cache) {
	rc := s.cache
	if rc == nil {
		return
	}
	policy, _ := cache.ParsePolicy(s.cfg.Cache.Replacement) // validated at start
	rc.store.Reconfigure(cache.Config{MaxBytes: int64(c.MaxBytes), MaxEntryBytes: int(c.MaxEntryBytes), Policy: policy})
	rc.maxEntry.Store(int64(c.MaxEntryBytes))
	rc.wait.Store(int64(c.Wait))
}

// CacheView is what the result cache holds and did, for /api/v1/cache and top.
type CacheView struct {
	Mode                           string
	MaxBytes                       int64
	Bytes                          int64
	Entries                        int
	Hits, Misses, Fills, Evictions uint64
	Saved                          time.Duration
	Types                          []CacheTypeView
}

// CacheTypeView is what the cache did for one statement type.
type CacheTypeView struct {
	Type                         uint64
	Sample                       string
	Lookups, Hits, Stale, Filled uint64
	Saved                        time.Duration
	Cached                       bool
	Why                          string
}

// Cache returns a snapshot of the result cache; ok is false when it is off.
func (s *Server) Cache() (v CacheView, ok bool) {
	c := s.cache
	if c == nil {
		return v, false
	}
	st := c.store.Stats()
	v = CacheView{Mode: s.cfg.Cache.Mode, MaxBytes: int64(s.cfg.Cache.MaxBytes), Bytes: st.Bytes, Entries: st.Entries,
		Fills: st.Puts, Evictions: st.Evictions}
	c.types.Range(func(k, val any) bool {
		t := val.(*typeCache)
		tv := CacheTypeView{Type: k.(uint64), Sample: t.sample, Lookups: t.lookups.Load(), Hits: t.hits.Load(),
			Stale: t.stale.Load(), Filled: t.filled.Load(), Saved: time.Duration(t.savedNanos.Load())}
		if c.auto {
			tv.Cached, tv.Why = t.worth()
		} else {
			tv.Cached, tv.Why = true, "cache.mode rules: what a rule asks for"
		}
		v.Hits += tv.Hits
		v.Misses += tv.Lookups - tv.Hits
		v.Saved += tv.Saved
		v.Types = append(v.Types, tv)
		return true
	})
	sort.Slice(v.Types, func(i, j int) bool { return v.Types[i].Saved > v.Types[j].Saved })
	return v, true
}
