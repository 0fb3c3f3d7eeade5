package fleet

import "time"

// IdleShare is the part of a backend's capacity split evenly among the members whatever
// their demand: a member that asked for nothing in the last interval can still start a
// burst at once, before the next interval gives it a share by its demand.
const IdleShare = 0.2

// Record is what a member publishes about one backend every interval.
type Record struct {
	// Demand is the mean, over the last interval, of the expected cost of the units the
	// member ran and queued for the backend.
	Demand time.Duration `json:"demand_ns"`
	// Capacity is the member's capacity in force.
	Capacity time.Duration `json:"capacity_ns"`
	// Fleet is the fleet's capacity for the backend as the member holds it: the adjuster's
	// is the one the others follow.
	Fleet time.Duration `json:"fleet_ns"`
}

// Shares returns each member's part of a backend's capacity from their demands: IdleShare
// of it evenly, the rest in proportion to demand (evenly when none asked for any). The
// parts add up to 1, so that the members together admit no more than the capacity.
func Shares(demands []time.Duration) []float64 {
	out := make([]float64, len(demands))
	if len(demands) == 0 {
		return out
	}
	var total float64
	for _, d := range demands {
		total += float64(max(d, 0))
	}
	n := float64(len(demands))
	for i, d := range demands {
		if total == 0 {
			out[i] = 1 / n
			continue
		}
		out[i] = IdleShare/n + (1-IdleShare)*float64(max(d, 0))/total
	}
	return out
}

// Step is one member's decision for one backend in an interval.
type Step struct {
	// Capacity is what the member's controller admits until the next interval.
	Capacity time.Duration
	// Fleet is the fleet's capacity the member publishes.
	Fleet time.Duration
	// Share is the member's part of Fleet.
	Share float64
	// Adapt: the member's adaptive capacity goes on from Capacity (it is the adjuster);
	// otherwise it holds Capacity.
	Adapt bool
}

// Next decides member self's step for one backend from every member's records (self's
// among them; demands as published, self's as measured now). adjuster is the index of the
// member elected to find the fleet's capacity (-1: none known). prev is self's last step
// (a zero Step before the first). capacity is self's controller's capacity now, and fixed
// the configured capacity when it does not adapt (0: it adapts).
//
// The adjuster's controller adapts its own share, on the database's stretch, which every
// member's units make: the fleet's capacity is its capacity over its share, and moves as it
// moves. The others take their share of the adjuster's fleet capacity. A fixed capacity is
// the fleet's, and split alike.
func Next(recs []Record, self, adjuster int, prev Step, capacity, fixed time.Duration) Step {
	demands := make([]time.Duration, len(recs))
	for i, r := range recs {
		demands[i] = r.Demand
	}
	share := Shares(demands)[self]
	var fleet time.Duration
	switch {
	case fixed > 0:
		fleet = fixed
	case self == adjuster:
		fleet = capacity // alone until now: its capacity was the fleet's
		if prev.Share > 0 && prev.Adapt {
			fleet = time.Duration(float64(capacity) / prev.Share)
		} else if prev.Fleet > 0 {
			fleet = prev.Fleet // it followed: the capacity it held was a share of this
		}
	case adjuster >= 0 && recs[adjuster].Fleet > 0:
		fleet = recs[adjuster].Fleet
	default:
		// No adjuster yet (an election under way): hold what is in force.
		return Step{Capacity: capacity, Fleet: prev.Fleet, Share: prev.Share}
	}
	return Step{Capacity: max(time.Duration(float64(fleet)*share), 1), Fleet: fleet, Share: share,
		Adapt: self == adjuster || fixed > 0}
}
