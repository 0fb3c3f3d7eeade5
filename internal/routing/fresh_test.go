package routing_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
)

// primaryAt is a position reader whose primary is at pos, counting its reads.
type primaryAt struct {
	pos   replicas.Pos
	reads int
	addr  string
}

func (p *primaryAt) Read(context.Context) (replicas.Pos, error) { p.reads++; return p.pos, nil }
func (p *primaryAt) Repoint(addr string)                        { p.addr = addr }

// follower records the writes up to recorded; past it Recorded fails, as a follower that
// cannot catch up in time.
type follower struct {
	recorded replicas.Pos
	addr     string
}

func (f *follower) Repoint(addr string) { f.addr = addr }

func (f *follower) Recorded(_ context.Context, p replicas.Pos) error {
	if !f.recorded.Covers(p) {
		return errors.New("not recorded in time")
	}
	return nil
}
func (f *follower) Denied() bool { return false }

// TestFresh: the version of a read's tables is what the version map holds of them; a
// strong one reads the primary's position first and is not known while the follower has
// not recorded up to it; without a follower (any rule but per_table) it is never known.
func TestFresh(t *testing.T) {
	f := newFixture(t, routing.Config{Consistency: replicas.Strong, Rule: routing.PerTable}, 0)
	primary := &primaryAt{pos: replicas.Pos{{Domain: 0, Server: 1, Seq: 5}}}
	fl := &follower{recorded: primary.pos}
	f.policy.SetWrites(primary, fl)
	versions := f.router.Versions()
	versions.Wrote([][]byte{[]byte("db.t")}, false, replicas.GTID{Domain: 0, Server: 1, Seq: 3})
	versions.Wrote([][]byte{[]byte("db.u")}, false, replicas.GTID{Domain: 0, Server: 1, Seq: 5})
	s := f.policy.NewSession()
	tables := s.Fill(classify.New().Classify([]byte("SELECT * FROM t")), schema)

	v, ok := f.policy.Fresh(context.Background(), tables, true, 0, nil)
	require.True(t, ok)
	require.Equal(t, "0-1-3", v.String(), "the version of t is its last write, not u's")
	require.Equal(t, 1, primary.reads, "a strong version reads the primary's position")

	v, ok = f.policy.Fresh(context.Background(), tables, false, 0, v)
	require.True(t, ok)
	require.Equal(t, "0-1-3", v.String())
	require.Equal(t, 1, primary.reads, "an eventual version reads no position")

	primary.pos = replicas.Pos{{Domain: 0, Server: 1, Seq: 9}}
	_, ok = f.policy.Fresh(context.Background(), tables, true, 0, v)
	require.False(t, ok, "a version the follower has not caught up to was vouched for")

	local := newFixture(t, routing.Config{Consistency: replicas.Strong, Rule: routing.ProxyLocal}, 0)
	_, ok = local.policy.Fresh(context.Background(), tables, false, 0, nil)
	require.False(t, ok, "proxy_local learns no writer but this proxy: no version")
	require.False(t, local.policy.Follows())
}

// TestPrimaryChanged: a new primary raises the floor to its position and moves the
// position reader and the follower to it.
func TestPrimaryChanged(t *testing.T) {
	f := newFixture(t, routing.Config{Consistency: replicas.Strong, Rule: routing.PerTable}, 0)
	primary, fl := &primaryAt{}, &follower{}
	f.policy.SetWrites(primary, fl)
	pos := replicas.Pos{{Domain: 0, Server: 2, Seq: 9}}
	f.policy.PrimaryChanged("db2:3306", pos)
	if !f.router.Versions().Floor().Covers(pos) {
		t.Errorf("floor %v after the change, want it to cover %v", f.router.Versions().Floor(), pos)
	}
	if primary.addr != "db2:3306" || fl.addr != "db2:3306" || f.router.PrimaryAddr() != "db2:3306" {
		t.Errorf("after the change: positions at %q, follower at %q, router at %q; want db2:3306", primary.addr, fl.addr, f.router.PrimaryAddr())
	}
}
