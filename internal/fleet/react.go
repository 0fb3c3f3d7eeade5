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
	// maxHold bounds a hold whatever a signal says: a check waits up to
	// admission.DrainWait for the others to drain and then lasts Interval/8 of the
	// adaptive capacity (250 ms by default); one whose end is lost ends anyway.
	maxHold = 2 * time.Second
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
	// Check names a solo check, for the others' word that they drained for it.
	Check int64 `json:"check,omitempty"`
}

// A solo check, as the adjuster tells it: the others hold, and each writes
// <prefix>drained/<backend>/<name> once its own running units there have ended; when every
// other member has, the adjuster's units run alone in the database and the check times
// them (Controller.Drained), for its full length from then.

// check is a solo check the adjuster told, by backend.
type check struct {
	id      int64
	drained bool
}

// hold is another member's solo check this member holds for, by backend.
type hold struct {
	id    int64
	acked bool
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
	checks := map[string]*check{}
	told := map[string]time.Duration{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if mb.isLeader() {
				mb.tell(ctx, checks, told)
			}
			mb.ack(ctx)
		}
	}
}

// tell publishes the solo checks that began, drained or ended and the moves of the fleet's
// capacity since the last look; checks and told are what was told last, by backend.
func (mb *Member) tell(ctx context.Context, checks map[string]*check, told map[string]time.Duration) {
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
		key := mb.cfg.Prefix + "probe/" + b.Key
		switch c := checks[b.Key]; {
		case on && c == nil:
			c = &check{id: time.Now().UnixNano()}
			checks[b.Key] = c
			mb.put(ctx, key, signal{By: mb.cfg.Name, For: time.Until(until), Check: c.id}, lease)
		case on && !c.drained && mb.othersDrained(ctx, b.Key, c.id):
			if until, ok := b.Ctl.Drained(); ok {
				c.drained = true // the others hold on until the check's new end
				mb.put(ctx, key, signal{By: mb.cfg.Name, For: time.Until(until), Check: c.id}, lease)
			}
		case !on && c != nil:
			delete(checks, b.Key)
			mb.del(ctx, key)
			mb.del(ctx, mb.cfg.Prefix+"drained/"+b.Key+"/", clientv3.WithPrefix())
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

func (mb *Member) del(ctx context.Context, key string, opts ...clientv3.OpOption) {
	ctx, cancel := context.WithTimeout(ctx, mb.cfg.DialTimeout)
	defer cancel()
	_, _ = mb.cli.Delete(ctx, key, opts...)
}

// othersDrained tells whether every other member the last sync saw has written that it
// drained the backend for check id.
func (mb *Member) othersDrained(ctx context.Context, backend string, id int64) bool {
	mb.mu.Lock()
	others := make([]string, 0, len(mb.status.Members))
	for _, m := range mb.status.Members {
		if m.Name != mb.cfg.Name {
			others = append(others, m.Name)
		}
	}
	mb.mu.Unlock()
	if len(others) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, mb.cfg.DialTimeout)
	defer cancel()
	pfx := mb.cfg.Prefix + "drained/" + backend + "/"
	resp, err := mb.cli.Get(ctx, pfx, clientv3.WithPrefix())
	if err != nil {
		return false
	}
	acked := map[string]bool{}
	for _, kv := range resp.Kvs {
		var s signal
		if json.Unmarshal(kv.Value, &s) == nil && s.Check == id {
			acked[strings.TrimPrefix(string(kv.Key), pfx)] = true
		}
	}
	for _, o := range others {
		if !acked[o] {
			return false
		}
	}
	return true
}

// ack writes, for each backend held for another member's solo check, that this member's
// running units there have ended.
func (mb *Member) ack(ctx context.Context) {
	mb.mu.Lock()
	lease := mb.lease
	var due []string
	for key, h := range mb.holds {
		if !h.acked {
			due = append(due, key)
		}
	}
	mb.mu.Unlock()
	for _, key := range due {
		b, ok := mb.backend(key)
		if !ok || lease == 0 || b.Ctl.Running() > 0 {
			continue
		}
		mb.mu.Lock()
		h, ok := mb.holds[key]
		mb.mu.Unlock()
		if !ok || !mb.put(ctx, mb.cfg.Prefix+"drained/"+key+"/"+mb.cfg.Name, signal{By: mb.cfg.Name, Check: h.id}, lease) {
			continue
		}
		mb.mu.Lock()
		if cur, ok := mb.holds[key]; ok && cur.id == h.id {
			cur.acked = true
			mb.holds[key] = cur
		}
		mb.mu.Unlock()
	}
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
		mb.mu.Lock()
		delete(mb.holds, key)
		mb.mu.Unlock()
		return
	}
	var s signal
	if json.Unmarshal(ev.Kv.Value, &s) != nil || s.By == mb.cfg.Name || mb.step(key).Adapt {
		return
	}
	b.Ctl.Hold(time.Now().Add(min(max(s.For, 0), maxHold)))
	mb.mu.Lock()
	if h, ok := mb.holds[key]; !ok || h.id != s.Check {
		mb.holds[key] = hold{id: s.Check}
	}
	mb.mu.Unlock()
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
