package admission

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTokenBucket(t *testing.T) {
	now := time.Unix(0, 0)
	b := NewTokenBucket(10, 3, now)
	for range 3 {
		require.True(t, b.Allow(now), "the burst")
	}
	require.False(t, b.Allow(now))
	now = now.Add(250 * time.Millisecond) // 2.5 tokens
	require.True(t, b.Allow(now))
	require.True(t, b.Allow(now))
	require.False(t, b.Allow(now))
	now = now.Add(time.Hour)
	for range 3 {
		require.True(t, b.Allow(now), "refilled to the burst, not past it")
	}
	require.False(t, b.Allow(now))
}

func TestPolicersMatchAndRefuseWithoutTaking(t *testing.T) {
	now := time.Unix(0, 0)
	p, err := NewPolicers([]Rule{
		{Name: "all", Rate: 1, Burst: 10},
		{Name: "reports", Type: "best_sellers", Rate: 1, Burst: 1},
		{Name: "office", Client: netip.MustParsePrefix("10.0.0.0/8"), User: "app", Rate: 1, Burst: 1},
	}, now)
	require.NoError(t, err)
	office := netip.MustParseAddr("10.1.2.3")

	_, ok := p.Allow(&Policed{Type: "best_sellers"}, now)
	require.True(t, ok)
	rule, ok := p.Allow(&Policed{Type: "best_sellers"}, now)
	require.False(t, ok)
	assert.Equal(t, "reports", rule)
	// The refusal took nothing from "all": 9 tokens left, after the one taken above.
	_, ok = p.Allow(&Policed{Type: "home", User: "app", Client: office}, now)
	require.True(t, ok)
	rule, ok = p.Allow(&Policed{Type: "home", User: "app", Client: office}, now)
	assert.Equal(t, "office", rule)
	require.False(t, ok)
	_, ok = p.Allow(&Policed{Type: "home", User: "other", Client: office}, now)
	require.True(t, ok, "user does not match")
	for range 7 {
		_, ok = p.Allow(&Policed{Type: "home"}, now)
		require.True(t, ok)
	}
	rule, ok = p.Allow(&Policed{Type: "home"}, now)
	assert.Equal(t, "all", rule)
	require.False(t, ok)
	st := p.States()
	assert.Equal(t, PolicerState{Name: "all", Rate: 1, Allowed: 10, Refused: 1}, st[0])
	assert.Equal(t, PolicerState{Name: "reports", Rate: 1, Allowed: 1, Refused: 1}, st[1])
}

func TestProportionalControllerAndItsGuard(t *testing.T) {
	now := time.Unix(0, 0)
	p, err := NewPolicers([]Rule{{Name: "cgi", Rate: 50, Burst: 5, MinRate: 5, MaxRate: 80,
		Controller: "p", Signal: SignalInflight, Target: 90, Kp: 0.2}}, now)
	require.NoError(t, err)
	use := func(n int) {
		for range n {
			p.Allow(&Policed{}, now)
		}
	}
	// Over the target: the rate falls by Kp times the error.
	now = now.Add(time.Second)
	use(50)
	p.Adapt(map[string]float64{SignalInflight: 140}, now)
	assert.InDelta(t, 40, p.States()[0].Rate, 1e-9)
	// Under the target but the rule saw 30 units against a rate of 40: not raised.
	now = now.Add(time.Second)
	use(30)
	p.Adapt(map[string]float64{SignalInflight: 60}, now)
	assert.InDelta(t, 40, p.States()[0].Rate, 1e-9)
	// Used (at least 90% of its rate): raised.
	now = now.Add(time.Second)
	use(38)
	p.Adapt(map[string]float64{SignalInflight: 60}, now)
	assert.InDelta(t, 46, p.States()[0].Rate, 1e-9)
	// Clamped to the bounds.
	now = now.Add(time.Second)
	p.Adapt(map[string]float64{SignalInflight: 1000}, now)
	assert.InDelta(t, 5, p.States()[0].Rate, 1e-9)
	for range 100 {
		now = now.Add(time.Second)
		use(100)
		p.Adapt(map[string]float64{SignalInflight: 0}, now)
	}
	assert.InDelta(t, 80, p.States()[0].Rate, 1e-9)
}

func TestProportionalDerivativeControllerReactsToGrowth(t *testing.T) {
	now := time.Unix(0, 0)
	p, err := NewPolicers([]Rule{{Name: "syn", Rate: 100, Burst: 20, MinRate: 1,
		Controller: "pd", Signal: SignalQueue, Target: 0, Kp: 1.0 / 16, Kd: 1.0 / 4}}, now)
	require.NoError(t, err)
	step := func(q float64) float64 {
		now = now.Add(time.Second)
		p.Adapt(map[string]float64{SignalQueue: q}, now)
		return p.States()[0].Rate
	}
	assert.InDelta(t, 100, step(0), 1e-9, "at the target and unchanged: nothing moves")
	r1 := step(40) // -40/16 - 40/4 = -12.5
	assert.InDelta(t, 87.5, r1, 1e-9)
	r2 := step(40) // the queue stays: only the proportional part, -2.5
	assert.InDelta(t, 85, r2, 1e-9)
	r3 := step(10) // falling: +30/4 - 10/16
	assert.InDelta(t, 85+7.5-0.625, r3, 1e-9)
	r4 := step(0) // drained: +10/4
	assert.InDelta(t, r3+2.5, r4, 1e-9)
	assert.InDelta(t, r4, step(0), 1e-9, "an empty queue that stays empty does not raise the rate")
}

func TestPolicersAllowAllocatesNothing(t *testing.T) {
	now := time.Unix(0, 0)
	p, err := NewPolicers([]Rule{{Name: "a", Type: "x", Rate: 1e9, Burst: 1e9}}, now)
	require.NoError(t, err)
	u := &Policed{Type: "x"}
	assert.Zero(t, testing.AllocsPerRun(1000, func() { p.Allow(u, now) }))
}
