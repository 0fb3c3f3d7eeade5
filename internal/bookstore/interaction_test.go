package bookstore

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInteractionNames(t *testing.T) {
	all := Interactions()
	require.Len(t, all, 14)
	want := []string{"home", "new_products", "best_sellers", "product_detail", "search_request",
		"search_results", "shopping_cart", "customer_registration", "buy_request", "buy_confirm",
		"order_inquiry", "order_display", "admin_request", "admin_confirm"}
	for i, in := range all {
		assert.Equal(t, Interaction(i), in)
		assert.Equal(t, want[i], in.String())
		got, err := ParseInteraction(want[i])
		require.NoError(t, err)
		assert.Equal(t, in, got)
		assert.Equal(t, in == BestSellers || in == AdminConfirm, in.Heavy(), in.String())
	}
	b, err := json.Marshal(map[Interaction]int{BestSellers: 5})
	require.NoError(t, err)
	assert.Equal(t, `{"best_sellers":5}`, string(b))
	var back map[Interaction]int
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, map[Interaction]int{BestSellers: 5}, back)

	_, err = ParseInteraction("checkout")
	assert.ErrorContains(t, err, "home, new_products")
	assert.Equal(t, "interaction(14)", Interaction(14).String())
}

func TestMixWeightsSumTo100(t *testing.T) {
	for _, name := range []string{"browsing", "shopping", "ordering"} {
		m, err := MixByName(name)
		require.NoError(t, err)
		var sum float64
		for i, w := range m.Weights {
			assert.Greater(t, w, 0.0, "%s: %s", name, Interaction(i))
			sum += w
		}
		assert.InDelta(t, 100, sum, 1e-9, name)
	}
	def, err := MixByName("")
	require.NoError(t, err)
	assert.Equal(t, "shopping", def.Name)
	_, err = MixByName("buying")
	assert.ErrorContains(t, err, "use browsing, shopping or ordering")
}

func TestCustomMix(t *testing.T) {
	m, err := MixByName("home=3, best_sellers=1")
	require.NoError(t, err)
	assert.Equal(t, "home=3, best_sellers=1", m.Name)
	assert.Equal(t, 75.0, m.Weights[Home])
	assert.Equal(t, 25.0, m.Weights[BestSellers])
	assert.Zero(t, m.Weights[AdminConfirm])

	for spec, want := range map[string]string{
		"home=1,checkout=2":      "unknown interaction \"checkout\"",
		"home=1,home=2":          "home is listed twice",
		"home=-1,best_sellers=1": "use a number of 0 or more",
		"home=x":                 "use a number of 0 or more",
		"home=0,best_sellers=0":  "all weights are zero",
		"home=1,best_sellers":    "is not NAME=WEIGHT",
	} {
		_, err := MixByName(spec)
		assert.ErrorContains(t, err, want, spec)
	}
}

// The shopping mix is the one of the paper's Table 1.
func TestShoppingMixIsThePapers(t *testing.T) {
	m, _ := MixByName("shopping")
	assert.Equal(t, 5.0, m.Weights[BestSellers])
	assert.Equal(t, 0.09, m.Weights[AdminConfirm])
	assert.Equal(t, 20.0, m.Weights[SearchRequest])
	assert.Equal(t, 11.6, m.Weights[ShoppingCart])
}

// Drawn frequencies match the weights within a few standard errors.
func TestPickerFrequencies(t *testing.T) {
	for _, name := range []string{"browsing", "shopping", "ordering"} {
		m, _ := MixByName(name)
		p, err := newPicker(m)
		require.NoError(t, err)
		r := newRand(42, 1)
		const n = 1_000_000
		var counts [numInteractions]int
		for range n {
			counts[p.pick(r)]++
		}
		for i, w := range m.Weights {
			want := w / 100
			got := float64(counts[i]) / n
			se := math.Sqrt(want * (1 - want) / n)
			assert.InDelta(t, want, got, 5*se, "%s: %s", name, Interaction(i))
		}
	}
}

func TestPickerSkipsZeroWeights(t *testing.T) {
	var m Mix
	m.Name = "heavy"
	m.Weights[BestSellers] = 1
	m.Weights[AdminConfirm] = 3
	p, err := newPicker(m)
	require.NoError(t, err)
	r := newRand(1, 1)
	var counts [numInteractions]int
	for range 10000 {
		counts[p.pick(r)]++
	}
	assert.Equal(t, 10000, counts[BestSellers]+counts[AdminConfirm])
	assert.InDelta(t, 0.75, float64(counts[AdminConfirm])/10000, 0.03)

	_, err = newPicker(Mix{Name: "empty"})
	assert.ErrorContains(t, err, "all weights are zero")
	m.Weights[Home] = -1
	_, err = newPicker(m)
	assert.ErrorContains(t, err, "negative weight")
}
