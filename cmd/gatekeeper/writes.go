package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/proxy"
	"github.com/gatekeeperdb/gatekeeper/internal/topology"
)

// writesSource answers the admin API's topology and pause of writes from the proxy.
type writesSource struct{ srv *proxy.Server }

var _ admin.Writes = writesSource{}

// topologyOff is the topology's answer when the roles are not read.
type topologyOff struct {
	State  string `json:"state"`
	Reason string `json:"reason"`
}

func (w writesSource) Topology() any {
	t := w.srv.Topology()
	if t == nil {
		return topologyOff{State: "static", Reason: "the servers' roles are not read (backends.role_interval 0 or no monitor.user): the primary is backends.primary"}
	}
	return t.View()
}

// pauseResponse is the answer of a pause that took.
type pauseResponse struct {
	Status         string  `json:"status"`
	Primary        string  `json:"primary"`
	DrainedSeconds float64 `json:"drained_seconds"`
	// ResumeBy is when the pause ends by itself unless resumed before.
	ResumeBy time.Time `json:"resume_by"`
}

func (w writesSource) PauseWrites(ctx context.Context, timeout time.Duration) (any, error) {
	t := w.srv.Topology()
	if _, ok := w.srv.PrimaryInFlight(); !ok || t == nil {
		return nil, fmt.Errorf("%w: pausing writes needs mode: pooled and the servers' roles read (monitor.user, backends.role_interval)", admin.ErrPauseRefused)
	}
	start := time.Now()
	res, err := t.Pause(ctx, timeout, func() int { n, _ := w.srv.PrimaryInFlight(); return n })
	if errors.Is(err, topology.ErrPaused) {
		return nil, fmt.Errorf("%w: %v", admin.ErrPauseRefused, err)
	}
	if err != nil {
		return nil, err
	}
	return pauseResponse{Status: "paused", Primary: t.Primary(), DrainedSeconds: res.Drained.Seconds(), ResumeBy: start.Add(timeout)}, nil
}

func (w writesSource) ResumeWrites() bool {
	t := w.srv.Topology()
	return t != nil && t.Resume()
}
