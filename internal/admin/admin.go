// Package admin serves the proxy's HTTP interface for operators and monitoring: Prometheus
// metrics, liveness and readiness, the JSON API, and a Guard that asks callers who they
// are. It reads the state of other components only through the small interfaces it
// declares.
package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Checker reports whether a dependency is ready; nil means ready.
type Checker interface {
	Check(ctx context.Context) error
}

// CheckFunc adapts a function to Checker.
type CheckFunc func(ctx context.Context) error

// Check calls f.
func (f CheckFunc) Check(ctx context.Context) error { return f(ctx) }

// Types is the source of GET /api/v1/types and of its reset.
type Types interface {
	// Types returns the current statistics of every request type.
	Types() TypesResponse
	// ResetTypes forgets every estimate: each type starts again from the default cost.
	ResetTypes()
}

// Queue is the source of GET /api/v1/queue.
type Queue interface {
	Queue() QueueResponse
}

// Sessions is the source of GET /api/v1/sessions.
type Sessions interface {
	Sessions() SessionsResponse
}

// Backends is the source of GET /api/v1/backends.
type Backends interface {
	Backends() BackendsResponse
}

// Cache is the source of GET /api/v1/cache.
type Cache interface {
	// Cache returns what the result cache holds and did; ok is false while it is off.
	Cache() (r CacheResponse, ok bool)
}

// Rules is the source of GET /api/v1/rules.
type Rules interface {
	Rules() RulesResponse
}

// Fleet is the source of GET /api/v1/fleet.
type Fleet interface {
	// Fleet returns the member's view of the fleet, as JSON; ok is false without a fleet.
	Fleet() (v any, ok bool)
}

// FleetOff is the reason GET /api/v1/fleet gives, with 404, when the proxy is alone.
const FleetOff = "this proxy is not in a fleet: set fleet.etcd to the fleet's etcd endpoints and restart (docs/fleet.md)"

// Writes is the source of the topology and of the pause of writes for a switchover.
type Writes interface {
	// Topology returns the servers' roles and the state of writes, as JSON.
	Topology() any
	// PauseWrites stops new writes and returns once none is in flight, or fails within
	// timeout (writes then go on); ErrPauseRefused when writes cannot be paused here.
	PauseWrites(ctx context.Context, timeout time.Duration) (any, error)
	// ResumeWrites ends a pause; false when writes were not paused.
	ResumeWrites() bool
}

// ErrPauseRefused: writes cannot be paused (passthrough mode, roles not read, paused
// already).
var ErrPauseRefused = errors.New("writes cannot be paused")

// CacheOff is the reason GET /api/v1/cache gives, with 404, while the result cache is off.
const CacheOff = "the result cache is off: set cache.mode to rules or auto (mode: pooled) and restart"

// Sources are what the handler reports on. Gatherer and Ready are required; without one of
// the others its endpoints answer 404.
type Sources struct {
	Gatherer prometheus.Gatherer
	Ready    Checker
	Types    Types
	Queue    Queue
	Sessions Sessions
	Backends Backends
	Cache    Cache
	Rules    Rules
	Fleet    Fleet
	// Reload re-reads the configuration and applies what can change at runtime; without
	// it /-/reload answers 404.
	Reload func() error
	// Handover hands the proxy over to a new process running the binary on disk, and
	// answers once that process serves; without it /-/handover answers 404.
	Handover func(ctx context.Context) (HandoverResponse, error)
	// Writes is the topology and the pause of writes; without it their endpoints answer
	// 404.
	Writes Writes
	// Pprof serves Go's profiles under /debug/pprof/.
	Pprof bool
	// Guard, when set, asks callers who they are before any endpoint answers (see Guard);
	// without it every endpoint is open.
	Guard *Guard
}

