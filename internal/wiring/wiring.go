// Package wiring builds gatekeeper's parts from its configuration and joins them: the
// admission policies, the routing policy over the replicas' router, the backends' TLS and
// pools, and the proxy server that runs on them. It is the one place where the
// configuration is translated into the settings of the packages it configures; cmd/gatekeeper
// and the integration suite assemble the daemon through it, and no other package reads
// another's section of the configuration.
package wiring

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/binlog"
	"github.com/gatekeeperdb/gatekeeper/internal/cache"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
	"github.com/gatekeeperdb/gatekeeper/internal/fleet"
	"github.com/gatekeeperdb/gatekeeper/internal/proxy"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
	"github.com/gatekeeperdb/gatekeeper/internal/rules"
	"github.com/gatekeeperdb/gatekeeper/internal/topology"
)

// Proxy returns the proxy server for cfg, which must have been validated, with its parts:
// admission, the backends' TLS and pools, and in pooled mode with replicas, read routing.
// The measured cost of each request type goes to costs, unless it is nil. Metrics are
// registered with reg.
func Proxy(cfg config.Config, costs *estimator.Table, log *slog.Logger, reg prometheus.Registerer) (*proxy.Server, error) {
	parts := proxy.Parts{Costs: costs, Pools: Pools(cfg.Pools)}
	var err error
	if parts.Admission, err = Admission(cfg.Admission); err != nil {
		return nil, err
	}
	if parts.BackendTLS, err = BackendTLS(cfg.Backends.TLS); err != nil {
		return nil, err
	}
	caching := cfg.Mode == config.ModePooled && cfg.Cache.Mode != config.CacheOff
	if cfg.Mode == config.ModePooled && (cfg.Routes() || caching) {
		if parts.Routing, err = Routing(cfg, costs, log, reg); err != nil {
			return nil, err
		}
	}
	if caching {
		if parts.Cache, err = Cache(cfg.Cache); err != nil {
			return nil, err
		}
	}
	if parts.Rules, _, err = Rules(nil, cfg.Rules); err != nil {
		return nil, err
	}
	parts.Topology = Topology(cfg, log, reg)
	if parts.Topology != nil && parts.Routing != nil {
		policy := parts.Routing
		parts.Topology.OnChange(func(c topology.Change) {
			pos, err := replicas.ParsePos(c.Pos)
			if err != nil {
				log.Warn("topology: the new primary's position does not parse; every read needs the primary's position as read next", "position", c.Pos, "err", err)
				policy.Router().Versions().WroteUnknown(time.Now())
			}
			policy.PrimaryChanged(c.New, pos)
		})
	}
	return proxy.New(cfg, parts, log, reg)
}

// Topology returns what reads the servers' roles and holds writes during a failover: over
// the primary and the replicas, every backends.role_interval, as monitor.user. Nil when the
// roles are not read (role_interval 0, or no monitor.user): the primary is then
// backends.primary.
func Topology(cfg config.Config, log *slog.Logger, reg prometheus.Registerer) *topology.Topology {
	if cfg.Backends.RoleInterval <= 0 || cfg.Monitor.User == "" {
		return nil
	}
	servers := append([]string{cfg.Backends.Primary}, cfg.Backends.Replicas...)
	for _, s := range cfg.Backends.Servers {
		if !slices.Contains(servers, s) {
			servers = append(servers, s)
		}
	}
	timeout := min(cfg.Backends.ConnectTimeout, max(cfg.Backends.RoleInterval, time.Second))
	read := topology.NewSQLReader(cfg.Monitor.User, cfg.Monitor.Password, timeout)
	return topology.New(topology.Config{Servers: servers, Expected: cfg.Backends.Primary, Interval: cfg.Backends.RoleInterval,
		BufferTimeout: cfg.Failover.BufferTimeout, BufferMax: cfg.Failover.BufferMax, Close: read.Close}, read.Read, log, topology.NewMetrics(reg))
}

