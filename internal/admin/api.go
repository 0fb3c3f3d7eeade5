package admin

import "time"

// The JSON documents of the /api/v1 endpoints. `gatekeeper top` decodes the same types, so
// a field added here reaches both sides; a field is never renamed (scripts read them).

// TypesResponse is the body of GET /api/v1/types.
type TypesResponse struct {
	// Time is when the snapshot was taken, by the proxy's clock.
	Time time.Time `json:"time"`
	// TypeKey is what groups statements into types: classify.type_key.
	TypeKey string `json:"type_key"`
	// Types holds every tracked type and, when it has samples, the "other" bucket of the
	// types the bounded table does not track; sorted by share of load, descending.
	Types []TypeStats `json:"types"`
	// Tracked is the number of types in the table and MaxTypes its bound.
	Tracked  int `json:"tracked"`
	MaxTypes int `json:"max_types"`
	// Evictions counts the types pushed out to the other bucket since start.
	Evictions uint64 `json:"evictions"`
	// DefaultCostMS is the estimate of a type never seen.
	DefaultCostMS float64 `json:"default_cost_ms"`
}

// TypeStats describes one request type. Durations are in milliseconds.
type TypeStats struct {
	// Type is the type's key as 16 hexadecimal digits, or "other".
	Type string `json:"type"`
	// Sample is a normalized statement (or the tag, user, schema or program name) of the
	// type, cut to 1 KiB; empty for the other bucket.
	Sample string `json:"sample"`
	// Count is the number of units measured since the type was added or loaded.
	Count uint64 `json:"count"`
	// TotalMS is the summed backend busy time of those Count units (for a loaded type,
	// Count times its loaded estimate): the difference of two readings over the difference
	// of their counts is the mean cost between them.
	TotalMS float64 `json:"total_ms"`
	// Rate is units per second over the recent horizon.
	Rate float64 `json:"rate"`
	// MeanMS is the current estimate: what admission charges the next unit of the type.
	MeanMS float64 `json:"mean_ms"`
	// BusyMS is the moving average of the units' backend busy time, their expected
	// service time, which the aging bound is a multiple of. It equals MeanMS's moving
	// average unless estimator.backend_cpus makes costs processor shares; 0 when unknown.
	BusyMS float64 `json:"busy_ms"`
	// P50MS, P95MS and P99MS are percentiles of the recent horizon; 0 without recent units.
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	P99MS float64 `json:"p99_ms"`
	// Share is the type's fraction (0 to 1) of the backend busy time of the recent horizon.
	Share float64 `json:"share"`
	// LastUpdate is when the latest unit of the type ended; absent if never.
	LastUpdate *time.Time `json:"last_update,omitempty"`
}

// QueueResponse is the body of GET /api/v1/queue.
type QueueResponse struct {
	Time time.Time `json:"time"`
	// Enabled says whether admission control runs; when false, the other fields are zero.
	Enabled bool `json:"enabled"`
	// Discipline is fifo or sjf.
	Discipline string `json:"discipline,omitempty"`
	// Queued is the number of units waiting for admission.
	Queued int `json:"queued"`
	// InFlight is the number of admitted units running now.
	InFlight int `json:"in_flight"`
	// LoadMS is the estimated work of the running units and CapacityMS the capacity they
	// are admitted against.
	LoadMS     float64 `json:"load_ms"`
	CapacityMS float64 `json:"capacity_ms"`
	// Admitted, Rejected and TimedOut count units since start.
	Admitted uint64 `json:"admitted"`
	Rejected uint64 `json:"rejected"`
	TimedOut uint64 `json:"timed_out"`
	// Aging is the aging factor X (0: off).
	Aging float64 `json:"aging"`
	// LastCallMS is admission.last_call (0: off).
	LastCallMS float64 `json:"last_call_ms"`
	// OpenTransactions are the admitted transactions running.
	OpenTransactions int `json:"open_transactions"`
	// Sessions is the session gate, when it is on.
	Sessions *SessionGate `json:"sessions,omitempty"`
	// Adaptive is the adaptive capacity (admission.capacity: auto), when it is on.
	Adaptive *AdaptiveCapacity `json:"adaptive,omitempty"`
	// ReserveMS is the capacity kept for quick units now, when the reserve is on.
	ReserveMS float64 `json:"reserve_ms,omitempty"`
	// LengthyLane counts the lengthy units running inside the reserve, and LengthyParked
	// those waiting for room in that lane (also in Queued), when the reserve is on.
	LengthyLane   int `json:"lengthy_lane,omitempty"`
	LengthyParked int `json:"lengthy_parked,omitempty"`
	// LengthyLaneRate is the lane's starts a second while it is paced
	// (admission.reserve.lane_rate, quick_wait_target).
	LengthyLaneRate float64 `json:"lengthy_lane_rate,omitempty"`
	// Waiting lists the waiting units, in the order they would be admitted (up to a limit).
	Waiting []QueueEntry `json:"waiting"`
}

// AdaptiveCapacity is the state of the adaptive capacity.
type AdaptiveCapacity struct {
	MinMS float64 `json:"min_ms"`
	MaxMS float64 `json:"max_ms"`
	// Last is the last window's decision: up, down, hold, idle, sparse, stall or restore.
	Last string `json:"last"`
	// Stretch is how many times longer than alone the last window's units ran (1: as fast),
	// Target the stretch the capacity moves towards, and Gain the window's completions a
	// second over the one before's.
	Stretch float64 `json:"stretch"`
	Target  float64 `json:"target"`
	Gain    float64 `json:"gain"`
	// Moved counts the windows that moved the capacity.
	Moved uint64 `json:"moved"`
	// SizeFloorMS is the least capacity the units doing most of the work allow: twice
	// their size (0 before a window had enough units to tell).
	SizeFloorMS float64 `json:"size_floor_ms"`
	// Parallelism is the units the database runs at once for each unit of stretch, and
	// MaxRunning the most units it lets run at once (0 before windows told them).
	Parallelism float64 `json:"parallelism"`
	MaxRunning  int     `json:"max_running"`
	// Law is the control law (gradient or rules), Phase where it stands (start, settle or
	// probe), Error the last window's target over its stretch (1: on target; 0: not
	// measured), Move the last move's ratio (1: held), and ProbeS the time spent in probes
	// of the time alone.
	Law    string  `json:"law"`
	Phase  string  `json:"phase"`
	Error  float64 `json:"error"`
	Move   float64 `json:"move"`
	ProbeS float64 `json:"probe_s"`
}

// SessionGate is the state of the AWAIT session gate.
type SessionGate struct {
	ActiveLimit   int  `json:"active_limit"`
	Active        int  `json:"active"`
	Blocked       int  `json:"blocked"`
	BlockingQueue int  `json:"blocking_queue"`
	AdmitNew      bool `json:"admit_new"`
	Overload      bool `json:"overload"`
	// NewRefused and Aborted count units of new sessions refused and of accepted sessions
	// refused for a full blocking queue.
	NewRefused uint64 `json:"new_refused"`
	Aborted    uint64 `json:"aborted"`
}

// QueueEntry is one waiting unit.
type QueueEntry struct {
	// Type is the unit's request type: its key as 16 hexadecimal digits, and its sample
	// text when the estimator knows it.
	Type     string  `json:"type"`
	Sample   string  `json:"sample,omitempty"`
	Conn     uint64  `json:"conn"`
	CostMS   float64 `json:"cost_ms"`
	WaitedMS float64 `json:"waited_ms"`
	// Blocked: in the session gate's blocking queue rather than waiting for capacity.
	Blocked bool `json:"blocked,omitempty"`
	// Parked: a lengthy unit waiting for room in the reserve's lengthy lane.
	Parked bool `json:"parked,omitempty"`
}

// SessionsResponse is the body of GET /api/v1/sessions.
type SessionsResponse struct {
	Time time.Time `json:"time"`
	// Mode is passthrough or pooled.
	Mode     string        `json:"mode"`
	Sessions []SessionInfo `json:"sessions"`
}

