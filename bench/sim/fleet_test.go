package sim

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
)

// fleetConfig is a closed loop of clients in front of twoCores through the fleet f, with the
// adaptive capacity on a short window so that it settles within the run.
func fleetConfig(t *testing.T, clients int, length time.Duration, f *FleetConfig) Config {
	t.Helper()
	return Config{Seed: 3, Database: twoCores, Mix: tpcw(t), Fleet: f,
		Admission: &admission.Config{Capacity: 100 * time.Millisecond, Discipline: admission.SJF, QueueTimeout: time.Hour,
			MaxQueue: 1 << 20, Auto: admission.AutoConfig{Enabled: true, Min: 100 * time.Millisecond, Max: 100 * time.Second, Interval: 20 * time.Second}},
		Closed: &ClosedLoop{Clients: clients, Think: 7 * time.Second, ThinkMax: 70 * time.Second},
		Warmup: length / 2, Duration: length / 2}
}

// pointAt returns the point of the interval that ended at at.
func pointAt(t *testing.T, pts []FleetPoint, at time.Duration) FleetPoint {
	t.Helper()
	for _, p := range pts {
		if p.At == at {
			return p
		}
	}
	t.Fatalf("no point at %s", at)
	return FleetPoint{}
}

func shares(p FleetPoint) float64 {
	sum := 0.0
	for m, s := range p.Share {
		if p.Capacity[m] > 0 {
			sum += s
		}
	}
	return sum
}

// TestFleetOfOneIsTheController: a fleet of one member alone runs the controller as a run
// without a fleet does; only the fleet's bookkeeping is added.
func TestFleetOfOneIsTheController(t *testing.T) {
	one := fleetConfig(t, 150, 400*time.Second, nil)
	fleet := fleetConfig(t, 150, 400*time.Second, &FleetConfig{Members: make([]Membership, 1)})
	a, err := Run(one)
	require.NoError(t, err)
	b, err := Run(fleet)
	require.NoError(t, err)
	require.Equal(t, a.All, b.All)
	require.Equal(t, a.Classes, b.Classes)
	require.Equal(t, a.Admission.Counters, b.Admission.Counters)
	require.Len(t, b.Fleet, 799, "a point every 500ms, up to the end")
}

// TestFleetSharesAddUp: coordinated by the interval rule, once past the cold start, the
// members' shares add up to the whole, and their capacities to the fleet capacity, within
// what one interval's delay leaves.
func TestFleetSharesAddUp(t *testing.T) {
	const length = 600 * time.Second
	res, err := Run(fleetConfig(t, 300, length, &FleetConfig{Members: make([]Membership, 3), Coordinated: true, Rule: RuleInterval}))
	require.NoError(t, err)
	steady := 0
	for i, p := range res.Fleet {
		require.Zero(t, p.Adjuster, "the lowest index adjusts")
		if p.At < length/2 {
			// While the queues fill, each member's demand is fresher than the others' and
			// larger: their shares add up to more than the whole.
			continue
		}
		require.InDelta(t, 1, shares(p), 0.05, "at %s", p.At)
		prev := res.Fleet[i-1]
		if math.Abs(float64(p.Fleet)/float64(prev.Fleet)-1) < 1e-6 { // the adjuster did not move
			steady++
			require.InDelta(t, 1, float64(p.SumCapacity())/float64(p.Fleet), 0.05, "at %s", p.At)
		}
		for m, c := range p.Capacity {
			if m > 0 {
				require.InDelta(t, p.Share[m]*float64(prev.Fleet), float64(c), float64(time.Millisecond),
					"a follower takes its share of the fleet capacity the adjuster published the interval before, at %s", p.At)
			}
		}
	}
	require.Greater(t, steady, len(res.Fleet)/4)
	last := res.Fleet[len(res.Fleet)-1]
	require.Greater(t, last.Fleet, 5*res.Fleet[0].Fleet, "the fleet capacity grew from the cold start")
}

