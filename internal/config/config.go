// Package config defines gatekeeper's configuration: the typed settings every component
// reads, their defaults, how a YAML file, a fleet's shared settings in etcd, GATEKEEPER_*
// environment variables and command-line flags combine into them, and the validation that
// runs before anything is applied.
//
// Unknown keys are errors, not warnings, wherever they are written (the file, etcd, the
// name of a GATEKEEPER_ variable): a misspelt key that is silently ignored is a setting the
// operator believes in and does not have.
package config

import (
	"strconv"
	"time"
)

// Config is the whole configuration. The field comments give each default.
type Config struct {
	// Listen is the address clients connect to. Default 127.0.0.1:6033.
	Listen   string   `mapstructure:"listen"`
	Admin    Admin    `mapstructure:"admin"`
	Backends Backends `mapstructure:"backends"`
	// Mode is passthrough (default: each client's handshake is relayed to the primary and
	// the client keeps that connection) or pooled (the proxy authenticates clients itself
	// and lends them connections from its pools, one unit of work at a time).
	Mode string `mapstructure:"mode"`
	// Threads is how many processors the proxy's goroutines run on (GOMAXPROCS): auto
	// (default) sizes them to the proxy's own load, up to what the runtime would use (the
	// GOMAXPROCS environment variable, else the processors the process may run on); a
	// number fixes them.
	Threads   string    `mapstructure:"threads"`
	Auth      Auth      `mapstructure:"auth"`
	Pools     Pools     `mapstructure:"pools"`
	TLS       ClientTLS `mapstructure:"tls"`
	Client    Client    `mapstructure:"client"`
	Shutdown  Shutdown  `mapstructure:"shutdown"`
	Failover  Failover  `mapstructure:"failover"`
	Admission Admission `mapstructure:"admission"`
	Classify  Classify  `mapstructure:"classify"`
	Estimator Estimator `mapstructure:"estimator"`
	Log       Log       `mapstructure:"log"`
	Monitor   Monitor   `mapstructure:"monitor"`
	Routing   Routing   `mapstructure:"routing"`
	Replicas  Replicas  `mapstructure:"replicas"`
	Cache     Cache     `mapstructure:"cache"`
	Fleet     Fleet     `mapstructure:"fleet"`
	// Rules are the query rules, matched in order: for each action, the first matching
	// rule that sets it decides it. They can be set only in the file or a fleet's shared
	// settings, not in the environment. Default none.
	Rules []Rule `mapstructure:"rules"`
}

// Cache modes.
const (
	CacheOff   = "off"
	CacheRules = "rules"
	CacheAuto  = "auto"
)

// Cache replacement policies.
const (
	ReplacementCostAware = "cost_aware"
	ReplacementLRU       = "lru"
)

// Cache configures the result cache. MaxBytes, MaxEntryBytes and Wait are applied on
// reload; the rest needs a restart.
type Cache struct {
	// Mode is off (default), rules (cache only the statements a rule's cache action asks
	// for) or auto (also every other read that may be cached, while its type's results are
	// reused: docs/cache.md). With off, the rules' cache actions are ignored.
	Mode string `mapstructure:"mode"`
	// MaxBytes bounds every byte the cache holds, keys and bookkeeping included. Default
	// 256MiB.
	MaxBytes ByteSize `mapstructure:"max_bytes"`
	// MaxEntryBytes: a larger result is not cached. Default 1MiB.
	MaxEntryBytes ByteSize `mapstructure:"max_entry_bytes"`
	// Replacement is cost_aware (default: GreedyDual-Size-Frequency, by each type's
	// measured database cost) or lru.
	Replacement string `mapstructure:"replacement"`
	// Consistency is strong (default: a hit obeys the read's consistency: no write to the
	// entry's tables committed, by any writer, after the entry was filled and before the
	// read arrived) or eventual (a hit may miss writes the binlog follower has not yet
	// seen).
	Consistency string `mapstructure:"consistency"`
	// Wait is how long a lookup waits for what it needs: for a strong hit, the primary's
	// position and the binlog follower (routing.causal_wait at least); for a miss, a
	// concurrent fill of the same statement, before running its own. Default 50ms.
	Wait time.Duration `mapstructure:"wait"`
}

