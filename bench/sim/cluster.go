package sim

import (
	"fmt"
	"time"
)

// ClusterConfig is a primary and its replicas, each a database of Config.Database. Writes
// run on the primary; once the primary has answered one, every replica applies it, at
// ApplyShare of its demand, as replication work that the proxy neither sends nor sees.
// Reads run where Balance sends them: on a replica, or on the primary too when
// PrimaryReads says so or there is no replica. Replication is asynchronous and a read may
// see a replica that has not applied a write yet: the model is about capacity, not
// consistency.
type ClusterConfig struct {
	// Replicas is the number of replicas; zero is the primary alone.
	Replicas int
	// Writes names the classes of the Mix that write.
	Writes []string
	// ApplyShare is the share of a write's demand that applying it costs each replica;
	// zero applies writes for free.
	ApplyShare float64
	// PrimaryReads lets the primary take reads beside the replicas.
	PrimaryReads bool
	// Balance picks the backend of a read; the zero value is SELF.
	Balance Balance
	// LARDLow and LARDHigh are LARD's thresholds of estimated work outstanding at a
	// backend; only BalanceLARD reads them, and it needs 0 < LARDLow <= LARDHigh.
	LARDLow, LARDHigh time.Duration
	// Limit caps each backend's load, as the paper's database proxies do: while the
	// estimated work of the requests running at a backend is Limit or more, the requests
	// sent to it wait, first come first served, in a queue in front of it. Replication work
	// is not held. Zero: no limit.
	Limit time.Duration
}

// Backends is the number of databases: the primary and the replicas.
func (c *ClusterConfig) Backends() int { return 1 + c.Replicas }

// Validate reports the first setting that cannot work with mix.
func (c *ClusterConfig) Validate(mix *Mix) error {
	switch {
	case c.Replicas < 0:
		return fmt.Errorf("cluster: replicas must be 0 or more (got %d)", c.Replicas)
	case c.ApplyShare < 0:
		return fmt.Errorf("cluster: apply share must be 0 or more (got %g)", c.ApplyShare)
	case int(c.Balance) >= len(balanceNames):
		return fmt.Errorf("cluster: unknown balance policy %d", c.Balance)
	case c.Balance == BalanceLARD && (c.LARDLow <= 0 || c.LARDHigh < c.LARDLow):
		return fmt.Errorf("cluster: LARD needs 0 < low <= high (got %s, %s)", c.LARDLow, c.LARDHigh)
	case c.Limit < 0:
		return fmt.Errorf("cluster: limit must be 0 or more (got %s)", c.Limit)
	}
	for _, name := range c.Writes {
		if mix.Index(name) < 0 {
			return fmt.Errorf("cluster: write class %q is not in the mix", name)
		}
	}
	return nil
}

// BackendCounts is what one backend did in the measured window.
type BackendCounts struct {
	// Reads and Writes count the client requests it answered, Applied the writes it
	// applied as a replica.
	Reads, Writes, Applied int
	// Work is the estimated work of the client requests it answered, ApplyWork that of the
	// writes it applied (ApplyShare of each write's estimate).
	Work, ApplyWork time.Duration
	// MaxRunning is the most requests it served at once (replication work included),
	// MaxHeld the most that waited in front of it under the limit.
	MaxRunning, MaxHeld int
}

// backend is one database and the proxy's view of it.
type backend struct {
	db *Database
	// sent is what the proxy sent here and has not seen answered, held requests included.
	sent load
	// running is the estimated work of the client requests running here, for the limit.
	running time.Duration
	// held waits under the limit, in arrival order from head on.
	held []*request
	head int
}

// cluster routes requests to the backends. Backend 0 is the primary.
type cluster struct {
	cfg      ClusterConfig
	backends []backend
	// readers are the backends that take reads, and loads their view, in the order the
	// picker sees them.
	readers []int
	loads   []load
	picker  picker
	// writes says which classes write.
	writes []bool
	// free holds replication jobs to reuse.
	free []*request
}

// newCluster returns the cluster of a valid cfg over db, for mix.
func newCluster(cfg ClusterConfig, db DatabaseConfig, mix *Mix) *cluster {
	classes := len(mix.Classes())
	c := &cluster{cfg: cfg, writes: make([]bool, classes)}
	for range cfg.Backends() {
		c.backends = append(c.backends, backend{db: NewDatabase(db)})
	}
	for _, name := range cfg.Writes {
		c.writes[mix.Index(name)] = true
	}
	from := 1
	if cfg.PrimaryReads || cfg.Replicas == 0 {
		from = 0
	}
	for b := from; b < len(c.backends); b++ {
		c.readers = append(c.readers, b)
	}
	c.loads = make([]load, len(c.readers))
	c.picker = newPicker(cfg.Balance, classes, cfg.LARDLow, cfg.LARDHigh)
	return c
}

// route picks r's backend: the primary for a write, the balance policy's pick for a read.
func (c *cluster) route(r *request) int {
	if c.writes[r.class] {
		return 0
	}
	if len(c.readers) == 1 {
		return c.readers[0]
	}
	for i, b := range c.readers {
		c.loads[i] = c.backends[b].sent
	}
	return c.readers[c.picker.pick(r.class, c.loads)]
}

// send counts r, of estimated cost cost, as outstanding at backend b, and says whether it
// may start there now rather than wait under the limit.
func (c *cluster) send(b int, r *request, cost time.Duration) bool {
	be := &c.backends[b]
	be.sent.requests++
	be.sent.work += cost
	r.backend = b
	if c.cfg.Limit > 0 && (be.running >= c.cfg.Limit || be.head < len(be.held)) {
		be.held = append(be.held, r)
		return false
	}
	return true
}

// answered counts r, of estimated cost cost, as no longer outstanding at its backend.
func (c *cluster) answered(r *request, cost time.Duration) {
	be := &c.backends[r.backend]
	be.sent.requests--
	be.sent.work -= cost
}

// nextHeld returns the request that may start at backend b now, if one waits.
func (c *cluster) nextHeld(b int) (*request, bool) {
	be := &c.backends[b]
	if be.head == len(be.held) || be.running >= c.cfg.Limit {
		return nil, false
	}
	r := be.held[be.head]
	be.held[be.head] = nil
	be.head++
	if be.head == len(be.held) {
		be.held, be.head = be.held[:0], 0
	} else if be.head > 1024 && be.head > len(be.held)/2 {
		n := copy(be.held, be.held[be.head:])
		clear(be.held[n:])
		be.held, be.head = be.held[:n], 0
	}
	return r, true
}

// held returns the number of requests waiting in front of backend b.
func (c *cluster) held(b int) int {
	be := &c.backends[b]
	return len(be.held) - be.head
}

// applyJob returns the replication job of write w for backend b.
func (c *cluster) applyJob(w *request, b int) *request {
	var r *request
	if n := len(c.free); n > 0 {
		r, c.free = c.free[n-1], c.free[:n-1]
	} else {
		r = &request{apply: true}
	}
	r.class, r.demand, r.backend = w.class, c.cfg.ApplyShare*w.demand, b
	return r
}
