package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
)

// FleetSetup is the fleet experiment: N proxies, each with its own adaptive controller
// (capacity: auto, sjf) and an equal share of the closed loop's clients, in front of one
// database at Overload times the clients that saturate it; each N with the controllers alone
// and coordinated by each of Rules at each of Timings (the Coordinations). Beside them: the one
// database with no admission, and N static controllers that split the single controller's
// settled capacity evenly (what a perfect coordination would hold). Then the churn run in
// each coordination: ChurnSize members coordinated, one joining and two leaving, a follower
// and then the adjuster.
type FleetSetup struct {
	Database DatabaseConfig
	// Sigma is the spread of the demand within a class (see NewMix).
	Sigma float64
	// Think is the clients' mean think time, ThinkMax its cap.
	Think, ThinkMax time.Duration
	// Overload is the clients as a multiple of the database's saturation point, N* = K (Think
	// + D) / D for a mean demand D on K cores: the clients that keep it busy if none waited.
	Overload float64
	// Sizes are the fleet sizes N; the first must be 1, the single controller the others are
	// compared with.
	Sizes []int
	// AutoMin, AutoMax and AutoInterval are the adaptive capacity's (a cold start at AutoMin).
	AutoMin, AutoMax, AutoInterval time.Duration
	// QueueTimeout is long enough that nothing is shed, as in the other closed-loop runs.
	QueueTimeout time.Duration
	// Rules are the fleet's rules the coordinated runs are made with, each at each of
	// Timings, the fleet's intervals, leases and latencies (FleetConfig's).
	Rules   []FleetRule
	Timings []FleetTiming
	// Windows is each run's length in adaptive windows; the second half is measured.
	Windows int
	// Seeds is how many seeds the alone and coordinated runs are made with: the first's runs
	// are shown in full, the others' in a table of their own. Zero means 1.
	Seeds int
	// The churn run: ChurnSize members from the start; at JoinAt one more joins, at LeaveAt
	// member ChurnSize/2 leaves, at AdjusterLeaveAt member 0 (the adjuster) leaves, and the
	// run ends at ChurnEnd. Zero ChurnSize: no churn run.
	ChurnSize                                  int
	JoinAt, LeaveAt, AdjusterLeaveAt, ChurnEnd time.Duration
}

// FleetTiming is how often a fleet's members publish and decide, how long a record is held,
// and how long what the adjuster tells between intervals takes to act (FleetConfig's).
type FleetTiming struct {
	Interval, TTL, Latency time.Duration
}

// FleetCoordination is one way of the coordinated runs: a rule at a timing.
type FleetCoordination struct {
	Rule   FleetRule
	Timing FleetTiming
}

// Coordinations are the setup's ways of coordinating: each rule at each timing, by rule.
func (s FleetSetup) Coordinations() []FleetCoordination {
	var out []FleetCoordination
	for _, r := range s.Rules {
		for _, t := range s.Timings {
			out = append(out, FleetCoordination{r, t})
		}
	}
	return out
}

// proxyWindow is the adaptive capacity's window in the proxy (its default interval), which
// the model's window (Setup.AutoInterval) stands for.
const proxyWindow = 2 * time.Second

// ProxyTimings are t, a timing of the proxy's, and t on the model's time scale, whose window
// of autoInterval stands for the proxy's 2 s: at the proxy's defaults an interval is then a
// quarter of a window, as in the proxy.
func ProxyTimings(t FleetTiming, autoInterval time.Duration) []FleetTiming {
	scale := modelScale(autoInterval)
	return []FleetTiming{t, {scale * t.Interval, scale * t.TTL, scale * t.Latency}}
}

// modelScale is how many times the proxy's times the model's are, when its window of
// autoInterval stands for the proxy's.
func modelScale(autoInterval time.Duration) time.Duration {
	return time.Duration(int64(autoInterval / proxyWindow))
}