// Rules turns rules into the query rules, compiled from prev (the rules in force, for a
// reload: match counts and max_concurrent slots carry over by name; nil at start), with a
// warning for each rule that can never decide what it sets. cfg must have been validated.
func Rules(prev *rules.Set, rs []config.Rule) (*rules.Set, []rules.Warning, error) {
	out := make([]rules.Rule, len(rs))
	for i, r := range rs {
		cache, ttl, err := rules.ParseCache(r.Cache)
		if err != nil {
			return nil, nil, fmt.Errorf("rules[%d].cache: %w", i, err)
		}
		route, err := rules.ParseRoute(r.Route)
		if err != nil {
			return nil, nil, fmt.Errorf("rules[%d].route: %w", i, err)
		}
		var digest *regexp.Regexp
		if r.Match.Digest != "" {
			if digest, err = regexp.Compile(r.Match.Digest); err != nil {
				return nil, nil, fmt.Errorf("rules[%d].match.digest: %w", i, err)
			}
		}
		out[i] = rules.Rule{Name: r.Name, Match: rules.Match{Type: r.Match.Type, User: r.Match.User,
			Schema: r.Match.Schema, Table: r.Match.Table, Digest: digest}, Cache: cache, TTL: ttl,
			Route: route, Consistency: r.Consistency, Deny: r.Deny, MaxConcurrent: r.MaxConcurrent}
	}
	return rules.CompileFrom(prev, out)
}

// Cache turns cache.* into the result cache's store.
func Cache(c config.Cache) (*cache.Store, error) {
	policy, err := cache.ParsePolicy(c.Replacement)
	if err != nil {
		return nil, fmt.Errorf("cache.replacement: %w", err)
	}
	return cache.New(cache.Config{MaxBytes: int64(c.MaxBytes), MaxEntryBytes: int(c.MaxEntryBytes), Policy: policy}), nil
}

// Admission turns admission.* into admission as the proxy applies it.
func Admission(a config.Admission) (proxy.Admission, error) {
	rules, err := PolicerRules(a.Policers)
	if err != nil {
		return proxy.Admission{}, err
	}
	primary := AdmissionPolicy(a)
	// A replica's controller has no session gate: the gate counts the units of sessions
	// once, at the primary's controller.
	replica := primary
	replica.Sessions = admission.SessionConfig{}
	return proxy.Admission{Enabled: a.Enabled, Primary: primary, Replica: replica, Policers: rules,
		PolicerInterval: a.PolicerInterval, Accept: a.Accept, TagKey: a.Sessions.Key == config.SessionKeyTag}, nil
}

// AdmissionPolicy turns admission.* into a controller's policy.
func AdmissionPolicy(a config.Admission) admission.Config {
	d, _ := admission.ParseDiscipline(a.Discipline) // validated
	capacity := time.Duration(a.Capacity)
	var auto admission.AutoConfig
	if a.Capacity.Auto() {
		capacity = max(a.CapacityStart, a.CapacityMin)
		auto = admission.AutoConfig{Enabled: true, Min: a.CapacityMin, Max: a.CapacityMax,
			Interval: a.CapacityInterval, Step: a.CapacityStep, Stretch: a.CapacityStretch,
			Law: admission.Laws[a.CapacityLaw]}
	}
	return admission.Config{
		Capacity:            capacity,
		Auto:                auto,
		MaxConcurrency:      a.MaxConcurrency,
		Discipline:          d,
		Aging:               a.Aging,
		LastCall:            a.LastCallFor(),
		QueueTimeout:        a.QueueTimeout,
		MaxQueue:            a.MaxQueue,
		MaxOpenTransactions: a.MaxOpenTransactions,
		Sessions: admission.SessionConfig{
			ActiveLimit:      a.Sessions.ActiveLimit,
			BlockingQueue:    a.Sessions.BlockingQueue,
			Aggressive:       a.Sessions.Variant == config.SessionsAggressive,
			SLO:              a.Sessions.SLO,
			AdaptEvery:       a.Sessions.AdaptEvery,
			MaxBlockingQueue: a.Sessions.MaxBlockingQueue,
		},
		Reserve: admission.ReserveConfig{
			Floor:           a.Reserve.Floor,
			QuickCutoff:     a.Reserve.QuickCutoff,
			LengthyLane:     a.Reserve.LengthyLane,
			LaneRate:        a.Reserve.LaneRate,
			QuickWaitTarget: a.Reserve.QuickWaitTarget,
		},
	}
}