// Fleet joins proxies that share admission capacity and configuration through etcd
// (docs/fleet.md). It is off while Etcd is empty. It needs a restart to change.
type Fleet struct {
	// Etcd are the etcd endpoints, host:port. Default none: no fleet.
	Etcd []string `mapstructure:"etcd"`
	// Prefix is where the fleet's keys live in etcd; it starts and ends with /. Default
	// /gatekeeper/.
	Prefix string `mapstructure:"prefix"`
	// Name is this member's name in the fleet: letters, digits, '.', '-', '_' and ':'.
	// Empty (default): the host name and the listen port, found at start.
	Name string `mapstructure:"name"`
	// Interval is how often a member publishes its demand and recomputes its share, 100ms
	// to 10s. Default 500ms.
	Interval time.Duration `mapstructure:"interval"`
	// LeaseTTL is the time-to-live of the member's etcd lease, whole seconds from 2s to 60s
	// and at least twice Interval: a member that dies frees its share within it. Default 3s.
	LeaseTTL time.Duration `mapstructure:"lease_ttl"`
	// DialTimeout bounds one etcd call, 100ms to 30s. Default 2s.
	DialTimeout time.Duration `mapstructure:"dial_timeout"`
	// SharedConfig reads the admission, routing, cache and rules settings from the keys
	// under ConfigPrefix, one key per setting, above the file and below the environment
	// (Sources.Shared). Default true.
	SharedConfig bool `mapstructure:"shared_config"`
	// User and PasswordFile authenticate to etcd; the password is read from the file
	// (ReadPassword), never given in the configuration. Default none: no authentication.
	User         string   `mapstructure:"user"`
	PasswordFile string   `mapstructure:"password_file"`
	TLS          FleetTLS `mapstructure:"tls"`
}

// Enabled tells whether the proxy is a member of a fleet.
func (f *Fleet) Enabled() bool { return len(f.Etcd) > 0 }

// ConfigPrefix is the etcd prefix of the shared settings: Prefix + "config/". The key of a
// setting is ConfigPrefix followed by its dotted name (/gatekeeper/config/admission.capacity).
func (f *Fleet) ConfigPrefix() string { return f.Prefix + "config/" }

// FleetTLS configures TLS to etcd. It is used when CAFile or CertFile is set; else the
// proxy speaks to etcd in the clear.
type FleetTLS struct {
	// CAFile is a PEM bundle to verify etcd's certificates with. Default: the system pool.
	CAFile string `mapstructure:"ca_file"`
	// CertFile and KeyFile are a client certificate to present, for etcd's client
	// certificate authentication. Optional.
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
}

// Enabled tells whether the proxy speaks TLS to etcd.
func (t *FleetTLS) Enabled() bool { return t.CAFile != "" || t.CertFile != "" }

// Rule is one query rule: a match and at least one action. A rule with deny has no other
// action.
type Rule struct {
	// Name names the rule in errors, warnings, metrics and the admin API. Required, unique.
	Name string `mapstructure:"name"`
	// Match is what the statement must be; every condition given must hold, and an empty
	// match matches every statement.
	Match RuleMatch `mapstructure:"match"`
	// Cache is on, off, or a duration: cache with that time-to-live (rules.ParseCache).
	// Empty: unset.
	Cache string `mapstructure:"cache"`
	// Route is primary or replica (rules.ParseRoute). Empty: unset.
	Route string `mapstructure:"route"`
	// Consistency is strong, session or eventual, as routing.consistency. Empty: unset.
	Consistency string `mapstructure:"consistency"`
	// Deny refuses the statement with an error that carries this message and names the
	// rule. Empty: unset.
	Deny string `mapstructure:"deny"`
	// MaxConcurrent bounds the matching units that run at once through this proxy; past it
	// a unit waits, within admission.queue_timeout. 0: unset.
	MaxConcurrent int `mapstructure:"max_concurrent"`
}

// RuleMatch is a rule's conditions.
type RuleMatch struct {
	// Type is the statement's /* gk:type=NAME */ tag.
	Type string `mapstructure:"type"`
	// Digest is an RE2 regular expression that must match somewhere in the normalized
	// digest (literals as ?, keywords in upper case).
	Digest string `mapstructure:"digest"`
	// Table is a table the statement reads or writes: schema.table, or table in any
	// schema; letter case is ignored.
	Table string `mapstructure:"table"`
	// User is the login user, exactly.
	User string `mapstructure:"user"`
	// Schema is the current schema, in any letter case.
	Schema string `mapstructure:"schema"`
}

