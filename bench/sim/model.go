package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
)

// Config is one simulation run: a database (or a cluster of them), a workload and, unless
// direct, the admission controller between them. Exactly one of Closed, Open and Sessions
// is set.
type Config struct {
	// Seed makes the run: the same Config gives the same Result.
	Seed     uint64
	Database DatabaseConfig
	// Cluster makes Database a primary with replicas, each alike, and says how requests are
	// routed among them; nil is the one database, that runs everything. An admitted request
	// is routed when the controller admits it.
	Cluster *ClusterConfig
	Mix     *Mix
	// Admission is the controller's policy; nil runs direct, with no admission at all.
	// Each unit is charged its class's mean demand (the Mix's mean for the class) and
	// released with the time it spent in the database.
	Admission *admission.Config

	Closed   *ClosedLoop
	Open     *OpenLoop
	Sessions *SessionLoad

	// Trace records Result.Trace (closed and open loops, with admission); the controller
	// then ticks every tickEvery, as it does anyway while its capacity adapts.
	Trace bool

	// Fleet puts several proxies between the closed loop's clients and the database, each
	// with its own controller of Admission; nil is the one proxy.
	Fleet *FleetConfig

	// Warmup and Duration: under Closed and Open, interactions that end in
	// [Warmup, Warmup+Duration) are measured and the run stops at Warmup+Duration.
	// Sessions runs until every session has ended, measuring all of them.
	Warmup, Duration time.Duration
}

// ClosedLoop is a fixed number of emulated clients, each issuing a request, waiting for
// its response, thinking, and again.
type ClosedLoop struct {
	Clients int
	// Think is the mean of the exponential think time; ThinkMax caps it (0: no cap).
	Think, ThinkMax time.Duration
}

// OpenLoop is requests arriving by themselves, whatever happens to the earlier ones.
type OpenLoop struct {
	Arrivals Arrivals
}

// SessionLoad is sessions arriving by themselves, each a closed loop of a number of
// requests, drawn uniformly from [MinLength, MaxLength], with think times between them.
// The first request of a session is of a new session; once one of its requests has been
// admitted the session is accepted. A refused request ends its session: rejected if the
// session was not yet accepted, aborted if it was.
type SessionLoad struct {
	Arrivals             Arrivals
	Count                int
	MinLength, MaxLength int
	Think, ThinkMax      time.Duration
}

// Validate reports the first setting that cannot work.
func (c *Config) Validate() error {
	loads := 0
	for _, set := range []bool{c.Closed != nil, c.Open != nil, c.Sessions != nil} {
		if set {
			loads++
		}
	}
	switch {
	case loads != 1:
		return errors.New("sim: set exactly one of Closed, Open and Sessions")
	case c.Mix == nil:
		return errors.New("sim: no Mix")
	case c.Sessions == nil && c.Duration <= 0:
		return errors.New("sim: Duration must be positive")
	case c.Sessions != nil && (c.Warmup != 0 || c.Duration != 0):
		return errors.New("sim: sessions run until they end: leave Warmup and Duration 0")
	case c.Warmup < 0:
		return errors.New("sim: Warmup must be 0 or positive")
	}
	if err := c.Database.Validate(); err != nil {
		return err
	}
	if c.Cluster != nil {
		if err := c.Cluster.Validate(c.Mix); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
	}
	if c.Admission != nil {
		if err := c.Admission.Validate(); err != nil {
			return fmt.Errorf("sim: admission: %w", err)
		}
	}
	if c.Fleet != nil {
		if c.Admission == nil || c.Closed == nil || c.Cluster != nil {
			return errors.New("sim: a fleet needs admission and a closed loop, in front of the one database")
		}
		if err := c.Fleet.Validate(c.Warmup + c.Duration); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
	}
	switch {
	case c.Closed != nil:
		if c.Closed.Clients < 1 || c.Closed.Think < 0 {
			return fmt.Errorf("sim: closed loop needs clients (got %d) and a think time of 0 or more", c.Closed.Clients)
		}
	case c.Open != nil:
		return c.Open.Arrivals.Validate()
	case c.Sessions != nil:
		s := c.Sessions
		if s.Count < 1 || s.MinLength < 1 || s.MaxLength < s.MinLength || s.Think < 0 {
			return fmt.Errorf("sim: sessions need a count, 1 <= MinLength <= MaxLength and a think time of 0 or more")
		}
		return s.Arrivals.Validate()
	}
	return nil
}

