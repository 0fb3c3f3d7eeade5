package config

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/crypto/bcrypt"

	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/rules"
)

// KeyError is a bad value for one key.
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

// Validate checks every setting and returns all problems at once, each naming its key and
// what would be accepted.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &KeyError{Key: key, Err: fmt.Errorf(format, args...)})
	}
	addr := func(key, value string, optional bool) {
		if value == "" {
			if !optional {
				bad(key, "is required (host:port)")
			}
			return
		}
		if _, port, err := net.SplitHostPort(value); err != nil {
			bad(key, "%q is not host:port", value)
		} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			bad(key, "%q has an invalid port", value)
		}
	}
	oneOf := func(key, value string, allowed ...string) {
		if !slices.Contains(allowed, value) {
			bad(key, "%q is not one of %s", value, strings.Join(allowed, ", "))
		}
	}
	if n, fixed := c.FixedThreads(); c.Threads != ThreadsAuto && (!fixed || n < 1) {
		bad("threads", "%q is neither auto nor a number of processors from 1", c.Threads)
	}
	readable := func(key, path string) {
		if path == "" {
			return
		}
		if _, err := os.Stat(path); err != nil {
			bad(key, "%v", err)
		}
	}
	keyPair := func(prefix, cert, key string) {
		switch {
		case cert == "" && key == "":
		case cert == "" || key == "":
			bad(prefix+".cert_file", "cert_file and key_file go together")
		default:
			if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
				bad(prefix+".cert_file", "cannot load the certificate and key: %v", err)
			}
		}
	}

	addr("listen", c.Listen, false)
	addr("admin.listen", c.Admin.Listen, true)
	keyPair("admin.tls", c.Admin.TLS.CertFile, c.Admin.TLS.KeyFile)
	c.validateAdminAuth(bad)
	addr("backends.primary", c.Backends.Primary, len(c.Backends.Servers) > 0)
	for i, r := range c.Backends.Replicas {
		addr(fmt.Sprintf("backends.replicas[%d]", i), r, false)
	}
	for i, r := range c.Backends.Servers {
		addr(fmt.Sprintf("backends.servers[%d]", i), r, false)
	}
	if c.Backends.Primary == "" && len(c.Backends.Servers) > 0 && (c.Monitor.User == "" || c.Backends.RoleInterval <= 0) {
		bad("backends.servers", "finding the primary among the servers reads their roles: set monitor.user and a backends.role_interval above 0, or name the primary in backends.primary")
	}
	if c.Backends.ConnectTimeout <= 0 {
		bad("backends.connect_timeout", "must be positive, such as 5s")
	}
	if c.Backends.DeadAfter < 0 || (c.Backends.DeadAfter > 0 && c.Backends.DeadAfter < time.Second) {
		bad("backends.dead_after", "must be 0 (the system's TCP defaults) or at least 1s, such as 30s")
	}
	if c.Backends.RoleInterval < 0 {
		bad("backends.role_interval", "must be 0 (never read the roles) or positive, such as 1s")
	}
	if c.Failover.BufferTimeout < 0 {
		bad("failover.buffer_timeout", "must be 0 (writes fail at once without a primary) or positive, such as 10s")
	}
	if c.Failover.BufferMax < 0 {
		bad("failover.buffer_max", "must be 0 (no bound) or positive, such as 10000")
	}
	oneOf("failover.durable_acks", c.Failover.DurableAcks, DurableAcksOff, DurableAcksReplica)
	if c.Failover.DurableAcks == DurableAcksReplica && (!c.Routes() || c.Monitor.User == "") {
		bad("failover.durable_acks", "replica needs mode: pooled, backends.replicas, routing.enabled and monitor.user: the proxy holds each write's OK until a replica it monitors has applied the write")
	}
	oneOf("backends.tls.mode", c.Backends.TLS.Mode,
		TLSDisabled, TLSPreferred, TLSRequired, TLSVerifyCA, TLSVerifyIdentity)
	readable("backends.tls.ca_file", c.Backends.TLS.CAFile)
	keyPair("backends.tls", c.Backends.TLS.CertFile, c.Backends.TLS.KeyFile)

	oneOf("mode", c.Mode, ModePassthrough, ModePooled)
	if c.Mode == ModePooled && c.Auth.UsersFile == "" && !c.Auth.FromBackend {
		bad("mode", "pooled needs accounts to check clients against: set auth.users_file, auth.from_backend, or both")
	}
	if c.Auth.UsersFile != "" {
		if _, err := auth.LoadFile(c.Auth.UsersFile); err != nil {
			bad("auth.users_file", "%v", err)
		}
	}
	if c.Auth.FromBackend && c.Monitor.User == "" {
		bad("auth.from_backend", "needs monitor.user (and monitor.password): the account that reads mysql.user")
	}
	if c.Auth.RefreshInterval < time.Second {
		bad("auth.refresh_interval", "must be at least 1s, such as 1m")
	}
	pl := c.Pools
	if pl.MaxOpen < 1 {
		bad("pools.max_open", "must be at least 1, such as 64")
	}
	if pl.MaxIdle < 0 || pl.MaxIdle > pl.MaxOpen {
		bad("pools.max_idle", "must be between 0 and pools.max_open (%d)", pl.MaxOpen)
	}
	if pl.IdleTimeout <= 0 || pl.MaxLifetime <= 0 || pl.WaitTimeout <= 0 {
		bad("pools.wait_timeout", "pools.idle_timeout, max_lifetime and wait_timeout must be positive, such as 5m, 1h and 5s")
	}

	keyPair("tls", c.TLS.CertFile, c.TLS.KeyFile)
	if c.TLS.Required && c.TLS.CertFile == "" {
		bad("tls.required", "needs tls.cert_file and tls.key_file")
	}

	if c.Client.HandshakeTimeout <= 0 {
		bad("client.handshake_timeout", "must be positive, such as 10s")
	}
	if c.Client.IdleTimeout < 0 {
		bad("client.idle_timeout", "must be 0 (never) or positive")
	}
	if c.Client.MaxPacketSize < 1<<10 || c.Client.MaxPacketSize > 1<<30 {
		bad("client.max_packet_size", "%s is outside 1KiB..1GiB", c.Client.MaxPacketSize)
	}
	if c.Client.MaxConnections < 0 {
		bad("client.max_connections", "must be 0 (no bound) or positive")
	}
	if c.Client.MaxHandshakes < 0 || c.Client.MaxHandshakesPerClient < 0 {
		bad("client.max_handshakes", "max_handshakes and max_handshakes_per_client must be 0 (no bound) or positive, such as 64 and 16")
	}
	if c.Shutdown.DrainTimeout < 0 {
		bad("shutdown.drain_timeout", "must be 0 or positive")
	}

	a := c.Admission
	if !a.Capacity.Auto() && a.Capacity <= 0 {
		bad("admission.capacity", "must be auto or positive, such as 500ms")
	}
	if a.CapacityMin <= 0 || a.CapacityMax < a.CapacityMin {
		bad("admission.capacity_min", "capacity_min must be positive and at most capacity_max (%s), such as 10ms", a.CapacityMax)
	}
	if a.CapacityStart != 0 && (a.CapacityStart < a.CapacityMin || a.CapacityStart > a.CapacityMax) {
		bad("admission.capacity_start", "must be 0 (start at capacity_min) or between capacity_min %s and capacity_max %s", a.CapacityMin, a.CapacityMax)
	}
	if a.CapacityInterval <= 0 {
		bad("admission.capacity_interval", "must be positive, such as 1s")
	}
	if !(a.CapacityStep > 0 && a.CapacityStep <= 1) {
		bad("admission.capacity_step", "must be more than 0 and at most 1, such as 0.5")
	}
	if !(a.CapacityStretch > 1 && a.CapacityStretch <= 100) {
		bad("admission.capacity_stretch", "must be more than 1 and at most 100, such as 2")
	}
	oneOf("admission.capacity_law", a.CapacityLaw, "gradient", "rules")
	if a.MaxConcurrency < 0 {
		bad("admission.max_concurrency", "must be 0 (no ceiling) or positive")
	}
	oneOf("admission.discipline", a.Discipline, DisciplineFIFO, DisciplineSJF)
	if a.Aging < 0 || math.IsNaN(a.Aging) || math.IsInf(a.Aging, 0) {
		bad("admission.aging", "must be 0 (off) or a positive factor such as 10")
	}
	if a.QueueTimeout <= 0 {
		bad("admission.queue_timeout", "must be positive, such as 5s")
	}
	if call := a.LastCallFor(); call < 0 || (a.QueueTimeout > 0 && call >= a.QueueTimeout) {
		bad("admission.last_call", "must be auto (a fifth of admission.queue_timeout), 0 (off), or shorter than admission.queue_timeout (%s)", a.QueueTimeout)
	}
	if a.MaxQueue <= 0 {
		bad("admission.max_queue", "must be positive, such as 10000")
	}
	if a.MaxOpenTransactions < 0 {
		bad("admission.max_open_transactions", "must be 0 (no bound) or positive")
	}
	ss := a.Sessions
	if ss.ActiveLimit < 0 {
		bad("admission.sessions.active_limit", "must be 0 (off) or positive, such as 200")
	}
	if ss.BlockingQueue < 0 {
		bad("admission.sessions.blocking_queue", "must be 0 or positive, such as 8")
	}
	oneOf("admission.sessions.variant", ss.Variant, SessionsConservative, SessionsAggressive)
	if ss.SLO < 0 {
		bad("admission.sessions.slo", "must be 0 (fixed blocking queue) or positive, such as 2s")
	}
	if ss.AdaptEvery < 1 {
		bad("admission.sessions.adapt_every", "must be positive, such as 10000")
	}
	if ss.MaxBlockingQueue < 1 || ss.MaxBlockingQueue < ss.BlockingQueue {
		bad("admission.sessions.max_blocking_queue", "must be at least 1 and at least admission.sessions.blocking_queue")
	}
	oneOf("admission.sessions.key", ss.Key, SessionKeyConnection, SessionKeyTag)
	if a.PolicerInterval < 100*time.Millisecond {
		bad("admission.policer_interval", "must be at least 100ms, such as 1s")
	}
	names := map[string]bool{}
	for i, p := range a.Policers {
		key := fmt.Sprintf("admission.policers[%d]", i)
		switch {
		case p.Name == "":
			bad(key+".name", "is required: it names the policer in errors and metrics")
		case names[p.Name]:
			bad(key+".name", "%q is used by another policer; names must be unique", p.Name)
		}
		names[p.Name] = true
		if p.Client != "" {
			if _, err := netip.ParsePrefix(p.Client); err != nil {
				if _, err := netip.ParseAddr(p.Client); err != nil {
					bad(key+".client", "%q is neither an IP address nor a CIDR block such as 10.0.0.0/8", p.Client)
				}
			}
		}
		if p.Rate < 0 || p.MinRate < 0 || p.MaxRate < 0 {
			bad(key+".rate", "rate, min_rate and max_rate must be 0 or positive (units per second)")
		}
		if p.Burst < 1 {
			bad(key+".burst", "must be at least 1: the most units let through at once")
		}
		if p.MaxRate > 0 && p.MaxRate < p.MinRate {
			bad(key+".max_rate", "must be at least min_rate (or 0 for no bound)")
		}
		oneOf(key+".controller", p.Controller, "", "p", "pd")
		if p.Controller != "" {
			oneOf(key+".signal", p.Signal, "inflight", "queue", "threads_running")
			if p.Kp <= 0 {
				bad(key+".kp", "must be positive when a controller is set, such as 0.5")
			}
		}
	}
	acc := a.Accept
	if acc.Rate < 0 || acc.PerClientRate < 0 {
		bad("admission.accept.rate", "rate and per_client_rate must be 0 (no bound) or positive")
	}
	if acc.Burst < 1 || acc.PerClientBurst < 1 {
		bad("admission.accept.burst", "burst and per_client_burst must be at least 1")
	}
	r := a.Reserve
	if r.Floor < 0 || (a.Capacity > 0 && r.Floor > time.Duration(a.Capacity)) {
		bad("admission.reserve.floor", "must be between 0 (off) and admission.capacity")
	}
	if a.Capacity.Auto() && r.Floor > a.CapacityMin {
		bad("admission.reserve.floor", "must be at most admission.capacity_min (%s) with capacity auto: the capacity may go down to it", a.CapacityMin)
	}
	if r.QuickCutoff <= 0 {
		bad("admission.reserve.quick_cutoff", "must be positive, such as 100ms")
	}
	if r.LengthyLane < 0 {
		bad("admission.reserve.lengthy_lane", "must be 0 or positive, such as 1")
	}
	if r.LaneRate < 0 {
		bad("admission.reserve.lane_rate", "must be 0 (no bound) or positive, such as 50")
	}
	if r.QuickWaitTarget < 0 || (r.QuickWaitTarget > 0 && r.Floor == 0) {
		bad("admission.reserve.quick_wait_target", "must be 0 (lane not paced) or positive, such as 10ms, and needs admission.reserve.floor")
	}
	c.validateRouting(bad, oneOf)
	c.validateCache(bad, oneOf)
	c.validateFleet(bad, readable, keyPair)
	c.validateRules(bad, oneOf)
	if c.Monitor.Interval < 100*time.Millisecond {
		bad("monitor.interval", "must be at least 100ms, such as 1s")
	}
	oneOf("classify.type_key", c.Classify.TypeKey, TypeKeys...)
	e := c.Estimator
	if !(e.Weight > 0 && e.Weight <= 1) {
		bad("estimator.weight", "must be in (0, 1], such as 0.1")
	}
	if e.Window != 0 && (e.Window < time.Second || e.Window > time.Hour) {
		bad("estimator.window", "must be 0 (moving average) or between 1s and 1h")
	}
	if e.MaxTypes < 1 || e.MaxTypes > 100000 {
		bad("estimator.max_types", "must be between 1 and 100000, such as 1000")
	}
	if e.DefaultCost <= 0 {
		bad("estimator.default_cost", "must be positive, such as 10ms")
	}
	if e.BackendCPUs < 0 || e.BackendCPUs > 4096 {
		bad("estimator.backend_cpus", "must be 0 (charge busy time) or the backend's processor count, such as 16")
	}
	if e.StateFile != "" {
		if fi, err := os.Stat(filepath.Dir(e.StateFile)); err != nil || !fi.IsDir() {
			bad("estimator.state_file", "directory %q does not exist", filepath.Dir(e.StateFile))
		}
	}
	if e.SaveInterval < 0 {
		bad("estimator.save_interval", "must be 0 (only on shutdown) or positive, such as 5m")
	}
	if e.MetricsTopTypes < 0 || e.MetricsTopTypes > 1000 {
		bad("estimator.metrics_top_types", "must be between 0 and 1000, such as 20")
	}
	oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	oneOf("log.format", c.Log.Format, "text", "json")
	return errors.Join(errs...)
}

