package binlog

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// newTestFollower returns a follower of no primary, live at position 0-1-10, recording in a
// version map whose closure is loaded (so that writes are kept per table); ddls counts the
// closure reloads it asked for.
func newTestFollower(t *testing.T) (f *Follower, v *replicas.Versions, ddls *int) {
	t.Helper()
	v = replicas.NewVersions()
	c := replicas.NewClosure()
	c.Close()
	require.True(t, v.SetClosure(v.Generation(), c))
	ddls = new(int)
	m := NewMetrics(prometheus.NewRegistry(), nil)
	f = New(Config{Addr: "127.0.0.1:1", ServerID: 7}, v, func() { *ddls++ }, slog.New(slog.DiscardHandler), m)
	f.pos = replicas.Pos{{Domain: 0, Server: 1, Seq: 10}}
	f.started(f.pos)
	return f, v, ddls
}

func event(e replication.Event) *replication.BinlogEvent {
	return &replication.BinlogEvent{Header: &replication.EventHeader{}, Event: e}
}

func gtid(seq uint64, flags byte) *replication.BinlogEvent {
	return event(&replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: seq}, Flags: flags})
}

func rows(schema, table string) *replication.BinlogEvent {
	return event(&replication.RowsEvent{Table: &replication.TableMapEvent{Schema: []byte(schema), Table: []byte(table)}})
}

func query(schema, q string) *replication.BinlogEvent {
	return event(&replication.QueryEvent{Schema: []byte(schema), Query: []byte(q)})
}

var xid = event(&replication.XIDEvent{})

// need returns what a strong read of schema.table needs, by the version map.
func need(t *testing.T, v *replicas.Versions, schema, table string) string {
	t.Helper()
	p, ok := v.Need(nil, [][]byte{replicas.TableKey(nil, []byte(schema), []byte(table))}, false)
	require.True(t, ok)
	return p.String()
}

// TestFollowerRecordsCommittedTransactions: each transaction of the log raises the versions
// of the tables it wrote at its commit, whatever its shape: rows, statements, a standalone
// statement, DDL, and what the classifier cannot read.
func TestFollowerRecordsCommittedTransactions(t *testing.T) {
	tests := []struct {
		name   string
		events []*replication.BinlogEvent
		// want: what reads of shop.a and shop.b need after them; ddls the closure reloads.
		wantA, wantB string
		ddls         int
	}{
		{name: "rows, then XID", events: []*replication.BinlogEvent{gtid(11, 0), rows("shop", "a"), xid},
			wantA: "0-1-11", wantB: ""},
		{name: "nothing before the commit", events: []*replication.BinlogEvent{gtid(11, 0), rows("shop", "a")},
			wantA: "", wantB: ""},
		{name: "rows of two tables", events: []*replication.BinlogEvent{gtid(11, 0), rows("shop", "a"), rows("SHOP", "B"), xid},
			wantA: "0-1-11", wantB: "0-1-11"},
		{name: "a statement logged as text, schema from the event", events: []*replication.BinlogEvent{
			gtid(11, 0), query("shop", "UPDATE b SET v = 1"), xid}, wantA: "", wantB: "0-1-11"},
		{name: "a statement naming its schema", events: []*replication.BinlogEvent{
			gtid(11, 0), query("other", "INSERT INTO shop.a VALUES (1)"), query("", "COMMIT")}, wantA: "0-1-11", wantB: ""},
		{name: "DDL, standalone", events: []*replication.BinlogEvent{
			gtid(11, replication.BINLOG_MARIADB_FL_STANDALONE|replication.BINLOG_MARIADB_FL_DDL), query("shop", "ALTER TABLE a ADD c INT")},
			wantA: "0-1-11", wantB: "0-1-11", ddls: 1},
		{name: "a statement it cannot read", events: []*replication.BinlogEvent{
			gtid(11, 0), query("shop", "CALL refresh()"), xid}, wantA: "0-1-11", wantB: "0-1-11"},
		{name: "XA COMMIT", events: []*replication.BinlogEvent{
			gtid(11, replication.BINLOG_MARIADB_FL_STANDALONE), query("shop", "XA COMMIT 'x'")}, wantA: "0-1-11", wantB: "0-1-11"},
		{name: "SAVEPOINT inside", events: []*replication.BinlogEvent{
			gtid(11, 0), query("shop", "SAVEPOINT s"), rows("shop", "a"), xid}, wantA: "0-1-11", wantB: ""},
		{name: "two transactions", events: []*replication.BinlogEvent{
			gtid(11, 0), rows("shop", "a"), xid, gtid(12, 0), rows("shop", "b"), xid}, wantA: "0-1-11", wantB: "0-1-12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, v, ddls := newTestFollower(t)
			for _, ev := range tt.events {
				f.handle(ev)
			}
			assert.Equal(t, tt.wantA, need(t, v, "shop", "a"), "shop.a")
			assert.Equal(t, tt.wantB, need(t, v, "shop", "b"), "shop.b")
			assert.Equal(t, tt.ddls, *ddls)
		})
	}
}

