// Package top is the live terminal view of a proxy's request types, admission queue, pools
// and result cache, read from its admin API, so that it works against a proxy on another
// machine.
package top

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
)

// Frame is one reading of the admin API.
type Frame struct {
	Types admin.TypesResponse
	// Queue is nil when the proxy does not serve /api/v1/queue.
	Queue *admin.QueueResponse
	// Backends is nil when the proxy does not serve /api/v1/backends.
	Backends *admin.BackendsResponse
	// Cache is nil when the result cache is off (or the proxy predates it).
	Cache *admin.CacheResponse
	// Fleet is nil when the proxy is in no fleet.
	Fleet *Fleet
}

// Fleet is what top shows of GET /api/v1/fleet.
type Fleet struct {
	Name      string    `json:"name"`
	Connected bool      `json:"connected"`
	LastSync  time.Time `json:"last_sync"`
	DownSince time.Time `json:"down_since"`
	LastError string    `json:"last_error"`
	Adjuster  string    `json:"adjuster_name"`
	Members   []struct {
		Name string `json:"name"`
	} `json:"members"`
	Backends map[string]struct {
		Demand   time.Duration `json:"demand_ns"`
		Capacity time.Duration `json:"capacity_ns"`
		Fleet    time.Duration `json:"fleet_capacity_ns"`
		Share    float64       `json:"share"`
	} `json:"backends"`
	Config struct {
		Keys  int    `json:"keys"`
		Error string `json:"error"`
	} `json:"config"`
}

// Client reads the admin API of one proxy.
type Client struct {
	base string
	http *http.Client
}

// NewClient returns a client for the admin listener at addr: host:port or an http(s) URL.
func NewClient(addr string) (*Client, error) {
	if addr == "" {
		return nil, fmt.Errorf("no admin address: pass --admin host:port (the proxy's admin.listen)")
	}
	base := addr
	if !strings.Contains(addr, "://") {
		base = "http://" + addr
	}
	return &Client{base: strings.TrimRight(base, "/"), http: &http.Client{Timeout: 5 * time.Second}}, nil
}

// Fetch reads the types, and the queue, the backends and the result cache where the proxy
// serves them.
func (c *Client) Fetch(ctx context.Context) (*Frame, error) {
	f := &Frame{}
	if err := c.get(ctx, "/api/v1/types", &f.Types); err != nil {
		return nil, err
	}
	var q admin.QueueResponse
	switch err := c.get(ctx, "/api/v1/queue", &q); {
	case err == nil:
		f.Queue = &q
	case !isNotFound(err):
		return nil, err
	}
	var b admin.BackendsResponse
	switch err := c.get(ctx, "/api/v1/backends", &b); {
	case err == nil:
		f.Backends = &b
	case !isNotFound(err):
		return nil, err
	}
	var rc admin.CacheResponse
	switch err := c.get(ctx, "/api/v1/cache", &rc); {
	case err == nil:
		f.Cache = &rc
	case !isNotFound(err): // 404: the cache is off
		return nil, err
	}
	var fl Fleet
	switch err := c.get(ctx, "/api/v1/fleet", &fl); {
	case err == nil:
		f.Fleet = &fl
	case !isNotFound(err): // 404: no fleet
		return nil, err
	}
	return f, nil
}

type notFound struct{ error }

func isNotFound(err error) bool {
	_, ok := err.(notFound)
	return ok
}

func (c *Client) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the proxy's admin API at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		err := fmt.Errorf("GET %s%s: %s: %s", c.base, path, resp.Status, strings.TrimSpace(string(body)))
		if resp.StatusCode == http.StatusNotFound {
			return notFound{err}
		}
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("GET %s%s: not the admin API of gatekeeper: %w", c.base, path, err)
	}
	return nil
}

// Sort orders of the type table.
var Sorts = []string{"share", "rate", "mean", "p95", "p99", "count", "type"}

// sortKeys are the keys that pick each sort in the live view.
var sortKeys = map[byte]string{'s': "share", 'r': "rate", 'm': "mean", '5': "p95", '9': "p99", 'c': "count", 't': "type"}

// ValidSort reports whether s names a sort order.
func ValidSort(s string) bool { return slices.Contains(Sorts, s) }

func sortTypes(ts []admin.TypeStats, by string) {
	key := func(t admin.TypeStats) float64 {
		switch by {
		case "rate":
			return t.Rate
		case "mean":
			return t.MeanMS
		case "p95":
			return t.P95MS
		case "p99":
			return t.P99MS
		case "count":
			return float64(t.Count)
		}
		return t.Share
	}
	slices.SortStableFunc(ts, func(a, b admin.TypeStats) int {
		if by == "type" {
			return cmp.Compare(label(a), label(b))
		}
		if c := cmp.Compare(key(b), key(a)); c != 0 {
			return c
		}
		return cmp.Compare(label(a), label(b))
	})
}