// ByteSize is a size in bytes, written as a number of bytes or with a binary suffix:
// 64KiB, 16MiB, 1GiB (K, M, G and KB, MB, GB mean the same, as in MySQL).
type ByteSize int64

func (b ByteSize) String() string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", b>>30)
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", b>>10)
	}
	return fmt.Sprintf("%dB", int64(b))
}

func parseByteSize(raw any) (ByteSize, error) {
	switch x := raw.(type) {
	case ByteSize:
		return x, nil
	case int:
		return ByteSize(x), nil
	case int64:
		return ByteSize(x), nil
	case string:
		s := strings.TrimSpace(x)
		i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
		if i == 0 {
			break
		}
		num, suffix := s, ""
		if i > 0 {
			num, suffix = s[:i], strings.ToUpper(strings.TrimSpace(s[i:]))
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			break
		}
		shift := map[string]uint{"": 0, "B": 0, "K": 10, "KB": 10, "KIB": 10, "M": 20, "MB": 20,
			"MIB": 20, "G": 30, "GB": 30, "GIB": 30}
		sh, ok := shift[suffix]
		if !ok || n > math.MaxInt64>>sh {
			break
		}
		return ByteSize(n << sh), nil
	}
	return 0, errors.New("invalid size: use bytes or a number with KiB, MiB or GiB, such as 16MiB")
}

