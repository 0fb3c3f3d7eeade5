// Package fleet makes several gatekeeper processes in front of the same databases admit as
// one, through etcd: each is a member, kept by a lease, that publishes every interval what
// it asks of each backend (the cost of its running and queued units); a backend's capacity
// is split among the members by that demand, so that the fleet admits no more than the
// database's capacity; one member, elected, adapts the fleet's capacity on its own share
// and the others follow it (see Next). A member that dies frees its share when its lease
// ends. Without etcd a member keeps the share it last had and says so: coordination being
// down never stops admission. The fleet's shared configuration is read from the keys under
// the prefix's config/ (see WatchConfig).
package fleet

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
)

// Config says where the fleet's etcd is and how a member takes part.
type Config struct {
	Endpoints []string
	// Prefix is where the fleet's keys live, ending in "/".
	Prefix string
	// Name is the member's name, unique in the fleet.
	Name string
	// Interval is how often the member publishes its demand and takes its share.
	Interval time.Duration
	// LeaseTTL is how long the member's keys outlive it.
	LeaseTTL time.Duration
	// DialTimeout bounds each call to etcd.
	DialTimeout        time.Duration
	Username, Password string
	TLS                *tls.Config
}

// Backend is one backend's admission as the fleet shares it.
type Backend struct {
	// Key names the backend alike in every member: "primary", or a replica's address.
	Key string
	Ctl *admission.Controller
	// Fixed is the configured capacity when the capacity does not adapt (0: it adapts).
	Fixed time.Duration
}

// record is what a member publishes under members/<name>.
type record struct {
	Name string `json:"name"`
	// Adjuster: the member is elected to adapt the fleet's capacity.
	Adjuster bool              `json:"adjuster"`
	Backends map[string]Record `json:"backends"`
	At       time.Time         `json:"at"`
}

// Member is this process in the fleet.
type Member struct {
	cfg      Config
	backends func() []Backend
	log      *slog.Logger
	m        *metrics

	cli *clientv3.Client

	// The sync loop's own state.
	sess     *concurrency.Session
	stopElec context.CancelFunc
	sums     map[string]time.Duration
	demand   map[string]time.Duration // smoothed over intervals
	samples  int

	mu     sync.Mutex
	status Status
	leader bool // set by the campaign
	// steps are each backend's step in force; lease is the session's (0: none), for what
	// react publishes between syncs.
	steps map[string]Step
	lease clientv3.LeaseID
	// told is the last move of each backend's fleet capacity an adjuster told between
	// syncs: newer than its record.
	told map[string]signal
}

// New connects to the fleet's etcd (the connection is made lazily: an etcd that is down
// now is tried again every interval). backends lists the admission of each backend, read
// at every interval.
func New(cfg Config, backends func() []Backend, log *slog.Logger, m *Metrics) (*Member, error) {
	cli, err := client(cfg)
	if err != nil {
		return nil, err
	}
	mb := &Member{cfg: cfg, backends: backends, log: log, cli: cli, steps: map[string]Step{},
		sums: map[string]time.Duration{}, demand: map[string]time.Duration{}, told: map[string]signal{}}
	if m != nil {
		mb.m = &m.metrics
	}
	mb.status = Status{Name: cfg.Name, Endpoints: cfg.Endpoints, Prefix: cfg.Prefix}
	return mb, nil
}

// client returns an etcd client for cfg that logs nothing of its own.
func client(cfg Config) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: cfg.Endpoints, DialTimeout: cfg.DialTimeout, TLS: cfg.TLS,
		Username: cfg.Username, Password: cfg.Password, Logger: zap.NewNop(),
		DialKeepAliveTime: cfg.LeaseTTL, DialKeepAliveTimeout: cfg.DialTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: etcd at %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	return cli, nil
}

