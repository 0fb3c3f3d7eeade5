package main

import (
	"math"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/binlog"
	"github.com/gatekeeperdb/gatekeeper/internal/proxy"
)

// sessionsSource serves /api/v1/sessions and /api/v1/backends from the proxy.
type sessionsSource struct {
	srv     *proxy.Server
	primary string
}

func (s sessionsSource) Sessions() admin.SessionsResponse {
	r := admin.SessionsResponse{Time: time.Now(), Mode: s.srv.Mode(), Sessions: []admin.SessionInfo{}}
	for _, v := range s.srv.Sessions() {
		r.Sessions = append(r.Sessions, admin.SessionInfo{
			ID: v.ID, User: v.User, Client: v.Client, Schema: v.Schema, State: v.State,
			Backend: v.Backend, BackendThread: v.BackendThread, Pins: v.Pins, Credential: v.Credential,
			Since: v.Since,
		})
	}
	return r
}

func (s sessionsSource) Backends() admin.BackendsResponse {
	r := admin.BackendsResponse{Time: time.Now(), Mode: s.srv.Mode()}
	pools := s.srv.Pools()
	if len(pools) == 0 {
		r.Backends = append(r.Backends, admin.BackendInfo{Addr: s.primary, Role: "primary", ClientSessions: s.srv.Open()})
		return r
	}
	router := s.srv.Router()
	ctls := s.srv.BackendAdmission()
	for i, p := range pools {
		st := p.Stats()
		info := admin.BackendInfo{
			Addr: st.Addr, Role: "primary", Open: st.Open, Idle: st.Idle, Leased: st.Leased,
			Waiting: st.Waiting, MaxOpen: st.Limit,
		}
		if i == 0 {
			info.ClientSessions = s.srv.Open()
		}
		if router != nil {
			b := router.Primary()
			if i > 0 {
				b = router.Replicas()[i-1]
				info.Role = "replica"
				rs := b.Status()
				info.Replica = &admin.Replica{Up: rs.Up, Shunned: rs.Shunned, Replicating: rs.Replicating,
					Position: rs.Pos.String(), LagTransactions: rs.LagTxns, LagSeconds: rs.LagSeconds,
					Error: rs.Err, Checked: rs.Checked}
			}
			_, info.OutstandingReads = b.Outstanding()
			if i < len(ctls) {
				a := ctls[i].Snapshot()
				info.Admission = &admin.BackendAdmission{CapacityMS: ms(a.Capacity), LoadMS: ms(a.Load),
					Running: a.Running, Queued: a.Queued}
			}
		}
		r.Backends = append(r.Backends, info)
	}
	if policy := s.srv.Routing(); policy != nil {
		v := router.Versions()
		rc := s.srv.RoutingConfig()
		r.Routing = &admin.RoutingInfo{Consistency: rc.Consistency, Balance: rc.Balance,
			ClosureLoaded: v.ClosureLoaded(), Floor: v.Floor().String(), Tables: v.Tables(),
			StrongRule: policy.Rule().String()}
		positions, follower := policy.Writes()
		pr, _ := positions.(positionStats)
		f, _ := follower.(followerStatus)
		r.Routing.Follower, r.Routing.PositionReads = binlogInfo(f, pr)
	}
	return r
}

// followerStatus and positionStats are what the backends view reads of the binlog
// follower and of the position reads, where the strong rule has them.
type (
	followerStatus interface{ Status() binlog.Status }
	positionStats  interface{ Stats() (reads, served uint64) }
)

var (
	_ followerStatus = (*binlog.Follower)(nil)
	_ positionStats  = (*binlog.Positions)(nil)
)

// binlogInfo describes the follower and the position reads; nil for each one absent. A
// lag not known yet (NaN) is left out: JSON has no NaN.
func binlogInfo(f followerStatus, p positionStats) (*admin.BinlogFollower, *admin.PositionReads) {
	var follower *admin.BinlogFollower
	if f != nil {
		st := f.Status()
		follower = &admin.BinlogFollower{Live: st.Live, Refused: st.Denied, Position: st.Pos.String(), ServerID: st.ServerID}
		if !math.IsNaN(st.LagTransactions) && !math.IsNaN(st.LagSeconds) {
			txns, secs := uint64(st.LagTransactions), st.LagSeconds
			follower.LagTransactions, follower.LagSeconds = &txns, &secs
		}
	}
	var reads *admin.PositionReads
	if p != nil {
		n, served := p.Stats()
		reads = &admin.PositionReads{Reads: n, Statements: served}
		if n > 0 {
			reads.StatementsPerRead = float64(served) / float64(n)
		}
	}
	return follower, reads
}