// Routing configures where reads go in pooled mode.
type Routing struct {
	// Enabled sends autocommit reads to the replicas of backends.replicas, when there
	// are any. Default true.
	Enabled bool `mapstructure:"enabled"`
	// Consistency is which acknowledged writes a read on a replica must see: strong
	// (default: every write acknowledged to any client before the read arrived, to the
	// tables it reads), session (the client's own), or eventual (none; any replica under
	// max_lag). A user's consistency in auth.users_file and a statement's
	// /* gk:consistency=MODE */ come first.
	Consistency string `mapstructure:"consistency"`
	// Balance chooses among the replicas that qualify: self (default: the least
	// estimated outstanding work), lard (the same tables on the same replica), sqf (the
	// fewest outstanding statements) or rr (round robin).
	Balance string `mapstructure:"balance"`
	// CausalWait is how long a read waits for a replica to catch up before it goes to
	// the primary. Default 20ms.
	CausalWait time.Duration `mapstructure:"causal_wait"`
	// MaxLag shuns a replica that far behind the primary; it rejoins at half of it.
	// Default 5s.
	MaxLag time.Duration `mapstructure:"max_lag"`
	// PrimaryReads lets the primary take reads beside the replicas. Default false.
	PrimaryReads bool `mapstructure:"primary_reads"`
	// ReadOnlyTransactions is where read-only transactions run: replica (default: the
	// whole transaction on one replica that has applied every write its consistency
	// needs) or primary.
	ReadOnlyTransactions string `mapstructure:"read_only_transactions"`
	// StrongRule is which writes a strong read sees: per_table (default: every write
	// committed on the primary before the read arrived, whoever made it, to the tables it
	// reads; learnt from the primary's binary log, which monitor.user must be granted
	// REPLICATION SLAVE for), global (every such write to any table: a replica must have
	// the primary's whole position) or proxy_local (the writes this proxy acknowledged, to
	// the tables it reads: enough only where every write passes through this one proxy).
	StrongRule string `mapstructure:"strong_rule"`
}

// Replicas configures how replicas are watched.
type Replicas struct {
	// PollInterval is how often each backend's replication position is read, with
	// monitor.user. Default 5ms.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// ClosureInterval is how often the triggers, cascading foreign keys and views are
	// read again from information_schema, for DDL that does not pass through the proxy
	// (DDL through it has them read again at once). Default 10s.
	ClosureInterval time.Duration `mapstructure:"closure_interval"`
	// BinlogServerID is the server_id the binlog follower registers with on the primary
	// (routing.strong_rule per_table); it must differ from every replica's and every other
	// proxy's. Zero (default) derives one from the host's name, the listen address and the
	// process.
	BinlogServerID uint32 `mapstructure:"binlog_server_id"`
}

// Routes tells whether reads go to replicas.
func (c *Config) Routes() bool {
	return c.Routing.Enabled && c.Mode == ModePooled && (len(c.Backends.Replicas) > 0 || len(c.Backends.Servers) > 1)
}

// Modes of the proxy.
const (
	ModePassthrough = "passthrough"
	ModePooled      = "pooled"
)

// ThreadsAuto sizes the proxy's processors to its load.
const ThreadsAuto = "auto"

// FixedThreads returns the processors threads fixes, or false for auto. Validate has
// checked the value.
func (c *Config) FixedThreads() (int, bool) {
	n, err := strconv.Atoi(c.Threads)
	return n, err == nil
}

// Auth says where the accounts of pooled mode come from.
type Auth struct {
	// UsersFile is a YAML file of users and their passwords or password hashes, readable by
	// the proxy's user alone. It is read again on SIGHUP. Default empty: none.
	UsersFile string `mapstructure:"users_file"`
	// FromBackend reads the accounts and their password hashes from the primary's
	// mysql.user, with monitor.user (which then needs SELECT on mysql.user). Default false.
	FromBackend bool `mapstructure:"from_backend"`
	// RefreshInterval is how often accounts read from the backend are read again; an
	// unknown user also triggers a read, at most once a second. Default 1m.
	RefreshInterval time.Duration `mapstructure:"refresh_interval"`
}

// Pools configures the connections the proxy opens itself, per backend.
type Pools struct {
	// MaxOpen bounds the connections to each backend. Default 64.
	MaxOpen int `mapstructure:"max_open"`
	// MaxIdle is how many idle connections are kept once idle for a second. Default 16.
	MaxIdle int `mapstructure:"max_idle"`
	// IdleTimeout closes connections idle this long. Default 5m.
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
	// MaxLifetime closes connections this old when they come back. Default 1h.
	MaxLifetime time.Duration `mapstructure:"max_lifetime"`
	// WaitTimeout bounds a unit's wait for a connection when all are leased; past it the
	// client gets error 1205. Default 5s.
	WaitTimeout time.Duration `mapstructure:"wait_timeout"`
}