// Handler returns the admin HTTP handler:
//
//	GET  /metrics                Prometheus metrics
//	GET  /healthz                200 while the process runs
//	GET  /readyz                 200 when ready, else 503 with the reason
//	GET  /api/v1/types           request types and their estimated costs (TypesResponse)
//	POST /api/v1/types/reset     forget every estimate
//	GET  /api/v1/queue           the admission queue (QueueResponse)
//	GET  /api/v1/sessions        client sessions, their backend and pins (SessionsResponse)
//	GET  /api/v1/backends        backends and their pools (BackendsResponse)
//	GET  /api/v1/cache           the result cache and what it did per type (CacheResponse);
//	                             404 with CacheOff while it is off
//	GET  /api/v1/rules           the query rules and their counts (RulesResponse)
//	GET  /api/v1/fleet           the fleet: members, shares, demand, etcd, the shared
//	                             configuration; 404 with FleetOff when alone
//	POST /-/reload               re-read the configuration (as SIGHUP does)
//	POST /-/handover             hand over to a new process (as SIGUSR2 does); 200 once it
//	                             serves (HandoverResponse), 409 when it refused, 503 otherwise
//	GET  /api/v1/topology        the servers' roles and the state of writes (failover)
//	POST /api/v1/backends/pause-writes?timeout=10s
//	                             stop new writes; 200 once none is in flight, 409 when
//	                             they cannot be paused, 503 when they did not end in time
//	POST /api/v1/backends/resume-writes
//	                             writes go on, to the primary the roles name now
//	GET  /debug/pprof/...        Go's profiles, when Pprof is set
//
// With a Guard, every endpoint, those added later included, is behind it: a request it
// refuses gets 401 before any route is looked up.
func Handler(src Sources) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(src.Gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := src.Ready.Check(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + err.Error() + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	if src.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	if src.Types != nil {
		mux.HandleFunc("GET /api/v1/types", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, src.Types.Types())
		})
		mux.HandleFunc("POST /api/v1/types/reset", func(w http.ResponseWriter, r *http.Request) {
			src.Types.ResetTypes()
			writeJSON(w, map[string]string{"status": "reset"})
		})
	}
	if src.Queue != nil {
		mux.HandleFunc("GET /api/v1/queue", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, src.Queue.Queue())
		})
	}
	if src.Sessions != nil {
		mux.HandleFunc("GET /api/v1/sessions", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, src.Sessions.Sessions())
		})
	}
	if src.Backends != nil {
		mux.HandleFunc("GET /api/v1/backends", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, src.Backends.Backends())
		})
	}
	if src.Cache != nil {
		mux.HandleFunc("GET /api/v1/cache", func(w http.ResponseWriter, r *http.Request) {
			c, ok := src.Cache.Cache()
			if !ok {
				writeError(w, http.StatusNotFound, CacheOff)
				return
			}
			writeJSON(w, c)
		})
	}
	if src.Fleet != nil {
		mux.HandleFunc("GET /api/v1/fleet", func(w http.ResponseWriter, r *http.Request) {
			v, ok := src.Fleet.Fleet()
			if !ok {
				writeError(w, http.StatusNotFound, FleetOff)
				return
			}
			writeJSON(w, v)
		})
	}
	if src.Rules != nil {
		mux.HandleFunc("GET /api/v1/rules", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, src.Rules.Rules())
		})
	}
	if src.Reload != nil {
		mux.HandleFunc("POST /-/reload", func(w http.ResponseWriter, r *http.Request) {
			if err := src.Reload(); err != nil {
				writeError(w, http.StatusBadRequest, err.Error())
				return
			}
			writeJSON(w, map[string]string{"status": "reloaded"})
		})
	}
	if src.Handover != nil {
		mux.HandleFunc("POST /-/handover", func(w http.ResponseWriter, r *http.Request) {
			res, err := src.Handover(r.Context())
			switch {
			case errors.Is(err, ErrHandoverRefused):
				writeError(w, http.StatusConflict, err.Error())
			case err != nil:
				writeError(w, http.StatusServiceUnavailable, err.Error())
			default:
				writeJSON(w, res)
			}
		})
	}
	if src.Writes != nil {
		writesHandlers(mux, src.Writes)
	}
	if src.Guard != nil {
		return src.Guard.Wrap(mux)
	}
	return mux
}

// HandoverResponse is the answer of POST /-/handover: the process that handed over, the
// one that took over, and its version.
type HandoverResponse struct {
	Status  string `json:"status"`
	OldPID  int    `json:"old_pid"`
	NewPID  int    `json:"new_pid"`
	Version string `json:"version"`
}

// ErrHandoverRefused is the error of a hand-over the new process refused; the old one
// goes on serving.
var ErrHandoverRefused = errors.New("the new process refused the hand-over")

// writeError answers code with the reason as JSON: {"status": "error", "error": reason}.
func writeError(w http.ResponseWriter, code int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "error": reason}) // the client went away: nothing to do
}

// writeJSON answers v as indented JSON, or 500 with the reason when v holds what JSON
// cannot carry (a NaN), rather than an empty 200. Statements and rules keep their < and >
// as they are, for whoever reads the answer with curl.
func writeJSON(w http.ResponseWriter, v any) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		http.Error(w, "encoding the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body.Bytes()) // the client went away: nothing to do
}

// writesHandlers serves the topology and the pause of writes.
func writesHandlers(mux *http.ServeMux, w Writes) {
	mux.HandleFunc("GET /api/v1/topology", func(rw http.ResponseWriter, r *http.Request) {
		writeJSON(rw, w.Topology())
	})
	mux.HandleFunc("POST /api/v1/backends/pause-writes", func(rw http.ResponseWriter, r *http.Request) {
		timeout := 10 * time.Second
		if t := r.URL.Query().Get("timeout"); t != "" {
			d, err := time.ParseDuration(t)
			if err != nil || d <= 0 {
				writeError(rw, http.StatusBadRequest, fmt.Sprintf("timeout %q: give a positive duration, such as 10s", t))
				return
			}
			timeout = d
		}
		res, err := w.PauseWrites(r.Context(), timeout)
		switch {
		case errors.Is(err, ErrPauseRefused):
			writeError(rw, http.StatusConflict, err.Error())
		case err != nil:
			writeError(rw, http.StatusServiceUnavailable, err.Error())
		default:
			writeJSON(rw, res)
		}
	})
	mux.HandleFunc("POST /api/v1/backends/resume-writes", func(rw http.ResponseWriter, r *http.Request) {
		if !w.ResumeWrites() {
			writeError(rw, http.StatusConflict, "writes are not paused")
			return
		}
		writeJSON(rw, map[string]string{"status": "resumed"})
	})
}