// validateRouting checks the routing and replicas keys.
func (c *Config) validateRouting(bad func(key, format string, args ...any), oneOf func(key, value string, allowed ...string)) {
	r := c.Routing
	oneOf("routing.consistency", r.Consistency, "strong", "session", "eventual")
	oneOf("routing.balance", r.Balance, "self", "lard", "sqf", "rr")
	oneOf("routing.read_only_transactions", r.ReadOnlyTransactions, "replica", "primary")
	oneOf("routing.strong_rule", r.StrongRule, "per_table", "global", "proxy_local")
	if r.CausalWait < 0 || r.CausalWait > time.Minute {
		bad("routing.causal_wait", "must be between 0 (no wait: the primary at once) and 1m, such as 20ms")
	}
	if r.MaxLag < 100*time.Millisecond {
		bad("routing.max_lag", "must be at least 100ms, such as 5s")
	}
	if p := c.Replicas.PollInterval; p < time.Millisecond || p > 10*time.Second {
		bad("replicas.poll_interval", "must be between 1ms and 10s, such as 5ms")
	}
	if p := c.Replicas.ClosureInterval; p < 100*time.Millisecond || p > time.Hour {
		bad("replicas.closure_interval", "must be between 100ms and 1h, such as 10s")
	}
	if c.Routes() && c.Monitor.User == "" {
		bad("routing.enabled", "routing reads to replicas needs monitor.user (and monitor.password): the account that reads replication positions")
	}
}