// Monitor configures the account the proxy reads the primary's status with.
type Monitor struct {
	// User is a MySQL account allowed to read global status (no privilege is needed on
	// MariaDB; PROCESS is not). Empty (default): the status is not read.
	User string `mapstructure:"user"`
	// Password of User; best set as GATEKEEPER_MONITOR_PASSWORD. It is never logged.
	Password string `mapstructure:"password"`
	// Interval between two reads of Threads_running. Default 1s.
	Interval time.Duration `mapstructure:"interval"`
}

// Admin configures the HTTP listener for metrics, health and the admin API.
type Admin struct {
	// Listen is the admin HTTP address. Default 127.0.0.1:6080; empty disables it.
	Listen string `mapstructure:"listen"`
	// Pprof serves Go's profiles under /debug/pprof/ on the admin listener. Default false:
	// a profile costs the proxy processor time while it runs. With admin.auth set, the
	// profiles need credentials.
	Pprof bool      `mapstructure:"pprof"`
	Auth  AdminAuth `mapstructure:"auth"`
	TLS   AdminTLS  `mapstructure:"tls"`
}

// AdminAuth says who may call the admin API. With neither a token nor a user set (the
// default) every endpoint is open to whoever reaches admin.listen. It is read at start: a
// change, a new token in the file included, takes a restart or a hand-over.
type AdminAuth struct {
	// BearerTokenFile is a file holding the token callers send as "Authorization: Bearer
	// TOKEN": one line of at least 16 characters, readable by the proxy's user alone.
	// Default none.
	BearerTokenFile string `mapstructure:"bearer_token_file"`
	// Users are user names and the bcrypt hashes of their passwords, for HTTP basic
	// authentication (gatekeeper hash-password makes a hash). User names are matched in any
	// letter case. They can be set only in the file. Default none.
	Users map[string]string `mapstructure:"users"`
	// ProtectReads asks for credentials on reads too, /metrics included, but not on
	// /healthz and /readyz. Default false: only what changes the proxy (every method but
	// GET and HEAD) and the profiles need them.
	ProtectReads bool `mapstructure:"protect_reads"`
}

// Enabled tells whether callers of the admin API must say who they are.
func (a *AdminAuth) Enabled() bool { return a.BearerTokenFile != "" || len(a.Users) > 0 }

// AdminTLS configures HTTPS on the admin listener; without a certificate it serves plain
// HTTP. The certificate is read at start.
type AdminTLS struct {
	// CertFile and KeyFile are the admin listener's PEM certificate and key. Default none.
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
}

// Backends configures the database servers behind the proxy.
type Backends struct {
	// Primary is the host:port of the primary. Default 127.0.0.1:3306, or none when
	// Servers are set.
	Primary string `mapstructure:"primary"`
	// Replicas are host:port addresses of read replicas. Default none.
	Replicas []string `mapstructure:"replicas"`
	// Servers are host:port addresses of servers whose roles the proxy reads, without
	// saying which is the primary: set alone, the primary is the one found writable at
	// start (backends.primary is then left empty), and the replicas, unless
	// backends.replicas lists them, are the others. Default none.
	Servers []string `mapstructure:"servers"`
	// ConnectTimeout bounds dialing a backend and reading its greeting. Default 5s.
	ConnectTimeout time.Duration `mapstructure:"connect_timeout"`
	// DeadAfter gives up a backend connection that gets no answer at all from the
	// server's machine, not even to TCP keepalive probes, for this long: a statement in
	// flight behind a dead link or a blackhole then fails instead of hanging. A server busy
	// with a long statement still answers probes. Default 30s; 0 keeps the system's TCP
	// defaults (minutes).
	DeadAfter time.Duration `mapstructure:"dead_after"`
	// RoleInterval is how often each server's role (read_only, whether it replicates, its
	// position) is read with monitor.user, to find the primary and follow a failover; a
	// connection error to the primary reads them at once. Default 1s; 0 never reads them:
	// the primary is backends.primary, whatever happens to it.
	RoleInterval time.Duration `mapstructure:"role_interval"`
	TLS          BackendTLS    `mapstructure:"tls"`
}

// Failover configures what writes do while no server is a writable primary.
type Failover struct {
	// BufferTimeout is how long a write or a new transaction waits for a primary during a
	// failover or a paused switchover before it fails. Default 10s.
	BufferTimeout time.Duration `mapstructure:"buffer_timeout"`
	// BufferMax bounds the writes that wait at once; past it a write fails at once.
	// Default 10000; 0 no bound.
	BufferMax int `mapstructure:"buffer_max"`
	// DurableAcks is off (default), or replica: a write's OK reaches the client only once
	// a healthy replica has applied its transaction (semi-synchronous replication done by
	// the proxy), so that a failover to that replica loses no acknowledged write.
	DurableAcks string `mapstructure:"durable_acks"`
}

