// Package admin serves the proxy's HTTP interface for operators and monitoring: Prometheus
// metrics, liveness and readiness. It reads the state of other components only through the
// small interfaces it declares.
package admin

import (
	"context"
	"net/http"
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

// Handler returns the admin HTTP handler:
//
//	/metrics  Prometheus metrics from g
//	/healthz  200 while the process runs
//	/readyz   200 when ready says so, else 503 with the reason
func Handler(g prometheus.Gatherer, ready Checker) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := ready.Check(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + err.Error() + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}