// TestFleetReactFollowsAtOnce: under the react rule (and the drain rule, which tells the
// moves alike) a follower's capacity is its share of the fleet capacity the adjuster holds
// now, within the move it does not tell (toldMove), not of the one it published an interval
// before.
func TestFleetReactFollowsAtOnce(t *testing.T) {
	const length = 600 * time.Second
	res, err := Run(fleetConfig(t, 300, length, &FleetConfig{Members: make([]Membership, 3), Coordinated: true, Rule: RuleReact,
		MaxHold: 10 * time.Second}))
	require.NoError(t, err)
	moved := 0
	for i, p := range res.Fleet {
		if p.At < length/2 {
			continue
		}
		require.InDelta(t, 1, shares(p), 0.05, "at %s", p.At)
		if math.Abs(float64(p.Fleet)/float64(res.Fleet[i-1].Fleet)-1) > 2*toldMove {
			moved++
		}
		for m, c := range p.Capacity {
			if m > 0 {
				require.InEpsilon(t, p.Share[m]*float64(p.Fleet), float64(c), 1.5*toldMove, "at %s", p.At)
			}
		}
	}
	require.Positive(t, moved, "the fleet capacity moved")
}

// TestFleetReactHoldsFollowers: under the react rule the followers start nothing new while
// the adjuster's controller runs a solo check, from Latency or two after it began until it
// ended; under the interval rule they go on starting units through it.
func TestFleetReactHoldsFollowers(t *testing.T) {
	const length = 400 * time.Second
	run := func(rule FleetRule) (held, probing time.Duration, starts, checks int) {
		// The window of 20s makes a check of 2.5s: a hold bound of 10s is the proxy's 1s over
		// its 250ms.
		f := &FleetConfig{Members: make([]Membership, 3), Coordinated: true, Rule: rule, MaxHold: 10 * time.Second}
		res, err := Run(fleetConfig(t, 300, length, f))
		require.NoError(t, err)
		// Up to the end of the last check that ended (Probing counts a check when it ends).
		var sum time.Duration
		for _, p := range res.Fleet {
			require.Zero(t, p.Adjuster)
			sum += p.Held
			starts += p.CheckStarts
			if p.Auto.Probing != probing {
				held, probing, checks = sum, p.Auto.Probing, int(p.Auto.Solo)
			}
		}
		return held, probing, starts, checks
	}
	held, probing, starts, checks := run(RuleInterval)
	require.Zero(t, held)
	require.Positive(t, checks)
	require.Greater(t, starts, 10*checks, "the followers start units during the adjuster's checks")

	held, probing, starts, checks = run(RuleReact)
	require.Greater(t, checks, 2)
	require.Zero(t, starts, "the followers start nothing during the adjuster's checks")
	require.InDelta(t, float64(probing), float64(held), float64(2*checks)*float64(defaultLatency),
		"held through every check, from a latency after it began to one or two after it ended")
}

// TestFleetDrainTimesAloneInTheDatabase: under the drain rule every unit the adjuster's
// controller counts as run alone ran with no other unit in the database, the followers'
// included; under the react rule many of them ran beside the followers' units.
func TestFleetDrainTimesAloneInTheDatabase(t *testing.T) {
	const length = 400 * time.Second
	run := func(rule FleetRule) (timed, beside, drained int) {
		// The window of 20s makes a check of 2.5s: a hold bound of 20s is the proxy's 2s on
		// the model's time scale.
		f := &FleetConfig{Members: make([]Membership, 3), Coordinated: true, Rule: rule, MaxHold: 20 * time.Second}
		res, err := Run(fleetConfig(t, 300, length, f))
		require.NoError(t, err)
		for _, p := range res.Fleet {
			if p.At <= 20*f.interval() {
				// Until its first interval a member has no share and takes itself for alone,
				// as the proxy's first sync, which finds no other record, does; the units
				// it started then end within the first seconds.
				continue
			}
			timed, beside, drained = timed+p.TimedAlone, beside+p.TimedBeside, drained+p.Drained
		}
		return timed, beside, drained
	}
	timed, beside, drained := run(RuleDrain)
	require.Positive(t, drained, "the followers drained for the adjuster's checks")
	require.Greater(t, timed, 8, "the adjuster timed units alone")
	require.Zero(t, beside, "a unit counted as alone ran beside another in the database")

	timed, beside, drained = run(RuleReact)
	require.Zero(t, drained)
	require.Positive(t, timed)
	require.Greater(t, 2*beside, timed, "under react most units counted as alone ran beside others")
}