// ProxyTiming is the proxy's default timing.
var ProxyTiming = FleetTiming{Interval: defaultFleetInterval, TTL: defaultFleetTTL, Latency: defaultLatency}

// AllRules are the fleet's rules, the proxy's first, then the ones before it, latest first.
var AllRules = []FleetRule{RuleDrain, RuleReact, RuleInterval}

// DefaultFleetSetup is the setup of the sim fleet command; quick is a shorter one for a
// smoke run and tests. The database, workload and adaptive capacity are make sim's.
func DefaultFleetSetup(quick bool) FleetSetup {
	base := DefaultSetup(quick)
	s := FleetSetup{
		Database:        base.Database,
		Sigma:           base.Sigma,
		Think:           base.Think,
		ThinkMax:        base.ThinkMax,
		Overload:        2,
		Sizes:           []int{1, 2, 3, 10},
		AutoMin:         base.AutoMin,
		AutoMax:         base.AutoMax,
		AutoInterval:    base.AutoInterval,
		QueueTimeout:    base.ClosedTimeout,
		Rules:           AllRules,
		Timings:         ProxyTimings(ProxyTiming, base.AutoInterval),
		Windows:         100,
		Seeds:           3,
		ChurnSize:       10,
		JoinAt:          3200 * time.Second,
		LeaveAt:         4000 * time.Second,
		AdjusterLeaveAt: 4800 * time.Second,
		ChurnEnd:        5600 * time.Second,
	}
	if quick {
		s.Windows, s.Seeds = 40, 1
		s.JoinAt, s.LeaveAt, s.AdjusterLeaveAt, s.ChurnEnd = 1600*time.Second, 2000*time.Second, 2400*time.Second, 2800*time.Second
	}
	return s
}

// Mix returns the setup's workload: the shopping mix around Table 1's No Load times.
func (s FleetSetup) Mix() (*Mix, error) { return NewMix(TPCW, false, s.Sigma) }

// Clients is the closed loop's size: Overload times the saturation point.
func (s FleetSetup) Clients(mix *Mix) int {
	d := mix.MeanDemand().Seconds()
	return int(math.Round(s.Overload * float64(s.Database.Cores) * (s.Think.Seconds() + d) / d))
}

// length is a run's length, half of it warm-up.
func (s FleetSetup) length() time.Duration { return time.Duration(s.Windows) * s.AutoInterval }

// Validate reports the first setting that cannot work.
func (s FleetSetup) Validate() error {
	switch {
	case len(s.Sizes) == 0 || s.Sizes[0] != 1:
		return fmt.Errorf("fleet: the sizes must start at 1, the single controller (got %v)", s.Sizes)
	case s.Overload <= 0 || s.Windows < 2 || s.Seeds < 0:
		return fmt.Errorf("fleet: overload must be positive, windows at least 2 and seeds 0 or more (got %g, %d, %d)", s.Overload, s.Windows, s.Seeds)
	case len(s.Timings) == 0 || len(s.Rules) == 0:
		return errors.New("fleet: no rule or no timing for the coordinated runs")
	case s.ChurnSize > 0 && (s.ChurnSize < 3 || !(0 < s.JoinAt && s.JoinAt < s.LeaveAt && s.LeaveAt < s.AdjusterLeaveAt && s.AdjusterLeaveAt < s.ChurnEnd)):
		return fmt.Errorf("fleet: the churn run needs 3 members or more and 0 < join < leave < adjuster leave < end (got %d, %s, %s, %s, %s)",
			s.ChurnSize, s.JoinAt, s.LeaveAt, s.AdjusterLeaveAt, s.ChurnEnd)
	}
	for _, n := range s.Sizes {
		if n < 1 {
			return fmt.Errorf("fleet: sizes must be positive (got %v)", s.Sizes)
		}
	}
	for _, t := range s.Timings {
		if t.Interval <= 0 || t.TTL <= 0 || t.Latency <= 0 {
			return fmt.Errorf("fleet: intervals, TTLs and latencies must be positive (got %v)", s.Timings)
		}
	}
	for _, r := range s.Rules {
		if !r.valid() {
			return fmt.Errorf("fleet: unknown rule %s", r)
		}
	}
	return nil
}

