package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Class is one interaction of the bookstore workload.
type Class struct {
	Name string
	// NoLoad and HighLoad are the mean database times measured alone and at peak load
	// (Table 1 of the Gatekeeper paper); zero for the interaction that does not reach the
	// database.
	NoLoad, HighLoad time.Duration
	// Frequency is the share of interactions of this class in the shopping mix, in percent.
	Frequency float64
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// TPCW is the shopping mix of the Gatekeeper paper's Table 1: the thirteen interactions
// that query the database, with their mean costs and frequencies, and the fourteenth,
// Customer Registration, that does not (3% of interactions).
var TPCW = []Class{
	{"Admin Request", ms(2.84), ms(3.19), 0.1},
	{"Admin Response", ms(2476.75), ms(5072.42), 0.09},
	{"Best Seller", ms(1205.01), ms(2441.86), 5},
	{"Buy Confirm", ms(15.71), ms(92.80), 1.2},
	{"Buy Request", ms(5.26), ms(6.66), 2.6},
	{"Execute Search", ms(73.27), ms(108.73), 17},
	{"Home", ms(1.83), ms(3.22), 16},
	{"New Products", ms(13.82), ms(15.66), 5},
	{"Order Display", ms(7.43), ms(10.48), 0.66},
	{"Order Inquiry", ms(0.75), ms(0.05), 0.75},
	{"Product Detail", ms(0.91), ms(0.30), 17},
	{"Search Request", ms(0.22), ms(0.65), 20},
	{"Shopping Cart", ms(0.34), ms(0.92), 11.6},
	{"Customer Registration", 0, 0, 3},
}

// Mix draws interactions: a class by frequency, then its database demand, lognormal around
// the class mean.
type Mix struct {
	classes []Class
	means   []float64 // seconds
	cum     []float64 // cumulative frequencies, normalised to 1
	sigma   float64
	mu      []float64 // lognormal location per class
}

// NewMix draws from classes using each class's NoLoad time as its mean demand (HighLoad:
// false) or its HighLoad time. sigma is the standard deviation of the log of the demand
// within a class; 0 gives every interaction exactly its class mean.
func NewMix(classes []Class, highLoad bool, sigma float64) (*Mix, error) {
	if len(classes) == 0 {
		return nil, fmt.Errorf("mix: no classes")
	}
	if sigma < 0 {
		return nil, fmt.Errorf("mix: sigma must be 0 or positive (got %g)", sigma)
	}
	m := &Mix{classes: classes, sigma: sigma}
	total := 0.0
	for _, c := range classes {
		if c.Frequency < 0 {
			return nil, fmt.Errorf("mix: class %q has a negative frequency", c.Name)
		}
		total += c.Frequency
	}
	if total <= 0 {
		return nil, fmt.Errorf("mix: the frequencies add up to nothing")
	}
	sum := 0.0
	for _, c := range classes {
		mean := c.NoLoad
		if highLoad {
			mean = c.HighLoad
		}
		sum += c.Frequency
		m.cum = append(m.cum, sum/total)
		m.means = append(m.means, mean.Seconds())
		mu := math.Inf(-1)
		if mean > 0 {
			mu = math.Log(mean.Seconds()) - sigma*sigma/2
		}
		m.mu = append(m.mu, mu)
	}
	m.cum[len(m.cum)-1] = 1
	return m, nil
}

// Classes returns the classes drawn from.
func (m *Mix) Classes() []Class { return m.classes }

// Mean returns class i's mean demand.
func (m *Mix) Mean(i int) time.Duration { return seconds(m.means[i]) }

// MeanDemand is the mean demand of an interaction, over the mix.
func (m *Mix) MeanDemand() time.Duration {
	s, prev := 0.0, 0.0
	for i, c := range m.cum {
		s += (c - prev) * m.means[i]
		prev = c
	}
	return seconds(s)
}

// Index returns the index of the class named name, or -1.
func (m *Mix) Index(name string) int {
	for i, c := range m.classes {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// Draw returns a class and the demand of one interaction of it, in seconds (0: the
// interaction does not reach the database).
func (m *Mix) Draw(r *rand.Rand) (class int, demand float64) {
	u := r.Float64()
	for class = 0; class < len(m.cum)-1 && u >= m.cum[class]; class++ {
	}
	switch {
	case m.means[class] == 0:
		return class, 0
	case m.sigma == 0:
		return class, m.means[class]
	}
	return class, math.Exp(m.mu[class] + m.sigma*r.NormFloat64())
}

// seconds converts seconds to a Duration, rounding to the nanosecond.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }
