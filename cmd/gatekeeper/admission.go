package main

import (
	"fmt"
	"log/slog"
	"reflect"
	"sync"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
	"github.com/gatekeeperdb/gatekeeper/internal/proxy"
	"github.com/gatekeeperdb/gatekeeper/internal/wiring"
)

// queueListLimit bounds the units /api/v1/queue lists.
const queueListLimit = 1000

// queueSource answers /api/v1/queue from the admission controller.
type queueSource struct {
	srv   *proxy.Server
	costs *estimator.Table
	// enabled reads admission.enabled as last loaded.
	enabled func() bool
}

func (q queueSource) Queue() admin.QueueResponse {
	ctl := q.srv.Admission()
	s := ctl.Snapshot()
	r := admin.QueueResponse{
		Time: s.Time, Enabled: q.enabled(), Discipline: s.Discipline.String(), Aging: s.Aging,
		LastCallMS: ms(s.LastCall),
		Queued:     s.Queued, InFlight: s.Running,
		LoadMS: ms(s.Load), CapacityMS: ms(s.Capacity), OpenTransactions: s.OpenTxns,
		Admitted:  s.Admitted,
		Rejected:  s.QueueFull + s.NewSessionRefused + s.SessionAborted,
		TimedOut:  s.TimedOut,
		ReserveMS: ms(s.Reserve),
	}
	if s.Reserve > 0 {
		r.LengthyLane, r.LengthyParked, r.LengthyLaneRate = s.Lane, s.Parked, s.LaneRate
	}
	if a := s.Auto; a.Enabled {
		r.Adaptive = &admin.AdaptiveCapacity{MinMS: ms(a.Min), MaxMS: ms(a.Max), Last: a.Last.String(),
			Stretch: a.Stretch, Target: a.Target, Gain: a.Gain, Moved: a.Moved, SizeFloorMS: ms(a.SizeFloor),
			Parallelism: a.Parallelism, MaxRunning: a.MaxRunning, Law: a.Law.String(), Phase: a.Phase.String(),
			Error: a.Error, Move: a.Move, ProbeS: a.Probing.Seconds()}
	}
	if s.ActiveLimit > 0 {
		r.Sessions = &admin.SessionGate{
			ActiveLimit: s.ActiveLimit, Active: s.Active, Blocked: s.Blocked,
			BlockingQueue: s.BlockingQueue, AdmitNew: s.AdmitNew, Overload: s.Overload,
			NewRefused: s.NewSessionRefused, Aborted: s.SessionAborted,
		}
	}
	waiting := ctl.Waiting(queueListLimit)
	r.Waiting = make([]admin.QueueEntry, 0, len(waiting))
	var samples map[estimator.Key]string
	if len(waiting) > 0 && q.costs != nil {
		samples = map[estimator.Key]string{}
		for _, t := range q.costs.Snapshot() {
			samples[t.Key] = t.Sample
		}
	}
	for _, w := range waiting {
		r.Waiting = append(r.Waiting, admin.QueueEntry{
			Type: fmt.Sprintf("%016x", w.Type), Sample: samples[estimator.Key(w.Type)],
			Conn: w.Conn, CostMS: ms(w.Cost), WaitedMS: ms(w.Waited), Blocked: w.Blocked,
			Parked: w.Parked,
		})
	}
	return r
}

// reloader re-reads the configuration on SIGHUP or POST /-/reload and applies what can
// change while running: admission.* and the estimator's averaging. The rest needs a
// restart, which the log says.
type reloader struct {
	mu      sync.Mutex
	load    func() (config.Config, error)
	cur     config.Config
	srv     *proxy.Server
	costs   *estimator.Table
	log     *slog.Logger
	enabled bool
	// accounts are pooled mode's, whose users file a reload reads again; nil otherwise.
	accounts *accounts
}

// current returns the configuration in force.
func (r *reloader) current() config.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

func (r *reloader) admissionEnabled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.enabled
}