// auto is each member's controller: the adaptive capacity from a cold start, under sjf.
func (s FleetSetup) auto() *admission.Config {
	return &admission.Config{Capacity: s.AutoMin, Discipline: admission.SJF, QueueTimeout: s.QueueTimeout,
		MaxQueue: 1 << 20, Auto: admission.AutoConfig{Enabled: true, Min: s.AutoMin, Max: s.AutoMax,
			Interval: s.AutoInterval}}
}

// closedLoop is the closed loop in front of the database under a and fleet, for length,
// its second half measured.
func (s FleetSetup) closedLoop(mix *Mix, seed uint64, a *admission.Config, fleet *FleetConfig, length time.Duration) Config {
	return Config{Seed: seed, Database: s.Database, Mix: mix, Admission: a, Fleet: fleet,
		Closed: &ClosedLoop{Clients: s.Clients(mix), Think: s.Think, ThinkMax: s.ThinkMax},
		Warmup: length / 2, Duration: length / 2}
}

// fleet is n members there throughout, coordinated in c unless c is nil. A follower's hold
// is bounded as in the proxy under c's rule, on the model's time scale: its solo checks last
// as many times longer.
func (s FleetSetup) fleet(n int, c *FleetCoordination) *FleetConfig {
	f := &FleetConfig{Members: make([]Membership, n)}
	if c != nil {
		f.Coordinated, f.Rule = true, c.Rule
		f.Interval, f.TTL, f.Latency = c.Timing.Interval, c.Timing.TTL, c.Timing.Latency
		f.MaxHold = modelScale(s.AutoInterval) * c.Rule.maxHold()
	}
	return f
}

// churn is the churn run's fleet, coordinated in c.
func (s FleetSetup) churn(c FleetCoordination) *FleetConfig {
	f := s.fleet(s.ChurnSize+1, &c)
	f.Members[0].Leave = s.AdjusterLeaveAt
	f.Members[s.ChurnSize/2].Leave = s.LeaveAt
	f.Members[s.ChurnSize].Join = s.JoinAt
	return f
}

// FleetResults holds every run of the fleet experiment.
type FleetResults struct {
	Setup FleetSetup
	Seed  uint64
	Mix   *Mix
	// Direct is the database with no admission.
	Direct Result
	// Alone[i] is Sizes[i] adaptive controllers alone, Coordinated[k][i] coordinated in
	// Coordinations()[k]; Split[i] is Sizes[i] static ones at the single controller's
	// settled capacity over Sizes[i] each (Split[0]: that capacity whole).
	Alone, Split []Result
	Coordinated  [][]Result
	// Churn[k] is the churn run in Coordinations()[k] (nil without).
	Churn []Result
	// Repeats are the alone and coordinated runs again at the other seeds.
	Repeats []FleetRepeat
}

// FleetRepeat is the alone and coordinated runs at one more seed, as FleetResults has them.
type FleetRepeat struct {
	Seed        uint64
	Alone       []Result
	Coordinated [][]Result
}

// Settled is the single controller's settled capacity at the repeat's seed.
func (f *FleetRepeat) Settled() time.Duration { return settled(f.Alone[0]) }

