package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
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

// findPrimary returns cfg with the primary found among backends.servers when the
// configuration names none: the one server writable at start, read once within
// backends.connect_timeout. The replicas, unless backends.replicas lists them, are the
// other servers. With no writable server, the first is taken as the primary's place and
// writes wait until a server is writable.
func findPrimary(ctx context.Context, cfg config.Config, log *slog.Logger) config.Config {
	servers := cfg.Backends.Servers
	if len(servers) == 0 {
		return cfg
	}
	if cfg.Backends.Primary == "" {
		read := topology.NewSQLReader(cfg.Monitor.User, cfg.Monitor.Password, cfg.Backends.ConnectTimeout)
		defer read.Close()
		t := topology.New(topology.Config{Servers: servers}, read.Read, log, nil)
		t.Check(ctx)
		v := t.View()
		cfg.Backends.Primary = v.Primary
		if v.State != topology.StateOK {
			cfg.Backends.Primary = servers[0]
			log.Warn("no one server of backends.servers is a writable primary at start; writes wait until one is",
				"state", v.State, "servers", servers)
		} else {
			log.Info("found the primary among backends.servers", "primary", v.Primary)
		}
	}
	if len(cfg.Backends.Replicas) == 0 {
		primary := cfg.Backends.Primary
		cfg.Backends.Replicas = slices.DeleteFunc(slices.Clone(servers), func(s string) bool { return s == primary })
	}
	return cfg
}