// SessionInfo describes one client connection.
type SessionInfo struct {
	// ID is the connection id the client knows (CONNECTION_ID() in pooled mode).
	ID     uint64 `json:"id"`
	User   string `json:"user"`
	Client string `json:"client"`
	Schema string `json:"schema"`
	// State is idle, running (a unit is open) or idle_in_transaction.
	State string `json:"state"`
	// Backend is the address of the backend connection the session holds now, and
	// BackendThread that connection's id on the server; empty and 0 when it holds none (a
	// pooled session between units).
	Backend       string `json:"backend,omitempty"`
	BackendThread uint32 `json:"backend_thread,omitempty"`
	// Pins are why a pooled session keeps its backend connection between units.
	Pins []string `json:"pins,omitempty"`
	// Credential says whether the proxy can open more connections as the user: pooled,
	// derived (passthrough with auth.from_backend) or none.
	Credential string `json:"credential"`
	// Since is when the client connected.
	Since time.Time `json:"since"`
}

// BackendsResponse is the body of GET /api/v1/backends.
type BackendsResponse struct {
	Time     time.Time     `json:"time"`
	Mode     string        `json:"mode"`
	Backends []BackendInfo `json:"backends"`
	// Routing is how reads are routed to replicas; nil when they are not.
	Routing *RoutingInfo `json:"routing,omitempty"`
}

// RoutingInfo describes read routing.
type RoutingInfo struct {
	Consistency string `json:"consistency"`
	Balance     string `json:"balance"`
	// ClosureLoaded: triggers, cascades and views are known, and writes are recorded
	// per table; until then (and after DDL, until they are read again) every write
	// raises the floor every read needs.
	ClosureLoaded bool `json:"closure_loaded"`
	// Floor is the position every read needs; Tables the number of tables with a
	// recorded write.
	Floor  string `json:"floor"`
	Tables int    `json:"tables"`
	// StrongRule is the rule strong reads go by now: routing.strong_rule (per_table,
	// global or proxy_local), or proxy_local while per_table's follower is refused.
	StrongRule string `json:"strong_rule"`
	// Follower is the binlog follower (strong_rule per_table); nil without one.
	Follower *BinlogFollower `json:"follower,omitempty"`
	// PositionReads are the reads of the primary's position strong reads learn what it
	// had committed from (strong_rule per_table or global); nil without them.
	PositionReads *PositionReads `json:"position_reads,omitempty"`
}

// BinlogFollower is what the binlog follower, which records every write committed on the
// primary in the version map, last knew.
type BinlogFollower struct {
	// Live: it streams the primary's binary log. While it does not, strong reads go to
	// the primary.
	Live bool `json:"live"`
	// Refused: the primary refused it for want of a grant (REPLICATION SLAVE); strong
	// reads then count only the writes this proxy acknowledged (StrongRule proxy_local).
	Refused bool `json:"refused"`
	// Position is the GTID position up to which it recorded every committed transaction;
	// empty before it first reached the primary.
	Position string `json:"position"`
	// LagTransactions the primary has that the follower has not recorded; LagSeconds
	// since the primary first had one of them (0 when it has them all). Both are absent
	// until they are known (the follower's position and the primary's).
	LagTransactions *uint64  `json:"lag_transactions,omitempty"`
	LagSeconds      *float64 `json:"lag_seconds,omitempty"`
	// ServerID is the server_id it registers with on the primary
	// (replicas.binlog_server_id, or derived from the host and the listen address).
	ServerID uint32 `json:"server_id"`
}

// PositionReads counts the reads of the primary's position since start: one in flight
// at a time, each serving every strong read that arrived before it started.
type PositionReads struct {
	Reads uint64 `json:"reads"`
	// Statements is the strong reads they served, and StatementsPerRead Statements over
	// Reads (0 before the first): how many strong reads share one position read.
	Statements        uint64  `json:"statements"`
	StatementsPerRead float64 `json:"statements_per_read"`
}

// BackendInfo describes one backend and, in pooled mode, its pool.
type BackendInfo struct {
	Addr string `json:"addr"`
	// Role is primary or replica.
	Role string `json:"role"`
	// Pooled connections by state, the units waiting for one, and the bound
	// (pools.max_open); zero in passthrough.
	Open    int `json:"open"`
	Idle    int `json:"idle"`
	Leased  int `json:"leased"`
	Waiting int `json:"waiting"`
	MaxOpen int `json:"max_open"`
	// ClientSessions is the number of client connections this backend serves now.
	ClientSessions int `json:"client_sessions"`
	// With read routing: the reads routed to the backend and not finished, and, for a
	// replica, what its monitor last saw.
	OutstandingReads int64    `json:"outstanding_reads"`
	Replica          *Replica `json:"replica,omitempty"`
	// Admission is the backend's own admission capacity and load, with read routing.
	Admission *BackendAdmission `json:"admission,omitempty"`
}