// Run takes part in the fleet until ctx ends; then the member leaves (its keys are
// deleted, its share goes to the others at once) and its controllers adapt alone again.
func (mb *Member) Run(ctx context.Context) {
	sample := time.NewTicker(max(mb.cfg.Interval/5, 10*time.Millisecond))
	defer sample.Stop()
	tick := time.NewTicker(mb.cfg.Interval)
	defer tick.Stop()
	mb.sample()
	mb.sync(ctx)
	reacting := make(chan struct{})
	go func() { mb.react(ctx); close(reacting) }() // ends with ctx
	defer func() { <-reacting }()
	for {
		select {
		case <-ctx.Done():
			mb.leave()
			return
		case <-sample.C:
			mb.sample()
		case <-tick.C:
			mb.sample()
			mb.sync(ctx)
		}
	}
}

// Close ends the connection to etcd.
func (mb *Member) Close() error { return mb.cli.Close() }

// sample adds each backend's demand now to the interval's sums.
func (mb *Member) sample() {
	for _, b := range mb.backends() {
		mb.sums[b.Key] += b.Ctl.Demand()
	}
	mb.samples++
}

// demandWeight is the weight of the last interval's mean in the demand a member publishes:
// under SJF a member's demand is mostly its queue of heavy units, which swings from one
// interval to the next, and the shares would swing with it.
const demandWeight = 0.5

// demands returns each backend's demand, the interval's mean smoothed over the intervals
// before, and starts the next interval.
func (mb *Member) demands() map[string]time.Duration {
	for k, s := range mb.sums {
		mean := s / time.Duration(max(mb.samples, 1))
		if prev, ok := mb.demand[k]; ok {
			mean = time.Duration(demandWeight*float64(mean) + (1-demandWeight)*float64(prev))
		}
		mb.demand[k] = mean
	}
	clear(mb.sums)
	mb.samples = 0
	return maps.Clone(mb.demand)
}

// sync publishes the member's record, reads the others', and takes each backend's share.
// Without etcd it changes nothing: the shares in force stay.
func (mb *Member) sync(ctx context.Context) {
	demand := mb.demands()
	if err := mb.join(ctx); err != nil {
		mb.failed(err)
		return
	}
	backends := mb.backends()
	mine := record{Name: mb.cfg.Name, Adjuster: mb.isLeader(), Backends: map[string]Record{}, At: time.Now()}
	for _, b := range backends {
		mine.Backends[b.Key] = Record{Demand: demand[b.Key], Capacity: b.Ctl.Capacity(), Fleet: mb.step(b.Key).Fleet}
	}
	buf, err := json.Marshal(mine)
	if err != nil {
		mb.failed(err)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, mb.cfg.DialTimeout)
	defer cancel()
	if _, err := mb.cli.Put(cctx, mb.memberKey(mb.cfg.Name), string(buf), clientv3.WithLease(mb.sess.Lease())); err != nil {
		mb.failed(err)
		return
	}
	resp, err := mb.cli.Get(cctx, mb.cfg.Prefix+"members/", clientv3.WithPrefix())
	if err != nil {
		mb.failed(err)
		return
	}
	members := make([]record, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var r record
		if json.Unmarshal(kv.Value, &r) != nil || r.Name == "" {
			continue // not a member's record: left alone
		}
		if r.Name == mb.cfg.Name {
			r = mine // as measured now
		}
		members = append(members, r)
	}
	if !slices.ContainsFunc(members, func(r record) bool { return r.Name == mb.cfg.Name }) {
		members = append(members, mine)
	}
	slices.SortFunc(members, func(a, b record) int { return strings.Compare(a.Name, b.Name) })
	mb.apply(members, backends)
}

