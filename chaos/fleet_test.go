package chaos

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/fleet"
	"github.com/gatekeeperdb/gatekeeper/internal/fleet/etcdtest"
)

// The fleet check's settings: a member syncs every 500 ms and its lease lasts 3 s.
const (
	fleetInterval = 500 * time.Millisecond
	fleetTTL      = 3 * time.Second
	fleetPrefix   = "/chaos/"
	// fleetCapacity is the fleet's fixed capacity, from the shared configuration.
	fleetCapacity = 90 * time.Millisecond
)

// TestFleet runs three proxies as a fleet through a real etcd, with clients on each, and
// kills one (kill -9), stops etcd and starts it again, changes the shared configuration,
// and starts proxies with misspelled settings.
func TestFleet(t *testing.T) {
	const check = "fleet"
	etcd := etcdtest.Start(t)
	etcd.Put(fleetPrefix+"config/admission.capacity", fleetCapacity.String())
	a, b, c := startMemberProxy(t, etcd, "a"), startMemberProxy(t, etcd, "b"), startMemberProxy(t, etcd, "c")
	all := []*gatekeeper{a, b, c}
	waitShares(t, 10*time.Second, "three members, each with a third of the capacity", 3, fleetCapacity, all...)
	loads := map[*gatekeeper]*fleetLoad{}
	for _, g := range all {
		loads[g] = startFleetLoad(t, g)
	}
	time.Sleep(2 * fleetInterval) // the load's demand reaches the shares, still growing
	sum, within := sharesAddUp(t, fleetCapacity, all...)
	time.Sleep(4 * fleetInterval) // settled
	settled, settledWithin := sharesAddUp(t, fleetCapacity, all...)
	report(check, "3 members under load: their capacities add up to %v of the fleet's %v (%s) 1 s after the load began, %v (%s) 2 s later",
		sum.Round(100*time.Microsecond), fleetCapacity, within, settled.Round(100*time.Microsecond), settledWithin)

	c.kill()
	took := waitShares(t, fleetTTL+2*time.Second, "the killed member's share with the others", 2, fleetCapacity, a, b)
	report(check, "kill -9 of a member: its share went to the other two %v after the kill (lease %v)", took.Round(10*time.Millisecond), fleetTTL)
	if took > fleetTTL+time.Second {
		t.Errorf("the killed member's share reached the others %v after the kill; want within the lease (%v) + 1s", took, fleetTTL)
	}

	etcd.Stop()
	waitFor(t, 5*time.Second, "both members to see etcd gone", func() bool {
		return !fleetStatus(t, a).Connected && !fleetStatus(t, b).Connected
	})
	before := [2]time.Duration{memberCapacity(t, a), memberCapacity(t, b)}
	time.Sleep(3 * time.Second) // serving without etcd, past a lease's length
	after := [2]time.Duration{memberCapacity(t, a), memberCapacity(t, b)}
	if before != after {
		t.Errorf("without etcd the members' capacities moved from %v to %v; want the last shares kept", before, after)
	}
	etcd.Restart()
	d := startMemberProxy(t, etcd, "d")
	loads[d] = startFleetLoad(t, d)
	took = waitShares(t, 15*time.Second, "three members again once etcd is back", 3, fleetCapacity, a, b, d)
	report(check, "etcd stopped for %v: the members kept serving on their last shares (%v, %v); back, three members "+
		"share again %v after a new one started", 3*time.Second, after[0], after[1], took.Round(10*time.Millisecond))

	// The shared configuration: a change reaches every member, an invalid one none.
	members := []*gatekeeper{a, b, d}
	changed := time.Now()
	etcd.Put(fleetPrefix+"config/admission.capacity", "120ms")
	applied := waitShares(t, 5*time.Second, "the new capacity applied by every member", 3, 120*time.Millisecond, members...)
	slowest := time.Duration(0)
	for _, g := range members {
		slowest = max(slowest, fleetStatus(t, g).Config.Applied.Sub(changed))
	}
	report(check, "admission.capacity written to etcd: applied by all 3 members within %v (shares in force %v after the write)",
		slowest.Round(time.Millisecond), applied.Round(10*time.Millisecond))
	if slowest > time.Second {
		t.Errorf("a shared setting took %v to be applied by every member; want within 1s", slowest)
	}
	etcd.Put(fleetPrefix+"config/admission.capacty", "200ms")
	waitFor(t, 5*time.Second, "every member to refuse the misspelled key", func() bool {
		for _, g := range members {
			if !strings.Contains(fleetStatus(t, g).Config.Error, "admission.capacity") {
				return false
			}
		}
		return true
	})
	for _, g := range members {
		if f := fleetStatus(t, g).Backends["primary"].Fleet; f != 120*time.Millisecond {
			t.Errorf("%s: the fleet capacity is %v after a refused change; want 120ms kept", g.Addr, f)
		}
	}
	refusal := fleetStatus(t, a).Config.Error
	report(check, "a misspelled key written to etcd: refused by all 3 members, the running configuration kept: %q", refusal)

	// Starting with a misspelled etcd key or environment variable fails, naming the setting.
	out, err := runGatekeeper(t, []string{"serve"}, memberSettings(etcd, "e"), nil)
	if err == nil || !strings.Contains(out, "did you mean admission.capacity") {
		t.Errorf("serve with a misspelled etcd key: %v, printed %q; want a failure naming admission.capacity", err, out)
	}
	out2, err2 := runGatekeeper(t, []string{"serve"}, map[string]string{"backends.primary": env.Primary},
		[]string{"GATEKEEPER_ADMISION_ENABLED=true"})
	if err2 == nil || !strings.Contains(out2, "GATEKEEPER_ADMISSION_ENABLED") {
		t.Errorf("serve with GATEKEEPER_ADMISION_ENABLED: %v, printed %q; want a failure naming GATEKEEPER_ADMISSION_ENABLED", err2, out2)
	}
	report(check, "serve refused a misspelled etcd key (%q) and a misspelled variable (%q)", lastLine(out), lastLine(out2))
	empty := filepath.Join(t.TempDir(), "gatekeeper.yaml")
	if err := os.WriteFile(empty, []byte("mode: passthrough\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = runGatekeeper(t, []string{"check-config", empty}, memberSettings(etcd, "e"), nil)
	if err == nil || !strings.Contains(out, "did you mean admission.capacity") {
		t.Errorf("check-config with a misspelled etcd key: %v, printed %q; want a failure naming admission.capacity", err, out)
	}
	out2, err2 = runGatekeeper(t, []string{"check-config", empty}, map[string]string{}, []string{"GATEKEEPER_ADMISION_ENABLED=true"})
	if err2 == nil || !strings.Contains(out2, "GATEKEEPER_ADMISSION_ENABLED") {
		t.Errorf("check-config with GATEKEEPER_ADMISION_ENABLED: %v, printed %q; want a failure naming GATEKEEPER_ADMISSION_ENABLED", err2, out2)
	}
	report(check, "check-config refused them alike")

	for _, g := range []*gatekeeper{a, b, d} {
		l := loads[g]
		l.stop()
		if n := l.errors.Load(); n > 0 {
			t.Errorf("%s: %d client errors (of %d statements), the first: %v", g.Addr, n, l.done.Load(), l.first.Load())
		}
	}
	report(check, "client errors at the members that were not killed: %d of %d statements",
		loads[a].errors.Load()+loads[b].errors.Load()+loads[d].errors.Load(),
		loads[a].done.Load()+loads[b].done.Load()+loads[d].done.Load())
}

// memberSettings are a fleet member's settings.
func memberSettings(etcd *etcdtest.Server, name string) map[string]string {
	return map[string]string{
		"fleet.etcd": etcd.Endpoint, "fleet.prefix": fleetPrefix, "fleet.name": name,
		"fleet.interval": fleetInterval.String(), "fleet.lease_ttl": fleetTTL.String(), "fleet.dial_timeout": "500ms",
	}
}

// startMemberProxy starts a passthrough proxy that is a member of the fleet.
func startMemberProxy(t *testing.T, etcd *etcdtest.Server, name string) *gatekeeper {
	t.Helper()
	return startGatekeeper(t, config.ModePassthrough, memberSettings(etcd, name))
}

// fleetStatus returns the member's view of the fleet (GET /api/v1/fleet).
func fleetStatus(t *testing.T, g *gatekeeper) fleet.Status {
	t.Helper()
	var st fleet.Status
	if err := g.getJSON("/api/v1/fleet", &st); err != nil {
		t.Fatalf("%s: %v", g.Addr, err)
	}
	return st
}

// memberCapacity is the capacity the member admits against on the primary.
func memberCapacity(t *testing.T, g *gatekeeper) time.Duration {
	return fleetStatus(t, g).Backends["primary"].Capacity
}

// sharesAddUp returns the sum of the members' capacities and how far it is from capacity.
func sharesAddUp(t *testing.T, capacity time.Duration, gs ...*gatekeeper) (time.Duration, string) {
	var sum time.Duration
	for _, g := range gs {
		sum += memberCapacity(t, g)
	}
	return sum, fmt.Sprintf("%+.1f%%", 100*(float64(sum)/float64(capacity)-1))
}

// waitShares waits until every member of gs sees n connected members, holds capacity as the
// fleet's, and their capacities add up to it (within 2%, the members' demands being read
// an interval apart); it returns how long that took.
func waitShares(t *testing.T, within time.Duration, what string, n int, capacity time.Duration, gs ...*gatekeeper) time.Duration {
	t.Helper()
	took, ok := waitUntil(within, func() bool {
		var sum time.Duration
		for _, g := range gs {
			var st fleet.Status
			if g.getJSON("/api/v1/fleet", &st) != nil || !st.Connected || len(st.Members) != n ||
				st.Backends["primary"].Fleet != capacity {
				return false
			}
			sum += st.Backends["primary"].Capacity
		}
		return sum >= capacity*98/100 && sum <= capacity*102/100
	})
	if !ok {
		var views []string
		for _, g := range gs {
			var st fleet.Status
			err := g.getJSON("/api/v1/fleet", &st)
			views = append(views, fmt.Sprintf("%s: connected %v, %d members, backends %+v, config %+v, err %v",
				g.Addr, st.Connected, len(st.Members), st.Backends, st.Config, err))
		}
		t.Fatalf("timed out after %v waiting for %s:\n%s", within, what, strings.Join(views, "\n"))
	}
	return took
}

// fleetLoad is 4 clients of one proxy running short statements until stopped.
type fleetLoad struct {
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	done, errors atomic.Int64
	first        atomic.Value
}

func startFleetLoad(t *testing.T, g *gatekeeper) *fleetLoad {
	t.Helper()
	db, err := sql.Open("mysql", dsn("tcp", g.Addr, ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	l := &fleetLoad{cancel: cancel}
	for range 4 {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for ctx.Err() == nil {
				_, err := db.ExecContext(ctx, "DO SLEEP(0.01)")
				switch {
				case ctx.Err() != nil:
				case err != nil:
					l.errors.Add(1)
					l.first.CompareAndSwap(nil, err.Error())
				default:
					l.done.Add(1)
				}
			}
		}()
	}
	t.Cleanup(l.stop)
	return l
}

func (l *fleetLoad) stop() {
	l.cancel()
	l.wg.Wait()
}

// runGatekeeper runs the binary with args, settings as GATEKEEPER_* variables and extra
// variables, for at most 15 s, and returns what it printed and how it ended.
func runGatekeeper(t *testing.T, args []string, settings map[string]string, extra []string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Gatekeeper, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, config.EnvPrefix+"_") && !strings.HasPrefix(kv, "NOTIFY_SOCKET=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	settings["listen"] = "127.0.0.1:" + freePort(t)
	settings["admin.listen"] = "127.0.0.1:" + freePort(t)
	for k, v := range settings {
		cmd.Env = append(cmd.Env, config.EnvName(k)+"="+v)
	}
	cmd.Env = append(cmd.Env, extra...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// lastLine is the last line s holds.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