// Result is what a run measured.
type Result struct {
	// Measured is the simulated time measured.
	Measured time.Duration
	// Completed counts interactions answered, Refused those the controller refused (the
	// reasons are in Admission's counters), RefusedByClass per class of the Mix.
	Completed, Refused int
	RefusedByClass     []int
	// Throughput is completed interactions per second.
	Throughput float64
	// Work is the estimated work of the completed interactions (each counted at its
	// class's mean demand), and WorkRate that work per second.
	Work     time.Duration
	WorkRate float64
	// All is the response time of every completed interaction (the ones that do not reach
	// the database count with 0); Classes per class of the Mix.
	All     Latency
	Classes []Latency
	// Sessions under SessionLoad.
	Sessions SessionCounts
	// Admission is the controller's state at the end (its counters cover the whole run);
	// under a Fleet, the first member's.
	Admission admission.Snapshot
	// MaxRunning is the most requests one database served at once.
	MaxRunning int
	// Backends is what each database did under a Cluster, the primary first; nil without.
	Backends []BackendCounts
	// Trace is the controller's capacity and the interactions completed, second by second
	// from the start, when Config.Trace is set or the capacity adapts; nil under a Fleet.
	Trace []TracePoint
	// Fleet is the fleet's members and the database's load, interval by interval from the
	// start, under Config.Fleet; nil without.
	Fleet []FleetPoint
	// Events counts the simulation's steps.
	Events int
}

// TracePoint is one second of a run.
type TracePoint struct {
	At         time.Duration
	Capacity   time.Duration
	Throughput float64 // interactions completed in the second
	Decision   admission.Decision
	// Stretch and Alone are the adaptive capacity's last window's, Phase where it stood.
	Stretch float64
	Alone   time.Duration
	Phase   admission.Phase
}

// tickEvery is how often the controller ticks while its capacity adapts: as the proxy.
const tickEvery = 100 * time.Millisecond

// SessionCounts counts what became of the sessions.
type SessionCounts struct {
	Arrived   int
	Accepted  int // admitted at least once
	Rejected  int // refused before being accepted
	Aborted   int // accepted, then a request refused
	Completed int // every request answered
}

// AbortedRatio is the share of accepted sessions that were aborted.
func (s SessionCounts) AbortedRatio() float64 { return ratio(s.Aborted, s.Accepted) }

