package sim

import (
	"errors"
	"fmt"
	"math"
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
// that left keeps its share, and the adjuster's place, until its lease runs out. Between
// intervals the members act as Rule says.
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
	// Rule is how the members act between intervals; zero is RuleDrain (RuleReact is the
	// proxy's).
	Rule FleetRule
	// Latency is how long what the adjuster tells between intervals takes to act at the
	// followers (RuleDrain, RuleReact): it is looked at every Latency, as the proxy looks
	// every 10 ms, and what it tells acts Latency after the look (the proxy's etcd put and
	// watch), so a solo check's start or end, or a move of its capacity, acts between one and
	// two Latency after it happened. A follower's word that it drained (RuleDrain) is looked
	// for as often, and reaches the adjuster Latency after. Zero means 10ms.
	Latency time.Duration
	// MaxHold bounds a follower's hold whatever the adjuster told; zero means the rule's
	// bound in the proxy: 2s under RuleDrain, 1s under RuleReact.
	MaxHold time.Duration
}

// FleetRule is how a coordinated fleet's members act between their intervals.
type FleetRule int

const (
	// RuleDrain is RuleReact's, and the adjuster times its units alone only once the others
	// drained: tried in the proxy and set aside, since the members then run heavy units past
	// their shares and the capacity sinks to its floor (bench/results/sim-fleet). Every member tells its controller its share at each
	// interval (Controller.SetShare; 0 when it leaves), so that in a fleet a unit counts as
	// alone only during a solo check the others drained for. A follower held for a check
	// tells the adjuster once its own units there ended (Controller.Running is 0); when every
	// other member the adjuster's last interval saw has, the adjuster calls
	// Controller.Drained and tells the followers the check's new end.
	RuleDrain FleetRule = iota
	// RuleReact is internal/fleet's rule: while the adjuster's controller runs a solo check the
	// followers start nothing new (Controller.Hold), so that its units run alone in the
	// database, but their units already running go on beside them; each move of the
	// adjuster's capacity by more than 1% reaches the followers at once, and they take their
	// share of it; the demand a member publishes is the interval's mean smoothed over the
	// intervals before. No member tells its controller its share (Controller.SetShare): a
	// unit with none of its controller's own beside it counts as alone.
	RuleReact
	// RuleInterval is the proxy's rule before RuleReact: the members act at their intervals only, the
	// followers take the adjuster's moves from its record an interval late, and the demand
	// published is the interval's mean.
	RuleInterval
)

// fleetRules are the rules, by value.
var fleetRules = []FleetRule{RuleDrain, RuleReact, RuleInterval}

func (r FleetRule) String() string {
	switch r {
	case RuleDrain:
		return "drain"
	case RuleReact:
		return "react"
	case RuleInterval:
		return "interval"
	}
	return fmt.Sprintf("FleetRule(%d)", int(r))
}

// ParseFleetRule returns the rule of name (as String gives it).
func ParseFleetRule(name string) (FleetRule, error) {
	for _, r := range fleetRules {
		if r.String() == name {
			return r, nil
		}
	}
	return 0, fmt.Errorf("fleet: unknown rule %q (drain, react or interval)", name)
}

func (r FleetRule) valid() bool { return slices.Contains(fleetRules, r) }

// maxHold is the proxy's bound on a follower's hold under r: internal/fleet's maxHold, 2s
// since a check waits up to admission.DrainWait for the others to drain, 1s before.
func (r FleetRule) maxHold() time.Duration {
	if r == RuleDrain {
		return 2 * time.Second
	}
	return time.Second
}

// Membership is when a member is in the fleet: from Join until Leave (0: to the end).
type Membership struct {
	Join, Leave time.Duration
}

// Defaults of FleetConfig, and internal/fleet's constants: the proxy's.
const (
	defaultFleetInterval = 500 * time.Millisecond
	defaultFleetTTL      = 3 * time.Second
	defaultLatency       = 10 * time.Millisecond
	// toldMove is the least relative move of the adjuster's fleet capacity it tells between
	// intervals, demandWeight the weight of the interval's mean in a published demand.
	toldMove     = 0.01
	demandWeight = 0.5
)