// label is what the table shows of a type: its sample, or its key.
func label(t admin.TypeStats) string {
	if t.Type == "other" {
		return "(other: types beyond estimator.max_types)"
	}
	if t.Sample == "" {
		return t.Type
	}
	return strings.Join(strings.Fields(t.Sample), " ")
}

// View is how a frame is drawn.
type View struct {
	// Source names the proxy in the header.
	Source string
	Sort   string
	// Limit bounds the rows of types; 0 shows all.
	Limit int
	// Width cuts lines; 0 leaves them whole.
	Width int
	// Keys adds the line of keys of the live view.
	Keys bool
}

// Render draws f.
func (v View) Render(w io.Writer, f *Frame) {
	var b strings.Builder
	line := func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		if v.Width > 0 && len(s) > v.Width {
			s = s[:v.Width]
		}
		b.WriteString(s)
		b.WriteByte('\n')
	}
	tr := f.Types
	line("gatekeeper top - %s - %s - type_key %s - %d types tracked (max %d), %d evicted",
		v.Source, tr.Time.Local().Format("15:04:05"), tr.TypeKey, tr.Tracked, tr.MaxTypes, tr.Evictions)
	if fl := f.Fleet; fl != nil {
		fleetLines(line, fl, tr.Time)
	}
	if c := f.Cache; c != nil {
		line("cache: %s - hit ratio %.1f%% (%d hits, %d misses) - saved %.1f s of database time - %d entries, %s of %s",
			c.Mode, 100*c.HitRatio, c.Hits, c.Misses, c.SavedSeconds, c.Entries, mib(c.Bytes), mib(c.MaxBytes))
	}
	switch q := f.Queue; {
	case q == nil || !q.Enabled:
		line("admission: off (every unit goes straight to the database)")
	default:
		load := 0.0
		if q.CapacityMS > 0 {
			load = 100 * q.LoadMS / q.CapacityMS
		}
		disc := q.Discipline
		if q.Aging > 0 {
			disc += fmt.Sprintf(" aging %g", q.Aging)
		}
		line("admission: %s - %d waiting, %d running - load %.1f of %.1f ms (%.0f%%) - admitted %d, rejected %d, timed out %d",
			disc, q.Queued, q.InFlight, q.LoadMS, q.CapacityMS, load, q.Admitted, q.Rejected, q.TimedOut)
		if a := q.Adaptive; a != nil {
			line("capacity: auto %.1f ms (%.0f to %.0f ms) - %s, %s - last %s x%.2f - stretch x%.2f, target x%.2f, error x%.2f - probes %.1f s - moved %d times",
				q.CapacityMS, a.MinMS, a.MaxMS, a.Law, a.Phase, a.Last, a.Move, a.Stretch, a.Target, a.Error, a.ProbeS, a.Moved)
		}
		if g := q.Sessions; g != nil {
			state := "new sessions admitted"
			if !g.AdmitNew {
				state = "new sessions refused"
			}
			line("sessions: %d of %d active, %d blocked (B %d) - %s - refused new %d, aborted %d",
				g.Active, g.ActiveLimit, g.Blocked, g.BlockingQueue, state, g.NewRefused, g.Aborted)
		}
		if q.ReserveMS > 0 {
			line("reserve: %.1f ms kept for quick units - lengthy lane %d running, %d waiting for it",
				q.ReserveMS, q.LengthyLane, q.LengthyParked)
		}
	}
	if bs := f.Backends; bs != nil && bs.Mode == "pooled" {
		if r := bs.Routing; r != nil {
			closure := "per table"
			if !r.ClosureLoaded {
				closure = "every write raises the floor (triggers, cascades, views not read yet)"
			}
			rule := ""
			if r.StrongRule != "" { // a proxy from before the rules leaves it out
				rule = ", strong_rule " + r.StrongRule
			}
			line("routing: %s, %s%s - %d tables tracked, %s", r.Consistency, r.Balance, rule, r.Tables, closure)
			if s := binlogLine(r); s != "" {
				line("%s", s)
			}
		}
		for _, be := range bs.Backends {
			line("pool %s (%s): %d of %d open - %d leased, %d idle, %d waiting - %d client sessions",
				be.Addr, be.Role, be.Open, be.MaxOpen, be.Leased, be.Idle, be.Waiting, be.ClientSessions)
			if rp := be.Replica; rp != nil {
				line("  replica %s: %s - lag %d transactions, %.2f s - %d reads running - position %s",
					be.Addr, replicaStanding(rp), rp.LagTransactions, rp.LagSeconds, be.OutstandingReads, rp.Position)
				if a := be.Admission; a != nil && f.Queue != nil && f.Queue.Enabled {
					line("  admission %s: load %.1f of %.1f ms - %d running, %d waiting",
						be.Addr, a.LoadMS, a.CapacityMS, a.Running, a.Queued)
				}
			}
		}
	}
	if v.Keys {
		line("sorted by %s - keys: s share, r rate, m mean, 5 p95, 9 p99, c count, t type, q quit", v.Sort)
	} else {
		line("sorted by %s", v.Sort)
	}
	line("")
	line("%9s %10s %9s %9s %9s %9s %6s  %s", "RATE/s", "COUNT", "MEAN ms", "P50 ms", "P95 ms", "P99 ms", "SHARE", "TYPE")
	ts := slices.Clone(tr.Types)
	sortTypes(ts, v.Sort)
	shown := ts
	if v.Limit > 0 && len(shown) > v.Limit {
		shown = shown[:v.Limit]
	}
	for _, t := range shown {
		line("%9.1f %10d %9.3f %9.3f %9.3f %9.3f %5.1f%%  %s",
			t.Rate, t.Count, t.MeanMS, t.P50MS, t.P95MS, t.P99MS, 100*t.Share, label(t))
	}
	if len(ts) == 0 {
		line("(no request types yet: nothing has run through the proxy since it started or was reset)")
	}
	if n := len(ts) - len(shown); n > 0 {
		line("(%d more)", n)
	}
	_, _ = io.WriteString(w, b.String())
}