// validateCache checks the cache keys.
func (c *Config) validateCache(bad func(key, format string, args ...any), oneOf func(key, value string, allowed ...string)) {
	k := c.Cache
	oneOf("cache.mode", k.Mode, CacheOff, CacheRules, CacheAuto)
	oneOf("cache.replacement", k.Replacement, ReplacementCostAware, ReplacementLRU)
	oneOf("cache.consistency", k.Consistency, "strong", "eventual")
	if k.MaxBytes < 0 || (k.Mode != CacheOff && k.MaxBytes == 0) {
		bad("cache.max_bytes", "must be positive with cache.mode %s, such as 256MiB", k.Mode)
	}
	if k.MaxEntryBytes < 0 || (k.Mode != CacheOff && (k.MaxEntryBytes == 0 || k.MaxEntryBytes > k.MaxBytes)) {
		bad("cache.max_entry_bytes", "must be positive and at most cache.max_bytes (%s), such as 1MiB", k.MaxBytes)
	}
	if k.Wait < 0 || k.Wait > time.Minute {
		bad("cache.wait", "must be between 0 (a miss never waits for another's fill) and 1m, such as 50ms")
	}
	if k.Mode == CacheOff {
		return
	}
	switch {
	case c.Mode != ModePooled:
		bad("cache.mode", "%s needs mode: pooled: the cache keys results by the session state that pooled mode tracks", k.Mode)
	case c.Monitor.User == "":
		bad("cache.mode", "%s needs monitor.user (and monitor.password), granted REPLICATION SLAVE: the cache learns every write from the primary's binary log", k.Mode)
	case c.Routing.StrongRule != "per_table":
		bad("cache.mode", "%s needs routing.strong_rule per_table: a hit is checked against the writes to its tables that the binary log shows", k.Mode)
	}
}