func (r *reloader) reload() error {
	next, err := r.load()
	if err != nil {
		r.log.Error("configuration reload refused; the running configuration stays", "err", err)
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// The rules are compiled before anything changes: a set that does not compile refuses
	// the reload whole.
	ruleSet, warnings, err := wiring.Rules(r.srv.Rules(), next.Rules)
	if err != nil {
		r.log.Error("configuration reload refused; the running configuration stays", "err", err)
		return err
	}
	// Admission first: if it refuses the new settings nothing has changed yet; if the
	// estimator then refuses its own, admission goes back to the running settings. Either
	// way the running configuration stays whole, as the log line says.
	adm, err := wiring.Admission(next.Admission)
	if err == nil {
		err = r.srv.ReloadAdmission(adm)
	}
	if err != nil {
		r.log.Error("configuration reload refused; the running configuration stays", "err", err)
		return err
	}
	if err := r.costs.Reconfigure(estimatorConfig(next.Estimator)); err != nil {
		if rerr := r.restoreAdmission(); rerr != nil {
			r.log.Error("cannot restore the running admission settings", "err", rerr)
		}
		r.log.Error("configuration reload refused; the running configuration stays", "err", err)
		return err
	}
	r.srv.SetBackendCPUs(next.Estimator.BackendCPUs)
	r.srv.SetRules(ruleSet)
	for _, w := range warnings {
		r.log.Warn("query rule", "warning", w.String())
	}
	r.srv.ReconfigureCache(next.Cache)
	if r.accounts != nil {
		r.accounts.file = next.Auth.UsersFile
		if err := r.accounts.reload(); err != nil {
			r.log.Error("cannot read the users file again; the accounts stay as they were", "err", err)
		}
	}
	// What a reload cannot apply: every section but admission, estimator averaging, the
	// rules and the cache's bounds.
	cur, nxt := r.cur, next
	cur.Admission, nxt.Admission = config.Admission{}, config.Admission{}
	cur.Auth.UsersFile, nxt.Auth.UsersFile = "", ""
	cur.Rules, nxt.Rules = nil, nil
	cur.Cache.MaxBytes, cur.Cache.MaxEntryBytes, cur.Cache.Wait = 0, 0, 0
	nxt.Cache.MaxBytes, nxt.Cache.MaxEntryBytes, nxt.Cache.Wait = 0, 0, 0
	cur.Estimator.Weight, cur.Estimator.Window, cur.Estimator.DefaultCost, cur.Estimator.BackendCPUs = 0, 0, 0, 0
	nxt.Estimator.Weight, nxt.Estimator.Window, nxt.Estimator.DefaultCost, nxt.Estimator.BackendCPUs = 0, 0, 0, 0
	var restart []string
	cv, nv := reflect.ValueOf(cur), reflect.ValueOf(nxt)
	for i := range cv.NumField() {
		if !reflect.DeepEqual(cv.Field(i).Interface(), nv.Field(i).Interface()) {
			restart = append(restart, reflect.TypeOf(cur).Field(i).Tag.Get("mapstructure"))
		}
	}
	r.cur = next
	r.enabled = next.Admission.Enabled
	a := next.Admission
	r.log.Info("configuration reloaded", "admission.enabled", a.Enabled, "admission.capacity", a.Capacity,
		"admission.discipline", a.Discipline, "admission.aging", a.Aging, "admission.last_call", a.LastCallFor())
	if len(restart) > 0 {
		r.log.Warn("configuration changes that need a restart were not applied", "sections", restart)
	}
	return nil
}

// restoreAdmission applies the running admission settings again.
func (r *reloader) restoreAdmission() error {
	adm, err := wiring.Admission(r.cur.Admission)
	if err != nil {
		return err
	}
	return r.srv.ReloadAdmission(adm)
}

func estimatorConfig(c config.Estimator) estimator.Config {
	return estimator.Config{Weight: c.Weight, Window: c.Window, MaxTypes: c.MaxTypes, DefaultCost: c.DefaultCost}
}