// Durable-ack modes (failover.durable_acks).
const (
	DurableAcksOff     = "off"
	DurableAcksReplica = "replica"
)

// TLS modes towards backends, named as MySQL clients name them (--ssl-mode).
const (
	TLSDisabled       = "disabled"
	TLSPreferred      = "preferred"
	TLSRequired       = "required"
	TLSVerifyCA       = "verify_ca"
	TLSVerifyIdentity = "verify_identity"
)

// BackendTLS configures TLS from the proxy to backends.
type BackendTLS struct {
	// Mode is disabled (default), preferred (when the backend offers it), required (without
	// verifying the certificate), verify_ca (the chain against CAFile) or verify_identity
	// (the chain and the host name).
	Mode string `mapstructure:"mode"`
	// CAFile is a PEM bundle to verify backend certificates with. Default: the system pool.
	CAFile string `mapstructure:"ca_file"`
	// CertFile and KeyFile are a client certificate to present, if the backend asks. Optional.
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
	// ServerName is the name verify_identity checks. Default: the host of the address.
	ServerName string `mapstructure:"server_name"`
}

// ClientTLS configures TLS between clients and the proxy. The proxy terminates it with its
// own certificate; without a certificate it does not offer TLS.
type ClientTLS struct {
	// CertFile and KeyFile are the proxy's PEM certificate and key. Default none (no TLS).
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
	// Required refuses clients that do not start TLS. Default false.
	Required bool `mapstructure:"required"`
}

// Client configures limits on client connections.
type Client struct {
	// HandshakeTimeout bounds the whole connection setup: greeting, TLS and authentication.
	// Default 10s.
	HandshakeTimeout time.Duration `mapstructure:"handshake_timeout"`
	// IdleTimeout closes a connection that sends nothing for this long between commands.
	// Default 8h (MySQL's wait_timeout); 0 means never.
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
	// MaxPacketSize is the largest packet accepted from a client. Default 1GiB (the
	// protocol's own limit); the backend's max_allowed_packet still applies.
	MaxPacketSize ByteSize `mapstructure:"max_packet_size"`
	// MaxConnections bounds open client connections; 0 (default) means no bound.
	MaxConnections int `mapstructure:"max_connections"`
	// MaxHandshakes bounds the connections logging in at once (in passthrough each holds a
	// backend connection while it does); past it a connection waits for a slot up to half
	// its handshake_timeout (leaving it the other half to log in), then is refused. Default 64, well inside a default MariaDB's 151
	// connections; 0 means no bound.
	MaxHandshakes int `mapstructure:"max_handshakes"`
	// MaxHandshakesPerClient bounds the same per client address. Default 16; 0: no bound.
	MaxHandshakesPerClient int `mapstructure:"max_handshakes_per_client"`
}

// Shutdown configures the drain on SIGTERM/SIGINT.
type Shutdown struct {
	// DrainTimeout is how long in-flight statements and open transactions may take to
	// finish before the remaining connections are closed. Default 30s.
	DrainTimeout time.Duration `mapstructure:"drain_timeout"`
}

// Queue disciplines.
const (
	DisciplineFIFO = "fifo"
	DisciplineSJF  = "sjf"
)

// Capacity is admission.capacity: a fixed pool of concurrent estimated work, or
// CapacityAuto.
type Capacity time.Duration

// CapacityAuto is the capacity found and followed online.
const CapacityAuto Capacity = -1

// Auto says whether the capacity adapts.
func (c Capacity) Auto() bool { return c == CapacityAuto }

func (c Capacity) String() string {
	if c.Auto() {
		return "auto"
	}
	return time.Duration(c).String()
}

// LastCall is admission.last_call: a duration (0: off), or LastCallAuto.
type LastCall time.Duration

// LastCallAuto, the default, is a fifth of queue_timeout: without a last call sjf could hold
// a unit behind a stream of cheaper ones until it is refused.
const LastCallAuto LastCall = -1

func (l LastCall) String() string {
	if l == LastCallAuto {
		return "auto"
	}
	return time.Duration(l).String()
}

// LastCallFor is the last call in force: LastCall, or a fifth of QueueTimeout for auto.
func (a *Admission) LastCallFor() time.Duration {
	if a.LastCall == LastCallAuto {
		return a.QueueTimeout / 5
	}
	return time.Duration(a.LastCall)
}

