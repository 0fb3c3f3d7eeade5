package bookstore

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Interaction is one of the 14 web interactions of TPC-W. Each issues its own set of
// statements, all tagged with the interaction's name.
type Interaction int

// The 14 interactions, in the order TPC-W lists them.
const (
	Home Interaction = iota
	NewProducts
	BestSellers
	ProductDetail
	SearchRequest
	SearchResults
	ShoppingCart
	CustomerRegistration
	BuyRequest
	BuyConfirm
	OrderInquiry
	OrderDisplay
	AdminRequest
	AdminConfirm

	numInteractions = iota
)

var interactionNames = [numInteractions]string{
	Home:                 "home",
	NewProducts:          "new_products",
	BestSellers:          "best_sellers",
	ProductDetail:        "product_detail",
	SearchRequest:        "search_request",
	SearchResults:        "search_results",
	ShoppingCart:         "shopping_cart",
	CustomerRegistration: "customer_registration",
	BuyRequest:           "buy_request",
	BuyConfirm:           "buy_confirm",
	OrderInquiry:         "order_inquiry",
	OrderDisplay:         "order_display",
	AdminRequest:         "admin_request",
	AdminConfirm:         "admin_confirm",
}

// String returns the interaction's tag, in snake case: "home", "best_sellers", ...
// It is the NAME of the /* gk:type=NAME */ comment every statement of the interaction
// carries.
func (i Interaction) String() string {
	if i < 0 || i >= numInteractions {
		return fmt.Sprintf("interaction(%d)", int(i))
	}
	return interactionNames[i]
}

// MarshalText returns the interaction's tag, so that JSON shows names.
func (i Interaction) MarshalText() ([]byte, error) {
	if i < 0 || i >= numInteractions {
		return nil, fmt.Errorf("unknown interaction %d", int(i))
	}
	return []byte(interactionNames[i]), nil
}

// UnmarshalText reads an interaction's tag.
func (i *Interaction) UnmarshalText(b []byte) error {
	in, err := ParseInteraction(string(b))
	if err != nil {
		return err
	}
	*i = in
	return nil
}

// Interactions returns the 14 interactions in TPC-W's order.
func Interactions() []Interaction {
	out := make([]Interaction, numInteractions)
	for i := range out {
		out[i] = Interaction(i)
	}
	return out
}

// ParseInteraction returns the interaction whose tag is name.
func ParseInteraction(name string) (Interaction, error) {
	for i, n := range interactionNames {
		if n == name {
			return Interaction(i), nil
		}
	}
	return 0, fmt.Errorf("unknown interaction %q; use one of %s", name, strings.Join(interactionNames[:], ", "))
}

// Heavy reports whether the interaction is one of the two expensive ones, whose cost is
// two to three orders of magnitude above the others: Best Sellers and Admin Confirm.
func (i Interaction) Heavy() bool {
	return i == BestSellers || i == AdminConfirm
}

// Mix is how often each interaction is chosen, in percent of all interactions.
type Mix struct {
	Name string
	// Weights[i] is the share of Interaction(i) in percent; they sum to 100.
	Weights [numInteractions]float64
}

// TPC-W's three mixes (clause 5.2.2 of the specification). The shopping mix is the one
// the Gatekeeper paper measured (its Table 1 lists these frequencies).
var mixes = []Mix{
	{Name: "browsing", Weights: [numInteractions]float64{
		Home: 29.00, NewProducts: 11.00, BestSellers: 11.00, ProductDetail: 21.00,
		SearchRequest: 12.00, SearchResults: 11.00, ShoppingCart: 2.00,
		CustomerRegistration: 0.82, BuyRequest: 0.75, BuyConfirm: 0.69,
		OrderInquiry: 0.30, OrderDisplay: 0.25, AdminRequest: 0.10, AdminConfirm: 0.09,
	}},
	{Name: "shopping", Weights: [numInteractions]float64{
		Home: 16.00, NewProducts: 5.00, BestSellers: 5.00, ProductDetail: 17.00,
		SearchRequest: 20.00, SearchResults: 17.00, ShoppingCart: 11.60,
		CustomerRegistration: 3.00, BuyRequest: 2.60, BuyConfirm: 1.20,
		OrderInquiry: 0.75, OrderDisplay: 0.66, AdminRequest: 0.10, AdminConfirm: 0.09,
	}},
	{Name: "ordering", Weights: [numInteractions]float64{
		Home: 9.12, NewProducts: 0.46, BestSellers: 0.46, ProductDetail: 12.35,
		SearchRequest: 14.53, SearchResults: 13.08, ShoppingCart: 13.53,
		CustomerRegistration: 12.86, BuyRequest: 12.73, BuyConfirm: 10.18,
		OrderInquiry: 0.25, OrderDisplay: 0.22, AdminRequest: 0.12, AdminConfirm: 0.11,
	}},
}

