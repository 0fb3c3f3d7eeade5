package sim

import (
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
)

// Setup is the model every experiment shares and the size of each sweep.
type Setup struct {
	Database DatabaseConfig
	// HighLoad draws demands around Table 1's High Load row instead of its No Load row.
	HighLoad bool
	// Sigma is the spread of the demand within a class (see NewMix).
	Sigma float64
	// Think is the clients' mean think time, ThinkMax its cap.
	Think, ThinkMax time.Duration

	// Capacity and MaxConcurrency are the controller's pool and its concurrency guard.
	Capacity       time.Duration
	MaxConcurrency int
	// ClosedTimeout is the queue timeout in the closed loop: long enough that nothing is
	// shed, as in the Gatekeeper paper. OpenTimeout is the one in the open loop, where past
	// saturation the queue grows without end unless units time out.
	ClosedTimeout, OpenTimeout time.Duration
	// Warmup and Duration of each closed- and open-loop run.
	Warmup, Duration time.Duration
	// Clients is the sweep of the closed loop; the open loop offers, for each N, the rate
	// N clients would offer if they never waited: N / (Think + mean demand).
	Clients []int
	// Capacities is the sweep of the capacity experiment, run at CapacityClients.
	Capacities      []time.Duration
	CapacityClients int
	// Agings are the aging factors X compared with plain FIFO and SJF.
	Agings []float64

	// Sessions is the number of sessions of each AWAIT run, arriving at SessionRate per
	// second on average, BurstShare of them in bursts BurstFactor times that rate; Bursts
	// are the mean burst lengths of the burstiness levels.
	Sessions                int
	SessionRate             float64
	BurstFactor, BurstShare float64
	Bursts                  []time.Duration
	// MinLength and MaxLength bound the number of requests of a session.
	MinLength, MaxLength int
	// ActiveLimit is AWAIT's A; BlockingQueues are the fixed B compared.
	ActiveLimit    int
	BlockingQueues []int
	// SessionTimeout is the queue timeout of the AWAIT runs.
	SessionTimeout time.Duration
	// SLO, AdaptEvery and MaxBlocking configure the adaptive B.
	SLO                     time.Duration
	AdaptEvery, MaxBlocking int

	// TrackClients closed-loop clients run the adaptive capacity's experiment: the
	// database's speed is TrackSpeeds[i] during phase i, each TrackPhase long. The adaptive
	// capacity starts at AutoMin, stays within AutoMax, and measures windows of
	// AutoInterval. No TrackSpeeds: no experiment.
	TrackClients     int
	TrackSpeeds      []float64
	TrackPhase       time.Duration
	AutoMin, AutoMax time.Duration
	AutoInterval     time.Duration
	// LawClients are the numbers of closed-loop clients the control laws are compared at,
	// each run LawIntervals windows long. No LawClients: no experiment.
	LawClients   []int
	LawIntervals int
}

// DefaultSetup is the setup of make sim; quick is a smaller one for a smoke run and tests.
func DefaultSetup(quick bool) Setup {
	s := Setup{
		Database:        DatabaseConfig{Cores: 2, Knee: 32, Penalty: 0.004},
		Sigma:           0.5,
		Think:           7 * time.Second,
		ThinkMax:        70 * time.Second,
		Capacity:        8 * time.Second,
		MaxConcurrency:  16,
		ClosedTimeout:   time.Hour,
		OpenTimeout:     5 * time.Second,
		Warmup:          300 * time.Second,
		Duration:        1200 * time.Second,
		Clients:         []int{25, 50, 75, 100, 125, 150, 175, 200, 225, 250, 275, 300, 350, 400},
		Capacities:      []time.Duration{1 * time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second, 6 * time.Second, 8 * time.Second, 12 * time.Second, 16 * time.Second, 32 * time.Second},
		CapacityClients: 300,
		Agings:          []float64{1, 5},
		Sessions:        20000,
		SessionRate:     0.9,
		BurstFactor:     5,
		BurstShare:      0.5,
		Bursts:          []time.Duration{5 * time.Second, 30 * time.Second, 120 * time.Second},
		MinLength:       5,
		MaxLength:       35,
		ActiveLimit:     32,
		BlockingQueues:  []int{0, 4, 8, 16, 24, 32, 48, 64, 96, 128},
		SessionTimeout:  60 * time.Second,
		SLO:             2 * time.Second,
		AdaptEvery:      10000,
		MaxBlocking:     120,
		TrackClients:    300,
		TrackSpeeds:     []float64{1, 0.5, 1},
		TrackPhase:      1800 * time.Second,
		AutoMin:         100 * time.Millisecond,
		AutoMax:         100 * time.Second,
		AutoInterval:    80 * time.Second,
		LawClients:      []int{50, 200, 800},
		LawIntervals:    150,
	}
	if quick {
		s.Warmup, s.Duration = 100*time.Second, 300*time.Second
		s.Clients = []int{50, 100, 150, 200, 300, 400}
		s.Capacities = []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}
		s.Sessions = 5000
		s.BlockingQueues = []int{0, 8, 32, 128}
		s.AdaptEvery = 5000
		s.TrackPhase = 1200 * time.Second
		s.LawIntervals = 60
	}
	return s
}

