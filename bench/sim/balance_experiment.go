package sim

import (
	"fmt"
	"slices"
	"time"
)

// TPCWWrites are the interactions of the shopping mix that write: the cart's lines, the
// customer at Buy Request, the order at Buy Confirm, the item at Admin Response. In the
// model a writing interaction runs whole on the primary, its reads included, and each
// replica applies ApplyShare of all of it.
var TPCWWrites = []string{"Shopping Cart", "Buy Request", "Buy Confirm", "Admin Response"}

// BalanceSetup is the load-balancing experiment: closed-loop clients in front of a primary
// and each number of Replicas, under each balance policy, with no admission controller;
// runs without a per-backend limit, and with Limit unless it is zero.
type BalanceSetup struct {
	// Database is every backend, the primary and each replica.
	Database DatabaseConfig
	// Sigma is the spread of the demand within a class (see NewMix).
	Sigma float64
	// Think is the clients' mean think time, ThinkMax its cap.
	Think, ThinkMax time.Duration
	// Replicas are the cluster sizes, Policies the balance policies compared at each.
	Replicas []int
	Policies []Balance
	// ClientsPerBackend are the load levels: closed-loop clients per database, so that a
	// larger cluster gets as much more load as it has databases. Detail is the one whose
	// response times the report shows in full; it must be one of them.
	ClientsPerBackend []int
	Detail            int
	// Seeds is the number of runs of each point, each with its own seed; the report pools
	// them. Zero means 1.
	Seeds int
	// Writes, ApplyShare, PrimaryReads, LARDLow and LARDHigh are the ClusterConfig's.
	Writes            []string
	ApplyShare        float64
	PrimaryReads      bool
	LARDLow, LARDHigh time.Duration
	// Limit is the per-backend limit of the second set of runs; zero: no second set.
	Limit time.Duration
	// Warmup and Duration of each run.
	Warmup, Duration time.Duration
}

// DefaultBalanceSetup is the setup of the sim balance command; quick is a shorter one for
// a smoke run and tests. The database, workload and think times are make sim's.
func DefaultBalanceSetup(quick bool) BalanceSetup {
	base := DefaultSetup(quick)
	s := BalanceSetup{
		Database:          base.Database,
		Sigma:             base.Sigma,
		Think:             base.Think,
		ThinkMax:          base.ThinkMax,
		Replicas:          []int{0, 1, 2, 4},
		Policies:          Balances,
		ClientsPerBackend: []int{100, 150, 175, 200, 250},
		Detail:            175,
		Seeds:             3,
		Writes:            TPCWWrites,
		ApplyShare:        0.3,
		PrimaryReads:      true,
		LARDLow:           500 * time.Millisecond,
		LARDHigh:          2 * time.Second,
		Limit:             base.Capacity,
		Warmup:            base.Warmup,
		Duration:          base.Duration,
	}
	if quick {
		s.ClientsPerBackend = []int{150, 175, 200}
		s.Seeds = 1
	}
	return s
}

// seeds returns Seeds, 1 when zero.
func (s BalanceSetup) seeds() int { return max(s.Seeds, 1) }

// detail returns the index of Detail in ClientsPerBackend, or -1.
func (s BalanceSetup) detail() int { return slices.Index(s.ClientsPerBackend, s.Detail) }

// Mix returns the setup's workload: the shopping mix around Table 1's No Load times.
func (s BalanceSetup) Mix() (*Mix, error) { return NewMix(TPCW, false, s.Sigma) }

// Limits are the per-backend limits of the runs: none, and Limit if set.
func (s BalanceSetup) Limits() []time.Duration {
	if s.Limit > 0 {
		return []time.Duration{0, s.Limit}
	}
	return []time.Duration{0}
}

// cluster returns the cluster of replicas under policy b with limit.
func (s BalanceSetup) cluster(replicas int, b Balance, limit time.Duration) *ClusterConfig {
	return &ClusterConfig{
		Replicas: replicas, Writes: s.Writes, ApplyShare: s.ApplyShare, PrimaryReads: s.PrimaryReads,
		Balance: b, LARDLow: s.LARDLow, LARDHigh: s.LARDHigh, Limit: limit,
	}
}

// Validate reports the first setting that cannot work.
func (s BalanceSetup) Validate(mix *Mix) error {
	switch {
	case len(s.Replicas) == 0 || len(s.Policies) == 0 || len(s.ClientsPerBackend) == 0:
		return fmt.Errorf("balance: need replicas, policies and loads (got %v, %v, %v)", s.Replicas, s.Policies, s.ClientsPerBackend)
	case s.Duration <= 0:
		return fmt.Errorf("balance: duration must be positive")
	case s.Seeds < 0:
		return fmt.Errorf("balance: seeds must be 0 or more (got %d)", s.Seeds)
	case s.detail() < 0:
		return fmt.Errorf("balance: the detailed load %d is not one of the loads %v", s.Detail, s.ClientsPerBackend)
	}
	for _, n := range s.ClientsPerBackend {
		if n < 1 {
			return fmt.Errorf("balance: clients per backend must be positive (got %d)", n)
		}
	}
	for _, r := range s.Replicas {
		for _, b := range s.Policies {
			for _, l := range s.Limits() {
				if err := s.cluster(r, b, l).Validate(mix); err != nil {
					return fmt.Errorf("balance: %w", err)
				}
			}
		}
	}
	return nil
}