// RunFleet runs the fleet experiment on workers goroutines at once (0: one per CPU). Every
// run has the same seed, and the results depend on s and seed alone. The split runs need
// the single controller's settled capacity, so they run after the others.
func RunFleet(s FleetSetup, seed uint64, workers int) (*FleetResults, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	mix, err := s.Mix()
	if err != nil {
		return nil, err
	}
	r := &FleetResults{Setup: s, Seed: seed, Mix: mix, Split: make([]Result, len(s.Sizes))}
	length := s.length()
	coords := s.Coordinations()
	jobs := []job{{s.closedLoop(mix, seed, nil, nil, length), &r.Direct}}
	// adaptive adds the alone and coordinated runs at seed k.
	adaptive := func(k uint64) ([]Result, [][]Result) {
		alone, coordinated := make([]Result, len(s.Sizes)), make([][]Result, len(coords))
		for i, n := range s.Sizes {
			jobs = append(jobs, job{s.closedLoop(mix, k, s.auto(), s.fleet(n, nil), length), &alone[i]})
		}
		for c := range coords {
			coordinated[c] = make([]Result, len(s.Sizes))
			for i, n := range s.Sizes {
				jobs = append(jobs, job{s.closedLoop(mix, k, s.auto(), s.fleet(n, &coords[c]), length), &coordinated[c][i]})
			}
		}
		return alone, coordinated
	}
	r.Alone, r.Coordinated = adaptive(seed)
	r.Repeats = make([]FleetRepeat, max(s.Seeds, 1)-1)
	for k := range r.Repeats {
		rep := &r.Repeats[k]
		rep.Seed = seed + uint64(k) + 1
		rep.Alone, rep.Coordinated = adaptive(rep.Seed)
	}
	if s.ChurnSize > 0 {
		r.Churn = make([]Result, len(coords))
		for k, co := range coords {
			c := s.closedLoop(mix, seed, s.auto(), s.churn(co), s.ChurnEnd)
			c.Warmup, c.Duration = s.JoinAt, s.ChurnEnd-s.JoinAt
			jobs = append(jobs, job{c, &r.Churn[k]})
		}
	}
	if err := runJobs(jobs, workers); err != nil {
		return nil, err
	}
	single := r.Settled()
	jobs = jobs[:0]
	for i, n := range s.Sizes {
		a := s.auto()
		a.Auto = admission.AutoConfig{}
		a.Capacity = max(single/time.Duration(n), time.Millisecond)
		jobs = append(jobs, job{s.closedLoop(mix, seed, a, s.fleet(n, nil), length), &r.Split[i]})
	}
	if err := runJobs(jobs, workers); err != nil {
		return nil, err
	}
	return r, nil
}

// Settled is the single controller's settled capacity: its median over the measured half.
func (r *FleetResults) Settled() time.Duration { return settled(r.Alone[0]) }

// settled is a run's summed capacity's median over its measured half.
func settled(res Result) time.Duration {
	return median(measuredPoints(res), func(p *FleetPoint) float64 { return float64(p.SumCapacity()) })
}

// measuredPoints are a run's fleet points in its measured half (those at or after the
// warm-up).
func measuredPoints(res Result) []FleetPoint {
	if len(res.Fleet) == 0 {
		return nil
	}
	from := res.Fleet[len(res.Fleet)-1].At - res.Measured
	i, _ := slices.BinarySearchFunc(res.Fleet, from, func(p FleetPoint, at time.Duration) int { return int(p.At - at) })
	return res.Fleet[i:]
}

// median is the median of f over pts, as a duration (0 when empty).
func median(pts []FleetPoint, f func(*FleetPoint) float64) time.Duration {
	if len(pts) == 0 {
		return 0
	}
	vs := make([]float64, len(pts))
	for i := range pts {
		vs[i] = f(&pts[i])
	}
	slices.Sort(vs)
	return time.Duration(vs[len(vs)/2])
}

