// Package admin serves the proxy's HTTP interface for operators and monitoring: Prometheus
// metrics, liveness and readiness. It reads the state of other components only through the
// small interfaces it declares.
package admin

import (
	"context"
	"encoding/json"
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

// Sources are what the handler reports on. Gatherer and Ready are required; without Types
// or Queue their endpoints answer 404.
type Sources struct {
	Gatherer prometheus.Gatherer
	Ready    Checker
	Types    Types
	Queue    Queue
	Sessions Sessions
	Backends Backends
	// Reload re-reads the configuration and applies what can change at runtime; without
	// it /-/reload answers 404.
	Reload func() error
	// Pprof serves Go's profiles under /debug/pprof/.
	Pprof bool
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
//	POST /-/reload               re-read the configuration (as SIGHUP does)
//	GET  /debug/pprof/...        Go's profiles, when Pprof is set
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
	if src.Reload != nil {
		mux.HandleFunc("POST /-/reload", func(w http.ResponseWriter, r *http.Request) {
			if err := src.Reload(); err != nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "error": err.Error()})
				return
			}
			writeJSON(w, map[string]string{"status": "reloaded"})
		})
	}
	return mux
}

// writeJSON answers v as indented JSON, or 500 with the reason when v holds what JSON
// cannot carry (a NaN), rather than an empty 200.
func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, "encoding the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(body, '\n')) // the client went away: nothing to do
}