// Mix returns the setup's workload.
func (s Setup) Mix() (*Mix, error) { return NewMix(TPCW, s.HighLoad, s.Sigma) }

// Policy is one way to put the controller (or nothing) between clients and database.
type Policy struct {
	Name   string
	Direct bool
	// Discipline and Aging of the controller when not Direct.
	Discipline admission.Discipline
	Aging      float64
}

// Policies returns direct, fifo, sjf, and sjf with each aging factor.
func (s Setup) Policies() []Policy {
	ps := []Policy{{Name: "direct", Direct: true}, {Name: "fifo"}, {Name: "sjf", Discipline: admission.SJF}}
	for _, x := range s.Agings {
		ps = append(ps, Policy{Name: fmt.Sprintf("sjf aging %g", x), Discipline: admission.SJF, Aging: x})
	}
	return ps
}

// admission returns the controller's policy for p, nil when direct.
func (s Setup) admission(p Policy, timeout time.Duration) *admission.Config {
	if p.Direct {
		return nil
	}
	return &admission.Config{
		Capacity: s.Capacity, MaxConcurrency: s.MaxConcurrency,
		Discipline: p.Discipline, Aging: p.Aging,
		QueueTimeout: timeout, MaxQueue: 1 << 20,
	}
}

// closed returns the closed-loop run of p with n clients.
func (s Setup) closed(mix *Mix, p Policy, n int, seed uint64) Config {
	return Config{
		Seed: seed, Database: s.Database, Mix: mix, Admission: s.admission(p, s.ClosedTimeout),
		Closed: &ClosedLoop{Clients: n, Think: s.Think, ThinkMax: s.ThinkMax},
		Warmup: s.Warmup, Duration: s.Duration,
	}
}

// OpenRate is the request rate the open loop offers for n clients.
func (s Setup) OpenRate(mix *Mix, n int) float64 {
	return float64(n) / (s.Think + mix.MeanDemand()).Seconds()
}

// open returns the open-loop run of p at the rate of n clients.
func (s Setup) open(mix *Mix, p Policy, n int, seed uint64) Config {
	return Config{
		Seed: seed, Database: s.Database, Mix: mix, Admission: s.admission(p, s.OpenTimeout),
		Open:   &OpenLoop{Arrivals: Poisson(s.OpenRate(mix, n))},
		Warmup: s.Warmup, Duration: s.Duration,
	}
}

// Level is a burstiness level of the AWAIT experiment.
type Level struct {
	Name     string
	Arrivals Arrivals
}

// Levels returns the burstiness levels, least bursty first.
func (s Setup) Levels() []Level {
	names := []string{"low", "medium", "high"}
	var ls []Level
	for i, b := range s.Bursts {
		name := fmt.Sprintf("level %d", i+1)
		if i < len(names) && len(s.Bursts) == len(names) {
			name = names[i]
		}
		ls = append(ls, Level{Name: name, Arrivals: Bursty(s.SessionRate, s.BurstFactor, s.BurstShare, b)})
	}
	return ls
}

