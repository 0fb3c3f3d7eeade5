package top

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/fleet"
)

func frame() *Frame {
	return &Frame{
		Types: admin.TypesResponse{
			Time: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC), TypeKey: "digest", Tracked: 3, MaxTypes: 1000,
			Types: []admin.TypeStats{
				{Type: "00000000000000a1", Sample: "SELECT c FROM sbtest1 WHERE id = ?", Count: 9000, Rate: 900, MeanMS: 0.1, P50MS: 0.09, P95MS: 0.2, P99MS: 0.4, Share: 0.30},
				{Type: "00000000000000b2", Sample: "SELECT DISTINCT c\n FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c", Count: 100, Rate: 10, MeanMS: 20, P50MS: 18, P95MS: 40, P99MS: 60, Share: 0.65},
				{Type: "other", Count: 5, Rate: 0.5, MeanMS: 3, Share: 0.05},
			},
		},
	}
}

func render(t *testing.T, v View, f *Frame) []string {
	t.Helper()
	var b bytes.Buffer
	v.Render(&b, f)
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

func TestRenderSorts(t *testing.T) {
	lines := render(t, View{Source: "db1:6080", Sort: "share"}, frame())
	require.Len(t, lines, 8)
	assert.Contains(t, lines[0], "db1:6080")
	assert.Contains(t, lines[0], "type_key digest - 3 types tracked (max 1000)")
	assert.Equal(t, "admission: off (every unit goes straight to the database)", lines[1])
	assert.Contains(t, lines[4], "RATE/s")
	assert.Contains(t, lines[5], "65.0%  SELECT DISTINCT c FROM sbtest1", "newlines in a sample are folded")
	assert.Contains(t, lines[6], "30.0%  SELECT c FROM sbtest1 WHERE id = ?")
	assert.Contains(t, lines[7], "(other: types beyond estimator.max_types)")

	lines = render(t, View{Sort: "rate", Limit: 1}, frame())
	assert.Contains(t, lines[5], "900.0")
	assert.Equal(t, "(2 more)", lines[6])

	lines = render(t, View{Sort: "p99", Width: 60}, frame())
	for _, l := range lines {
		assert.LessOrEqual(t, len(l), 60)
	}
	assert.Contains(t, lines[5], "60.000")
}

func TestRenderQueue(t *testing.T) {
	f := frame()
	f.Queue = &admin.QueueResponse{Enabled: true, Discipline: "sjf", Queued: 3, InFlight: 7, LoadMS: 450, CapacityMS: 500, Admitted: 10, Rejected: 1, TimedOut: 2}
	lines := render(t, View{Sort: "share"}, f)
	assert.Equal(t, "admission: sjf - 3 waiting, 7 running - load 450.0 of 500.0 ms (90%) - admitted 10, rejected 1, timed out 2", lines[1])
	f.Queue.Adaptive = &admin.AdaptiveCapacity{MinMS: 10, MaxMS: 60000, Last: "up", Stretch: 1.52, Target: 2, Gain: 1.1, Moved: 7,
		Law: "gradient", Phase: "settle", Error: 1.32, Move: 1.15, ProbeS: 0.4}
	lines = render(t, View{Sort: "share"}, f)
	assert.Equal(t, "capacity: auto 500.0 ms (10 to 60000 ms) - gradient, settle - last up x1.15 - stretch x1.52, target x2.00, error x1.32 - probes 0.4 s - moved 7 times", lines[2])
	f.Queue.Adaptive = nil

	f.Queue.Aging = 5
	f.Queue.Sessions = &admin.SessionGate{ActiveLimit: 50, Active: 50, Blocked: 4, BlockingQueue: 8, NewRefused: 12}
	f.Queue.ReserveMS, f.Queue.LengthyLane, f.Queue.LengthyParked = 120, 1, 2
	lines = render(t, View{Sort: "share"}, f)
	assert.True(t, strings.HasPrefix(lines[1], "admission: sjf aging 5 - "), lines[1])
	assert.Equal(t, "sessions: 50 of 50 active, 4 blocked (B 8) - new sessions refused - refused new 12, aborted 0", lines[2])
	assert.Equal(t, "reserve: 120.0 ms kept for quick units - lengthy lane 1 running, 2 waiting for it", lines[3])

	f.Types.Types = nil
	lines = render(t, View{Sort: "share"}, f)
	assert.Contains(t, lines[len(lines)-1], "no request types yet")
}

func TestRenderPool(t *testing.T) {
	f := frame()
	f.Backends = &admin.BackendsResponse{Mode: "pooled", Backends: []admin.BackendInfo{
		{Addr: "db1:3306", Role: "primary", Open: 20, Idle: 5, Leased: 15, Waiting: 2, MaxOpen: 64, ClientSessions: 2000},
	}}
	lines := render(t, View{Sort: "share"}, f)
	assert.Equal(t, "pool db1:3306 (primary): 20 of 64 open - 15 leased, 5 idle, 2 waiting - 2000 client sessions", lines[2])

	f.Backends.Routing = &admin.RoutingInfo{Consistency: "strong", Balance: "self", ClosureLoaded: true, Tables: 3}
	assert.Equal(t, "routing: strong, self - 3 tables tracked, per table", render(t, View{Sort: "share"}, f)[2],
		"a proxy from before the strong rules")
	f.Backends.Backends = append(f.Backends.Backends, admin.BackendInfo{Addr: "db2:3306", Role: "replica", Open: 4, MaxOpen: 64,
		OutstandingReads: 3, Replica: &admin.Replica{Up: true, Replicating: true, Position: "0-1-9"},
		Admission: &admin.BackendAdmission{CapacityMS: 200, LoadMS: 12.5, Running: 3, Queued: 1}})
	f.Queue = &admin.QueueResponse{Enabled: true, Discipline: "sjf"}
	text := strings.Join(render(t, View{Sort: "share"}, f), "\n")
	assert.Contains(t, text, "\n  replica db2:3306: up - lag 0 transactions, 0.00 s - 3 reads running - position 0-1-9\n")
	assert.Contains(t, text, "\n  admission db2:3306: load 12.5 of 200.0 ms - 3 running, 1 waiting\n")
	f.Queue.Enabled = false
	assert.NotContains(t, strings.Join(render(t, View{Sort: "share"}, f), "\n"), "admission db2")

	f.Backends.Mode = "passthrough"
	lines = render(t, View{Sort: "share"}, f)
	assert.NotContains(t, strings.Join(lines, "\n"), "pool ")
}

func TestRenderCache(t *testing.T) {
	f := frame()
	f.Cache = &admin.CacheResponse{Mode: "auto", MaxBytes: 256 << 20, Bytes: 3 << 19, Entries: 120,
		Hits: 300, Misses: 100, HitRatio: 0.75, SavedSeconds: 42.34}
	lines := render(t, View{Sort: "share"}, f)
	require.Len(t, lines, 9, "one line more than without the cache")
	assert.Equal(t, "cache: auto - hit ratio 75.0% (300 hits, 100 misses) - saved 42.3 s of database time - 120 entries, 1.5 MiB of 256.0 MiB", lines[1])
	assert.Equal(t, "admission: off (every unit goes straight to the database)", lines[2])

	f.Cache = nil // off: nothing about it
	assert.NotContains(t, strings.Join(render(t, View{Sort: "share"}, f), "\n"), "cache")
}

func TestRenderBinlog(t *testing.T) {
	lagTxns, lagSeconds := uint64(0), 0.0
	following := &admin.BinlogFollower{Live: true, Position: "0-1-15234", LagTransactions: &lagTxns, LagSeconds: &lagSeconds, ServerID: 3057}
	for _, tc := range []struct {
		name      string
		rule      string
		follower  *admin.BinlogFollower
		positions *admin.PositionReads
		want      string // the line after the routing line; "" when there is none
	}{
		{
			name: "per_table, following", rule: "per_table", follower: following,
			positions: &admin.PositionReads{Reads: 100, Statements: 230, StatementsPerRead: 2.3},
			want:      "binlog: following 0-1-15234 - lag 0 txns, 0.00 s - 2.3 strong reads per position read (100 reads)",
		},
		{
			name: "per_table, following, no strong read yet", rule: "per_table", follower: following,
			positions: &admin.PositionReads{},
			want:      "binlog: following 0-1-15234 - lag 0 txns, 0.00 s - no position reads yet",
		},
		{
			name: "per_table, following, one position read", rule: "per_table", follower: following,
			positions: &admin.PositionReads{Reads: 1, Statements: 1, StatementsPerRead: 1},
			want:      "binlog: following 0-1-15234 - lag 0 txns, 0.00 s - 1.0 strong reads per position read (1 read)",
		},
		{
			name: "per_table, refused", rule: "proxy_local",
			follower:  &admin.BinlogFollower{Refused: true, Position: "0-1-15000", LagTransactions: &lagTxns, LagSeconds: &lagSeconds},
			positions: &admin.PositionReads{},
			want:      "binlog: REFUSED (GRANT REPLICATION SLAVE, REPLICATION CLIENT to monitor.user) - strong reads count this proxy's writes only",
		},
		{
			name: "per_table, lost the log", rule: "per_table",
			follower:  &admin.BinlogFollower{Position: "0-1-15000", LagTransactions: ptr(uint64(12)), LagSeconds: ptr(3.2)},
			positions: &admin.PositionReads{Reads: 4, Statements: 4, StatementsPerRead: 1},
			want:      "binlog: not following (at 0-1-15000, lag 12 txns, 3.20 s) - strong reads go to the primary",
		},
		{
			name: "per_table, never reached the primary", rule: "per_table", follower: &admin.BinlogFollower{},
			want: "binlog: not following (no position yet, lag unknown) - strong reads go to the primary",
		},
		{
			name: "global", rule: "global", positions: &admin.PositionReads{Reads: 8, Statements: 12, StatementsPerRead: 1.5},
			want: "binlog: no follower (strong_rule global: a replica needs the primary's whole position) - 1.5 strong reads per position read (8 reads)",
		},
		{name: "proxy_local", rule: "proxy_local"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := frame()
			f.Backends = &admin.BackendsResponse{Mode: "pooled",
				Backends: []admin.BackendInfo{{Addr: "db1:3306", Role: "primary"}},
				Routing: &admin.RoutingInfo{Consistency: "strong", Balance: "self", ClosureLoaded: true, Tables: 3,
					StrongRule: tc.rule, Follower: tc.follower, PositionReads: tc.positions}}
			lines := render(t, View{Sort: "share"}, f)
			assert.Equal(t, "routing: strong, self, strong_rule "+tc.rule+" - 3 tables tracked, per table", lines[2])
			next := lines[3]
			if tc.want == "" {
				assert.True(t, strings.HasPrefix(next, "pool "), "no binlog line: %q", next)
				return
			}
			assert.Equal(t, tc.want, next)
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestSorts(t *testing.T) {
	for _, s := range Sorts {
		assert.True(t, ValidSort(s))
	}
	for k, s := range sortKeys {
		assert.True(t, ValidSort(s), "key %q", k)
	}
	assert.False(t, ValidSort("speed"))
}

func TestFetch(t *testing.T) {
	queue, cache := true, true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/v1/types":
			_ = json.NewEncoder(w).Encode(frame().Types)
		case r.URL.Path == "/api/v1/queue" && queue:
			_ = json.NewEncoder(w).Encode(admin.QueueResponse{Enabled: true, Queued: 4})
		case r.URL.Path == "/api/v1/cache" && cache:
			_ = json.NewEncoder(w).Encode(admin.CacheResponse{Mode: "rules", Hits: 9, Misses: 1, HitRatio: 0.9})
		case r.URL.Path == "/api/v1/cache":
			w.WriteHeader(http.StatusNotFound) // as the proxy answers while the cache is off
			_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "error": admin.CacheOff})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	c, err := NewClient(strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	f, err := c.Fetch(context.Background())
	require.NoError(t, err)
	assert.Len(t, f.Types.Types, 3)
	require.NotNil(t, f.Queue)
	assert.Equal(t, 4, f.Queue.Queued)
	require.NotNil(t, f.Cache)
	assert.Equal(t, 0.9, f.Cache.HitRatio)

	queue, cache = false, false // a proxy without the queue, or with the cache off, still shows its types
	f, err = c.Fetch(context.Background())
	require.NoError(t, err)
	assert.Nil(t, f.Queue)
	assert.Nil(t, f.Cache)

	_, err = NewClient("")
	assert.ErrorContains(t, err, "--admin")
	bad, err := NewClient(srv.URL + "/nothing/")
	require.NoError(t, err)
	_, err = bad.Fetch(context.Background())
	assert.ErrorContains(t, err, "404")

	srv.Close()
	_, err = c.Fetch(context.Background())
	assert.ErrorContains(t, err, "cannot reach the proxy's admin API")
}

func TestRawWriter(t *testing.T) {
	var w rawWriter
	w.WriteString("a\nb\n")
	assert.Equal(t, "a\r\nb\r\n", string(w.bytes()))
}

func TestRenderFleet(t *testing.T) {
	f := frame()
	now := f.Types.Time
	st := fleet.Status{Name: "gk1:6033", Connected: true, LastSync: now.Add(-200 * time.Millisecond), Adjuster: "gk2:6033",
		Members: []fleet.MemberStatus{{Name: "gk1:6033"}, {Name: "gk2:6033"}},
		Backends: map[string]fleet.BackendStatus{"primary": {Demand: 30 * time.Millisecond, Capacity: 45 * time.Millisecond,
			Fleet: 90 * time.Millisecond, Share: 0.5}},
		Config: fleet.ConfigStatus{Keys: 2}}
	// What the proxy serves, read as top reads it.
	body, err := json.Marshal(st)
	require.NoError(t, err)
	f.Fleet = &Fleet{}
	require.NoError(t, json.Unmarshal(body, f.Fleet))
	text := strings.Join(render(t, View{Sort: "share"}, f), "\n")
	assert.Contains(t, text, "\nfleet: member gk1:6033 of 2, adjuster gk2:6033 - etcd ok, synced 200ms ago - 2 shared settings\n")
	assert.Contains(t, text, "\n  share primary: 50% of 90.0 ms = 45.0 ms - demand 30.0 ms\n")

	f.Fleet.Connected, f.Fleet.DownSince, f.Fleet.LastError = false, now.Add(-5*time.Second), "context deadline exceeded"
	text = strings.Join(render(t, View{Sort: "share"}, f), "\n")
	assert.Contains(t, text, "ETCD UNREACHABLE for 5s: admitting on the last shares (context deadline exceeded)")
}
