package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
	"github.com/gatekeeperdb/gatekeeper/internal/proxy"
	"github.com/gatekeeperdb/gatekeeper/internal/wiring"
)

// A reload refused in part changes nothing: the log's "the running configuration stays"
// must be true.
func TestReloadRefusedInPartChangesNothing(t *testing.T) {
	cur := config.Default()
	srv, costs := reloadable(t, cur)
	next := cur
	next.Estimator.DefaultCost = 77 * time.Millisecond
	next.Admission.Policers = []config.Policer{{Name: "bad", Client: "not an address", Rate: 1, Burst: 1}}
	var logged bytes.Buffer
	r := &reloader{load: func() (config.Config, error) { return next, nil }, cur: cur, srv: srv, costs: costs,
		log: slog.New(slog.NewTextHandler(&logged, nil))}
	if err := r.reload(); err == nil {
		t.Fatal("a policer with a bad client address was accepted")
	}
	if !strings.Contains(logged.String(), "the running configuration stays") {
		t.Errorf("log = %q", logged.String())
	}
	if got := costs.Estimate(estimator.Key(12345)); got != cur.Estimator.DefaultCost {
		t.Errorf("the estimator's default cost is %v after the refused reload, want %v", got, cur.Estimator.DefaultCost)
	}
}

func TestDriverLogGoesToTheStructuredLog(t *testing.T) {
	var out bytes.Buffer
	l := driverLogger{slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l.Print("closing bad idle connection: ", "EOF")
	if s := out.String(); !strings.Contains(s, `"msg":"go-sql-driver"`) || !strings.Contains(s, "closing bad idle connection: EOF") {
		t.Errorf("logged %q", s)
	}
}

// reloadable builds the proxy of cur and its estimator, for a reloader to reload.
func reloadable(t *testing.T, cur config.Config) (*proxy.Server, *estimator.Table) {
	t.Helper()
	costs, err := estimator.New(estimatorConfig(cur.Estimator))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := wiring.Proxy(cur, costs, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return srv, costs
}