// apply takes each backend's share from the members' records (sorted by name).
func (mb *Member) apply(members []record, backends []Backend) {
	self, adjuster := -1, -1
	for i, r := range members {
		if r.Name == mb.cfg.Name {
			self = i
		}
		if r.Adjuster && adjuster < 0 {
			adjuster = i
		}
	}
	if mb.isLeader() {
		adjuster = self // its own word is newer than its record
	}
	st := Status{Connected: true, LastSync: time.Now(), Members: make([]MemberStatus, len(members))}
	for i, r := range members {
		st.Members[i] = MemberStatus{Name: r.Name, Adjuster: i == adjuster, Backends: r.Backends, Seen: r.At}
	}
	if adjuster >= 0 {
		st.Adjuster = members[adjuster].Name
	}
	st.Backends = map[string]BackendStatus{}
	for _, b := range backends {
		recs := make([]Record, len(members))
		for i, r := range members {
			recs[i] = r.Backends[b.Key] // zero when the member does not know the backend
		}
		mb.mu.Lock()
		if t, ok := mb.told[b.Key]; ok && adjuster >= 0 && adjuster != self && t.By == members[adjuster].Name {
			recs[adjuster].Fleet = t.Fleet // told since it published its record
		}
		mb.mu.Unlock()
		step := Next(recs, self, adjuster, mb.step(b.Key), b.Ctl.Capacity(), b.Fixed)
		b.Ctl.Share(step.Capacity, step.Adapt)
		mb.setStep(b.Key, step)
		st.Backends[b.Key] = BackendStatus{Demand: recs[self].Demand, Capacity: step.Capacity, Fleet: step.Fleet,
			Share: step.Share, Adapts: step.Adapt}
		if mb.m != nil {
			mb.m.backend(b.Key, step, recs[self].Demand)
		}
	}
	mb.mu.Lock()
	prevUp := mb.status.Connected
	st.Name, st.Endpoints, st.Prefix = mb.cfg.Name, mb.cfg.Endpoints, mb.cfg.Prefix
	st.Config = mb.status.Config
	mb.status = st
	mb.mu.Unlock()
	if mb.m != nil {
		mb.m.synced(len(members), mb.isLeader())
	}
	if !prevUp {
		mb.log.Info("fleet: in touch with etcd; shares are the fleet's again", "members", len(members),
			"adjuster", st.Adjuster)
	}
}

// failed notes a sync that could not reach etcd: the shares in force stay.
func (mb *Member) failed(err error) {
	mb.mu.Lock()
	wasUp := mb.status.Connected || mb.status.LastSync.IsZero() && mb.status.DownSince.IsZero()
	mb.status.Connected = false
	mb.status.LastError = err.Error()
	if mb.status.DownSince.IsZero() {
		mb.status.DownSince = time.Now()
	}
	mb.mu.Unlock()
	if mb.m != nil {
		mb.m.failed()
	}
	if wasUp {
		mb.log.Warn("fleet: etcd cannot be reached; admitting with the last shares until it answers",
			"etcd", strings.Join(mb.cfg.Endpoints, ","), "err", err)
	}
}

// join makes sure the member has a live session (its lease) and runs for adjuster in it.
func (mb *Member) join(ctx context.Context) error {
	if mb.sess != nil {
		select {
		case <-mb.sess.Done(): // the lease ended: etcd was away longer than its TTL
			mb.dropSession()
		default:
			return nil
		}
	}
	cctx, cancel := context.WithTimeout(ctx, mb.cfg.DialTimeout)
	defer cancel()
	lease, err := mb.cli.Grant(cctx, int64(mb.cfg.LeaseTTL/time.Second))
	if err != nil {
		return err
	}
	sess, err := concurrency.NewSession(mb.cli, concurrency.WithLease(lease.ID), concurrency.WithContext(ctx))
	if err != nil {
		return err
	}
	mb.sess = sess
	mb.mu.Lock()
	mb.lease = sess.Lease()
	mb.mu.Unlock()
	ectx, stop := context.WithCancel(ctx)
	mb.stopElec = stop
	go mb.campaign(ectx, sess)
	mb.mu.Lock()
	mb.status.DownSince = time.Time{}
	mb.mu.Unlock()
	return nil
}

