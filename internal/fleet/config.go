package fleet

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The fleet's shared configuration is a key per setting under <prefix>config/, named as the
// setting is in the file (admission.capacity, routing.consistency, rules), its value the
// setting's value in YAML. The configuration package says which settings may be shared
// and refuses the rest.

// configPrefix is where the shared settings live.
func (c Config) configPrefix() string { return c.Prefix + "config/" }

// ReadConfig reads the shared settings once, by setting name, with the revision they were
// read at; it fails when etcd does not answer within cfg.DialTimeout.
func ReadConfig(ctx context.Context, cfg Config) (settings map[string]string, rev int64, err error) {
	cli, err := client(cfg)
	if err != nil {
		return nil, 0, err
	}
	defer cli.Close()
	return readConfig(ctx, cli, cfg)
}

func readConfig(ctx context.Context, cli *clientv3.Client, cfg Config) (map[string]string, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	pfx := cfg.configPrefix()
	resp, err := cli.Get(ctx, pfx, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("fleet: reading the shared configuration under %s from etcd at %s: %w",
			pfx, strings.Join(cfg.Endpoints, ","), err)
	}
	out := make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), pfx)] = string(kv.Value)
	}
	return out, resp.Header.Revision, nil
}

// WatchConfig hands apply the shared settings whenever they change under the prefix, until
// ctx ends: all of them, read afresh, so that a change of several keys in one transaction
// is applied whole. from is the revision the settings in force were read at (0: none were;
// the first read is applied). apply's error (the settings were refused; the running
// configuration stays) is shown in the status. While etcd is away it tries again every
// interval.
func (mb *Member) WatchConfig(ctx context.Context, from int64, apply func(settings map[string]string, rev int64) error) {
	pfx := mb.cfg.configPrefix()
	rev := from
	for ctx.Err() == nil {
		settings, at, err := readConfig(ctx, mb.cli, mb.cfg)
		if err == nil && at != rev {
			mb.applyConfig(settings, at, apply)
			rev = at
		}
		if err == nil {
			wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
			for resp := range mb.cli.Watch(wctx, pfx, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
				if resp.Err() != nil || resp.Canceled {
					break
				}
				if len(resp.Events) == 0 {
					continue
				}
				settings, at, err := readConfig(ctx, mb.cli, mb.cfg)
				if err != nil {
					break
				}
				mb.applyConfig(settings, at, apply)
				rev = at
			}
			cancel()
		}
		select {
		case <-ctx.Done():
		case <-time.After(mb.cfg.Interval):
		}
	}
}

// applyConfig applies the settings read at revision rev and notes the outcome.
func (mb *Member) applyConfig(settings map[string]string, rev int64, apply func(map[string]string, int64) error) {
	err := apply(settings, rev)
	mb.mu.Lock()
	mb.status.Config = ConfigStatus{Keys: len(settings), Revision: rev, Applied: mb.status.Config.Applied}
	if err != nil {
		mb.status.Config.Error = err.Error()
	} else {
		mb.status.Config.Applied = time.Now()
	}
	mb.mu.Unlock()
	if mb.m != nil {
		mb.m.configApplied(err == nil)
	}
}
