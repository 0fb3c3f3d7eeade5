package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Arrivals is a two-state Markov-modulated Poisson process (MMPP): arrivals come at
// Rate[0] per second in the normal state and Rate[1] in the burst state, and the process
// stays in state s for an exponential time of mean Stay[s]. With a zero Stay[0] it never
// leaves the normal state: a Poisson process of Rate[0].
type Arrivals struct {
	Rate [2]float64
	Stay [2]time.Duration
}

// Poisson returns arrivals at rate per second, without bursts.
func Poisson(rate float64) Arrivals { return Arrivals{Rate: [2]float64{rate, rate}} }

// Bursty returns arrivals at mean rate per second of which share (0 < share < 1) come in
// bursts factor times the mean rate, each burst lasting burst on average; share/factor of
// the time is spent in bursts. With the same mean, share and factor, longer bursts make
// the process burstier (a larger index of dispersion) while its mean and the spread of its
// rate stay put.
func Bursty(rate, factor, share float64, burst time.Duration) Arrivals {
	inBurst := share / factor // fraction of time in the burst state
	normal := rate * (1 - share) / (1 - inBurst)
	return Arrivals{
		Rate: [2]float64{normal, rate * factor},
		Stay: [2]time.Duration{time.Duration(float64(burst) * (1 - inBurst) / inBurst), burst},
	}
}

// Validate reports settings that cannot make arrivals.
func (a Arrivals) Validate() error {
	switch {
	case a.Rate[0] < 0 || a.Rate[1] < 0:
		return fmt.Errorf("arrivals: rates must be 0 or positive (got %g, %g)", a.Rate[0], a.Rate[1])
	case a.Stay[0] < 0 || a.Stay[1] < 0:
		return fmt.Errorf("arrivals: mean stays must be 0 or positive")
	case a.Stay[0] > 0 && a.Stay[1] == 0:
		return fmt.Errorf("arrivals: a burst state entered must have a mean stay")
	case a.Mean() <= 0:
		return fmt.Errorf("arrivals: the mean rate must be positive")
	}
	return nil
}

func (a Arrivals) modulated() bool { return a.Stay[0] > 0 }

// share returns the long-run fraction of time in each state.
func (a Arrivals) share() [2]float64 {
	if !a.modulated() {
		return [2]float64{1, 0}
	}
	s0, s1 := a.Stay[0].Seconds(), a.Stay[1].Seconds()
	return [2]float64{s0 / (s0 + s1), s1 / (s0 + s1)}
}

// Mean returns the mean arrival rate per second.
func (a Arrivals) Mean() float64 {
	p := a.share()
	return p[0]*a.Rate[0] + p[1]*a.Rate[1]
}

// Dispersion returns the index of dispersion of counts over long intervals, Var(N(t))/E(N(t))
// as t grows: 1 for Poisson, larger the burstier:
//
//	I = 1 + 2 p0 p1 (Rate[1]-Rate[0])^2 / (mean * (1/Stay[0] + 1/Stay[1]))
func (a Arrivals) Dispersion() float64 {
	if !a.modulated() {
		return 1
	}
	p := a.share()
	d := a.Rate[1] - a.Rate[0]
	rates := 1/a.Stay[0].Seconds() + 1/a.Stay[1].Seconds()
	return 1 + 2*p[0]*p[1]*d*d/(a.Mean()*rates)
}

// arrivalGen draws the gaps between arrivals.
type arrivalGen struct {
	a     Arrivals
	state int
	left  float64 // seconds left in the current state
}

func newArrivalGen(a Arrivals, r *rand.Rand) *arrivalGen {
	g := &arrivalGen{a: a, left: math.Inf(1)}
	if a.modulated() {
		if r.Float64() < a.share()[1] {
			g.state = 1
		}
		g.left = r.ExpFloat64() * a.Stay[g.state].Seconds()
	}
	return g
}

// next returns the time to the next arrival, in seconds.
func (g *arrivalGen) next(r *rand.Rand) float64 {
	total := 0.0
	for {
		gap := math.Inf(1)
		if rate := g.a.Rate[g.state]; rate > 0 {
			gap = r.ExpFloat64() / rate
		}
		if gap < g.left {
			g.left -= gap
			return total + gap
		}
		total += g.left
		g.state ^= 1
		g.left = r.ExpFloat64() * g.a.Stay[g.state].Seconds()
	}
}