// validateRules checks each query rule and that their names are unique.
func (c *Config) validateRules(bad func(key, format string, args ...any), oneOf func(key, value string, allowed ...string)) {
	names := map[string]int{}
	for i, r := range c.Rules {
		key := fmt.Sprintf("rules[%d]", i)
		if j, dup := names[r.Name]; dup && r.Name != "" {
			bad(key+".name", "%q is also the name of rules[%d]; names must be unique", r.Name, j)
		} else {
			names[r.Name] = i
		}
		validateRule(key, r, bad, oneOf)
	}
}

// validateRule checks one query rule on its own.
func validateRule(key string, r Rule, bad func(key, format string, args ...any), oneOf func(key, value string, allowed ...string)) {
	if r.Name == "" {
		bad(key+".name", "is required: it names the rule in errors, metrics and the admin API")
	}
	validateMatch(key+".match", r.Match, bad)
	others := r.Cache != "" || r.Route != "" || r.Consistency != "" || r.MaxConcurrent != 0
	switch {
	case r.Deny != "" && others:
		bad(key+".deny", "goes alone: a refused statement has nothing else applied; move the other actions to a rule of their own")
	case r.Deny == "" && !others:
		bad(key, "sets no action: give it cache, route, consistency, deny or max_concurrent")
	}
	if _, _, err := rules.ParseCache(r.Cache); err != nil {
		bad(key+".cache", "%v", err)
	}
	if _, err := rules.ParseRoute(r.Route); err != nil {
		bad(key+".route", "%v", err)
	}
	if r.Consistency != "" {
		oneOf(key+".consistency", r.Consistency, "strong", "session", "eventual")
	}
	if r.MaxConcurrent < 0 {
		bad(key+".max_concurrent", "must be at least 1 (or 0, unset), such as 4")
	}
}