// Admission configures admission control and scheduling.
type Admission struct {
	// Enabled turns admission control on. Default true, with the capacity found online
	// (auto); false makes a pure relay that still measures.
	Enabled bool `mapstructure:"enabled"`
	// Capacity is the pool of concurrent estimated work: a duration, or auto (the default)
	// to have it found and followed online between CapacityMin and CapacityMax.
	Capacity Capacity `mapstructure:"capacity"`
	// CapacityMin and CapacityMax bound the adaptive capacity; CapacityStart is where it
	// starts (0: at CapacityMin, a cold start without a storm; calibrate's result is a
	// good start). Defaults 10ms, 60s, 0.
	CapacityMin   time.Duration `mapstructure:"capacity_min"`
	CapacityMax   time.Duration `mapstructure:"capacity_max"`
	CapacityStart time.Duration `mapstructure:"capacity_start"`
	// CapacityInterval is the adaptive capacity's measurement window: it moves at most once
	// per window. Default 2s. CapacityStep is its largest move in a window, a fraction of
	// the capacity. Default 0.5. CapacityStretch is the target: how many times longer than
	// alone the units run at the database. Default 2.
	CapacityInterval time.Duration `mapstructure:"capacity_interval"`
	CapacityStep     float64       `mapstructure:"capacity_step"`
	CapacityStretch  float64       `mapstructure:"capacity_stretch"`
	// CapacityLaw is the rule that moves the adaptive capacity: gradient (default), or
	// rules, the controller of earlier releases, kept for one release for comparison.
	CapacityLaw string `mapstructure:"capacity_law"`
	// MaxConcurrency bounds units running at once; 0 (default) means no bound.
	MaxConcurrency int `mapstructure:"max_concurrency"`
	// Discipline orders the queue: fifo or sjf (default).
	Discipline string `mapstructure:"discipline"`
	// Aging is X in "no unit waits more than X times its expected service time" (its type's
	// average busy time); 0 (default) is off.
	Aging float64 `mapstructure:"aging"`
	// LastCall: under sjf, a unit that has waited queue_timeout minus LastCall goes ahead of
	// cheaper units, in deadline order, so that it is served instead of refused; 0 is off.
	// Default auto: a fifth of queue_timeout.
	LastCall LastCall `mapstructure:"last_call"`
	// QueueTimeout is how long a unit may wait. Default 5s.
	QueueTimeout time.Duration `mapstructure:"queue_timeout"`
	// MaxQueue bounds the number of waiting units. Default 10000.
	MaxQueue int `mapstructure:"max_queue"`
	// MaxOpenTransactions bounds the transactions running at once; a transaction past it
	// waits at its first statement. 0 (default) means no bound.
	MaxOpenTransactions int      `mapstructure:"max_open_transactions"`
	Sessions            Sessions `mapstructure:"sessions"`
	Reserve             Reserve  `mapstructure:"reserve"`
	// Policers are token buckets on units matching a rule; a unit refused by one is
	// refused at once. Default none.
	Policers []Policer `mapstructure:"policers"`
	// PolicerInterval is how often adaptive policers move their rate. Default 1s.
	PolicerInterval time.Duration `mapstructure:"policer_interval"`
	Accept          Accept        `mapstructure:"accept"`
}

// Policer is a token bucket on the units that match it (every field set must match).
type Policer struct {
	// Name names the policer in errors, logs and metrics. Required.
	Name string `mapstructure:"name"`
	// Type matches the unit's request type: its gk:type tag, or its 16-hex-digit key.
	Type string `mapstructure:"type"`
	// User and Schema match the login user and the current schema.
	User   string `mapstructure:"user"`
	Schema string `mapstructure:"schema"`
	// Client matches the client address: an IP or a CIDR block.
	Client string `mapstructure:"client"`
	// Rate is units per second (the start when a controller adapts it); Burst the most let
	// through at once.
	Rate  float64 `mapstructure:"rate"`
	Burst float64 `mapstructure:"burst"`
	// MinRate and MaxRate bound an adapted rate (MaxRate 0: no bound).
	MinRate float64 `mapstructure:"min_rate"`
	MaxRate float64 `mapstructure:"max_rate"`
	// Controller adapts the rate towards Target of Signal: "" (static), p (proportional, on a
	// utilization) or pd (proportional-derivative, on a queue length).
	Controller string `mapstructure:"controller"`
	// Signal is inflight (admitted load over capacity), queue (units waiting) or
	// threads_running (the primary's, read with monitor.user).
	Signal string  `mapstructure:"signal"`
	Target float64 `mapstructure:"target"`
	Kp     float64 `mapstructure:"kp"`
	Kd     float64 `mapstructure:"kd"`
}