// BackendAdmission is one backend's admission: its capacity, the expected cost of the
// units running on it, and the units running and waiting for its capacity.
type BackendAdmission struct {
	CapacityMS float64 `json:"capacity_ms"`
	LoadMS     float64 `json:"load_ms"`
	Running    int     `json:"running"`
	Queued     int     `json:"queued"`
}

// Replica is what the monitor of a replica last saw.
type Replica struct {
	Up bool `json:"up"`
	// Shunned: takes no reads (down, or behind past routing.max_lag).
	Shunned     bool   `json:"shunned"`
	Replicating bool   `json:"replicating"`
	Position    string `json:"position"`
	// LagTransactions the primary has that the replica has not applied; LagSeconds
	// since the primary first had one of them.
	LagTransactions uint64    `json:"lag_transactions"`
	LagSeconds      float64   `json:"lag_seconds"`
	Error           string    `json:"error,omitempty"`
	Checked         time.Time `json:"checked"`
}

// CacheResponse is the body of GET /api/v1/cache. Counts are since start.
type CacheResponse struct {
	Time time.Time `json:"time"`
	// Mode is cache.mode: rules or auto (off answers 404).
	Mode string `json:"mode"`
	// Bytes is what the cache holds, keys and bookkeeping included, and MaxBytes its bound
	// (cache.max_bytes); Entries the results it holds.
	MaxBytes int64 `json:"max_bytes"`
	Bytes    int64 `json:"bytes"`
	Entries  int   `json:"entries"`
	// Hits are reads answered from the cache, Misses reads that could have been and were
	// not; HitRatio is Hits over their sum (0 before the first lookup).
	Hits     uint64  `json:"hits"`
	Misses   uint64  `json:"misses"`
	HitRatio float64 `json:"hit_ratio"`
	// Fills are results stored, Evictions results pushed out to stay within MaxBytes.
	Fills     uint64 `json:"fills"`
	Evictions uint64 `json:"evictions"`
	// SavedSeconds is the database time the hits saved: each hit's statement's measured
	// cost, summed.
	SavedSeconds float64 `json:"saved_seconds"`
	// Types is what the cache did for each statement type it looked up, by SavedSeconds,
	// descending.
	Types []CacheTypeStats `json:"types"`
}

// CacheTypeStats is what the result cache did for one statement type.
type CacheTypeStats struct {
	// Type is the type's key as 16 hexadecimal digits, as in /api/v1/types, and Sample a
	// statement of it.
	Type   string `json:"type"`
	Sample string `json:"sample"`
	// Lookups are its reads looked up in the cache, Hits those answered from it, and
	// HitRatio Hits over Lookups (0 before the first).
	Lookups  uint64  `json:"lookups"`
	Hits     uint64  `json:"hits"`
	HitRatio float64 `json:"hit_ratio"`
	// Stale counts its results found stale (a write to a table they read came after them)
	// and Filled its results stored.
	Stale  uint64 `json:"stale"`
	Filled uint64 `json:"filled"`
	// SavedSeconds is the database time its hits saved.
	SavedSeconds float64 `json:"saved_seconds"`
	// Cached says whether its results are stored now, and Why says why (in cache.mode
	// auto: on probation, reused, not reused).
	Cached bool   `json:"cached"`
	Why    string `json:"why"`
}

// RulesResponse is the body of GET /api/v1/rules.
type RulesResponse struct {
	Time time.Time `json:"time"`
	// Rules are the query rules in force, in the order they apply.
	Rules []RuleStats `json:"rules"`
}

// RuleStats is one query rule with its counts.
type RuleStats struct {
	Name string `json:"name"`
	// Rule is the rule as one line: its match and its actions.
	Rule string `json:"rule"`
	// Matches counts the statements it matched since a rule of this name was first loaded.
	Matches uint64 `json:"matches"`
	// MaxConcurrent is its max_concurrent action, with the matching statements Running and
	// Waiting for a slot; all zero without that action.
	MaxConcurrent int `json:"max_concurrent"`
	Running       int `json:"running"`
	Waiting       int `json:"waiting"`
}
