package routing_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
)

// schema is the sessions' schema: the tables a statement does not qualify are its.
const schema = "db"

// fixture is a routing policy over a primary and replicas whose positions the test
// records, as their monitors would.
type fixture struct {
	t      *testing.T
	router *replicas.Router
	policy *routing.Policy
	reg    *prometheus.Registry
}

// newFixture returns the policy of cfg over a primary and n replicas, all up at the empty
// position, with the closure read (no triggers, cascades or views), so that writes are
// recorded per table. The lag bound is an hour: no replica is shunned for its lag.
func newFixture(t *testing.T, cfg routing.Config, n int) *fixture {
	t.Helper()
	rc := replicas.Config{Primary: "primary:3306", MaxLag: time.Hour, PollInterval: cfg.Poll}
	for i := range n {
		rc.Replicas = append(rc.Replicas, fmt.Sprintf("replica%d:3306", i+1))
	}
	versions := replicas.NewVersions()
	closure := replicas.NewClosure()
	closure.Close()
	require.True(t, versions.SetClosure(versions.Generation(), closure))
	log := slog.New(slog.DiscardHandler)
	f := &fixture{t: t, router: replicas.NewRouter(rc, versions, log), reg: prometheus.NewRegistry()}
	f.policy = routing.New(cfg, f.router, nil, log, f.reg)
	f.record(f.router.Primary(), nil) // first: until the primary is seen, no replica is
	for _, b := range f.router.Replicas() {
		f.record(b, nil)
	}
	return f
}

// replica returns the i-th replica, counted from 1 as replicas.Backend.Index counts.
func (f *fixture) replica(i int) *replicas.Backend { return f.router.Replicas()[i-1] }

// record makes the router see b at position p now.
func (f *fixture) record(b *replicas.Backend, p replicas.Pos) {
	f.router.Record(b, p, nil, time.Now())
}

// need returns what a strong read of table (schema.name) needs, and whether that is known.
func (f *fixture) need(table string) (string, bool) {
	need, known := f.router.Versions().Need(nil, [][]byte{[]byte(table)}, false)
	return need.String(), known
}

// metrics returns the samples of the metric called name.
func (f *fixture) metrics(name string) []*dto.Metric {
	f.t.Helper()
	families, err := f.reg.Gather()
	require.NoError(f.t, err)
	for _, mf := range families {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	return nil
}

// reads returns gatekeeper_reads_total of backend b and reason r.
func (f *fixture) reads(b *replicas.Backend, r routing.Reason) float64 {
	for _, m := range f.metrics("gatekeeper_reads_total") {
		if label(m, "backend") == b.Addr && label(m, "reason") == r.String() {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// readsTotal returns gatekeeper_reads_total summed over backends and reasons.
func (f *fixture) readsTotal() float64 {
	var sum float64
	for _, m := range f.metrics("gatekeeper_reads_total") {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

// causalWaits returns how many waits gatekeeper_causal_wait_seconds observed, and their
// sum in seconds.
func (f *fixture) causalWaits() (uint64, float64) {
	ms := f.metrics("gatekeeper_causal_wait_seconds")
	require.Len(f.t, ms, 1)
	h := ms[0].GetHistogram()
	return h.GetSampleCount(), h.GetSampleSum()
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// statement returns a statement of kind over the tables (and hints) of sql, kept as the
// session's Fill keeps them; a copy, which the session's next Fill leaves alone.
func statement(s *routing.Session, kind classify.Kind, sql string) *routing.Statement {
	return &routing.Statement{Kind: kind, Tables: s.Fill(classify.New().Classify([]byte(sql)), schema).Clone()}
}

// read returns a read of the tables of sql.
func read(s *routing.Session, sql string) *routing.Statement {
	return statement(s, classify.Read, sql)
}

// write returns a write of the tables of sql.
func write(s *routing.Session, sql string) *routing.Statement {
	return statement(s, classify.Write, sql)
}

// route routes st as an autocommit statement outside a transaction.
func route(s *routing.Session, st *routing.Statement) routing.Decision {
	return s.Route(context.Background(), &routing.Unit{Stmt: st, Autocommit: true})
}

// commit acknowledges st as committed at the GTIDs of gtids (0-1-5,1-2-3).
func commit(t *testing.T, s *routing.Session, st *routing.Statement, gtids string) {
	t.Helper()
	s.Ack(st, &routing.Response{AffectedRows: 1, GTIDs: pos(t, gtids)})
}

func pos(t *testing.T, s string) replicas.Pos {
	t.Helper()
	p, err := replicas.ParsePos(s)
	require.NoError(t, err)
	return p
}

// assertOutstanding checks the estimated work and the number of reads outstanding on b.
func assertOutstanding(t *testing.T, b *replicas.Backend, work time.Duration, n int64) {
	t.Helper()
	gotWork, gotN := b.Outstanding()
	require.Equal(t, work, gotWork, "outstanding work on %s", b.Addr)
	require.Equal(t, n, gotN, "outstanding reads on %s", b.Addr)
}
