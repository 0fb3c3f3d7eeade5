package bookstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigDefaults(t *testing.T) {
	cfg, err := Config{DSN: "u:p@tcp(h:1)/db", SLO: map[Interaction]time.Duration{Home: time.Second}}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, "shopping", cfg.Mix)
	assert.Equal(t, 50, cfg.Clients)
	assert.Equal(t, 60*time.Second, cfg.Duration)
	assert.Equal(t, 30*time.Second, cfg.Timeout)
	assert.Equal(t, 10000, cfg.BestSellersWindow)
	assert.Equal(t, 30000, cfg.RelatedWindow)
	assert.Len(t, cfg.SLO, 14)
	assert.Equal(t, time.Second, cfg.SLO[Home], "a given SLO is kept")
	assert.Equal(t, DefaultSLO()[ProductDetail], cfg.SLO[ProductDetail], "the others take the defaults")
}

func TestDefaultSLO(t *testing.T) {
	slo := DefaultSLO()
	for _, in := range Interactions() {
		assert.GreaterOrEqual(t, slo[in], 10*typicalCost[in], in.String())
		assert.GreaterOrEqual(t, slo[in], 20*time.Millisecond, in.String())
		if in.Heavy() {
			assert.GreaterOrEqual(t, slo[in], 2*time.Second, in.String())
		}
	}
}

func TestConfigErrors(t *testing.T) {
	burst := &Burst{HighFactor: 2, MeanHigh: time.Second, MeanLow: time.Second}
	tests := []struct {
		name string
		cfg  Config
		err  string
	}{
		{"no DSN", Config{}, "no DSN"},
		{"unknown mix", Config{DSN: "x", Mix: "buying"}, "unknown mix"},
		{"negative clients", Config{DSN: "x", Clients: -1}, "clients is -1"},
		{"negative think", Config{DSN: "x", Think: -time.Second}, "cannot be negative"},
		{"negative rate", Config{DSN: "x", Rate: -1}, "rate is -1"},
		{"burst without rate", Config{DSN: "x", Burst: burst}, "needs the open loop"},
		{"DSN and DSNs", Config{DSN: "x", DSNs: []string{"y"}}, "both DSN and DSNs"},
		{"empty DSN in DSNs", Config{DSNs: []string{"x", ""}}, "an empty DSN"},
		{"burst too high", Config{DSN: "x", Rate: 10, Burst: &Burst{HighFactor: 3, MeanHigh: time.Second, MeanLow: time.Second}}, "at most 2"},
		{"bad SLO", Config{DSN: "x", SLO: map[Interaction]time.Duration{Home: -1}}, "SLO for home"},
		{"SLO of no class", Config{DSN: "x", SLO: map[Interaction]time.Duration{20: time.Second}}, "one of the 14"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.cfg.withDefaults()
			assert.ErrorContains(t, err, tt.err)
		})
	}
	_, err := Config{DSN: "x", Rate: 10, Burst: burst}.withDefaults()
	assert.NoError(t, err)
}

// Client i connects to DSNs[i%len(DSNs)]: the clients split evenly over a fleet.
func TestClientsSplitOverTheDSNs(t *testing.T) {
	cfg, err := Config{DSNs: []string{"u:p@tcp(h:1)/db", "u:p@tcp(h:2)/db", "u:p@tcp(h:3)/db"}}.withDefaults()
	require.NoError(t, err)
	r := &runner{cfg: cfg}
	for _, dsn := range cfg.dsns() {
		db, err := openDB(dsn, 1)
		require.NoError(t, err)
		defer db.Close()
		r.dbs = append(r.dbs, db)
	}
	for i, want := range []int{0, 1, 2, 0, 1, 2, 0} {
		assert.Same(t, r.dbs[want], r.db(i), "client %d", i)
	}
	one, err := Config{DSN: "u:p@tcp(h:1)/db"}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, []string{"u:p@tcp(h:1)/db"}, one.dsns(), "DSN alone is a fleet of one")
}
