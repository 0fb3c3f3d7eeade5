package admission

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOverdueUnitGoesFirst: under sjf with aging, whether a waiting unit w, whose bound
// passes while the queue's head q would run, goes before q. Units run from t; w arrives at
// t, with a bound at t+1s; q arrives at the step's time.
func TestOverdueUnitGoesFirst(t *testing.T) {
	const ms = time.Millisecond
	heavy := Request{Cost: 50 * ms, Service: time.Second}
	short := Request{Cost: 40 * ms, Service: 100 * ms}
	tests := []struct {
		name     string
		running  []Request // admitted at t
		at       time.Duration
		q        Request
		timeout  time.Duration
		lastCall time.Duration
		want     bool
	}{
		{name: "before its bound q ends first", running: []Request{{Cost: 10 * ms, Service: 2 * time.Second}},
			at: 500 * ms, q: short, timeout: 10 * time.Second, want: false},
		{name: "far deadline: q fits and ends before the running units", at: time.Second, q: short,
			running: []Request{{Cost: 10 * ms, Service: 2 * time.Second}}, timeout: 10 * time.Second, want: false},
		{name: "nothing runs", at: time.Second, q: short, timeout: 10 * time.Second, want: true},
		{name: "q would outlast the running units", at: time.Second, q: Request{Cost: 40 * ms, Service: 1500 * ms},
			running: []Request{{Cost: 10 * ms, Service: 2 * time.Second}}, timeout: 10 * time.Second, want: true},
		{name: "q does not fit", at: time.Second, q: Request{Cost: 95 * ms, Service: 100 * ms},
			running: []Request{{Cost: 10 * ms, Service: 2 * time.Second}}, timeout: 10 * time.Second, want: true},
		{name: "deadline within twice the running units' time", at: time.Second, q: short,
			running: []Request{{Cost: 10 * ms, Service: 2 * time.Second}}, timeout: 3 * time.Second, want: true},
		{name: "deadline just beyond it", at: time.Second, q: short,
			running: []Request{{Cost: 10 * ms, Service: 2 * time.Second}}, timeout: 3*time.Second + ms, want: false},
		{name: "deadline within the last call", at: time.Second, q: short,
			running: []Request{{Cost: 10 * ms, Service: 2 * time.Second}}, timeout: 10 * time.Second,
			lastCall: 9 * time.Second, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := NewManualClock(time.Unix(0, 0))
			cfg := Config{Capacity: 100 * ms, Discipline: SJF, Aging: 1, QueueTimeout: tt.timeout,
				LastCall: tt.lastCall, MaxQueue: 10}
			require.NoError(t, cfg.Validate())
			c := New(cfg, clock)
			for _, r := range tt.running {
				st, err := c.Arrive(&Ticket{}, r)
				require.NoError(t, err)
				require.Equal(t, Admitted, st)
			}
			w := Ticket{req: heavy, arrived: clock.Now(), deadline: clock.Now().Add(tt.timeout)}
			w.bound = c.queue.boundOf(&w)
			clock.Advance(tt.at)
			now := clock.Now()
			q := Ticket{req: tt.q, arrived: now, deadline: now.Add(tt.timeout)}
			c.mu.Lock()
			got := c.due(&w, &q, now)
			c.mu.Unlock()
			require.Equal(t, tt.want, got)
		})
	}
}