// FleetCell is one run of the experiment, as measured over its second half.
type FleetCell struct {
	Throughput float64
	// Short and Heavy are the mean response times of ShortClass and HeavyClass.
	Short, Heavy time.Duration
	// Sum is the median of the members' capacities added up, SumRatio that over the single
	// controller's settled capacity; Fleet the median fleet capacity (coordinated).
	Sum      time.Duration
	SumRatio float64
	Fleet    time.Duration
	// SumOverFleet is the most, over the intervals, of the sum of the capacities over the
	// fleet capacity the adjuster holds, and LoadOverFleet the most of the estimated cost
	// running at once over the fleet capacity in force (coordinated).
	SumOverFleet, LoadOverFleet float64
	// Running and Load are the mean requests running at the database and their estimated
	// costs; LoadRatio is Load over the single controller's settled capacity.
	Running   float64
	Load      time.Duration
	LoadRatio float64
	// Swing is the largest ratio of the summed capacity's highest to its lowest within any
	// lawSwingWindows windows; MemberSwing the largest of any member's own.
	Swing, MemberSwing float64
	// Spread is the ratio of the members' highest median capacity to their lowest, and
	// Starved the least member's throughput over the most's.
	Spread, Starved float64
	// Alone is the median time alone of the adaptive capacity the points follow (FleetPoint's
	// Auto): what its stretch divides by.
	Alone time.Duration
	// Held is the part of the time the followers were held for the adjuster's solo checks,
	// and CheckStarts the units they started during the checks; CheckUnits counts the units
	// the adjuster started in its checks, and Beside is the mean of the other units running
	// at the database as each started (coordinated).
	Held                    float64
	CheckStarts, CheckUnits int
	Beside                  float64
	// TimedAlone counts the adjuster's units its controller counted as run alone, and
	// TimedBeside those of them that ran beside another unit in the database (coordinated).
	TimedAlone, TimedBeside int
	// Drained and Undrained count the solo checks the others drained for and those that
	// ended first, and DrainWait is the mean time from a check's start until drained
	// (RuleDrain).
	Drained, Undrained int
	DrainWait          time.Duration
	// AtFloor is the part of the intervals in which the capacity the points follow sat at
	// its size floor (FleetPoint.AtFloor).
	AtFloor float64
	// Checks is the solo checks a window of the adaptive capacity the points follow.
	Checks float64
}

// Cell measures res, against the single controller's settled capacity.
func (r *FleetResults) Cell(res Result) FleetCell { return r.cell(res, r.Settled()) }

// cell measures res against single, a single controller's settled capacity.
func (r *FleetResults) cell(res Result, single time.Duration) FleetCell {
	pts := measuredPoints(res)
	short, heavy := r.Mix.Index(ShortClass), r.Mix.Index(HeavyClass)
	c := FleetCell{Throughput: res.Throughput, Short: res.Classes[short].Mean(), Heavy: res.Classes[heavy].Mean(), Swing: 1, MemberSwing: 1, Spread: 1, Starved: 1}
	if len(pts) == 0 {
		return c
	}
	c.Sum = median(pts, func(p *FleetPoint) float64 { return float64(p.SumCapacity()) })
	c.SumRatio = float64(c.Sum) / float64(single)
	c.Fleet = median(pts, func(p *FleetPoint) float64 { return float64(p.Fleet) })
	c.Alone = median(pts, func(p *FleetPoint) float64 { return float64(p.Auto.Alone) })
	var load float64
	var held, drainWait time.Duration
	beside, atFloor := 0, 0
	for i := range pts {
		p := &pts[i]
		held += p.Held
		drainWait += p.DrainWait
		c.TimedAlone, c.TimedBeside = c.TimedAlone+p.TimedAlone, c.TimedBeside+p.TimedBeside
		c.Drained, c.Undrained = c.Drained+p.Drained, c.Undrained+p.Undrained
		if p.AtFloor {
			atFloor++
		}
		c.CheckStarts += p.CheckStarts
		c.CheckUnits, beside = c.CheckUnits+p.CheckUnits, beside+p.CheckBeside
		c.Running += p.Running / float64(len(pts))
		load += float64(p.Load) / float64(len(pts))
		if p.Fleet > 0 {
			c.SumOverFleet = max(c.SumOverFleet, float64(p.SumCapacity())/float64(p.Fleet))
		}
		if i > 0 && pts[i-1].Fleet > 0 {
			c.LoadOverFleet = max(c.LoadOverFleet, float64(p.MaxLoad)/float64(pts[i-1].Fleet))
		}
	}
	c.Load = time.Duration(load)
	c.AtFloor = float64(atFloor) / float64(len(pts))
	if first, last := pts[0].Auto.Solo, pts[len(pts)-1].Auto.Solo; last >= first && res.Measured > 0 {
		c.Checks = float64(last-first) / (float64(res.Measured) / float64(r.Setup.AutoInterval))
	}
	if c.Drained > 0 {
		c.DrainWait = drainWait / time.Duration(c.Drained)
	}
	if res.Measured > 0 {
		c.Held = float64(held) / float64(res.Measured)
	}
	if c.CheckUnits > 0 {
		c.Beside = float64(beside) / float64(c.CheckUnits)
	}
	c.LoadRatio = load / float64(single)
	span := lawSwingWindows * r.Setup.AutoInterval
	c.Swing = pointSwing(pts, span, func(p *FleetPoint) time.Duration { return p.SumCapacity() })
	n := len(pts[0].Capacity)
	lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
	loDone, hiDone := math.MaxInt, 0
	for m := range n {
		c.MemberSwing = max(c.MemberSwing, pointSwing(pts, span, func(p *FleetPoint) time.Duration { return p.Capacity[m] }))
		med := median(pts, func(p *FleetPoint) float64 { return float64(p.Capacity[m]) })
		lo, hi = min(lo, med), max(hi, med)
		done := 0
		for i := range pts {
			done += pts[i].Completed[m]
		}
		loDone, hiDone = min(loDone, done), max(hiDone, done)
	}
	if lo > 0 {
		c.Spread = float64(hi) / float64(lo)
	}
	if hiDone > 0 {
		c.Starved = float64(loDone) / float64(hiDone)
	}
	return c
}