// TestFollowerPosition: the position moves at each commit, not before, and Recorded waits
// for it.
func TestFollowerPosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, _, _ := newTestFollower(t)
		target := replicas.Pos{{Domain: 0, Server: 1, Seq: 12}}
		done := make(chan error, 1)
		go func() { done <- f.Recorded(context.Background(), target) }()
		for _, ev := range []*replication.BinlogEvent{gtid(11, 0), rows("shop", "a"), xid, gtid(12, 0), rows("shop", "a")} {
			f.handle(ev)
		}
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Recorded returned %v before the commit of 0-1-12", err)
		default:
		}
		assert.Equal(t, "0-1-11", f.Pos().String())
		f.handle(xid)
		assert.NoError(t, <-done)
		assert.Equal(t, "0-1-12", f.Pos().String())
		assert.NoError(t, f.Recorded(context.Background(), replicas.Pos{{Domain: 0, Server: 1, Seq: 5}}), "a position passed long ago")

		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, f.Recorded(ctx, replicas.Pos{{Domain: 0, Server: 1, Seq: 99}}), context.DeadlineExceeded)
	})
}

// TestFollowerStops: what each way of stopping does to the follower's state, its counters,
// and the reads that wait on it.
func TestFollowerStops(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantDenied bool
		wantPos    bool // the position is kept to go on from
		counter    func(m *followerMetrics) prometheus.Counter
	}{
		{name: "a broken connection", err: errors.New("connection reset"), wantPos: true,
			counter: func(m *followerMetrics) prometheus.Counter { return m.reconnects }},
		{name: "refused for want of a grant", err: &mysql.MyError{Code: mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR}, wantDenied: true, wantPos: true,
			counter: func(m *followerMetrics) prometheus.Counter { return m.denied }},
		{name: "its position purged", err: &mysql.MyError{Code: mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG},
			counter: func(m *followerMetrics) prometheus.Counter { return m.resyncs }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, _ := newTestFollower(t)
			waiting := make(chan error, 1)
			go func() { waiting <- f.Recorded(context.Background(), replicas.Pos{{Domain: 0, Server: 1, Seq: 99}}) }()
			f.stopped(tt.err)
			assert.ErrorIs(t, <-waiting, ErrNotFollowing, "a read waiting on a follower that stopped")
			st := f.Status()
			assert.False(t, st.Live)
			assert.Equal(t, tt.wantDenied, st.Denied)
			assert.Equal(t, tt.wantPos, st.Pos != nil)
			assert.Equal(t, 1.0, testutil.ToFloat64(tt.counter(f.m)))
			assert.Equal(t, 0.0, testutil.ToFloat64(f.m.up))
		})
	}
}

func TestBoundary(t *testing.T) {
	for q, want := range map[string]string{
		"BEGIN": "BEGIN", " commit": "COMMIT", "ROLLBACK": "ROLLBACK", "XA END 'x'": "XA",
		"COMMITTED": "", "UPDATE t SET x = 1": "", "": "",
	} {
		assert.Equal(t, want, boundary([]byte(q)), "%q", q)
	}
}

func TestGrantsLog(t *testing.T) {
	for line, want := range map[string]bool{
		"GRANT ALL PRIVILEGES ON *.* TO `gk`@`%` WITH GRANT OPTION":             true,
		"GRANT REPLICATION SLAVE ON *.* TO `repl`@`%`":                          true,
		"GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `m`@`%`": true,
		"GRANT REPLICATION REPLICA ON *.* TO `m`@`%`":                           true,
		"GRANT SELECT, REPLICATION CLIENT ON *.* TO `m`@`%`":                    false,
		"GRANT ALL PRIVILEGES ON `shop`.* TO `m`@`%`":                           false,
	} {
		assert.Equal(t, want, grantsLog(line), "%q", line)
	}
}

func TestServerID(t *testing.T) {
	a, b := ServerID("db1", "127.0.0.1:6033"), ServerID("db1", "127.0.0.1:6034")
	assert.NotEqual(t, a, b, "two proxies on one host")
	assert.NotEqual(t, ServerID("db1", "0.0.0.0:6033"), ServerID("db2", "0.0.0.0:6033"), "two hosts")
	assert.NotEqual(t, ServerID("db1", "127.0.0.1:0"), ServerID("db1", "127.0.0.1:0"), "two proxies of one process")
	for range 100 {
		id := ServerID("db1", "127.0.0.1:6033")
		assert.GreaterOrEqual(t, id, uint32(1<<30))
		assert.Less(t, id, uint32(1<<31))
	}
}