// RejectedRatio is the share of arriving sessions refused before being accepted.
func (s SessionCounts) RejectedRatio() float64 { return ratio(s.Rejected, s.Arrived) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// request is one interaction, and the state of whoever issues it: a closed-loop client or a
// session reuse theirs from one request to the next.
type request struct {
	ticket  admission.Ticket
	class   int
	demand  float64 // seconds of database service
	issued  time.Duration
	started time.Duration
	finish  float64 // when the database's attained service reaches it, the request is done
	seq     uint64  // start order in the database, for ties
	gen     uint64  // counts the requests handed to a controller on this struct
	waiting bool    // waits in the controller
	backend int     // the database it was sent to
	apply   bool    // a replica's replication work, not an interaction
	// fr is the controller it was last handed to (nil: direct, or not yet), member the fleet
	// member its issuer's next request goes to.
	fr     *front
	member int
	// sole: no other request ran at the database as it started (a fleet's).
	sole bool

	// Session state.
	session  bool
	accepted bool
	left     int // requests still to issue after this one
}

func (r *request) before(o *request) bool {
	if r.finish != o.finish {
		return r.finish < o.finish
	}
	return r.seq < o.seq
}

// epoch is the simulated clock's zero.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// front is one admission controller between the clients and the database, as one proxy
// holds it: the requests waiting in it, and the service times it learnt.
type front struct {
	id      int // the fleet member's index; 0 for the one proxy
	ctl     *admission.Controller
	waiting waitList
	// service is each class's expected service time: the moving average (weight
	// serviceWeight) of its requests' time in the database, as the proxy learns it.
	service []time.Duration
	// touched: a request handed to it ended in the step under way.
	touched bool
}

// newFront returns a controller of cfg on clock, its service times at costs.
func newFront(cfg admission.Config, clock admission.Clock, costs []time.Duration) *front {
	f := &front{ctl: admission.New(cfg, clock), service: slices.Clone(costs)}
	f.waiting.init(len(costs))
	return f
}

type run struct {
	cfg Config
	// rng draws think times, interactions and demands; arr draws what arrives by itself
	// (open-loop arrivals and their interactions, sessions and their lengths), so that runs
	// that differ only in policy see the same arrivals.
	rng, arr *rand.Rand
	cluster  *cluster
	// fronts are the controllers: one, a fleet's members (joined ones included, departed
	// ones kept), or none when direct. They share the clock.
	fronts  []*front
	fleet   *fleetRun
	clock   *admission.ManualClock
	clockAt time.Duration // what clock reads, from epoch
	// cost is each class's estimated cost: its mean demand.
	cost []time.Duration

	events eventQueue
	now    time.Duration
	end    time.Duration // 0: run until nothing is left to do
	done   []*request
	seq    uint64
	// second counts the interactions completed in the current second of the trace.
	second int

	free     []*request // open-loop requests to reuse
	arrivals *arrivalGen
	arrived  int // sessions so far

	res Result
}

// Run simulates cfg and returns what it measured.
func Run(cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	s := newRun(cfg)
	if err := s.loop(); err != nil {
		return Result{}, err
	}
	s.res.Measured = s.now - cfg.Warmup
	if s.end > 0 {
		s.res.Measured = cfg.Duration
	}
	if s.res.Measured > 0 {
		s.res.Throughput = float64(s.res.Completed) / s.res.Measured.Seconds()
		s.res.WorkRate = s.res.Work.Seconds() / s.res.Measured.Seconds()
	}
	if len(s.fronts) > 0 {
		s.res.Admission = s.fronts[0].ctl.Snapshot()
	}
	return s.res, nil
}

// newRun sets up a run of a valid cfg, its first events scheduled.
func newRun(cfg Config) *run {
	s := &run{
		cfg: cfg,
		rng: rand.New(rand.NewPCG(cfg.Seed, 1)),
		arr: rand.New(rand.NewPCG(cfg.Seed, 2)),
	}
	if cfg.Cluster != nil {
		s.cluster = newCluster(*cfg.Cluster, cfg.Database, cfg.Mix)
		s.res.Backends = make([]BackendCounts, cfg.Cluster.Backends())
	} else {
		s.cluster = newCluster(ClusterConfig{}, cfg.Database, cfg.Mix)
	}
	classes := len(cfg.Mix.Classes())
	s.res.Classes = make([]Latency, classes)
	s.res.RefusedByClass = make([]int, classes)
	for i := range classes {
		s.cost = append(s.cost, cfg.Mix.Mean(i))
	}
	if cfg.Admission != nil {
		s.clock = admission.NewManualClock(epoch)
		if cfg.Fleet == nil {
			s.fronts = append(s.fronts, newFront(*cfg.Admission, s.clock, s.cost))
		}
	}
	switch {
	case cfg.Closed != nil:
		s.end = cfg.Warmup + cfg.Duration
		clients := make([]request, cfg.Closed.Clients)
		if cfg.Fleet != nil {
			s.fleet = s.newFleet(clients)
		}
		for i := range clients {
			// Clients start thinking, so that they do not all arrive at once.
			s.events.push(event{at: s.think(cfg.Closed.Think, cfg.Closed.ThinkMax), kind: evIssue, req: &clients[i]})
		}
	case cfg.Open != nil:
		s.end = cfg.Warmup + cfg.Duration
		s.arrivals = newArrivalGen(cfg.Open.Arrivals, s.arr)
		s.events.push(event{at: seconds(s.arrivals.next(s.arr)), kind: evArrival})
	case cfg.Sessions != nil:
		s.arrivals = newArrivalGen(cfg.Sessions.Arrivals, s.arr)
		s.events.push(event{at: seconds(s.arrivals.next(s.arr)), kind: evArrival})
	}
	for i, ch := range cfg.Database.Changes {
		s.events.push(event{at: ch.At, kind: evSpeed, gen: uint64(i)})
	}
	if cfg.Admission != nil && (cfg.Admission.Auto.Enabled || cfg.Trace || cfg.Fleet != nil) && s.end > 0 {
		s.events.push(event{at: tickEvery, kind: evTick})
	}
	return s
}

// nextFinish returns the database whose next request finishes first, and when, if any
// runs; the first database of the earliest.
func (s *run) nextFinish() (b int, at time.Duration, busy bool) {
	for i := range s.cluster.backends {
		if t, ok := s.cluster.backends[i].db.Next(); ok && (!busy || t < at) {
			b, at, busy = i, t, true
		}
	}
	return b, at, busy
}

func (s *run) loop() error {
	for {
		b, tdb, busy := s.nextFinish()
		if busy && (s.events.len() == 0 || tdb <= s.events.peek()) {
			if s.end > 0 && tdb >= s.end {
				return nil
			}
			s.now = tdb
			s.res.Events++
			if err := s.finish(b); err != nil {
				return err
			}
			continue
		}
		if s.events.len() == 0 {
			return nil
		}
		if s.end > 0 && s.events.peek() >= s.end {
			return nil
		}
		e := s.events.pop()
		s.now = e.at
		s.res.Events++
		switch e.kind {
		case evIssue:
			s.issue(e.req)
		case evArrival:
			s.arrive()
		case evDeadline:
			if f := e.req.fr; e.req.gen == e.gen && e.req.waiting {
				f.ctl.Tick(s.setClock())
				s.collect(f)
			}
		case evSpeed:
			for i := range s.cluster.backends {
				s.cluster.backends[i].db.SetSpeed(s.cfg.Database.Changes[e.gen].Speed, s.now)
			}
		case evTick:
			s.tick()
			s.events.push(event{at: s.now + tickEvery, kind: evTick})
		case evInterval:
			s.fleet.interval(s)
			s.events.push(event{at: s.now + s.fleet.cfg.interval(), kind: evInterval})
		case evMember:
			s.fleet.change(s, int(e.gen))
		case evReact:
			s.fleet.react(s)
			s.events.push(event{at: s.now + s.fleet.cfg.latency(), kind: evReact})
		case evTold:
			s.fleet.hear(s)
		}
	}
}

// tick does the controllers' periodic work: each ticks (a fleet's live members only), and
// the trace takes its second.
func (s *run) tick() {
	if s.fleet != nil {
		s.fleet.tick(s)
		return
	}
	f := s.fronts[0]
	f.ctl.Tick(s.setClock())
	s.collect(f)
	if s.now%time.Second == 0 {
		snap := f.ctl.Snapshot()
		s.res.Trace = append(s.res.Trace, TracePoint{At: s.now, Capacity: snap.Capacity,
			Throughput: float64(s.second), Decision: snap.Auto.Last, Stretch: snap.Auto.Stretch,
			Alone: snap.Auto.Alone, Phase: snap.Auto.Phase})
		s.second = 0
	}
}

// setClock moves the controllers' clock to now, and returns the time it reads.
func (s *run) setClock() time.Time {
	at := epoch.Add(s.now)
	if s.now != s.clockAt {
		s.clock.Set(at)
		s.clockAt = s.now
	}
	return at
}

// think draws a think time.
func (s *run) think(mean, capAt time.Duration) time.Duration {
	d := seconds(s.rng.ExpFloat64() * mean.Seconds())
	if capAt > 0 {
		d = min(d, capAt)
	}
	return d
}

// arrive starts the next open-loop request or session.
func (s *run) arrive() {
	var r *request
	if s.cfg.Open != nil {
		if n := len(s.free); n > 0 {
			r, s.free = s.free[n-1], s.free[:n-1]
		} else {
			r = new(request)
		}
		r.class, r.demand = s.cfg.Mix.Draw(s.arr)
	} else {
		sl := s.cfg.Sessions
		s.arrived++
		s.res.Sessions.Arrived++
		r = &request{session: true, left: sl.MinLength - 1 + s.arr.IntN(sl.MaxLength-sl.MinLength+1)}
		r.class, r.demand = s.cfg.Mix.Draw(s.rng)
	}
	if s.cfg.Open != nil || s.arrived < s.cfg.Sessions.Count {
		s.events.push(event{at: s.now + seconds(s.arrivals.next(s.arr)), kind: evArrival})
	}
	s.send(r)
}

// issue sends r's issuer's next interaction.
func (s *run) issue(r *request) {
	r.class, r.demand = s.cfg.Mix.Draw(s.rng)
	s.send(r)
}

// send sends r, its class and demand drawn, to the database: through its issuer's
// controller unless direct.
func (s *run) send(r *request) {
	r.issued = s.now
	r.fr = nil
	if r.demand == 0 {
		r.started = s.now
		s.complete(r)
		return
	}
	if len(s.fronts) == 0 {
		s.start(r)
		return
	}
	s.admit(r, s.fronts[r.member])
}

// admit hands r to controller f, which admits it, has it wait, or refuses it.
func (s *run) admit(r *request, f *front) {
	r.gen++
	r.fr = f
	s.setClock()
	st, err := f.ctl.Arrive(&r.ticket, admission.Request{
		Type: uint64(r.class), Cost: s.cost[r.class], Service: f.service[r.class], Accepted: r.accepted,
	})
	switch st {
	case admission.Admitted:
		s.start(r)
	case admission.Queued, admission.Blocked:
		r.waiting = true
		f.waiting.add(r)
		s.events.push(event{at: s.now + s.cfg.Admission.QueueTimeout, kind: evDeadline, req: r, gen: r.gen})
	default:
		s.refuse(r, err)
	}
	s.collect(f)
}

// start sends r, admitted, to the database its class and the balance policy pick, where it
// runs now or, under the cluster's limit, waits its turn.
func (s *run) start(r *request) {
	if r.session && !r.accepted {
		r.accepted = true
		s.res.Sessions.Accepted++
	}
	b := s.cluster.route(r)
	if s.cluster.send(b, r, s.cost[r.class]) {
		s.serve(r)
		return
	}
	if s.res.Backends != nil {
		bc := &s.res.Backends[b]
		bc.MaxHeld = max(bc.MaxHeld, s.cluster.held(b))
	}
}

// serve starts r on the database it was sent to.
func (s *run) serve(r *request) {
	r.started = s.now
	s.seq++
	r.seq = s.seq
	be := &s.cluster.backends[r.backend]
	if !r.apply {
		be.running += s.cost[r.class]
	}
	be.db.Start(r, r.demand, s.now)
	if s.fleet != nil {
		s.fleet.started(s, r, be.running)
	}
	s.res.MaxRunning = max(s.res.MaxRunning, be.db.Running())
	if s.res.Backends != nil {
		bc := &s.res.Backends[r.backend]
		bc.MaxRunning = max(bc.MaxRunning, be.db.Running())
	}
}

// serviceWeight is the weight of a request's time in the database in its class's expected
// service time: the proxy's default estimator.weight.
const serviceWeight = 0.1

var errStuck = errors.New("sim: the database owes a request it cannot finish")

// finish ends the requests database b has served by now, and starts the ones they leave
// room for under the limit.
func (s *run) finish(b int) error {
	c := s.cluster
	be := &c.backends[b]
	s.done = be.db.Finish(s.now, s.done[:0])
	if len(s.done) == 0 {
		return errStuck
	}
	for _, r := range s.done {
		if r.apply {
			if s.measured() && s.res.Backends != nil {
				bc := &s.res.Backends[b]
				bc.Applied++
				bc.ApplyWork += time.Duration(c.cfg.ApplyShare * float64(s.cost[r.class]))
			}
			c.free = append(c.free, r)
			continue
		}
		cost := s.cost[r.class]
		be.running -= cost
		c.answered(r, cost)
		if c.writes[r.class] {
			s.replicate(r)
		}
		if f := r.fr; f != nil {
			s.setClock()
			busy := s.now - r.started
			f.ctl.Release(&r.ticket, busy)
			if s.fleet != nil {
				s.fleet.released(s, r)
			}
			sv := &f.service[r.class]
			*sv += time.Duration(serviceWeight * float64(busy-*sv))
			f.touched = true
		}
		s.complete(r)
	}
	for {
		r, ok := c.nextHeld(b)
		if !ok {
			break
		}
		s.serve(r)
	}
	for _, f := range s.fronts {
		if f != nil && f.touched { // nil: a fleet member yet to join
			f.touched = false
			s.collect(f)
		}
	}
	return nil
}

// replicate has every replica apply the write r the primary answered.
func (s *run) replicate(r *request) {
	c := s.cluster
	if c.cfg.ApplyShare == 0 {
		return
	}
	for b := 1; b < len(c.backends); b++ {
		s.serve(c.applyJob(r, b))
	}
}

// measured says whether an interaction ending now counts.
func (s *run) measured() bool {
	return s.now >= s.cfg.Warmup && (s.end == 0 || s.now < s.end)
}

// complete records r's response and moves its issuer on.
func (s *run) complete(r *request) {
	s.second++
	if s.fleet != nil {
		s.fleet.completed(r)
	}
	if s.measured() {
		resp, wait := (s.now - r.issued).Seconds(), (r.started - r.issued).Seconds()
		s.res.Completed++
		s.res.Work += s.cost[r.class]
		s.res.All.add(resp, wait)
		s.res.Classes[r.class].add(resp, wait)
		if s.res.Backends != nil && r.demand > 0 {
			bc := &s.res.Backends[r.backend]
			if s.cluster.writes[r.class] {
				bc.Writes++
			} else {
				bc.Reads++
			}
			bc.Work += s.cost[r.class]
		}
	}
	switch {
	case s.cfg.Closed != nil:
		s.events.push(event{at: s.now + s.think(s.cfg.Closed.Think, s.cfg.Closed.ThinkMax), kind: evIssue, req: r})
	case s.cfg.Open != nil:
		s.free = append(s.free, r)
	case r.left > 0:
		r.left--
		s.events.push(event{at: s.now + s.think(s.cfg.Sessions.Think, s.cfg.Sessions.ThinkMax), kind: evIssue, req: r})
	default:
		s.res.Sessions.Completed++
	}
}

// refuse records that the controller refused r, and moves its issuer on.
func (s *run) refuse(r *request, _ error) {
	if s.measured() {
		s.res.Refused++
		s.res.RefusedByClass[r.class]++
	}
	switch {
	case s.cfg.Closed != nil:
		s.events.push(event{at: s.now + s.think(s.cfg.Closed.Think, s.cfg.Closed.ThinkMax), kind: evIssue, req: r})
	case s.cfg.Open != nil:
		s.free = append(s.free, r)
	case r.accepted:
		s.res.Sessions.Aborted++
	default:
		s.res.Sessions.Rejected++
	}
}

// collect finds the waiting requests that the last call into controller f admitted or
// refused, and moves them on. The controller's counts of waiting units say how many there
// are; within a class they leave in arrival order (a class has one cost, and its service time moves slowly, so SJF and aging
// order it by arrival, and deadlines follow arrivals), so they are almost always at the
// fronts of the per-class lists, and the whole list is searched only when they are not.
func (s *run) collect(f *front) {
	w := &f.waiting
	if w.n == 0 {
		return
	}
	snap := f.ctl.Snapshot()
	left := w.n - snap.Queued - snap.Blocked
	if left <= 0 {
		return
	}
	for c := range w.byClass {
		for left > 0 {
			r := w.front(c)
			if r == nil || stillWaiting(r) {
				break
			}
			w.popFront(c)
			left--
			s.settle(r)
		}
	}
	if left > 0 {
		w.sweep(func(r *request) bool {
			if stillWaiting(r) {
				return true
			}
			s.settle(r)
			return false
		})
	}
}

func stillWaiting(r *request) bool {
	st := r.ticket.State()
	return st == admission.Queued || st == admission.Blocked
}

// settle moves on a request that stopped waiting: admitted, or refused.
func (s *run) settle(r *request) {
	r.waiting = false
	if r.ticket.State() == admission.Admitted {
		s.start(r)
		return
	}
	s.refuse(r, r.ticket.Err())
}

// waitList holds the requests waiting in the controller, per class in arrival order.
type waitList struct {
	byClass [][]*request
	heads   []int
	n       int
}

func (w *waitList) init(classes int) {
	w.byClass = make([][]*request, classes)
	w.heads = make([]int, classes)
}

func (w *waitList) add(r *request) {
	w.byClass[r.class] = append(w.byClass[r.class], r)
	w.n++
}

func (w *waitList) front(c int) *request {
	if w.heads[c] == len(w.byClass[c]) {
		return nil
	}
	return w.byClass[c][w.heads[c]]
}

func (w *waitList) popFront(c int) {
	q := w.byClass[c]
	q[w.heads[c]] = nil
	w.heads[c]++
	w.n--
	if w.heads[c] == len(q) {
		w.byClass[c], w.heads[c] = q[:0], 0
	} else if w.heads[c] > 1024 && w.heads[c] > len(q)/2 {
		n := copy(q, q[w.heads[c]:])
		clear(q[n:])
		w.byClass[c], w.heads[c] = q[:n], 0
	}
}

// sweep keeps the requests for which keep returns true, in order.
func (w *waitList) sweep(keep func(*request) bool) {
	for c, q := range w.byClass {
		out := q[:0]
		for _, r := range q[w.heads[c]:] {
			if keep(r) {
				out = append(out, r)
			} else {
				w.n--
			}
		}
		clear(q[len(out):])
		w.byClass[c], w.heads[c] = out, 0
	}
}
