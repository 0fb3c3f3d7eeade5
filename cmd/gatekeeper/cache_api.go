package main

import (
	"fmt"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/proxy"
	"github.com/gatekeeperdb/gatekeeper/internal/rules"
)

// cacheSource serves /api/v1/cache from the proxy's result cache.
type cacheSource struct{ srv *proxy.Server }

func (s cacheSource) Cache() (admin.CacheResponse, bool) {
	v, ok := s.srv.Cache()
	if !ok {
		return admin.CacheResponse{}, false
	}
	return cacheResponse(time.Now(), v), true
}

// cacheResponse is v as the admin API shows it.
func cacheResponse(now time.Time, v proxy.CacheView) admin.CacheResponse {
	r := admin.CacheResponse{
		Time: now, Mode: v.Mode, MaxBytes: v.MaxBytes, Bytes: v.Bytes, Entries: v.Entries,
		Hits: v.Hits, Misses: v.Misses, HitRatio: ratio(v.Hits, v.Hits+v.Misses),
		Fills: v.Fills, Evictions: v.Evictions, SavedSeconds: v.Saved.Seconds(),
		Types: make([]admin.CacheTypeStats, 0, len(v.Types)),
	}
	for _, t := range v.Types { // sorted by saved time already
		r.Types = append(r.Types, admin.CacheTypeStats{
			Type: fmt.Sprintf("%016x", t.Type), Sample: t.Sample,
			Lookups: t.Lookups, Hits: t.Hits, HitRatio: ratio(t.Hits, t.Lookups),
			Stale: t.Stale, Filled: t.Filled, SavedSeconds: t.Saved.Seconds(), Cached: t.Cached, Why: t.Why,
		})
	}
	return r
}

// ratio is n over of, 0 when of is.
func ratio(n, of uint64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// rulesSource serves /api/v1/rules from the query rules in force.
type rulesSource struct{ srv *proxy.Server }

func (s rulesSource) Rules() admin.RulesResponse {
	return rulesResponse(time.Now(), s.srv.Rules().Snapshot())
}

// rulesResponse is rs as the admin API shows them: an empty list, not null, without rules.
func rulesResponse(now time.Time, rs []rules.RuleStats) admin.RulesResponse {
	r := admin.RulesResponse{Time: now, Rules: make([]admin.RuleStats, 0, len(rs))}
	for _, rule := range rs {
		r.Rules = append(r.Rules, admin.RuleStats{Name: rule.Name, Rule: rule.Rule, Matches: rule.Matches,
			MaxConcurrent: rule.MaxConcurrent, Running: rule.Running, Waiting: rule.Waiting})
	}
	return r
}

var (
	_ admin.Cache = cacheSource{}
	_ admin.Rules = rulesSource{}
)
