package estimator

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Key is the identity of a request type: a 64-bit hash computed by the caller from a digest,
// a tag, a user name or whatever else defines the type.
type Key uint64

// Clock tells the time. Tests and the simulator drive the table with a manual clock.
type Clock interface {
	Now() time.Time
}

// Config holds the settings of a [Table].
type Config struct {
	// Weight is the weight of a new sample in the exponentially weighted moving average, in
	// (0, 1]. Zero means 0.1: after a step change the estimate is within 10% of the new cost
	// after 22 samples.
	Weight float64
	// Window, when non-zero, makes the estimate the mean of the samples of the last Window
	// instead of the moving average; it must then be between one second and one hour. The
	// window slides in twelve time buckets: a sample older than Window never counts, one in
	// the oldest twelfth of it may already have dropped out. Window is also the horizon of
	// the rate, share and percentiles, for which zero means 60s.
	Window time.Duration
	// MaxTypes bounds the number of types tracked. A full table takes a new type the second
	// time it is seen, evicting the least used into the "other" bucket; until then the type's
	// samples count in that bucket. Each type holds about 2.5 KiB. Zero means 1000; at most
	// 100000.
	MaxTypes int
	// DefaultCost is the estimate of a type that has no sample. Zero means 10ms.
	DefaultCost time.Duration
	// Clock tells the time; nil means the system clock. Reconfigure ignores it.
	Clock Clock
}

// Defaults and bounds of Config.
const (
	DefaultWeight      = 0.1
	DefaultHorizon     = 60 * time.Second
	DefaultMaxTypes    = 1000
	DefaultDefaultCost = 10 * time.Millisecond
	// MinWindow and MaxWindow bound a non-zero Window.
	MinWindow = time.Second
	MaxWindow = time.Hour
	// MaxMaxTypes is the largest MaxTypes accepted.
	MaxMaxTypes = 100000
)

// ErrBadConfig is wrapped by the errors of New and Reconfigure for a Config they refuse.
var ErrBadConfig = errors.New("invalid estimator config")

// settings is a validated Config with everything derived from it. It is immutable: the table
// swaps it whole on Reconfigure.
type settings struct {
	weight      float64
	window      time.Duration // zero: estimate by moving average
	horizon     time.Duration
	maxTypes    int
	defaultCost time.Duration
	// width is the width of a time bucket, horizon/numBuckets.
	width time.Duration
	// origin and base place ticks on the clock: the tick at time t is
	// base + (t-origin)/width, and never less than base.
	origin time.Time
	base   uint64
}

// settle validates cfg and returns the settings it describes, with ticks starting at base
// from origin.
func settle(cfg Config, origin time.Time, base uint64) (*settings, error) {
	s := &settings{
		weight:      cfg.Weight,
		window:      cfg.Window,
		horizon:     cfg.Window,
		maxTypes:    cfg.MaxTypes,
		defaultCost: cfg.DefaultCost,
		origin:      origin,
		base:        base,
	}
	switch {
	case s.weight == 0:
		s.weight = DefaultWeight
	case math.IsNaN(s.weight) || s.weight < 0 || s.weight > 1:
		return nil, fmt.Errorf("estimator: Weight %v: must be in (0, 1]: %w", cfg.Weight, ErrBadConfig)
	}
	switch {
	case s.window == 0:
		s.horizon = DefaultHorizon
	case s.window < 0:
		return nil, fmt.Errorf("estimator: Window %v: must not be negative: %w", cfg.Window, ErrBadConfig)
	case s.window < MinWindow || s.window > MaxWindow:
		return nil, fmt.Errorf("estimator: Window %v: must be zero or between %v and %v: %w",
			cfg.Window, MinWindow, MaxWindow, ErrBadConfig)
	}
	switch {
	case s.maxTypes == 0:
		s.maxTypes = DefaultMaxTypes
	case s.maxTypes < 0 || s.maxTypes > MaxMaxTypes:
		return nil, fmt.Errorf("estimator: MaxTypes %d: must be in [1, %d], or zero for %d: %w",
			cfg.MaxTypes, MaxMaxTypes, DefaultMaxTypes, ErrBadConfig)
	}
	switch {
	case s.defaultCost == 0:
		s.defaultCost = DefaultDefaultCost
	case s.defaultCost < 0:
		return nil, fmt.Errorf("estimator: DefaultCost %v: must not be negative: %w", cfg.DefaultCost, ErrBadConfig)
	}
	s.width = s.horizon / numBuckets
	return s, nil
}

// tick returns the time bucket of t.
func (s *settings) tick(t time.Time) uint64 {
	d := t.Sub(s.origin)
	if d < 0 {
		return s.base
	}
	return s.base + uint64(d/s.width)
}

// tickStart returns the time at which tick i begins, or origin for a tick before base.
func (s *settings) tickStart(i uint64) time.Time {
	if i <= s.base {
		return s.origin
	}
	return s.origin.Add(time.Duration(i-s.base) * s.width)
}