// campaign runs for adjuster in sess until elected, and stays it while sess lives.
func (mb *Member) campaign(ctx context.Context, sess *concurrency.Session) {
	e := concurrency.NewElection(sess, mb.cfg.Prefix+"adjuster/")
	if err := e.Campaign(ctx, mb.cfg.Name); err != nil {
		return // ctx ended, or the session did
	}
	mb.setLeader(true)
	mb.log.Info("fleet: this member adapts the fleet's capacity")
	select {
	case <-ctx.Done():
	case <-sess.Done():
	}
	mb.setLeader(false)
	rctx, cancel := context.WithTimeout(context.Background(), mb.cfg.DialTimeout)
	defer cancel()
	_ = e.Resign(rctx) // the next member takes over at once, if etcd answers
}

func (mb *Member) setLeader(v bool) {
	mb.mu.Lock()
	mb.leader = v
	mb.mu.Unlock()
}

func (mb *Member) isLeader() bool {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return mb.leader
}

// dropSession forgets a session whose lease ended.
func (mb *Member) dropSession() {
	if mb.stopElec != nil {
		mb.stopElec()
	}
	mb.setLeader(false)
	mb.sess = nil
	mb.mu.Lock()
	mb.lease = 0
	mb.mu.Unlock()
}

// leave deletes the member's keys (its lease), so that the others take its share at their
// next interval rather than at the lease's end, and hands each controller back its own
// adaptive capacity.
func (mb *Member) leave() {
	if mb.stopElec != nil {
		mb.stopElec()
	}
	if mb.sess != nil {
		ctx, cancel := context.WithTimeout(context.Background(), mb.cfg.DialTimeout)
		_, _ = mb.cli.Revoke(ctx, mb.sess.Lease())
		cancel()
	}
	for _, b := range mb.backends() {
		b.Ctl.Share(b.Ctl.Capacity(), true)
	}
}

func (mb *Member) memberKey(name string) string { return mb.cfg.Prefix + "members/" + name }

// step returns the backend's step in force.
func (mb *Member) step(key string) Step {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return mb.steps[key]
}

func (mb *Member) setStep(key string, s Step) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	mb.steps[key] = s
}

// Status is the member's view of the fleet, for the admin API and gatekeeper top.
type Status struct {
	Name      string   `json:"name"`
	Endpoints []string `json:"etcd"`
	Prefix    string   `json:"prefix"`
	// Connected: the last sync reached etcd. DownSince is when it stopped answering.
	Connected bool      `json:"connected"`
	LastSync  time.Time `json:"last_sync"`
	DownSince time.Time `json:"down_since,omitzero"`
	LastError string    `json:"last_error,omitempty"`
	// Leader: this member adapts the fleet's capacity; Adjuster names the member that does.
	Leader   bool                     `json:"adjuster"`
	Adjuster string                   `json:"adjuster_name"`
	Members  []MemberStatus           `json:"members"`
	Backends map[string]BackendStatus `json:"backends"`
	Config   ConfigStatus             `json:"config"`
}

// MemberStatus is a member as the last sync read it.
type MemberStatus struct {
	Name     string            `json:"name"`
	Adjuster bool              `json:"adjuster"`
	Backends map[string]Record `json:"backends"`
	Seen     time.Time         `json:"published"`
}

// BackendStatus is this member's part of one backend.
type BackendStatus struct {
	Demand   time.Duration `json:"demand_ns"`
	Capacity time.Duration `json:"capacity_ns"`
	Fleet    time.Duration `json:"fleet_capacity_ns"`
	Share    float64       `json:"share"`
	Adapts   bool          `json:"adapts"`
}

// ConfigStatus is where the shared configuration stands.
type ConfigStatus struct {
	Keys     int       `json:"keys"`
	Revision int64     `json:"revision"`
	Applied  time.Time `json:"applied,omitzero"`
	Error    string    `json:"error,omitempty"`
}

// Status returns the member's view of the fleet.
func (mb *Member) Status() Status {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	st := mb.status
	st.Leader = mb.leader
	return st
}
