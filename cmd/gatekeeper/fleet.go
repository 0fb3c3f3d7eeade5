package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/fleet"
	"github.com/gatekeeperdb/gatekeeper/internal/proxy"
	"github.com/gatekeeperdb/gatekeeper/internal/wiring"
)

// sharedSettings are the fleet's shared settings in force, read from etcd: what every load
// of the configuration lays over the file.
type sharedSettings struct {
	mu       sync.Mutex
	settings map[string]string
	prefix   string
	rev      int64
}

// sources adds the shared settings to src.
func (s *sharedSettings) sources(src config.Sources) config.Sources {
	s.mu.Lock()
	defer s.mu.Unlock()
	src.Shared, src.SharedPrefix = s.settings, s.prefix
	return src
}

// swap puts settings in force and returns those they replace.
func (s *sharedSettings) swap(settings map[string]string, rev int64) (map[string]string, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, prevRev := s.settings, s.rev
	s.settings, s.rev = settings, rev
	return prev, prevRev
}

func (s *sharedSettings) revision() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev
}

// readShared reads the fleet's shared settings into shared when cfg is a member of a fleet
// that shares its configuration; ok is false when there is nothing to read. An etcd that
// does not answer is an error, which the caller decides about.
func readShared(ctx context.Context, cfg config.Config, shared *sharedSettings) (ok bool, err error) {
	if !cfg.Fleet.Enabled() || !cfg.Fleet.SharedConfig {
		return false, nil
	}
	fc, err := wiring.Fleet(cfg.Fleet, cfg.Listen)
	if err != nil {
		return false, err
	}
	settings, rev, err := fleet.ReadConfig(ctx, fc)
	if err != nil {
		return false, err
	}
	shared.mu.Lock()
	shared.prefix = cfg.Fleet.ConfigPrefix()
	shared.mu.Unlock()
	shared.swap(settings, rev)
	return true, nil
}

// loadWithFleet loads the configuration, then, for a member of a fleet, again with the
// shared settings read from etcd laid over the file. Without etcd it serves the file's
// configuration and says so: the shared settings are applied once etcd answers.
func loadWithFleet(ctx context.Context, load func() (config.Config, error), shared *sharedSettings) (config.Config, error) {
	cfg, err := load()
	if err != nil {
		return cfg, err
	}
	ok, err := readShared(ctx, cfg, shared)
	if err != nil {
		newLogger(cfg.Log).Warn("fleet: the shared configuration could not be read; serving the file's until etcd answers",
			"err", err)
		return cfg, nil
	}
	if !ok {
		return cfg, nil
	}
	return load()
}

// checkShared is check-config's look at the fleet's shared settings: read from etcd and
// loaded over the file, every unknown or bad key is an error.
func checkShared(ctx context.Context, cfg config.Config, src config.Sources, out io.Writer) error {
	var shared sharedSettings
	ok, err := readShared(ctx, cfg, &shared)
	switch {
	case err != nil:
		fmt.Fprintf(out, "warning: the fleet's shared settings were not checked: %v\n", err)
		return nil
	case !ok:
		return nil
	}
	if _, err := config.Load(shared.sources(src)); err != nil {
		return err
	}
	shared.mu.Lock()
	n := len(shared.settings)
	shared.mu.Unlock()
	fmt.Fprintf(out, "%d shared settings under %s are valid\n", n, cfg.Fleet.ConfigPrefix())
	return nil
}

// fleetSource serves GET /api/v1/fleet.
type fleetSource struct{ member *fleet.Member }

func (f fleetSource) Fleet() (any, bool) {
	if f.member == nil {
		return nil, false
	}
	return f.member.Status(), true
}

// startFleet makes the proxy a member of its fleet when fleet.etcd is set: it shares each
// backend's capacity with the other members and, with fleet.shared_config, applies the
// shared settings as a reload does whenever they change in etcd.
func startFleet(bg *background, cfg config.Config, srv *proxy.Server, rl *reloader, shared *sharedSettings,
	reg prometheus.Registerer, log *slog.Logger) (*fleet.Member, error) {
	if !cfg.Fleet.Enabled() {
		return nil, nil
	}
	fc, err := wiring.Fleet(cfg.Fleet, cfg.Listen)
	if err != nil {
		return nil, err
	}
	keys := append([]string{"primary"}, cfg.Backends.Replicas...)
	backends := func() []fleet.Backend {
		policy := wiring.AdmissionPolicy(rl.current().Admission)
		fixed := policy.Capacity
		if policy.Auto.Enabled {
			fixed = 0
		}
		ctls := srv.BackendAdmission()
		out := make([]fleet.Backend, 0, len(ctls))
		for i, c := range ctls {
			if i < len(keys) {
				out = append(out, fleet.Backend{Key: keys[i], Ctl: c, Fixed: fixed})
			}
		}
		return out
	}
	member, err := fleet.New(fc, backends, log, fleet.NewMetrics(reg))
	if err != nil {
		return nil, err
	}
	log.Info("fleet: joining", "name", fc.Name, "etcd", cfg.Fleet.Etcd, "prefix", cfg.Fleet.Prefix)
	ctx, leave := context.WithCancel(context.Background())
	left := make(chan struct{})
	go func() { member.Run(ctx); close(left) }() // ends at the stop below
	// On stopping, the member leaves (its keys deleted: the others take its share at once)
	// before the connection to etcd closes.
	bg.onStop(func() {
		leave()
		<-left
		_ = member.Close()
	})
	if cfg.Fleet.SharedConfig {
		bg.add(func(ctx context.Context) {
			member.WatchConfig(ctx, shared.revision(), func(settings map[string]string, rev int64) error {
				prev, prevRev := shared.swap(settings, rev)
				if err := rl.reload(); err != nil {
					shared.swap(prev, prevRev)
					return err
				}
				log.Info("fleet: shared configuration applied", "settings", len(settings))
				return nil
			})
		})
	}
	return member, nil
}
