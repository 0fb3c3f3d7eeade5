package bookstore

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Burst makes open-loop arrivals bursty: a two-state Markov-modulated Poisson process
// (MMPP-2), the simplest of the Markovian arrival processes the AWAIT paper (section
// 3.2) drives TPC-W with. Arrivals come at Rate*HighFactor while the process is in its
// high state and at a lower rate in its low state; it stays in each state for an
// exponentially distributed time with mean MeanHigh or MeanLow. The low rate is chosen
// so that the long-run mean rate is Config.Rate:
//
//	pHigh   = MeanHigh / (MeanHigh + MeanLow)       share of time in the high state
//	rateLow = Rate * (1 - pHigh*HighFactor) / (1 - pHigh)
//
// so that pHigh*rateHigh + (1-pHigh)*rateLow = Rate. This needs HighFactor*pHigh <= 1;
// at equality the low state is silent (an on-off process).
type Burst struct {
	// HighFactor is the rate in the high state as a multiple of Config.Rate; at least 1.
	HighFactor float64
	// MeanHigh and MeanLow are the mean times spent in each state; both above zero.
	MeanHigh, MeanLow time.Duration
}

// rates returns the arrival rates in the high and low states for a long-run mean rate.
func (b Burst) rates(rate float64) (high, low float64, err error) {
	if b.HighFactor < 1 {
		return 0, 0, fmt.Errorf("burst: high factor is %g; use 1 or more (the high state's rate as a multiple of the mean rate)", b.HighFactor)
	}
	if b.MeanHigh <= 0 || b.MeanLow <= 0 {
		return 0, 0, fmt.Errorf("burst: the mean times in the high (%v) and low (%v) states must be above zero", b.MeanHigh, b.MeanLow)
	}
	pHigh := float64(b.MeanHigh) / float64(b.MeanHigh+b.MeanLow)
	if b.HighFactor*pHigh > 1+1e-9 {
		return 0, 0, fmt.Errorf("burst: a high factor of %g for %v out of every %v would exceed the mean rate on its own; use a factor of at most %.3g or a shorter high state",
			b.HighFactor, b.MeanHigh, b.MeanHigh+b.MeanLow, 1/pHigh)
	}
	high = rate * b.HighFactor
	low = max(0, rate*(1-pHigh*b.HighFactor)/(1-pHigh))
	return high, low, nil
}

// arrivals draws the arrival times of an open loop: Poisson, or MMPP-2 with a Burst.
type arrivals struct {
	r *rand.Rand
	// now is the time of the last arrival, in seconds since the start.
	now float64
	// rate[1] is the rate in the high state, rate[0] in the low state (or the only rate).
	rate [2]float64
	// mean[s] is the mean time in state s, in seconds; zero for a plain Poisson process.
	mean [2]float64
	high bool
	// change is when the state changes next, in seconds since the start.
	change float64
}

func newArrivals(rate float64, burst *Burst, r *rand.Rand) (*arrivals, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("arrival rate is %g; use a rate above zero", rate)
	}
	a := &arrivals{r: r, rate: [2]float64{rate, rate}}
	if burst == nil {
		return a, nil
	}
	high, low, err := burst.rates(rate)
	if err != nil {
		return nil, err
	}
	a.rate = [2]float64{low, high}
	a.mean = [2]float64{burst.MeanLow.Seconds(), burst.MeanHigh.Seconds()}
	// Start in the stationary distribution, so that the rate is Rate from the start.
	a.high = r.Float64() < a.mean[1]/(a.mean[0]+a.mean[1])
	a.change = r.ExpFloat64() * a.mean[a.state()]
	return a, nil
}

func (a *arrivals) state() int {
	if a.high {
		return 1
	}
	return 0
}

// next returns the time of the next arrival since the start.
func (a *arrivals) next() time.Duration {
	for {
		s := a.state()
		if a.mean[s] == 0 { // Poisson
			a.now += a.r.ExpFloat64() / a.rate[s]
			break
		}
		// Exponential gaps are memoryless: a gap that runs past the change of state is
		// drawn again from the change, at the new state's rate.
		if a.rate[s] > 0 {
			if t := a.now + a.r.ExpFloat64()/a.rate[s]; t < a.change {
				a.now = t
				break
			}
		}
		a.now = a.change
		a.high = !a.high
		a.change = a.now + a.r.ExpFloat64()*a.mean[a.state()]
	}
	return time.Duration(a.now * float64(time.Second))
}