// TestFleetLeaveReleasesShare: when a member leaves, its share stays held until its lease
// runs out, and then goes to the others; its clients and waiting requests move to them.
func TestFleetLeaveReleasesShare(t *testing.T) {
	const leave = 300 * time.Second
	f := &FleetConfig{Members: make([]Membership, 3), Coordinated: true}
	f.Members[2].Leave = leave
	res, err := Run(fleetConfig(t, 300, 400*time.Second, f))
	require.NoError(t, err)
	interval, ttl := f.interval(), f.ttl()

	before := pointAt(t, res.Fleet, leave-interval)
	require.InDelta(t, 1, shares(before), 0.05)
	require.Positive(t, before.Capacity[2])
	// The leaver's last record was published an interval before it left: it is held until ttl
	// after that.
	held := pointAt(t, res.Fleet, leave-interval+ttl-interval)
	require.Zero(t, held.Capacity[2])
	require.Less(t, shares(held), 0.85, "the leaver's record still holds its share")
	released := pointAt(t, res.Fleet, leave-interval+ttl)
	require.InDelta(t, 1, shares(released), 0.05, "the others took its share")
	require.Greater(t, released.Share[0]+released.Share[1], held.Share[0]+held.Share[1]+0.1)
	for _, p := range res.Fleet {
		if p.At > leave+time.Minute {
			require.Zero(t, p.Completed[2], "its clients moved at once, and what ran there finished")
		}
	}
}

// TestFleetAdjusterLeaves: when the adjuster leaves, the next member adjusts once its lease
// has run out, from the fleet capacity it followed.
func TestFleetAdjusterLeaves(t *testing.T) {
	const leave = 300 * time.Second
	f := &FleetConfig{Members: make([]Membership, 3), Coordinated: true}
	f.Members[0].Leave = leave
	res, err := Run(fleetConfig(t, 300, 400*time.Second, f))
	require.NoError(t, err)
	interval, ttl := f.interval(), f.ttl()
	held := pointAt(t, res.Fleet, leave-interval+ttl-interval)
	require.Zero(t, held.Adjuster, "followed while its record is held")
	took := pointAt(t, res.Fleet, leave-interval+ttl)
	require.Equal(t, 1, took.Adjuster)
	require.InEpsilon(t, float64(held.Fleet), float64(took.Fleet), 1e-6, "the new adjuster starts from the fleet capacity it followed")
}

// TestFleetJoin: a member that joins gets a fresh controller, a share at its first interval,
// and an equal part of the clients.
func TestFleetJoin(t *testing.T) {
	const join = 200 * time.Second
	// The react rule: under the drain rule the members' shares sit under the heavy units'
	// size, and the members serve their clients unevenly (see bench/results/sim-fleet).
	f := &FleetConfig{Members: make([]Membership, 3), Coordinated: true, Rule: RuleReact}
	f.Members[2].Join = join
	res, err := Run(fleetConfig(t, 301, 400*time.Second, f))
	require.NoError(t, err)
	require.Zero(t, pointAt(t, res.Fleet, join-f.interval()).Capacity[2])
	first := pointAt(t, res.Fleet, join)
	require.Positive(t, first.Share[2])
	require.Positive(t, first.Capacity[2])
	done := [3]int{}
	for _, p := range res.Fleet {
		if p.At > join+2*time.Minute {
			for m := range done {
				done[m] += p.Completed[m]
			}
		}
	}
	for m := range done {
		require.InDelta(t, float64(done[0]), float64(done[m]), 0.25*float64(done[0]), "member %d serves a third of the clients", m)
	}
}