// The fleet's own event kinds, beside events.go's (RuleDrain, RuleReact). evReact: the
// adjuster is looked at for what to tell the followers, and the followers for their word
// that they drained. evTold: the oldest of what the adjuster told acts at the followers.
const (
	evReact = evMember + 1 + iota
	evTold
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

func (c *FleetConfig) latency() time.Duration {
	if c.Latency == 0 {
		return defaultLatency
	}
	return c.Latency
}

func (c *FleetConfig) maxHold() time.Duration {
	if c.MaxHold == 0 {
		return c.Rule.maxHold()
	}
	return c.MaxHold
}

// reacts says whether the members act between intervals.
func (c *FleetConfig) reacts() bool {
	return c.Coordinated && (c.Rule == RuleDrain || c.Rule == RuleReact)
}

// drains says whether the members tell their controllers their shares and the adjuster
// waits for the others to drain (RuleDrain).
func (c *FleetConfig) drains() bool { return c.Coordinated && c.Rule == RuleDrain }

// Validate reports the first setting that cannot work in a run that ends at end.
func (c *FleetConfig) Validate(end time.Duration) error {
	switch {
	case len(c.Members) == 0:
		return errors.New("fleet: no member")
	case c.Members[0].Join != 0:
		return fmt.Errorf("fleet: the first member must be there from the start (joins at %s)", c.Members[0].Join)
	case c.Interval < 0 || c.TTL < 0 || c.Latency < 0 || c.MaxHold < 0:
		return fmt.Errorf("fleet: interval, TTL, latency and hold bound must be 0 (the default) or positive (got %s, %s, %s, %s)",
			c.Interval, c.TTL, c.Latency, c.MaxHold)
	case !c.Rule.valid():
		return fmt.Errorf("fleet: unknown rule %s", c.Rule)
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
	// the demand it published (fleet.Record's: the interval's mean, smoothed under RuleDrain
	// and RuleReact).
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
	// Held is how long in the interval the followers were held for the adjuster's solo
	// check (RuleDrain, RuleReact). Coordinated, CheckStarts counts the units the followers
	// started while the adjuster's controller ran one, CheckUnits those the adjuster started
	// then, and CheckBeside the other units running at the database as each of those
	// started, added up.
	Held                                 time.Duration
	CheckStarts, CheckUnits, CheckBeside int
	// TimedAlone counts the adjuster's units that ended in the interval and that its
	// controller counted as run alone (they time its solo times), and TimedBeside those of
	// them that had another unit running at the database beside them at some time
	// (coordinated).
	TimedAlone, TimedBeside int
	// Drained counts the adjuster's solo checks that the others drained for in the interval
	// (RuleDrain), DrainWait adds up the time from each one's start until then, and
	// Undrained counts the checks that ended before the others drained.
	Drained, Undrained int
	DrainWait          time.Duration
	// Completed counts each member's interactions answered in the interval (those that do
	// not reach the database by the member its client talks to).
	Completed []int
	// Auto is the adaptive capacity's state of the adjuster (coordinated) or of the first
	// member in the fleet, and AtFloor says that its capacity sat at the least its size
	// floor allows (within atFloor).
	Auto    admission.AutoState
	AtFloor bool
}

// atFloor is how near a capacity is to its size floor to read as held there: the floor
// moves with the median of three windows' sizes, a little apart from the last one's.
const atFloor = 0.02

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
	// checkStarts, checkUnits, checkBeside, timedAlone, timedBeside, drained, undrained and
	// drainWait are the interval's FleetPoint's.
	checkStarts, checkUnits, checkBeside int
	timedAlone, timedBeside              int
	drained, undrained                   int
	drainWait                            time.Duration
	// checks counts the solo checks the adjusters told, naming each (RuleDrain).
	checks int64
	// done counts each member's interactions answered in the interval.
	done []int
	// heldFor sums the time the followers were held since the interval began; a hold told
	// runs from holdFrom (the time held is counted up to) to holdTo.
	heldFor, holdFrom, holdTo time.Duration
	// tidings are what the adjuster told and has yet to act at the followers, oldest first.
	tidings []tiding
}

// tiding is something the adjuster told the followers between intervals.
type tiding struct {
	by int
	// hold: a solo check began (or, RuleDrain, the others drained for it), and may last for;
	// otherwise, with fleet zero, it ended. check names it (RuleDrain).
	hold  bool
	lasts time.Duration
	check int64
	// fleet is the fleet capacity it moved to.
	fleet time.Duration
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
	// adjuster is the member the last decision took for the adjuster (-1: none yet).
	adjuster int
	// RuleReact. told is the fleet capacity toldBy told the member last (toldBy -1: none);
	// smoothed is the demand last published (smoothing: one was). As the adjuster, checking and
	// fleet are what it told last.
	told      time.Duration
	toldBy    int
	smoothed  time.Duration
	smoothing bool
	checking  bool
	fleet     time.Duration
	// RuleDrain. As a follower: holding names the check it holds for (0: none), and acked
	// says it told the adjuster it drained for it, which reaches the adjuster at ackAt. As
	// the adjuster: check names the check under way, told at checkFrom, and drained says the
	// others drained for it; others are the other members its last interval saw.
	holding, check int64
	acked, drained bool
	ackAt          time.Duration
	checkFrom      time.Duration
	others         []int
	// timed is the controller's count of units timed alone (AutoState.SoloUnits) as last
	// seen.
	timed uint64
}

// newFleet sets up the fleet of s's config over clients, the members there from the start
// in, and schedules its intervals and its members' joins and leaves.
func (s *run) newFleet(clients []request) *fleetRun {
	cfg := *s.cfg.Fleet
	fl := &fleetRun{cfg: cfg, clients: clients, members: make([]member, len(cfg.Members)), done: make([]int, len(cfg.Members))}
	s.fronts = make([]*front, len(cfg.Members))
	for i := range fl.members {
		fl.members[i].adjuster, fl.members[i].toldBy = -1, -1
	}
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
	if cfg.reacts() {
		s.events.push(event{at: cfg.latency(), kind: evReact})
	}
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
	if m.checking {
		// Its keys go with its lease: the followers hear that the solo check ended.
		m.checking = false
		fl.tell(s, tiding{by: i})
	}
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
	if fl.cfg.drains() {
		// As internal/fleet's leave: the controller adapts alone again.
		f.ctl.SetShare(0)
		f.ctl.Share(f.ctl.Capacity(), true)
		s.collect(f)
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

// started notes that the database started r, and runs requests of running estimated cost.
func (fl *fleetRun) started(s *run, r *request, running time.Duration) {
	fl.maxLoad = max(fl.maxLoad, running)
	r.sole = s.cluster.backends[0].db.Running() == 1
	a := fl.adjusting()
	if a < 0 || r.fr == nil {
		return
	}
	if on, _ := s.fronts[a].ctl.Checking(); !on {
		return
	}
	if r.fr.id != a {
		fl.checkStarts++
		return
	}
	fl.checkUnits++
	fl.checkBeside += s.cluster.backends[0].db.Running() - 1
}

// released notes that r's controller released it (coordinated): a unit of the adjuster's
// that its controller counted as run alone (its count of units timed alone went up) is
// checked against the database, where it ran alone if none ran as it started and none
// started after it.
func (fl *fleetRun) released(s *run, r *request) {
	if !fl.cfg.Coordinated || r.fr == nil {
		return
	}
	m := &fl.members[r.fr.id]
	timed := r.fr.ctl.Snapshot().Auto.SoloUnits
	counted := timed > m.timed
	m.timed = timed
	if !counted || r.fr.id != fl.adjusting() {
		return
	}
	fl.timedAlone++
	if !r.sole || s.seq != r.seq {
		fl.timedBeside++
	}
}

// adjusting returns the member that adapts the fleet capacity, in the fleet (-1: none).
func (fl *fleetRun) adjusting() int {
	if !fl.cfg.Coordinated {
		return -1
	}
	for i := range fl.members {
		if m := &fl.members[i]; m.in && m.step.Adapt && m.step.Share > 0 {
			return i
		}
	}
	return -1
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
		if fl.cfg.reacts() {
			if m.smoothing {
				pt.Demand[i] = time.Duration(demandWeight*float64(pt.Demand[i]) + (1-demandWeight)*float64(m.smoothed))
			}
			m.smoothed, m.smoothing = pt.Demand[i], true
		}
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
		floor := float64(pt.Auto.SizeFloor)
		if share := fl.members[watch].step.Share; fl.cfg.drains() && share > 0 {
			floor *= share // the floor holds the fleet's capacity (Controller.SetShare)
		}
		pt.AtFloor = floor > 0 && math.Abs(float64(f.ctl.Capacity())/floor-1) < atFloor
	}
	pt.MaxLoad = fl.maxLoad
	fl.countHeld(s.now)
	pt.Held, fl.heldFor = fl.heldFor, 0
	pt.CheckStarts, pt.CheckUnits, pt.CheckBeside = fl.checkStarts, fl.checkUnits, fl.checkBeside
	fl.checkStarts, fl.checkUnits, fl.checkBeside = 0, 0, 0
	pt.TimedAlone, pt.TimedBeside, fl.timedAlone, fl.timedBeside = fl.timedAlone, fl.timedBeside, 0, 0
	pt.Drained, pt.Undrained, pt.DrainWait = fl.drained, fl.undrained, fl.drainWait
	fl.drained, fl.undrained, fl.drainWait = 0, 0, 0
	pt.Completed = slices.Clone(fl.done)
	clear(fl.done)
	fl.running, fl.load, fl.samples = 0, 0, 0
	fl.maxLoad = s.cluster.backends[0].running
	s.res.Fleet = append(s.res.Fleet, pt)
}

// decide has every member in the fleet take its step: its view is the records held at the
// interval's start, published at the one before, and its own with its demand fresh, in the
// order of the members; the first of them is the adjuster. Under RuleReact a follower takes
// the adjuster's fleet capacity as the adjuster last told it, newer than its record.
func (fl *fleetRun) decide(s *run, demands []time.Duration) {
	var recs []fleet.Record
	for i := range fl.members {
		m := &fl.members[i]
		if !m.in {
			continue
		}
		recs = recs[:0]
		self, adjuster := 0, -1
		for j := range fl.members {
			switch {
			case j == i:
				self = len(recs)
				recs = append(recs, fleet.Record{Demand: demands[i], Capacity: s.fronts[i].ctl.Capacity(), Fleet: m.step.Fleet})
			case fl.held(j, s.now):
				recs = append(recs, fl.members[j].rec)
			default:
				continue
			}
			if adjuster < 0 {
				adjuster = j
			}
		}
		m.adjuster = adjuster
		if fl.cfg.reacts() && adjuster != i && m.toldBy == adjuster {
			recs[0].Fleet = m.told
		}
		f := s.fronts[i]
		m.step = fleet.Next(recs, self, 0, m.step, f.ctl.Capacity(), 0)
		s.setClock()
		if fl.cfg.drains() {
			f.ctl.SetShare(m.step.Share)
			m.others = m.others[:0]
			for j := range fl.members {
				if j != i && fl.held(j, s.now) {
					m.others = append(m.others, j)
				}
			}
		}
		f.ctl.Share(m.step.Capacity, m.step.Adapt)
		s.collect(f)
	}
}

// react is the look between intervals (RuleDrain, RuleReact), as internal/fleet's: a solo
// check of the adjuster's that began, was drained for (RuleDrain) or ended since the last
// look, and a move of its fleet capacity by more than toldMove, are told the followers; and
// each follower held for a check whose own units there ended says so (RuleDrain).
func (fl *fleetRun) react(s *run) {
	now := s.setClock()
	if fl.cfg.drains() {
		fl.ack(s)
	}
	a := fl.adjusting()
	if a < 0 {
		return
	}
	m, ctl := &fl.members[a], s.fronts[a].ctl
	switch on, until := ctl.Checking(); {
	case on && !m.checking:
		fl.checks++
		m.checking, m.check, m.drained, m.checkFrom = true, fl.checks, false, s.now
		fl.tell(s, tiding{by: a, hold: true, lasts: until.Sub(now), check: m.check})
	case on && fl.cfg.drains() && !m.drained && fl.othersDrained(s, a):
		if until, ok := ctl.Drained(); ok {
			m.drained = true // the followers hold on until the check's new end
			fl.drained++
			fl.drainWait += s.now - m.checkFrom
			fl.tell(s, tiding{by: a, hold: true, lasts: until.Sub(now), check: m.check})
		}
	case !on && m.checking:
		m.checking = false
		if fl.cfg.drains() && !m.drained {
			fl.undrained++
		}
		fl.tell(s, tiding{by: a})
	}
	capacity := time.Duration(float64(ctl.Capacity()) / m.step.Share)
	if m.fleet == 0 || math.Abs(float64(capacity)/float64(m.fleet)-1) > toldMove {
		m.fleet = capacity
		fl.tell(s, tiding{by: a, fleet: capacity})
	}
}

// ack has each follower held for a solo check, its own units ended, tell the adjuster it
// drained for it: the word reaches the adjuster Latency from now.
func (fl *fleetRun) ack(s *run) {
	for i := range fl.members {
		m := &fl.members[i]
		if m.in && m.holding != 0 && !m.acked && s.fronts[i].ctl.Running() == 0 {
			m.acked, m.ackAt = true, s.now+fl.cfg.latency()
		}
	}
}

// othersDrained says whether every other member adjuster a's last interval saw has told it,
// by now, that it drained for a's check under way.
func (fl *fleetRun) othersDrained(s *run, a int) bool {
	check := fl.members[a].check
	for _, j := range fl.members[a].others {
		if o := &fl.members[j]; o.holding != check || !o.acked || o.ackAt > s.now {
			return false
		}
	}
	return true
}

// tell has t act at the followers Latency from now.
func (fl *fleetRun) tell(s *run, t tiding) {
	fl.tidings = append(fl.tidings, t)
	s.events.push(event{at: s.now + fl.cfg.latency(), kind: evTold})
}

// hear has the oldest tiding act at the followers, as internal/fleet's onProbe and
// onCapacity do.
func (fl *fleetRun) hear(s *run) {
	t := fl.tidings[0]
	fl.tidings = fl.tidings[1:]
	switch {
	case t.hold:
		fl.hold(s, t.by, min(max(t.lasts, 0), fl.cfg.maxHold()), t.check)
	case t.fleet == 0:
		fl.unhold(s)
	default:
		fl.follow(s, t.by, t.fleet)
	}
}

// hold has the followers of adjuster a start nothing new for d, while a times its units
// alone in check (0: not named).
func (fl *fleetRun) hold(s *run, a int, d time.Duration, check int64) {
	until := s.setClock().Add(d)
	held := 0
	for i := range fl.members {
		if m := &fl.members[i]; i != a && m.in && !m.step.Adapt {
			s.fronts[i].ctl.Hold(until)
			if m.holding != check {
				m.holding, m.acked = check, false
			}
			held++
		}
	}
	if held > 0 {
		fl.countHeld(s.now)
		fl.holdFrom, fl.holdTo = s.now, s.now+d
	}
}

// unhold ends the hold of every member in the fleet (the adjuster's own included, as the
// proxy's watch hands every member the probe key's deletion).
func (fl *fleetRun) unhold(s *run) {
	fl.countHeld(s.now)
	fl.holdTo = min(fl.holdTo, s.now)
	s.setClock()
	for i := range fl.members {
		if m := &fl.members[i]; m.in {
			m.holding, m.acked = 0, false
			f := s.fronts[i]
			f.ctl.Hold(time.Time{})
			s.collect(f)
		}
	}
}

// countHeld adds the time held up to now.
func (fl *fleetRun) countHeld(now time.Duration) {
	if end := min(fl.holdTo, now); end > fl.holdFrom {
		fl.heldFor += end - fl.holdFrom
	}
	fl.holdFrom = max(fl.holdFrom, now)
}

// follow has the followers of adjuster a take their share of its fleet capacity at once.
func (fl *fleetRun) follow(s *run, a int, capacity time.Duration) {
	s.setClock()
	for i := range fl.members {
		m := &fl.members[i]
		if i == a || !m.in || m.step.Adapt || m.step.Share <= 0 || m.adjuster != a {
			continue
		}
		m.step.Fleet, m.step.Capacity = capacity, max(time.Duration(float64(capacity)*m.step.Share), 1)
		m.told, m.toldBy = capacity, a
		f := s.fronts[i]
		f.ctl.Share(m.step.Capacity, false)
		s.collect(f)
	}
}