// PolicerRules turns admission.policers into the rate policers' rules.
func PolicerRules(policers []config.Policer) ([]admission.Rule, error) {
	rules := make([]admission.Rule, 0, len(policers))
	for _, p := range policers {
		r := admission.Rule{
			Name: p.Name, Type: p.Type, User: p.User, Schema: p.Schema,
			Rate: p.Rate, Burst: p.Burst, MinRate: p.MinRate, MaxRate: p.MaxRate,
			Controller: p.Controller, Signal: p.Signal, Target: p.Target, Kp: p.Kp, Kd: p.Kd,
		}
		if p.Client != "" {
			prefix, err := netip.ParsePrefix(p.Client)
			if err != nil {
				addr, aerr := netip.ParseAddr(p.Client)
				if aerr != nil {
					return nil, fmt.Errorf("admission.policers %q: client %q is neither an IP nor a CIDR block", p.Name, p.Client)
				}
				prefix = netip.PrefixFrom(addr, addr.BitLen())
			}
			r.Client = prefix.Masked()
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// Pools turns pools.* into the limits of each backend's pool.
func Pools(p config.Pools) backend.PoolConfig {
	return backend.PoolConfig{MaxOpen: p.MaxOpen, MaxIdle: p.MaxIdle, IdleTimeout: p.IdleTimeout,
		MaxLifetime: p.MaxLifetime, WaitTimeout: p.WaitTimeout}
}

// Routing returns the routing policy of cfg over a router of its replicas: their monitors,
// the version map of acknowledged writes, and how reads are balanced among them. Reads
// are balanced by the costs in costs (nil: all alike). Without routing (cfg.Routes), the
// router has no replicas: the policy keeps the version map, for the result cache.
func Routing(cfg config.Config, costs *estimator.Table, log *slog.Logger, reg prometheus.Registerer) (*routing.Policy, error) {
	consistency, err := replicas.ParseConsistency(cfg.Routing.Consistency)
	if err != nil {
		return nil, err
	}
	balance, err := replicas.ParseBalance(cfg.Routing.Balance)
	if err != nil {
		return nil, err
	}
	var replicaAddrs []string
	if cfg.Routes() {
		replicaAddrs = cfg.Backends.Replicas
	}
	router := replicas.NewRouter(replicas.Config{
		Primary: cfg.Backends.Primary, Replicas: replicaAddrs,
		User: cfg.Monitor.User, Password: cfg.Monitor.Password,
		Balance: balance, PrimaryReads: cfg.Routing.PrimaryReads,
		MaxLag: cfg.Routing.MaxLag, PollInterval: cfg.Replicas.PollInterval,
		ClosureInterval: cfg.Replicas.ClosureInterval,
	}, replicas.NewVersions(), log)
	rule, err := routing.ParseStrongRule(cfg.Routing.StrongRule)
	if err != nil {
		return nil, err
	}
	policy := routing.New(routing.Config{Consistency: consistency, CausalWait: cfg.Routing.CausalWait,
		Poll: cfg.Replicas.PollInterval, ReadOnlyTransactions: cfg.Routing.ReadOnlyTransactions == "replica", Rule: rule},
		router, costs, log, reg)
	if rule == routing.ProxyLocal {
		return policy, nil
	}
	return policy, binlogSources(cfg, rule, policy, log, reg)
}

// binlogSources gives policy what a rule that counts every writer needs: the primary's
// position, read for each strong read, and (per_table) the follower of its binary log.
func binlogSources(cfg config.Config, rule routing.StrongRule, policy *routing.Policy, log *slog.Logger, reg prometheus.Registerer) error {
	router := policy.Router()
	m := binlog.NewMetrics(reg, router.Lag)
	positions := binlog.NewPositions(cfg.Backends.Primary, cfg.Monitor.User, cfg.Monitor.Password, m)
	if rule == routing.Global {
		policy.SetWrites(positions, nil)
		return nil
	}
	follower := binlog.New(binlog.Config{Addr: cfg.Backends.Primary, User: cfg.Monitor.User, Password: cfg.Monitor.Password,
		ServerID: BinlogServerID(cfg)}, router.Versions(), router.ReloadClosure, log, m)
	policy.SetWrites(positions, follower)
	return nil
}

// BinlogServerID is the server_id the binlog follower registers with:
// replicas.binlog_server_id, or one derived from the host's name, the listen address and the
// process (binlog.ServerID).
func BinlogServerID(cfg config.Config) uint32 {
	if cfg.Replicas.BinlogServerID != 0 {
		return cfg.Replicas.BinlogServerID
	}
	host, _ := os.Hostname()
	return binlog.ServerID(host, cfg.Listen)
}

// BackendTLS turns backends.tls into how the proxy secures its connections to backends,
// reading the files it names.
func BackendTLS(c config.BackendTLS) (*backend.TLSPolicy, error) {
	p := &backend.TLSPolicy{Mode: c.Mode, Optional: c.Mode == config.TLSPreferred}
	if c.Mode == config.TLSDisabled || c.Mode == "" {
		return p, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if err := clientTLS(cfg, "backends.tls", c.CAFile, c.CertFile, c.KeyFile); err != nil {
		return nil, err
	}
	switch c.Mode {
	case config.TLSPreferred, config.TLSRequired:
		cfg.InsecureSkipVerify = true // encryption without authentication, as MySQL's REQUIRED
	case config.TLSVerifyCA:
		// Verify the chain but not the name.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = verifyChain(cfg)
	}
	p.Base = cfg
	return p, nil
}

// verifyChain verifies a backend's certificate chain against cfg's roots, but not its name.
func verifyChain(cfg *tls.Config) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("backend sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: cfg.RootCAs, Intermediates: x509.NewCertPool()}
		for _, ic := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(ic)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
}

// clientTLS loads into cfg the CA bundle and the client certificate a section names (each
// optional); errors name the section's keys.
func clientTLS(cfg *tls.Config, section, caFile, certFile, keyFile string) error {
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return fmt.Errorf("%s.ca_file: %w", section, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("%s.ca_file: no certificate found in %s", section, caFile)
		}
		cfg.RootCAs = pool
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return fmt.Errorf("%s.cert_file: %w", section, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return nil
}

// Fleet turns fleet.* into the member's settings; listen names the member when fleet.name
// does not: the host name and the listen port.
func Fleet(c config.Fleet, listen string) (fleet.Config, error) {
	out := fleet.Config{Endpoints: c.Etcd, Prefix: c.Prefix, Name: c.Name, Interval: c.Interval,
		LeaseTTL: c.LeaseTTL, DialTimeout: c.DialTimeout, Username: c.User}
	if out.Name == "" {
		host, err := os.Hostname()
		if err != nil {
			return out, fmt.Errorf("fleet.name: the host name to name this member by: %w; set fleet.name", err)
		}
		_, port, _ := net.SplitHostPort(listen)
		out.Name = host + ":" + port
	}
	pw, err := c.ReadPassword()
	if err != nil {
		return out, fmt.Errorf("fleet.password_file: %w", err)
	}
	out.Password = string(pw)
	if c.TLS.Enabled() {
		out.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		if err := clientTLS(out.TLS, "fleet.tls", c.TLS.CAFile, c.TLS.CertFile, c.TLS.KeyFile); err != nil {
			return out, err
		}
	}
	return out, nil
}
