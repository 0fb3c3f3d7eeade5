package sim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
	"github.com/gatekeeperdb/gatekeeper/internal/fleet"
)

// FleetConfig puts a fleet of proxies between the closed loop's clients and the one
// database, as a load balancer in front of them would: each member holds its own controller
// of Config.Admission, and the clients are dealt evenly among the members in the fleet.
//
// A member that joins starts with a fresh controller, and takes clients from the others until
// every member has an equal share; a client moves at its next request. A member that leaves
// stops: its clients move to the others, the requests waiting in it are handed at once to the
// members their clients moved to (keeping their issue time, as a client that reconnects and
// retries), and the ones running at the database finish there.
//
// Coordinated, the members follow internal/fleet's rule every Interval: each publishes a
// fleet.Record of its mean demand over the interval (sampled at every tick), its capacity and
// the fleet capacity it holds, and takes its share by fleet.Next from the records published
// at the interval before, its own demand fresh. The adjuster is the lowest-index member
// whose record is held: a record is held until TTL after it was published, so that a member
// that left keeps its share, and the adjuster's place, until its lease runs out.
type FleetConfig struct {
	// Members are the proxies, by index, with when each is in the fleet. The first is there
	// from the start.
	Members []Membership
	// Coordinated runs the fleet's rule; otherwise each controller adapts alone.
	Coordinated bool
	// Interval is how often the members publish and decide; zero means 500ms, the proxy's
	// default. TTL is how long a record is held after it was published; zero means 3s, the
	// proxy's lease.
	Interval, TTL time.Duration
}

// Membership is when a member is in the fleet: from Join until Leave (0: to the end).
type Membership struct {
	Join, Leave time.Duration
}

// Defaults of FleetConfig: the proxy's.
const (
	defaultFleetInterval = 500 * time.Millisecond
	defaultFleetTTL      = 3 * time.Second
)

func (c *FleetConfig) interval() time.Duration {
	if c.Interval == 0 {
		return defaultFleetInterval
	}
	return c.Interval
}

func (c *FleetConfig) ttl() time.Duration {
	if c.TTL == 0 {
		return defaultFleetTTL
	}
	return c.TTL
}

// Validate reports the first setting that cannot work in a run that ends at end.
func (c *FleetConfig) Validate(end time.Duration) error {
	switch {
	case len(c.Members) == 0:
		return errors.New("fleet: no member")
	case c.Members[0].Join != 0:
		return fmt.Errorf("fleet: the first member must be there from the start (joins at %s)", c.Members[0].Join)
	case c.Interval < 0 || c.TTL < 0:
		return fmt.Errorf("fleet: interval and TTL must be 0 (the default) or positive (got %s, %s)", c.Interval, c.TTL)
	}
	for i, m := range c.Members {
		if m.Join < 0 || m.Join >= end || m.Leave < 0 || m.Leave > 0 && m.Leave <= m.Join {
			return fmt.Errorf("fleet: member %d: it must join before the end %s and leave after it joins (got %s, %s)", i, end, m.Join, m.Leave)
		}
		if m.Leave == 0 {
			continue
		}
		others := 0
		for j, o := range c.Members {
			if j != i && o.Join <= m.Leave && (o.Leave == 0 || o.Leave > m.Leave) {
				others++
			}
		}
		if others == 0 {
			return fmt.Errorf("fleet: member %d leaves at %s with no other member in the fleet", i, m.Leave)
		}
	}
	return nil
}

// FleetPoint is one interval of a fleet's run: each member's state after the interval's
// decisions, and the database's load through the interval.
type FleetPoint struct {
	At time.Duration
	// Capacity, Share and Demand are each member's, by index, zero while it is not in the
	// fleet: its controller's capacity, its share of the fleet capacity (coordinated), and
	// its demand (fleet.Record's) over the interval.
	Capacity []time.Duration
	Share    []float64
	Demand   []time.Duration
	// Fleet is the fleet capacity the adjuster holds, and Adjuster its index (coordinated;
	// otherwise 0 and -1).
	Fleet    time.Duration
	Adjuster int
	// Running and Load are the requests running at the database and their estimated costs,
	// means over the interval's ticks; MaxLoad is the most estimated cost that ran at once.
	Running       float64
	Load, MaxLoad time.Duration
	// Completed counts each member's interactions answered in the interval (those that do
	// not reach the database by the member its client talks to).
	Completed []int
	// Auto is the adaptive capacity's state of the adjuster (coordinated) or of the first
	// member in the fleet.
	Auto admission.AutoState
}

