package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/proxy"
	"github.com/gatekeeperdb/gatekeeper/internal/rules"
	"github.com/gatekeeperdb/gatekeeper/internal/wiring"
)

func TestCacheResponse(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	v := proxy.CacheView{Mode: "auto", MaxBytes: 1 << 20, Bytes: 5000, Entries: 4, Hits: 30, Misses: 10,
		Fills: 9, Evictions: 1, Saved: 1500 * time.Millisecond,
		Types: []proxy.CacheTypeView{
			{Type: 0xab, Sample: "SELECT title FROM book WHERE id = ?", Lookups: 40, Hits: 30, Stale: 2, Filled: 9,
				Saved: 1500 * time.Millisecond, Cached: true, Why: "reused"},
			{Type: 0xfedcba9876543210, Sample: "SELECT NOW()", Cached: true, Why: "probation: reuse not known yet"},
		}}
	want := admin.CacheResponse{Time: now, Mode: "auto", MaxBytes: 1 << 20, Bytes: 5000, Entries: 4,
		Hits: 30, Misses: 10, HitRatio: 0.75, Fills: 9, Evictions: 1, SavedSeconds: 1.5,
		Types: []admin.CacheTypeStats{
			{Type: "00000000000000ab", Sample: "SELECT title FROM book WHERE id = ?", Lookups: 40, Hits: 30, HitRatio: 0.75,
				Stale: 2, Filled: 9, SavedSeconds: 1.5, Cached: true, Why: "reused"},
			{Type: "fedcba9876543210", Sample: "SELECT NOW()", Cached: true, Why: "probation: reuse not known yet"},
		}}
	assert.Equal(t, want, cacheResponse(now, v))

	empty := cacheResponse(now, proxy.CacheView{Mode: "rules"})
	assert.Equal(t, 0.0, empty.HitRatio, "no lookups yet: a ratio of 0, not NaN")
	assert.NotNil(t, empty.Types, "no types: an empty list, not null")
}

func TestRulesResponse(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	got := rulesResponse(now, []rules.RuleStats{
		{Name: "limit", Rule: "type=best_sellers => max_concurrent=3", Matches: 7, MaxConcurrent: 3, Running: 3, Waiting: 1},
		{Name: "nocache", Rule: "table=orders => cache=off", Matches: 2},
	})
	assert.Equal(t, admin.RulesResponse{Time: now, Rules: []admin.RuleStats{
		{Name: "limit", Rule: "type=best_sellers => max_concurrent=3", Matches: 7, MaxConcurrent: 3, Running: 3, Waiting: 1},
		{Name: "nocache", Rule: "table=orders => cache=off", Matches: 2},
	}}, got)
	assert.Equal(t, []admin.RuleStats{}, rulesResponse(now, nil).Rules, "no rules: an empty list, not null")
}

// TestCacheAndRulesSources reads a proxy built as serve builds it: the cache is off unless
// cache.mode and pooled mode turn it on, and the rules are those configured.
func TestCacheAndRulesSources(t *testing.T) {
	build := func(cfg config.Config) *proxy.Server {
		t.Helper()
		require.NoError(t, cfg.Validate())
		srv, err := wiring.Proxy(cfg, nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
		require.NoError(t, err)
		return srv
	}
	off := build(config.Default())
	_, ok := cacheSource{off}.Cache()
	assert.False(t, ok, "cache.mode off")
	assert.Equal(t, []admin.RuleStats{}, rulesSource{off}.Rules().Rules, "no rules: an empty list, not null")

	cfg := config.Default()
	cfg.Mode = config.ModePooled
	cfg.Monitor.User = "monitor"
	cfg.Auth.FromBackend = true
	cfg.Cache.Mode = config.CacheAuto
	cfg.Rules = []config.Rule{
		{Name: "books", Match: config.RuleMatch{Table: "book"}, Cache: "10s"},
		{Name: "reports", Match: config.RuleMatch{Type: "report"}, MaxConcurrent: 4},
	}
	on := build(cfg)
	c, ok := cacheSource{on}.Cache()
	require.True(t, ok)
	assert.Equal(t, "auto", c.Mode)
	assert.Equal(t, int64(cfg.Cache.MaxBytes), c.MaxBytes)
	assert.NotNil(t, c.Types)
	rs := rulesSource{on}.Rules().Rules
	require.Len(t, rs, 2)
	assert.Equal(t, "books", rs[0].Name)
	assert.Contains(t, rs[0].Rule, "book")
	assert.Equal(t, admin.RuleStats{Name: "reports", Rule: rs[1].Rule, MaxConcurrent: 4}, rs[1], "nothing ran yet")
	assert.Contains(t, rs[1].Rule, "max_concurrent=4")
}