// sessions returns the AWAIT run at level l with blocking queue b (b < 0: adaptive B from
// 1, against the SLO).
func (s Setup) sessions(mix *Mix, l Level, b int, aggressive bool, seed uint64) Config {
	gate := admission.SessionConfig{ActiveLimit: s.ActiveLimit, BlockingQueue: b, Aggressive: aggressive}
	if b < 0 {
		gate.BlockingQueue, gate.SLO, gate.AdaptEvery, gate.MaxBlockingQueue = 1, s.SLO, s.AdaptEvery, s.MaxBlocking
	}
	return Config{
		Seed: seed, Database: s.Database, Mix: mix,
		Admission: &admission.Config{
			Capacity: s.Capacity, MaxConcurrency: s.MaxConcurrency,
			QueueTimeout: s.SessionTimeout, MaxQueue: 1 << 20, Sessions: gate,
		},
		Sessions: &SessionLoad{
			Arrivals: l.Arrivals, Count: s.Sessions, MinLength: s.MinLength, MaxLength: s.MaxLength,
			Think: s.Think, ThinkMax: s.ThinkMax,
		},
	}
}

// Results holds every run of the experiments.
type Results struct {
	Setup    Setup
	Seed     uint64
	Mix      *Mix
	Policies []Policy

	// Capacity[i] is FIFO in the closed loop at Setup.CapacityClients with Capacities[i].
	Capacity []Result
	// Closed[p][i] and Open[p][i] are policy p at Clients[i].
	Closed, Open [][]Result
	Levels       []Level
	// Await[l][v][i] is level l, variant v (0 conservative, 1 aggressive), BlockingQueues[i];
	// Adaptive[l][v] is the same with the adaptive B.
	Await    [][2][]Result
	Adaptive [][2]Result
	// Tracking is the adaptive capacity's experiment, Laws the comparison of its control
	// laws.
	Tracking Tracking
	Laws     Laws
	// Runs counts the simulations, Sessions the sessions simulated.
	Runs, SessionsRun int
}

// RunAll runs every experiment of s, on workers goroutines at once (0: one per CPU). Each
// run is single-threaded and seeded from seed and its place in the sweep, so the results
// depend on s and seed alone. Runs compared at one point share a seed, so that in the open
// loop and the AWAIT runs they see the same arrivals.
func RunAll(s Setup, seed uint64, workers int) (*Results, error) {
	mix, err := s.Mix()
	if err != nil {
		return nil, err
	}
	r := &Results{Setup: s, Seed: seed, Mix: mix, Policies: s.Policies(), Levels: s.Levels()}
	var jobs []job
	add := func(cfg Config, out *Result) { jobs = append(jobs, job{cfg, out}) }

	fifo := Policy{Name: "fifo"}
	r.Capacity = make([]Result, len(s.Capacities))
	for i, c := range s.Capacities {
		cs := s
		cs.Capacity = c
		add(cs.closed(mix, fifo, s.CapacityClients, seed), &r.Capacity[i])
	}
	r.Closed = make([][]Result, len(r.Policies))
	r.Open = make([][]Result, len(r.Policies))
	for p, pol := range r.Policies {
		r.Closed[p] = make([]Result, len(s.Clients))
		r.Open[p] = make([]Result, len(s.Clients))
		for i, n := range s.Clients {
			add(s.closed(mix, pol, n, seed+uint64(i)), &r.Closed[p][i])
			add(s.open(mix, pol, n, seed+uint64(i)), &r.Open[p][i])
		}
	}
	r.Await = make([][2][]Result, len(r.Levels))
	r.Adaptive = make([][2]Result, len(r.Levels))
	for l, lv := range r.Levels {
		for v, aggressive := range []bool{false, true} {
			r.Await[l][v] = make([]Result, len(s.BlockingQueues))
			for i, b := range s.BlockingQueues {
				add(s.sessions(mix, lv, b, aggressive, seed+uint64(l)), &r.Await[l][v][i])
			}
			add(s.sessions(mix, lv, -1, aggressive, seed+uint64(l)), &r.Adaptive[l][v])
		}
	}
	s.trackingRuns(mix, seed, &r.Tracking, add)
	s.lawRuns(mix, seed, &r.Laws, add)
	if err := runJobs(jobs, workers); err != nil {
		return nil, err
	}
	r.Runs = len(jobs)
	for _, j := range jobs {
		r.SessionsRun += j.out.Sessions.Arrived
	}
	return r, nil
}

type job struct {
	cfg Config
	out *Result
}

// runJobs runs jobs on workers goroutines, which end when the jobs are done.
func runJobs(jobs []job, workers int) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	next := make(chan job)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for j := range next {
				res, err := Run(j.cfg)
				if err != nil && errs[w] == nil {
					errs[w] = err
				}
				*j.out = res
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