// evictSample is the number of candidates compared to choose a type to evict.
const evictSample = 8

// Table holds the cost estimates of request types. It is safe for concurrent use; Record and
// Estimate take no lock and allocate nothing for a type already tracked.
type Table struct {
	clock Clock
	cfg   atomic.Pointer[settings]

	shards []shard
	// shardShift is 64 - log2(len(shards)).
	shardShift uint
	// n is the number of types tracked plus the slots reserved by adds in progress; it never
	// exceeds maxTypes.
	n         atomic.Int64
	evictions atomic.Uint64
	door      doorkeeper

	// other is the bucket of the types evicted or refused by the doorkeeper.
	other atomic.Pointer[entry]

	// cfgMu serializes Reconfigure.
	cfgMu sync.Mutex
}

// New returns an empty table configured by cfg, or an error wrapping [ErrBadConfig] that
// names the field it refuses and why.
func New(cfg Config) (*Table, error) {
	clock := cfg.Clock
	if clock == nil {
		clock = systemClock{}
	}
	s, err := settle(cfg, clock.Now(), numBuckets)
	if err != nil {
		return nil, err
	}
	n := shardCount(s.maxTypes)
	t := &Table{clock: clock, shards: make([]shard, n), shardShift: uint(64 - bits.Len(uint(n)-1))}
	t.cfg.Store(s)
	for i := range t.shards {
		t.shards[i].clearLocked()
	}
	t.other.Store(newEntry(0, nil))
	return t, nil
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (t *Table) shardOf(key Key) *shard {
	return &t.shards[uint64(key)*0x9e3779b97f4a7c15>>t.shardShift]
}

func (t *Table) lookup(key Key) *entry {
	return t.shardOf(key).load()[key]
}

// Record adds a measured cost of one unit of the type key, whose busy time was the same
// (costs measured as busy time). sample is the type's display text (its digest or tag); it
// is copied, cut to 1 KiB, only when the type is new. A negative cost counts as zero.
func (t *Table) Record(key Key, sample []byte, cost time.Duration) {
	t.RecordBusy(key, sample, cost, cost)
}

// RecordBusy adds one unit of the type key that cost cost and kept the backend busy for
// busy: the two differ when the cost is a processor share. The busy times make the type's
// expected service time ([Table.Expect]). Negative durations count as zero.
func (t *Table) RecordBusy(key Key, sample []byte, cost, busy time.Duration) {
	t.RecordBusyAt(t.clock.Now(), key, sample, cost, busy)
}

// RecordBusyAt is [Table.RecordBusy] at now, a reading of the table's clock that the
// caller has at hand: of the system clock, unless [Config] gave another.
func (t *Table) RecordBusyAt(now time.Time, key Key, sample []byte, cost, busy time.Duration) {
	s := t.cfg.Load()
	tick := s.tick(now)
	x := sampleNS{cost: uint64(max(cost, 0)), busy: uint64(max(busy, 0))}
	if e := t.lookup(key); e != nil {
		e.record(s.weight, tick, now.UnixNano(), x.cost, x.busy)
		return
	}
	t.add(s, key, sample, tick, now.UnixNano(), x)
}

// sampleNS is one sample in nanoseconds.
type sampleNS struct{ cost, busy uint64 }

// add records the first sample of a type that was not found, making room for it. When the
// table is full, a type seen for the first time since the doorkeeper was cleared is counted
// in the other bucket instead.
func (t *Table) add(s *settings, key Key, sample []byte, tick uint64, nowNS int64, x sampleNS) {
	reserved := t.reserve(s.maxTypes)
	if !reserved && !t.door.seen(key) {
		t.other.Load().record(s.weight, tick, nowNS, x.cost, x.busy)
		return
	}
	for !reserved && t.evictOne(tick) {
		reserved = t.reserve(t.cfg.Load().maxTypes)
	}
	if !reserved {
		// Every slot is held by an add in progress.
		t.other.Load().record(s.weight, tick, nowNS, x.cost, x.busy)
		return
	}
	// The sample goes in before the entry is published, so that a new type is never an
	// eviction candidate with nothing recorded.
	e := newEntry(key, sample)
	e.record(s.weight, tick, nowNS, x.cost, x.busy)
	sh := t.shardOf(key)
	sh.mu.Lock()
	cur := sh.load()[key]
	if cur == nil {
		sh.putLocked(key, e)
	}
	sh.mu.Unlock()
	if cur != nil {
		// Another goroutine added the type meanwhile.
		t.n.Add(-1)
		cur.record(s.weight, tick, nowNS, x.cost, x.busy)
	}
}

// reserve takes a slot for a new type if fewer than limit are tracked.
func (t *Table) reserve(limit int) bool {
	for {
		n := t.n.Load()
		if n >= int64(limit) {
			return false
		}
		if t.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// evictOne removes the least used of a sample of tracked types and folds it into the other
// bucket. It reports false when the table holds no type to evict.
func (t *Table) evictOne(tick uint64) bool {
	for {
		var (
			victim   *entry
			score    float64
			lastSeen int64
			seen     int
		)
		start := rand.IntN(len(t.shards))
		for k := 0; k < len(t.shards) && seen < evictSample; k++ {
			for _, e := range t.shards[(start+k)%len(t.shards)].load() {
				bound := math.Inf(1)
				if victim != nil {
					bound = score
				}
				if u, ok := useBelow(&e.ring, tick, bound); ok {
					if l := e.last.Load(); victim == nil || u < score || (u == score && l < lastSeen) {
						victim, score, lastSeen = e, u, l
					}
				}
				if seen++; seen == evictSample {
					break
				}
			}
		}
		if victim == nil {
			return false
		}
		sh := t.shardOf(victim.key)
		sh.mu.Lock()
		removed := sh.load()[victim.key] == victim
		if removed {
			sh.deleteLocked(victim.key)
			t.n.Add(-1)
		}
		sh.mu.Unlock()
		if removed {
			t.evictions.Add(1)
			t.fold(victim, tick)
			return true
		}
		// Someone else removed it first; choose again.
	}
}

// fold adds the statistics of e to the other bucket.
func (t *Table) fold(e *entry, tick uint64) {
	t.other.Load().absorb(e, tick)
}

// Estimate returns the current cost estimate of the type key: the mean of its samples in the
// window when Config.Window is set and it has some there, else its moving average, or the
// default cost for a type without samples.
func (t *Table) Estimate(key Key) time.Duration {
	cost, _ := t.Expect(key)
	return cost
}

// Expect returns what a unit of the type key is expected to cost ([Table.Estimate]) and how
// long it is expected to keep the backend busy: the moving average of its busy times, its
// expected service time. A type without busy times (never seen, or loaded from a state that
// did not carry them) is expected to be busy for as long as it costs.
func (t *Table) Expect(key Key) (cost, busy time.Duration) {
	cost, busy, _ = t.ExpectMeasured(key)
	return cost, busy
}

// ExpectMeasured is [Table.Expect], and whether the estimate was measured: false when the
// type has no sample of its own (never seen, evicted, or counted only in the "other" bucket
// of a full table), so that the cost returned is the configured default, a guess. A caller
// that must not underestimate an unknown type, such as admission, charges it by a policy of
// its own then. It takes no lock and allocates nothing.
func (t *Table) ExpectMeasured(key Key) (cost, busy time.Duration, measured bool) {
	s := t.cfg.Load()
	e := t.lookup(key)
	if e == nil {
		return s.defaultCost, s.defaultCost, false
	}
	var tick uint64
	if s.window > 0 {
		tick = s.tick(t.clock.Now())
	}
	cost, measured = e.estimate(s, tick)
	if !measured {
		cost = s.defaultCost
	}
	if b, ok := e.busyAverage(); ok {
		return cost, duration(b), measured
	}
	return cost, cost, measured
}

// Reset forgets every type, the other bucket and the doorkeeper. The eviction count, a
// counter for the life of the table, is kept. Samples recorded while Reset runs may be
// forgotten too.
func (t *Table) Reset() {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		t.n.Add(-int64(sh.clearLocked()))
		sh.mu.Unlock()
	}
	t.other.Store(newEntry(0, nil))
	t.door.clear()
}

// Reconfigure applies a new configuration at run time, keeping the estimates. A new Weight
// applies to the samples that follow, a new DefaultCost at once, a smaller MaxTypes evicts
// down to it before Reconfigure returns. A change of horizon (Window, or the default when it
// is zero) restarts the recent statistics (window means, rate, share, percentiles); estimates
// carry on from the moving averages. The number of shards stays what New chose for its
// MaxTypes, so raising MaxTypes far above it makes adding a type slower, never a lookup.
// Clock is ignored. On error nothing changes.
func (t *Table) Reconfigure(cfg Config) error {
	t.cfgMu.Lock()
	defer t.cfgMu.Unlock()
	old := t.cfg.Load()
	now := t.clock.Now()
	s, err := settle(cfg, old.origin, old.base)
	if err != nil {
		return err
	}
	if s.horizon != old.horizon {
		// Move the ticks far enough ahead that every bucket and histogram generation
		// written under the old width reads as stale.
		s.origin = now
		s.base = old.tick(now) + 2*numBuckets + 2
	}
	t.cfg.Store(s)
	tick := s.tick(now)
	for t.n.Load() > int64(s.maxTypes) && t.evictOne(tick) {
	}
	return nil
}

// Len returns the number of types tracked, not counting the other bucket.
func (t *Table) Len() int {
	return int(t.n.Load())
}

// Evictions returns the number of types evicted into the other bucket since the table was
// made.
func (t *Table) Evictions() uint64 {
	return t.evictions.Load()
}
