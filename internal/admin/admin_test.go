package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fakeTypes struct {
	resp   TypesResponse
	resets int
}

func (f *fakeTypes) Types() TypesResponse { return f.resp }
func (f *fakeTypes) ResetTypes()          { f.resets++ }

type fakeQueue struct{ resp QueueResponse }

func (f fakeQueue) Queue() QueueResponse { return f.resp }

func get(t *testing.T, h http.Handler, method, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	body, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Code, string(body)
}

func TestTypesEndpoint(t *testing.T) {
	when := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	types := &fakeTypes{resp: TypesResponse{
		Time: when, TypeKey: "digest", Tracked: 1, MaxTypes: 1000, DefaultCostMS: 10,
		Types: []TypeStats{{Type: "00000000000000ab", Sample: "SELECT c FROM sbtest1 WHERE id = ?",
			Count: 7, TotalMS: 0.84, Rate: 2.5, MeanMS: 0.12, P95MS: 0.2, P99MS: 0.3, Share: 1, LastUpdate: &when}},
	}}
	h := Handler(Sources{Gatherer: prometheus.NewRegistry(), Ready: CheckFunc(func(context.Context) error { return nil }), Types: types})

	code, body := get(t, h, http.MethodGet, "/api/v1/types")
	require.Equal(t, http.StatusOK, code)
	var got TypesResponse
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	assert.Equal(t, types.resp.Types[0].Sample, got.Types[0].Sample)
	assert.Equal(t, 0.12, got.Types[0].MeanMS)
	assert.Contains(t, body, `"mean_ms": 0.12`, "field names are an interface")
	assert.Contains(t, body, `"total_ms": 0.84`)

	code, _ = get(t, h, http.MethodGet, "/api/v1/types/reset")
	assert.Equal(t, http.StatusMethodNotAllowed, code, "a reset must not happen on a GET")
	assert.Equal(t, 0, types.resets)
	code, _ = get(t, h, http.MethodPost, "/api/v1/types/reset")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, 1, types.resets)

	code, _ = get(t, h, http.MethodGet, "/api/v1/queue")
	assert.Equal(t, http.StatusNotFound, code, "no queue source, no endpoint")
}

