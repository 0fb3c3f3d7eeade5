package fleet

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Between syncs the adjuster tells the others at once what its control loop needs them to
// act on, through keys they watch:
//
//   - <prefix>probe/<backend> while it times units alone (a solo check): the others start
//     nothing new on that backend until it ends, so that its units run alone in the
//     database and not beside theirs (else the times alone are a loaded database's, the
//     stretch reads low, and the fleet's capacity climbs far past the knee);
//   - <prefix>capacity/<backend> at each move of the fleet's capacity: the others take their
//     share of it at once, not an interval later, which would put a delay of an interval
//     inside the adjuster's loop and make it swing.

const (
	// reactEvery is how often the adjuster looks for a solo check or a move to tell.
	reactEvery = 10 * time.Millisecond
	// maxHold bounds a hold whatever a signal says: a check lasts Interval/8 of the
	// adaptive capacity (250 ms by default), and one whose end is lost ends anyway.
	maxHold = time.Second
	// moved is the least relative move of the fleet's capacity that is told between syncs.
	moved = 0.01
)

// signal is the value of a probe or capacity key.
type signal struct {
	By string `json:"by"`
	// For is how long the solo check may still last (a duration, not a time: the members'
	// clocks need not agree).
	For   time.Duration `json:"for_ns,omitempty"`
	Fleet time.Duration `json:"fleet_ns,omitempty"`
}

// react tells the others the adjuster's solo checks and moves, and acts on theirs, until
// ctx ends.
func (mb *Member) react(ctx context.Context) {
	done := make(chan struct{}, 2)
	go func() { mb.watch(ctx, "probe/", mb.onProbe); done <- struct{}{} }()       // ends with ctx
	go func() { mb.watch(ctx, "capacity/", mb.onCapacity); done <- struct{}{} }() // ends with ctx
	defer func() { <-done; <-done }()
	tick := time.NewTicker(reactEvery)
	defer tick.Stop()
	checking := map[string]bool{}
	told := map[string]time.Duration{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if mb.isLeader() {
				mb.tell(ctx, checking, told)
			}
		}
	}
}

// tell publishes the solo checks that began or ended and the moves of the fleet's capacity
// since the last look; checking and told are what was told last, by backend.
func (mb *Member) tell(ctx context.Context, checking map[string]bool, told map[string]time.Duration) {
	mb.mu.Lock()
	lease := mb.lease
	mb.mu.Unlock()
	if lease == 0 {
		return
	}
	for _, b := range mb.backends() {
		st := mb.step(b.Key)
		if !st.Adapt || b.Fixed > 0 || st.Share <= 0 {
			continue // not adapting the fleet's capacity on this backend
		}
		on, until := b.Ctl.Checking()
		if on != checking[b.Key] {
			checking[b.Key] = on
			key := mb.cfg.Prefix + "probe/" + b.Key
			if on {
				mb.put(ctx, key, signal{By: mb.cfg.Name, For: time.Until(until)}, lease)
			} else {
				mb.del(ctx, key)
			}
		}
		fleet := time.Duration(float64(b.Ctl.Capacity()) / st.Share)
		if last := told[b.Key]; last == 0 || absRatio(fleet, last) > moved {
			if mb.put(ctx, mb.cfg.Prefix+"capacity/"+b.Key, signal{By: mb.cfg.Name, Fleet: fleet}, lease) {
				told[b.Key] = fleet
			}
		}
	}
}

func absRatio(a, b time.Duration) float64 {
	r := float64(a)/float64(b) - 1
	if r < 0 {
		return -r
	}
	return r
}

// put writes a signal under the member's lease; false when etcd did not take it.
func (mb *Member) put(ctx context.Context, key string, s signal, lease clientv3.LeaseID) bool {
	buf, err := json.Marshal(s)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, mb.cfg.DialTimeout)
	defer cancel()
	_, err = mb.cli.Put(ctx, key, string(buf), clientv3.WithLease(lease))
	return err == nil
}

func (mb *Member) del(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(ctx, mb.cfg.DialTimeout)
	defer cancel()
	_, _ = mb.cli.Delete(ctx, key)
}

// watch hands handle every event under the prefix's dir until ctx ends, watching again
// (after an interval) when etcd goes away.
func (mb *Member) watch(ctx context.Context, dir string, handle func(key string, ev *clientv3.Event)) {
	pfx := mb.cfg.Prefix + dir
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for resp := range mb.cli.Watch(wctx, pfx, clientv3.WithPrefix()) {
			if resp.Err() != nil || resp.Canceled {
				break
			}
			for _, ev := range resp.Events {
				handle(strings.TrimPrefix(string(ev.Kv.Key), pfx), ev)
			}
		}
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(mb.cfg.Interval):
		}
	}
}

// backend returns the backend of key.
func (mb *Member) backend(key string) (Backend, bool) {
	for _, b := range mb.backends() {
		if b.Key == key {
			return b, true
		}
	}
	return Backend{}, false
}

// onProbe holds the backend while another member times its units alone there.
func (mb *Member) onProbe(key string, ev *clientv3.Event) {
	b, ok := mb.backend(key)
	if !ok {
		return
	}
	if ev.Type == clientv3.EventTypeDelete {
		b.Ctl.Hold(time.Time{})
		return
	}
	var s signal
	if json.Unmarshal(ev.Kv.Value, &s) != nil || s.By == mb.cfg.Name || mb.step(key).Adapt {
		return
	}
	b.Ctl.Hold(time.Now().Add(min(max(s.For, 0), maxHold)))
	if mb.m != nil {
		mb.m.held.Inc()
	}
}

// onCapacity takes this member's share of the fleet capacity the adjuster moved to.
func (mb *Member) onCapacity(key string, ev *clientv3.Event) {
	if ev.Type != clientv3.EventTypePut {
		return
	}
	var s signal
	if json.Unmarshal(ev.Kv.Value, &s) != nil || s.By == mb.cfg.Name || s.Fleet <= 0 {
		return
	}
	b, ok := mb.backend(key)
	if !ok {
		return
	}
	mb.mu.Lock()
	st := mb.steps[key]
	follows := !st.Adapt && st.Share > 0 && mb.status.Adjuster == s.By
	if follows {
		st.Fleet, st.Capacity = s.Fleet, max(time.Duration(float64(s.Fleet)*st.Share), 1)
		mb.steps[key] = st
		mb.told[key] = s
	}
	mb.mu.Unlock()
	if follows {
		b.Ctl.Share(st.Capacity, false)
	}
}