func TestFleetDeal(t *testing.T) {
	tests := map[string]struct {
		in     []bool
		before []int // each client's member; -1: none yet
		want   []int
	}{
		"start":       {[]bool{true, true, true}, []int{-1, -1, -1, -1, -1, -1, -1}, []int{0, 0, 0, 1, 1, 2, 2}},
		"one joins":   {[]bool{true, true, true}, []int{0, 0, 0, 1, 1, 1}, []int{2, 0, 0, 2, 1, 1}},
		"one leaves":  {[]bool{true, false, true}, []int{0, 0, 1, 1, 2, 2}, []int{0, 0, 0, 2, 2, 2}},
		"lower first": {[]bool{true, true}, []int{1, 0, 1, 0, 1}, []int{0, 0, 1, 0, 1}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			fl := &fleetRun{members: make([]member, len(tt.in)), clients: make([]request, len(tt.before))}
			for i, in := range tt.in {
				fl.members[i].in = in
			}
			for i, m := range tt.before {
				fl.clients[i].member = m
			}
			fl.deal()
			got := make([]int, len(fl.clients))
			for i := range fl.clients {
				got[i] = fl.clients[i].member
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestFleetValidate(t *testing.T) {
	tests := map[string]FleetConfig{
		"no member":      {},
		"late first":     {Members: []Membership{{Join: time.Second}}},
		"leaves early":   {Members: []Membership{{}, {Join: 2 * time.Second, Leave: time.Second}}},
		"joins too late": {Members: []Membership{{}, {Join: time.Hour}}},
		"last leaves":    {Members: []Membership{{Leave: time.Second}, {Leave: 2 * time.Second}}},
		"bad interval":   {Members: []Membership{{}}, Interval: -time.Second},
	}
	for name, f := range tests {
		require.Error(t, f.Validate(time.Minute), name)
	}
	ok := FleetConfig{Members: []Membership{{Leave: 10 * time.Second}, {Join: 5 * time.Second}}}
	require.NoError(t, ok.Validate(time.Minute))
	open := fleetConfig(t, 10, time.Minute, &ok)
	open.Closed, open.Open = nil, &OpenLoop{Arrivals: Poisson(1)}
	_, err := Run(open)
	require.Error(t, err, "a fleet deals clients: it needs a closed loop")
}

// TestFleetReport runs the quick experiment on two sizes and writes its report and charts.
func TestFleetReport(t *testing.T) {
	s := DefaultFleetSetup(true)
	s.Sizes = []int{1, 3}
	s.Windows, s.Seeds = 10, 2
	s.ChurnSize, s.JoinAt, s.LeaveAt, s.AdjusterLeaveAt, s.ChurnEnd = 3, 400*time.Second, 500*time.Second, 600*time.Second, 700*time.Second
	r, err := RunFleet(s, 1, 2)
	require.NoError(t, err)
	require.Len(t, r.ChurnEvents(0), 3)
	c := r.Cell(r.Coordinated[0][1])
	require.False(t, math.IsNaN(c.SumRatio))
	require.Positive(t, c.Fleet)

	var md bytes.Buffer
	require.NoError(t, r.WriteMarkdown(&md, Meta{Command: "go run ./bench/cmd/sim fleet", Machine: "test", GoVersion: "go", Elapsed: time.Second}))
	for _, want := range []string{"## What it shows", "## Outcome", "## Dynamics", "## Join and leave", "(sum-0.png)", "member 3 joins",
		"## Solo checks", "drain, every", "react, every", "interval, every", "Under *drain*"} {
		require.Contains(t, md.String(), want)
	}
	dir := t.TempDir()
	require.NoError(t, r.WriteCharts(dir))
	for _, ch := range r.FleetCharts() {
		info, err := os.Stat(filepath.Join(dir, ch.File))
		require.NoError(t, err)
		require.Positive(t, info.Size())
		require.Contains(t, md.String(), "("+ch.File+")", "the report shows every chart")
	}
}