// SumCapacity is the members' capacities added up.
func (p *FleetPoint) SumCapacity() time.Duration {
	var sum time.Duration
	for _, c := range p.Capacity {
		sum += c
	}
	return sum
}

// fleetRun is a fleet's state within a run: the members, by index as s.fronts holds their
// controllers (nil until a member joins), and the clients they share.
type fleetRun struct {
	cfg     FleetConfig
	clients []request
	members []member
	// running and load sum the database's running requests and their estimated costs over
	// the interval's ticks, samples how many; maxLoad is the most estimated cost running
	// since the interval began.
	running, load float64
	samples       int
	maxLoad       time.Duration
	// done counts each member's interactions answered in the interval.
	done []int
}

// member is one proxy of the fleet, beside its controller.
type member struct {
	in bool // joined and not left
	// demand sums the controller's demand over the interval's ticks, samples how many.
	demand  time.Duration
	samples int
	// step is the last decision; rec the record last published, at recAt (published: one was).
	step      fleet.Step
	rec       fleet.Record
	recAt     time.Duration
	published bool
}

// newFleet sets up the fleet of s's config over clients, the members there from the start
// in, and schedules its intervals and its members' joins and leaves.
func (s *run) newFleet(clients []request) *fleetRun {
	cfg := *s.cfg.Fleet
	fl := &fleetRun{cfg: cfg, clients: clients, members: make([]member, len(cfg.Members)), done: make([]int, len(cfg.Members))}
	s.fronts = make([]*front, len(cfg.Members))
	for i, m := range cfg.Members {
		if m.Join == 0 {
			s.fronts[i] = s.newMember(i)
			fl.members[i].in = true
		} else {
			s.events.push(event{at: m.Join, kind: evMember, gen: uint64(i)})
		}
	}
	for i, m := range cfg.Members {
		if m.Leave > 0 {
			s.events.push(event{at: m.Leave, kind: evMember, gen: uint64(i)})
		}
	}
	for i := range clients {
		clients[i].member = -1
	}
	fl.deal()
	s.events.push(event{at: cfg.interval(), kind: evInterval})
	return fl
}

// deal moves clients so that every member in the fleet has an equal share of them (the
// lower indexes one more, where they do not divide evenly): those of members out of the
// fleet or over their share go to the first member under its share.
func (fl *fleetRun) deal() {
	var in []int
	for i, m := range fl.members {
		if m.in {
			in = append(in, i)
		}
	}
	want := make([]int, len(fl.members))
	for k, i := range in {
		want[i] = len(fl.clients) / len(in)
		if k < len(fl.clients)%len(in) {
			want[i]++
		}
	}
	have := make([]int, len(fl.members))
	for _, c := range fl.clients {
		if c.member >= 0 && fl.members[c.member].in {
			have[c.member]++
		}
	}
	to := 0
	for c := range fl.clients {
		r := &fl.clients[c]
		if r.member >= 0 && fl.members[r.member].in && have[r.member] <= want[r.member] {
			continue
		}
		for to < len(in) && have[in[to]] >= want[in[to]] {
			to++
		}
		if to == len(in) {
			return
		}
		if r.member >= 0 && fl.members[r.member].in {
			have[r.member]--
		}
		r.member = in[to]
		have[in[to]]++
	}
}

// change has member i join the fleet, or leave it if it is in.
func (fl *fleetRun) change(s *run, i int) {
	m := &fl.members[i]
	if s.fronts[i] == nil {
		s.setClock()
		s.fronts[i] = s.newMember(i)
		m.in = true
		fl.deal()
		return
	}
	m.in = false
	fl.deal()
	f := s.fronts[i]
	s.setClock()
	var moved []*request
	f.waiting.sweep(func(r *request) bool {
		if f.ctl.Cancel(&r.ticket) {
			r.waiting = false
			moved = append(moved, r)
		} else {
			s.settle(r) // admitted (or refused) while the ones before it were taken out
		}
		return false
	})
	for _, r := range moved {
		s.admit(r, s.fronts[r.member])
	}
}