// pointSwing is the largest ratio of f's highest to its lowest within any span of pts
// (points of zero left out of the lowest), by a sliding window's minimum and maximum.
func pointSwing(pts []FleetPoint, span time.Duration, f func(*FleetPoint) time.Duration) float64 {
	worst := 1.0
	// lo and hi hold indexes of pts within the span, their values rising (lo) or falling
	// (hi) from the first, which is the span's least (most).
	var lo, hi []int
	start := 0
	for j := range pts {
		v := f(&pts[j])
		for len(lo) > 0 && f(&pts[lo[len(lo)-1]]) >= v {
			lo = lo[:len(lo)-1]
		}
		for len(hi) > 0 && f(&pts[hi[len(hi)-1]]) <= v {
			hi = hi[:len(hi)-1]
		}
		lo, hi = append(lo, j), append(hi, j)
		for pts[j].At-pts[start].At > span {
			start++
		}
		for lo[0] < start {
			lo = lo[1:]
		}
		for hi[0] < start {
			hi = hi[1:]
		}
		if least := f(&pts[lo[0]]); least > 0 {
			worst = max(worst, float64(f(&pts[hi[0]]))/float64(least))
		}
	}
	return worst
}

// settleBand is how close to its final value a member's share must be for the fleet to
// have settled after a change.
const settleBand = 0.10

// ChurnEvent is one change of the churn run's membership, as measured over the span up to
// the next change (or the end). A member's final share is its mean over the span's last
// quarter; counts of intervals run from the change, -1 where it did not happen.
type ChurnEvent struct {
	Name string
	At   time.Duration
	// Seen is the intervals until the change showed in the shares: the one that joined held a
	// share, or the members in the fleet held 99% of it between them, once the record of the
	// one that left ran out.
	Seen int
	// Settled is the intervals until every member's share was first within settleBand of its
	// final one, Stayed until it stayed there to the end of the span, and Joiner until the
	// share of the member that joined (of every member, after a leave) was first within it.
	Settled, Stayed int
	// Steady is the share of the span's last quarter's intervals with every member within
	// settleBand of its final share: how often a fleet that had long settled reads settled.
	Steady float64
	// Wander is the most, over the span's last quarter and the members, of a share's distance
	// from its final one, as a ratio.
	Wander float64
	// SumOverFleet and LoadOverFleet are the span's most of the capacities added up, and of
	// the estimated cost running at once, over the fleet capacity.
	SumOverFleet, LoadOverFleet float64
	// Fleet is the fleet capacity at the change, Least and Most its range over the span.
	Fleet, Least, Most time.Duration
	// Joiner is the intervals until the member that joined first held a share within
	// settleBand of its final one (-1 for a leave).
	Joiner int
}

