package routing_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
)

// The causal wait runs on synctest's clock: a bubble's time moves only when every
// goroutine in it waits, so each wait below is exact.
func TestCausalWait(t *testing.T) {
	const (
		wait = 50 * time.Millisecond
		poll = 10 * time.Millisecond
	)
	cases := []struct {
		name       string
		causalWait time.Duration
		// during runs before the read routes, with the replica behind the read's need
		// (0-1-5); it may schedule what happens during the wait. It returns the read's
		// context.
		during func(f *fixture, replica *replicas.Backend) context.Context
		want   routing.Reason
		// took is how long the read waited; observed whether gatekeeper_causal_wait_seconds
		// saw it.
		took     time.Duration
		observed bool
	}{
		{"no replica catches up", wait, nil, routing.FellBack, wait, true},
		{"the replica catches up", wait, func(f *fixture, replica *replicas.Backend) context.Context {
			caughtUp := pos(f.t, "0-1-5")
			time.AfterFunc(25*time.Millisecond, func() { f.record(replica, caughtUp) }) // between polls
			return context.Background()
		}, routing.Waited, 25 * time.Millisecond, true},
		{"the replica moves but not far enough", wait, func(f *fixture, replica *replicas.Backend) context.Context {
			closer := pos(f.t, "0-1-4")
			time.AfterFunc(25*time.Millisecond, func() { f.record(replica, closer) })
			return context.Background()
		}, routing.FellBack, wait, true},
		{"the client goes away", wait, func(f *fixture, _ *replicas.Backend) context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			return ctx
		}, routing.FellBack, 20 * time.Millisecond, false},
		{"no causal wait", 0, nil, routing.FellBack, 0, false},
		{"no replica to wait for", wait, func(f *fixture, replica *replicas.Backend) context.Context {
			f.router.Record(replica, nil, errors.New("connection refused"), time.Now())
			return context.Background()
		}, routing.FellBack, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, routing.Config{Consistency: replicas.Strong, CausalWait: tc.causalWait, Poll: poll}, 1)
				replica := f.replica(1)
				s := f.policy.NewSession()
				commit(t, s, write(s, "INSERT INTO a VALUES (1)"), "0-1-5")
				f.record(replica, pos(t, "0-1-3"))
				ctx := context.Background()
				if tc.during != nil {
					ctx = tc.during(f, replica)
				}

				start := time.Now()
				d := s.Route(ctx, &routing.Unit{Stmt: read(s, "SELECT * FROM a"), Autocommit: true})
				assert.Equal(t, tc.took, time.Since(start), "waited")
				assert.Equal(t, tc.want, d.Reason)
				if tc.want == routing.Waited {
					assert.Same(t, replica, d.To)
					assert.Equal(t, "0-1-5", d.Need.String())
				} else {
					assert.Nil(t, d.To)
				}
				n, sum := f.causalWaits()
				if !tc.observed {
					assert.Zero(t, n, "causal waits observed")
					return
				}
				assert.Equal(t, uint64(1), n, "causal waits observed")
				assert.InDelta(t, tc.took.Seconds(), sum, 1e-9)
			})
		})
	}
}

// A write acknowledged without a position leaves what reads need unknown until the
// primary's position is read after it; a waiting read looks again every poll, as the
// primary's poll sends no signal.
func TestCausalWaitForWriteWithoutPosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, routing.Config{CausalWait: 50 * time.Millisecond, Poll: 10 * time.Millisecond}, 1)
		s := f.policy.NewSession()
		s.Ack(write(s, "INSERT INTO a VALUES (1)"), &routing.Response{AffectedRows: 1})
		f.record(f.replica(1), pos(t, "0-1-6"))
		primaryPos := pos(t, "0-1-6")
		time.AfterFunc(15*time.Millisecond, func() { f.record(f.router.Primary(), primaryPos) })

		start := time.Now()
		d := route(s, read(s, "SELECT * FROM b"))
		assert.Equal(t, 20*time.Millisecond, time.Since(start), "the poll after the primary's")
		assert.Equal(t, routing.Waited, d.Reason)
		assert.Same(t, f.replica(1), d.To)
		assert.Equal(t, "0-1-6", d.Need.String(), "the primary's position covers the write")
	})
}