func TestQueueAndReadiness(t *testing.T) {
	ready := errors.New("primary 127.0.0.1:1 unreachable")
	h := Handler(Sources{
		Gatherer: prometheus.NewRegistry(),
		Ready:    CheckFunc(func(context.Context) error { return ready }),
		Queue:    fakeQueue{QueueResponse{Enabled: false}},
	})
	code, body := get(t, h, http.MethodGet, "/api/v1/queue")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"enabled": false`)

	code, body = get(t, h, http.MethodGet, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.True(t, strings.HasPrefix(body, "not ready: primary 127.0.0.1:1 unreachable"), body)

	code, body = get(t, h, http.MethodGet, "/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)
}

type fakeSessions struct{}

func (fakeSessions) Sessions() SessionsResponse {
	return SessionsResponse{Mode: "pooled", Sessions: []SessionInfo{{ID: 7, User: "app", State: "idle", Pins: []string{"user_variable"}, Credential: "pooled"}}}
}

func (fakeSessions) Backends() BackendsResponse {
	lagTxns, lagSeconds := uint64(2), 0.25
	return BackendsResponse{Mode: "pooled", Backends: []BackendInfo{{Addr: "db:3306", Role: "primary", Open: 3, MaxOpen: 64}},
		Routing: &RoutingInfo{Consistency: "strong", Balance: "self", ClosureLoaded: true, Floor: "0-1-10", StrongRule: "per_table",
			Follower:      &BinlogFollower{Live: true, Position: "0-1-15234", LagTransactions: &lagTxns, LagSeconds: &lagSeconds, ServerID: 3057},
			PositionReads: &PositionReads{Reads: 10, Statements: 23, StatementsPerRead: 2.3}}}
}

func TestSessionsAndBackendsEndpoints(t *testing.T) {
	h := Handler(Sources{Gatherer: prometheus.NewRegistry(), Ready: CheckFunc(func(context.Context) error { return nil }),
		Sessions: fakeSessions{}, Backends: fakeSessions{}})
	code, body := get(t, h, http.MethodGet, "/api/v1/sessions")
	require.Equal(t, http.StatusOK, code)
	var s SessionsResponse
	require.NoError(t, json.Unmarshal([]byte(body), &s))
	assert.Equal(t, []string{"user_variable"}, s.Sessions[0].Pins)
	code, body = get(t, h, http.MethodGet, "/api/v1/backends")
	require.Equal(t, http.StatusOK, code)
	var b BackendsResponse
	require.NoError(t, json.Unmarshal([]byte(body), &b))
	assert.Equal(t, 64, b.Backends[0].MaxOpen)
	require.NotNil(t, b.Routing.Follower)
	assert.Equal(t, uint64(2), *b.Routing.Follower.LagTransactions)
	for _, field := range []string{`"strong_rule": "per_table"`, `"live": true`, `"refused": false`, `"position": "0-1-15234"`,
		`"lag_transactions": 2`, `"lag_seconds": 0.25`, `"server_id": 3057`,
		`"reads": 10`, `"statements": 23`, `"statements_per_read": 2.3`} {
		assert.Contains(t, body, field, "field names are an interface")
	}

	h = Handler(Sources{Gatherer: prometheus.NewRegistry(), Ready: CheckFunc(func(context.Context) error { return nil })})
	code, _ = get(t, h, http.MethodGet, "/api/v1/sessions")
	assert.Equal(t, http.StatusNotFound, code)
}

type nanBackends struct{}

func (nanBackends) Backends() BackendsResponse {
	return BackendsResponse{Backends: []BackendInfo{{Replica: &Replica{LagSeconds: math.NaN()}}}}
}

// A value JSON cannot carry fails the request with the reason, not with an empty 200.
func TestUnencodableAnswerIsAnError(t *testing.T) {
	h := Handler(Sources{Gatherer: prometheus.NewRegistry(), Ready: CheckFunc(func(context.Context) error { return nil }),
		Backends: nanBackends{}})
	code, body := get(t, h, http.MethodGet, "/api/v1/backends")
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Contains(t, body, "unsupported value: NaN")
}

func TestPprofOnlyWhenAsked(t *testing.T) {
	ready := CheckFunc(func(context.Context) error { return nil })
	off := Handler(Sources{Gatherer: prometheus.NewRegistry(), Ready: ready})
	code, _ := get(t, off, http.MethodGet, "/debug/pprof/goroutine?debug=1")
	assert.Equal(t, http.StatusNotFound, code, "profiles without admin.pprof")

	on := Handler(Sources{Gatherer: prometheus.NewRegistry(), Ready: ready, Pprof: true})
	code, body := get(t, on, http.MethodGet, "/debug/pprof/goroutine?debug=1")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "goroutine profile:")
}

type fakeCache struct {
	on   bool
	resp CacheResponse
}

func (f fakeCache) Cache() (CacheResponse, bool) { return f.resp, f.on }

type fakeRules struct{ resp RulesResponse }

func (f fakeRules) Rules() RulesResponse { return f.resp }

func TestCacheEndpoint(t *testing.T) {
	ready := CheckFunc(func(context.Context) error { return nil })
	on := fakeCache{on: true, resp: CacheResponse{
		Mode: "auto", MaxBytes: 256 << 20, Bytes: 4096, Entries: 3, Hits: 30, Misses: 10, HitRatio: 0.75,
		Fills: 12, Evictions: 2, SavedSeconds: 1.5,
		Types: []CacheTypeStats{{Type: "00000000000000ab", Sample: "SELECT title FROM book WHERE id = ?", Lookups: 40,
			Hits: 30, HitRatio: 0.75, Stale: 1, Filled: 12, SavedSeconds: 1.5, Cached: true, Why: "reused"}},
	}}
	h := Handler(Sources{Gatherer: prometheus.NewRegistry(), Ready: ready, Cache: on})
	code, body := get(t, h, http.MethodGet, "/api/v1/cache")
	require.Equal(t, http.StatusOK, code)
	var got CacheResponse
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	assert.Equal(t, on.resp.Types, got.Types)
	for _, field := range []string{`"mode": "auto"`, `"max_bytes": 268435456`, `"bytes": 4096`, `"entries": 3`,
		`"hits": 30`, `"misses": 10`, `"hit_ratio": 0.75`, `"fills": 12`, `"evictions": 2`, `"saved_seconds": 1.5`,
		`"type": "00000000000000ab"`, `"lookups": 40`, `"stale": 1`, `"filled": 12`, `"cached": true`, `"why": "reused"`} {
		assert.Contains(t, body, field, "field names are an interface")
	}
	code, _ = get(t, h, http.MethodPost, "/api/v1/cache")
	assert.Equal(t, http.StatusMethodNotAllowed, code)

	// Off: 404 with what to set, as JSON a script can read.
	h = Handler(Sources{Gatherer: prometheus.NewRegistry(), Ready: ready, Cache: fakeCache{}})
	code, body = get(t, h, http.MethodGet, "/api/v1/cache")
	require.Equal(t, http.StatusNotFound, code)
	var refusal map[string]string
	require.NoError(t, json.Unmarshal([]byte(body), &refusal), body)
	assert.Equal(t, map[string]string{"status": "error", "error": CacheOff}, refusal)
	assert.Contains(t, CacheOff, "set cache.mode")

	h = Handler(Sources{Gatherer: prometheus.NewRegistry(), Ready: ready})
	code, _ = get(t, h, http.MethodGet, "/api/v1/cache")
	assert.Equal(t, http.StatusNotFound, code, "no cache source, no endpoint")
}

func TestRulesEndpoint(t *testing.T) {
	ready := CheckFunc(func(context.Context) error { return nil })
	rules := fakeRules{RulesResponse{Rules: []RuleStats{
		{Name: "limit", Rule: "type=best_sellers => max_concurrent=3", Matches: 7, MaxConcurrent: 3, Running: 3, Waiting: 2},
		{Name: "nocache", Rule: "table=orders => cache=off", Matches: 1},
	}}}
	h := Handler(Sources{Gatherer: prometheus.NewRegistry(), Ready: ready, Rules: rules})
	code, body := get(t, h, http.MethodGet, "/api/v1/rules")
	require.Equal(t, http.StatusOK, code)
	var got RulesResponse
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	assert.Equal(t, rules.resp.Rules, got.Rules)
	for _, field := range []string{`"name": "limit"`, `"rule": "type=best_sellers => max_concurrent=3"`, `"matches": 7`,
		`"max_concurrent": 3`, `"running": 3`, `"waiting": 2`, `"max_concurrent": 0`} {
		assert.Contains(t, body, field, "field names are an interface")
	}

	// No rules: an empty list, not null.
	h = Handler(Sources{Gatherer: prometheus.NewRegistry(), Ready: ready, Rules: fakeRules{RulesResponse{Rules: []RuleStats{}}}})
	_, body = get(t, h, http.MethodGet, "/api/v1/rules")
	assert.Contains(t, body, `"rules": []`)

	h = Handler(Sources{Gatherer: prometheus.NewRegistry(), Ready: ready})
	code, _ = get(t, h, http.MethodGet, "/api/v1/rules")
	assert.Equal(t, http.StatusNotFound, code, "no rules source, no endpoint")
}