// validateMatch checks a rule's conditions.
func validateMatch(key string, m RuleMatch, bad func(key, format string, args ...any)) {
	if m.Digest != "" {
		if _, err := regexp.Compile(m.Digest); err != nil {
			bad(key+".digest", "is not an RE2 regular expression: %v", err)
		}
	}
	if _, _, err := rules.ParseTable(m.Table); err != nil {
		bad(key+".table", "%v", err)
	}
}

// validateAdminAuth checks admin.auth: a token file that holds a token only its owner may
// read, and bcrypt hashes for the users.
func (c *Config) validateAdminAuth(bad func(key, format string, args ...any)) {
	a := &c.Admin.Auth
	if _, err := a.ReadToken(); err != nil {
		bad("admin.auth.bearer_token_file", "%v", err)
	}
	for _, name := range slices.Sorted(maps.Keys(a.Users)) {
		if name == "" || strings.Contains(name, ":") {
			bad("admin.auth.users", "user %q: a user name is not empty and holds no colon (basic authentication puts one after it)", name)
		}
		if _, err := bcrypt.Cost([]byte(a.Users[name])); err != nil {
			bad("admin.auth.users", "user %q: the password is not a bcrypt hash (%v): make one with `gatekeeper hash-password` or `htpasswd -nBC 10 \"\" | tr -d ':\\n'`", name, err)
		}
	}
	if a.ProtectReads && !a.Enabled() {
		bad("admin.auth.protect_reads", "needs admin.auth.bearer_token_file or admin.auth.users: the credentials to ask for")
	}
}

// minTokenLength is the shortest token admin.auth.bearer_token_file may hold: 16
// characters, 64 bits of randomness even as hexadecimal digits.
const minTokenLength = 16

// ReadToken returns the token in BearerTokenFile, or nil without one. The file is a regular
// file that only its owner may read or write (as auth.users_file), holding the token on one
// line; white space around it is dropped.
func (a *AdminAuth) ReadToken() ([]byte, error) {
	path := a.BearerTokenFile
	if path == "" {
		return nil, nil
	}
	data, err := readSecretFile(path, "token")
	if err != nil {
		return nil, err
	}
	token := bytes.TrimSpace(data)
	switch {
	case len(token) < minTokenLength:
		return nil, fmt.Errorf("%s holds %d characters; a token has at least %d: make one with `openssl rand -hex 32 > %s`",
			path, len(token), minTokenLength, path)
	case bytes.ContainsFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return nil, fmt.Errorf("%s holds white space or control characters inside the token; it holds the token alone, on one line", path)
	}
	return token, nil
}

// readSecretFile returns the first 4KiB of path, a regular file that only its owner may
// read or write; what names the secret it holds in errors.
func readSecretFile(path, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat() // the file opened, not whatever the path names by now
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if mode := fi.Mode().Perm(); mode&0o077 != 0 {
		return nil, fmt.Errorf("mode %04o lets group or others read or write this %s; chmod 600 %s", mode, what, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, 4<<10))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}