// DefaultMix is the mix used when none is named.
const DefaultMix = "shopping"

// MixByName returns one of TPC-W's mixes: "browsing", "shopping" or "ordering"; an
// empty name is the shopping mix. It also reads a mix of one's own, written as
// NAME=WEIGHT pairs separated by commas ("home=90,best_sellers=10"): the weights are
// relative, and the interactions not listed do not occur.
func MixByName(name string) (Mix, error) {
	if name == "" {
		name = DefaultMix
	}
	for _, m := range mixes {
		if m.Name == name {
			return m, nil
		}
	}
	if strings.Contains(name, "=") {
		return parseMix(name)
	}
	return Mix{}, fmt.Errorf("unknown mix %q; use browsing, shopping or ordering, or weights such as home=90,best_sellers=10", name)
}

// parseMix reads NAME=WEIGHT[,NAME=WEIGHT...] into a mix whose weights sum to 100.
func parseMix(spec string) (Mix, error) {
	m := Mix{Name: spec}
	var seen [numInteractions]bool
	var sum float64
	for pair := range strings.SplitSeq(spec, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			return Mix{}, fmt.Errorf("mix %q: %q is not NAME=WEIGHT", spec, pair)
		}
		in, err := ParseInteraction(strings.TrimSpace(name))
		if err != nil {
			return Mix{}, fmt.Errorf("mix %q: %w", spec, err)
		}
		if seen[in] {
			return Mix{}, fmt.Errorf("mix %q: %s is listed twice", spec, in)
		}
		seen[in] = true
		w, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || w < 0 || math.IsInf(w, 0) || math.IsNaN(w) {
			return Mix{}, fmt.Errorf("mix %q: the weight of %s is %q; use a number of 0 or more", spec, in, value)
		}
		m.Weights[in] = w
		sum += w
	}
	if sum <= 0 {
		return Mix{}, fmt.Errorf("mix %q: all weights are zero", spec)
	}
	for i := range m.Weights {
		m.Weights[i] *= 100 / sum
	}
	return m, nil
}

// picker draws interactions with the frequencies of a mix.
type picker struct {
	// cum[i] is the sum of the weights of interactions 0..i.
	cum [numInteractions]float64
}

func newPicker(m Mix) (picker, error) {
	var p picker
	var sum float64
	for i, w := range m.Weights {
		if w < 0 {
			return p, fmt.Errorf("mix %s: negative weight %g for %s", m.Name, w, Interaction(i))
		}
		sum += w
		p.cum[i] = sum
	}
	if sum <= 0 {
		return p, fmt.Errorf("mix %s: all weights are zero", m.Name)
	}
	return p, nil
}

// pick returns an interaction drawn with probability proportional to its weight.
func (p *picker) pick(r *rand.Rand) Interaction {
	x := r.Float64() * p.cum[numInteractions-1]
	for i, c := range p.cum {
		if x < c {
			return Interaction(i)
		}
	}
	// x equals the total only by rounding; the last interaction with a weight takes it.
	for i := numInteractions - 1; i > 0; i-- {
		if p.cum[i] > p.cum[i-1] {
			return Interaction(i)
		}
	}
	return 0
}