// fleetLines shows the fleet: the members, the adjuster, whether etcd answers, and this
// member's share of each backend.
func fleetLines(line func(string, ...any), fl *Fleet, now time.Time) {
	etcd := fmt.Sprintf("etcd ok, synced %s ago", now.Sub(fl.LastSync).Round(time.Millisecond))
	if !fl.Connected {
		etcd = fmt.Sprintf("ETCD UNREACHABLE for %s: admitting on the last shares (%s)",
			now.Sub(fl.DownSince).Round(time.Second), fl.LastError)
	}
	shared := fmt.Sprintf("%d shared settings", fl.Config.Keys)
	if fl.Config.Error != "" {
		shared += " - last change refused: " + fl.Config.Error
	}
	line("fleet: member %s of %d, adjuster %s - %s - %s", fl.Name, len(fl.Members), orNone(fl.Adjuster), etcd, shared)
	keys := make([]string, 0, len(fl.Backends))
	for k := range fl.Backends {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b := fl.Backends[k]
		line("  share %s: %.0f%% of %.1f ms = %.1f ms - demand %.1f ms", k, 100*b.Share, ms(b.Fleet), ms(b.Capacity), ms(b.Demand))
	}
}

func orNone(s string) string {
	if s == "" {
		return "none yet"
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// mib is n bytes in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// replicaStanding says whether a replica takes reads.
func replicaStanding(r *admin.Replica) string {
	switch {
	case !r.Up:
		return "down"
	case r.Shunned:
		return "shunned"
	case !r.Replicating:
		return "up, replication stopped"
	}
	return "up"
}

// binlogLine says how strong reads learn the writes committed on the primary: the binlog
// follower and the reads of the primary's position; "" when they have neither (proxy_local).
func binlogLine(r *admin.RoutingInfo) string {
	var s string
	switch f := r.Follower; {
	case f != nil && f.Refused:
		return "binlog: REFUSED (GRANT REPLICATION SLAVE, REPLICATION CLIENT to monitor.user) - strong reads count this proxy's writes only"
	case f != nil && f.Live:
		s = fmt.Sprintf("binlog: following %s - %s", f.Position, lag(f))
	case f != nil:
		return fmt.Sprintf("binlog: not following (%s, %s) - strong reads go to the primary", at(f), lag(f))
	case r.PositionReads != nil:
		s = "binlog: no follower (strong_rule global: a replica needs the primary's whole position)"
	default:
		return ""
	}
	switch p := r.PositionReads; {
	case p == nil:
	case p.Reads == 0:
		s += " - no position reads yet"
	case p.Reads == 1:
		s += fmt.Sprintf(" - %.1f strong reads per position read (1 read)", p.StatementsPerRead)
	default:
		s += fmt.Sprintf(" - %.1f strong reads per position read (%d reads)", p.StatementsPerRead, p.Reads)
	}
	return s
}

// lag is how far the follower is behind the primary.
func lag(f *admin.BinlogFollower) string {
	if f.LagTransactions == nil || f.LagSeconds == nil {
		return "lag unknown"
	}
	return fmt.Sprintf("lag %d txns, %.2f s", *f.LagTransactions, *f.LagSeconds)
}

// at is where the follower stands in the primary's log.
func at(f *admin.BinlogFollower) string {
	if f.Position == "" {
		return "no position yet"
	}
	return "at " + f.Position
}