// ChurnEvents measures the changes of the churn run in Coordinations()[t].
func (r *FleetResults) ChurnEvents(t int) []ChurnEvent {
	s := r.Setup
	if len(r.Churn) <= t {
		return nil
	}
	pts := r.Churn[t].Fleet
	joiner, follower := s.ChurnSize, s.ChurnSize/2
	spans := []struct {
		name     string
		from, to time.Duration
	}{
		{fmt.Sprintf("member %d joins", joiner), s.JoinAt, s.LeaveAt},
		{fmt.Sprintf("member %d (a follower) leaves", follower), s.LeaveAt, s.AdjusterLeaveAt},
		{"member 0 (the adjuster) leaves", s.AdjusterLeaveAt, s.ChurnEnd},
	}
	var out []ChurnEvent
	for k, sp := range spans {
		lo, _ := slices.BinarySearchFunc(pts, sp.from, func(p FleetPoint, at time.Duration) int { return int(p.At - at) })
		hi, _ := slices.BinarySearchFunc(pts, sp.to, func(p FleetPoint, at time.Duration) int { return int(p.At - at) })
		// The change's own interval, at its time, is the first to see it.
		span := pts[lo:hi]
		e := ChurnEvent{Name: sp.name, At: sp.from, Seen: -1, Settled: -1, Stayed: -1, Joiner: -1, Least: math.MaxInt64}
		if lo > 0 {
			e.Fleet = pts[lo-1].Fleet
		}
		if len(span) < 4 {
			out = append(out, e)
			continue
		}
		final := make([]float64, len(span[0].Share))
		tail := span[len(span)*3/4:]
		for i := range tail {
			for m, v := range tail[i].Share {
				final[m] += v / float64(len(tail))
			}
		}
		off := func(p *FleetPoint, m int) float64 {
			if final[m] == 0 {
				return 0
			}
			return math.Abs(p.Share[m]/final[m] - 1)
		}
		worst := func(p *FleetPoint) float64 {
			w := 0.0
			for m := range final {
				w = max(w, off(p, m))
			}
			return w
		}
		for i := range span {
			p := &span[i]
			var held float64
			for m, v := range p.Share {
				if p.Capacity[m] > 0 {
					held += v
				}
			}
			if e.Seen < 0 && (k == 0 && p.Share[joiner] > 0 || k > 0 && held >= 0.99) {
				e.Seen = i
			}
			w := worst(p)
			switch {
			case w > settleBand:
				e.Stayed = -1
			case e.Stayed < 0:
				e.Stayed = i
			}
			if e.Settled < 0 && w <= settleBand {
				e.Settled = i
			}
			if k == 0 && e.Joiner < 0 && off(p, joiner) <= settleBand {
				e.Joiner = i
			}
			if p.Fleet > 0 {
				e.SumOverFleet = max(e.SumOverFleet, float64(p.SumCapacity())/float64(p.Fleet))
				e.Least, e.Most = min(e.Least, p.Fleet), max(e.Most, p.Fleet)
			}
			if i > 0 && span[i-1].Fleet > 0 {
				e.LoadOverFleet = max(e.LoadOverFleet, float64(p.MaxLoad)/float64(span[i-1].Fleet))
			}
		}
		steady := 0
		for i := range tail {
			w := worst(&tail[i])
			e.Wander = max(e.Wander, w)
			if w <= settleBand {
				steady++
			}
		}
		e.Steady = float64(steady) / float64(len(tail))
		out = append(out, e)
	}
	return out
}