// BalanceResults holds every run of the load-balancing experiment.
type BalanceResults struct {
	Setup BalanceSetup
	Seed  uint64
	Mix   *Mix
	// Runs[l][c][r][p][k] is limit Setup.Limits()[l], load ClientsPerBackend[c],
	// Replicas[r], Policies[p] and the k-th seed.
	Runs [][][][][]Result
}

// RunBalance runs the load-balancing experiment on workers goroutines at once (0: one per
// CPU). Each run is seeded from seed, its load, its cluster size and its place among the
// Seeds, so the policies and limits compared at one point share their seeds, and the
// results depend on s and seed alone.
func RunBalance(s BalanceSetup, seed uint64, workers int) (*BalanceResults, error) {
	mix, err := s.Mix()
	if err != nil {
		return nil, err
	}
	if err := s.Validate(mix); err != nil {
		return nil, err
	}
	res := &BalanceResults{Setup: s, Seed: seed, Mix: mix}
	var jobs []job
	limits := s.Limits()
	n := s.seeds()
	res.Runs = make([][][][][]Result, len(limits))
	for l, limit := range limits {
		res.Runs[l] = make([][][][]Result, len(s.ClientsPerBackend))
		for c, perBackend := range s.ClientsPerBackend {
			res.Runs[l][c] = make([][][]Result, len(s.Replicas))
			for r, replicas := range s.Replicas {
				res.Runs[l][c][r] = make([][]Result, len(s.Policies))
				for p, b := range s.Policies {
					res.Runs[l][c][r][p] = make([]Result, n)
					for k := range n {
						cfg := Config{
							Seed:     seed + uint64((k*len(s.ClientsPerBackend)+c)*len(s.Replicas)+r),
							Database: s.Database, Mix: mix, Cluster: s.cluster(replicas, b, limit),
							Closed: &ClosedLoop{Clients: perBackend * (1 + replicas), Think: s.Think, ThinkMax: s.ThinkMax},
							Warmup: s.Warmup, Duration: s.Duration,
						}
						jobs = append(jobs, job{cfg, &res.Runs[l][c][r][p][k]})
					}
				}
			}
		}
	}
	if err := runJobs(jobs, workers); err != nil {
		return nil, err
	}
	return res, nil
}

// BalancePoint is one point of the experiment (a limit, a load, a cluster size and a
// policy) over its seeds.
type BalancePoint struct {
	// Throughput and WorkRate are the means over the seeds of the completed interactions
	// and of their estimated work (seconds of work a second); MinThroughput and
	// MaxThroughput their range.
	Throughput, WorkRate         float64
	MinThroughput, MaxThroughput float64
	// All and Classes pool the seeds' response times.
	All     Latency
	Classes []Latency
	// Backends adds up the seeds' counts per database (MaxRunning and MaxHeld: the most of
	// any seed).
	Backends []BackendCounts
}

// Point returns limit l, load c, replicas r and policy p over their seeds.
func (b *BalanceResults) Point(l, c, r, p int) BalancePoint {
	runs := b.Runs[l][c][r][p]
	pt := BalancePoint{Classes: make([]Latency, len(b.Mix.Classes())), MinThroughput: runs[0].Throughput}
	for _, res := range runs {
		pt.Throughput += res.Throughput / float64(len(runs))
		pt.WorkRate += res.WorkRate / float64(len(runs))
		pt.MinThroughput = min(pt.MinThroughput, res.Throughput)
		pt.MaxThroughput = max(pt.MaxThroughput, res.Throughput)
		pt.All.merge(&res.All)
		for i := range res.Classes {
			pt.Classes[i].merge(&res.Classes[i])
		}
		if pt.Backends == nil {
			pt.Backends = make([]BackendCounts, len(res.Backends))
		}
		for i, bc := range res.Backends {
			sum := &pt.Backends[i]
			sum.Reads += bc.Reads
			sum.Writes += bc.Writes
			sum.Applied += bc.Applied
			sum.Work += bc.Work
			sum.ApplyWork += bc.ApplyWork
			sum.MaxRunning = max(sum.MaxRunning, bc.MaxRunning)
			sum.MaxHeld = max(sum.MaxHeld, bc.MaxHeld)
		}
	}
	return pt
}

// Peak returns the load index at which limit l, replicas r and policy p reach their
// highest mean throughput, and that point.
func (b *BalanceResults) Peak(l, r, p int) (int, BalancePoint) {
	best, at := BalancePoint{}, 0
	for c := range b.Setup.ClientsPerBackend {
		if pt := b.Point(l, c, r, p); pt.Throughput > best.Throughput {
			best, at = pt, c
		}
	}
	return at, best
}