// Accept polices new client connections at the listener, before any handshake work.
type Accept struct {
	// Rate is connections per second accepted from all clients together; 0 (default): no
	// bound. Burst is the most accepted at once. Default 100.
	Rate  float64 `mapstructure:"rate"`
	Burst float64 `mapstructure:"burst"`
	// PerClientRate and PerClientBurst bound each client address alike; 0: no bound.
	PerClientRate  float64 `mapstructure:"per_client_rate"`
	PerClientBurst float64 `mapstructure:"per_client_burst"`
}

// Session gate variants (AWAIT).
const (
	SessionsConservative = "conservative"
	SessionsAggressive   = "aggressive"
)

// Session keys: what makes two connections one application session.
const (
	SessionKeyConnection = "connection"
	SessionKeyTag        = "tag"
)

// Sessions configures the AWAIT session gate: accepted sessions are protected over new ones
// under overload. It is off while ActiveLimit is 0.
type Sessions struct {
	// ActiveLimit is A: past this many units admitted or waiting for capacity, units of new
	// sessions are refused at once and those of accepted sessions wait in the blocking
	// queue. Default 0: off.
	ActiveLimit int `mapstructure:"active_limit"`
	// BlockingQueue is B, the blocking queue's capacity (its start when it adapts).
	// Default 8.
	BlockingQueue int `mapstructure:"blocking_queue"`
	// Variant is conservative (default: new sessions are let in again as soon as there is
	// room) or aggressive (after an accepted session was refused, new sessions stay out until
	// the system has emptied).
	Variant string `mapstructure:"variant"`
	// SLO, when set, adapts B: every AdaptEvery completed units the p95 response times of
	// all units and of those under the current B are compared with it. Default 0: fixed B.
	SLO time.Duration `mapstructure:"slo"`
	// AdaptEvery is K, the completions between adaptations. Default 10000.
	AdaptEvery int `mapstructure:"adapt_every"`
	// MaxBlockingQueue is the largest B adaptation reaches. Default 120.
	MaxBlockingQueue int `mapstructure:"max_blocking_queue"`
	// Key is what makes a session accepted: connection (default: a client connection
	// that has been admitted before) or tag (a /* gk:session=ID */ comment: an application
	// session admitted before on any connection).
	Key string `mapstructure:"key"`
}

// Reserve keeps part of the capacity for quick units. It is off while Floor is 0.
type Reserve struct {
	// Floor is the least capacity kept for quick units; the reserve rises at once when spare
	// capacity falls under it and decays by half the difference per second. Default 0: off.
	Floor time.Duration `mapstructure:"floor"`
	// QuickCutoff: units expected to cost less are quick, the others lengthy. Default 100ms.
	QuickCutoff time.Duration `mapstructure:"quick_cutoff"`
	// LengthyLane is how many lengthy units may run inside the reserve at once. Default 1.
	LengthyLane int `mapstructure:"lengthy_lane"`
	// LaneRate paces the lane's starts at this many a second. Default 0: no bound.
	LaneRate float64 `mapstructure:"lane_rate"`
	// QuickWaitTarget, when set, paces the lane's starts to hold the quick units' mean queue
	// wait at it. Default 0: the lane is not paced.
	QuickWaitTarget time.Duration `mapstructure:"quick_wait_target"`
}

// Request type keys.
var TypeKeys = []string{"digest", "tag", "tag_digest", "transaction", "user", "schema", "program_name"}

// Classify configures how requests are grouped into types.
type Classify struct {
	// TypeKey is what makes a request type: digest (default), tag, tag_digest,
	// transaction, user, schema or program_name.
	TypeKey string `mapstructure:"type_key"`
}

// Estimator configures how the cost of each request type is learned and kept.
type Estimator struct {
	// Weight is the weight of a new measurement in the moving average, in (0, 1]. Default
	// 0.1: after a step change the estimate is within 10% of the new cost after 22 units.
	Weight float64 `mapstructure:"weight"`
	// Window, when set (1s to 1h), makes the estimate the mean of the units of the last
	// Window instead of the moving average. Default 0: the moving average.
	Window time.Duration `mapstructure:"window"`
	// MaxTypes bounds the request types tracked; the least used of the rest share one
	// "other" type. Default 1000.
	MaxTypes int `mapstructure:"max_types"`
	// DefaultCost is the estimate of a type never seen. Default 10ms.
	DefaultCost time.Duration `mapstructure:"default_cost"`
	// BackendCPUs, when set, makes a unit's cost its share of the backend's processors
	// rather than its busy time: while n commands run on the backend, each is charged
	// min(1, BackendCPUs/n) of the time that passes. Costs then stay put as admission lets
	// more run at once. Default 0: the busy time.
	BackendCPUs int `mapstructure:"backend_cpus"`
	// StateFile is where estimates are saved on shutdown (and every SaveInterval) and loaded
	// from on start. Default empty: $STATE_DIRECTORY/estimates.json when systemd sets
	// STATE_DIRECTORY, else estimates are not kept across restarts.
	StateFile string `mapstructure:"state_file"`
	// SaveInterval is how often the estimates are saved while running; 0 means only on
	// shutdown. Default 5m.
	SaveInterval time.Duration `mapstructure:"save_interval"`
	// MetricsTopTypes is how many types, by share of load, get their own Prometheus series.
	// Default 20.
	MetricsTopTypes int `mapstructure:"metrics_top_types"`
}

