package main

import (
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
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
	for _, p := range pools {
		st := p.Stats()
		r.Backends = append(r.Backends, admin.BackendInfo{
			Addr: st.Addr, Role: "primary", Open: st.Open, Idle: st.Idle, Leased: st.Leased,
			Waiting: st.Waiting, MaxOpen: st.Limit, ClientSessions: s.srv.Open(),
		})
	}
	return r
}