// tick ticks the members in the fleet, and samples their demands and the database's load.
func (fl *fleetRun) tick(s *run) {
	now := s.setClock()
	for i := range fl.members {
		m := &fl.members[i]
		if !m.in {
			continue
		}
		f := s.fronts[i]
		f.ctl.Tick(now)
		s.collect(f)
		m.demand += f.ctl.Demand()
		m.samples++
	}
	be := &s.cluster.backends[0]
	fl.running += float64(be.db.Running())
	fl.load += float64(be.running)
	fl.samples++
}

// newMember returns member i's controller, fresh.
func (s *run) newMember(i int) *front {
	f := newFront(*s.cfg.Admission, s.clock, s.cost)
	f.id = i
	return f
}

// completed counts r's interaction, answered, for the member that answered it.
func (fl *fleetRun) completed(r *request) {
	if r.fr != nil {
		fl.done[r.fr.id]++
	} else {
		fl.done[r.member]++
	}
}

// started notes that the database runs requests of running estimated cost.
func (fl *fleetRun) started(running time.Duration) {
	fl.maxLoad = max(fl.maxLoad, running)
}

// held says whether member i's record is held at now: published, and its lease not run out.
func (fl *fleetRun) held(i int, now time.Duration) bool {
	m := &fl.members[i]
	return m.published && now-m.recAt < fl.cfg.ttl()
}

// interval ends an interval: coordinated, every member in the fleet takes its share from
// the records published at the interval before (its own demand fresh), then publishes its
// own; and the interval's point is recorded.
func (fl *fleetRun) interval(s *run) {
	n := len(fl.members)
	pt := FleetPoint{At: s.now, Capacity: make([]time.Duration, n), Share: make([]float64, n),
		Demand: make([]time.Duration, n), Adjuster: -1}
	for i := range fl.members {
		m := &fl.members[i]
		if !m.in {
			continue
		}
		if m.samples > 0 {
			pt.Demand[i] = m.demand / time.Duration(m.samples)
		} else {
			pt.Demand[i] = s.fronts[i].ctl.Demand()
		}
		m.demand, m.samples = 0, 0
	}
	if fl.cfg.Coordinated {
		fl.decide(s, pt.Demand)
		for i := range fl.members {
			if m := &fl.members[i]; m.in {
				m.rec = fleet.Record{Demand: pt.Demand[i], Capacity: s.fronts[i].ctl.Capacity(), Fleet: m.step.Fleet}
				m.recAt, m.published = s.now, true
			}
		}
		for i := range fl.members {
			if fl.held(i, s.now) {
				pt.Adjuster, pt.Fleet = i, fl.members[i].rec.Fleet
				break
			}
		}
	}
	watch := pt.Adjuster
	for i := range fl.members {
		if m := &fl.members[i]; m.in {
			if watch < 0 {
				watch = i
			}
			pt.Capacity[i] = s.fronts[i].ctl.Capacity()
			if fl.cfg.Coordinated {
				pt.Share[i] = m.step.Share
			}
		}
	}
	if fl.samples > 0 {
		pt.Running = fl.running / float64(fl.samples)
		pt.Load = time.Duration(fl.load / float64(fl.samples))
	}
	if f := s.fronts[watch]; f != nil {
		pt.Auto = f.ctl.Snapshot().Auto
	}
	pt.MaxLoad = fl.maxLoad
	pt.Completed = slices.Clone(fl.done)
	clear(fl.done)
	fl.running, fl.load, fl.samples = 0, 0, 0
	fl.maxLoad = s.cluster.backends[0].running
	s.res.Fleet = append(s.res.Fleet, pt)
}

// decide has every member in the fleet take its step: its view is the records held at the
// interval's start, published at the one before, and its own with its demand fresh, in the
// order of the members; the first of them is the adjuster.
func (fl *fleetRun) decide(s *run, demands []time.Duration) {
	var recs []fleet.Record
	for i := range fl.members {
		m := &fl.members[i]
		if !m.in {
			continue
		}
		recs = recs[:0]
		self := 0
		for j := range fl.members {
			switch {
			case j == i:
				self = len(recs)
				recs = append(recs, fleet.Record{Demand: demands[i], Capacity: s.fronts[i].ctl.Capacity(), Fleet: m.step.Fleet})
			case fl.held(j, s.now):
				recs = append(recs, fl.members[j].rec)
			}
		}
		f := s.fronts[i]
		m.step = fleet.Next(recs, self, 0, m.step, f.ctl.Capacity(), 0)
		s.setClock()
		f.ctl.Share(m.step.Capacity, m.step.Adapt)
		s.collect(f)
	}
}