// Log configures logging.
type Log struct {
	// Level is debug, info (default), warn or error.
	Level string `mapstructure:"level"`
	// Format is text (default) or json.
	Format string `mapstructure:"format"`
}

// Default returns the configuration used where nothing else is set.
func Default() Config {
	return Config{
		Listen: "127.0.0.1:6033",
		Admin:  Admin{Listen: "127.0.0.1:6080", Auth: AdminAuth{Users: map[string]string{}}},
		Backends: Backends{
			Primary:        "127.0.0.1:3306",
			Replicas:       []string{},
			Servers:        []string{},
			ConnectTimeout: 5 * time.Second,
			DeadAfter:      30 * time.Second,
			RoleInterval:   time.Second,
			TLS:            BackendTLS{Mode: TLSDisabled},
		},
		Mode:    ModePassthrough,
		Threads: ThreadsAuto,
		Auth:    Auth{RefreshInterval: time.Minute},
		Pools: Pools{
			MaxOpen: 64, MaxIdle: 16, IdleTimeout: 5 * time.Minute, MaxLifetime: time.Hour,
			WaitTimeout: 5 * time.Second,
		},
		Client: Client{
			HandshakeTimeout:       10 * time.Second,
			MaxHandshakes:          64,
			MaxHandshakesPerClient: 16,
			IdleTimeout:            8 * time.Hour,
			MaxPacketSize:          1 << 30,
		},
		Shutdown: Shutdown{DrainTimeout: 30 * time.Second},
		Failover: Failover{BufferTimeout: 10 * time.Second, BufferMax: 10000, DurableAcks: DurableAcksOff},
		Admission: Admission{
			Enabled:          true,
			Capacity:         CapacityAuto,
			CapacityMin:      10 * time.Millisecond,
			CapacityMax:      time.Minute,
			CapacityInterval: 2 * time.Second,
			CapacityStep:     0.5,
			CapacityStretch:  2.5,
			CapacityLaw:      "gradient",
			Discipline:       DisciplineSJF,
			QueueTimeout:     5 * time.Second,
			LastCall:         LastCallAuto,
			MaxQueue:         10000,
			Sessions: Sessions{
				BlockingQueue: 8, Variant: SessionsConservative, AdaptEvery: 10000,
				MaxBlockingQueue: 120, Key: SessionKeyConnection,
			},
			Reserve:         Reserve{QuickCutoff: 100 * time.Millisecond, LengthyLane: 1},
			Policers:        []Policer{},
			PolicerInterval: time.Second,
			Accept:          Accept{Burst: 100, PerClientBurst: 20},
		},
		Classify: Classify{TypeKey: "digest"},
		Estimator: Estimator{
			Weight:          0.1,
			MaxTypes:        1000,
			DefaultCost:     10 * time.Millisecond,
			SaveInterval:    5 * time.Minute,
			MetricsTopTypes: 20,
		},
		Log:     Log{Level: "info", Format: "text"},
		Monitor: Monitor{Interval: time.Second},
		Routing: Routing{
			Enabled: true, Consistency: "strong", Balance: "self",
			CausalWait: 20 * time.Millisecond, MaxLag: 5 * time.Second, ReadOnlyTransactions: "replica",
			StrongRule: "per_table",
		},
		Replicas: Replicas{PollInterval: 5 * time.Millisecond, ClosureInterval: 10 * time.Second},
		Cache: Cache{
			Mode: CacheOff, MaxBytes: 256 << 20, MaxEntryBytes: 1 << 20,
			Replacement: ReplacementCostAware, Consistency: "strong", Wait: 50 * time.Millisecond,
		},
		Fleet: Fleet{
			Etcd: []string{}, Prefix: "/gatekeeper/", Interval: 500 * time.Millisecond,
			LeaseTTL: 3 * time.Second, DialTimeout: 2 * time.Second, SharedConfig: true,
		},
		Rules: []Rule{},
	}
}
