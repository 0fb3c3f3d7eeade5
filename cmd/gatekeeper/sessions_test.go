package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/binlog"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

type fakeFollower binlog.Status

func (f fakeFollower) Status() binlog.Status { return binlog.Status(f) }

type fakePositions struct{ reads, served uint64 }

func (p fakePositions) Stats() (uint64, uint64) { return p.reads, p.served }

func ptr[T any](v T) *T { return &v }

func TestBinlogInfo(t *testing.T) {
	pos, err := replicas.ParsePos("0-1-15234")
	require.NoError(t, err)
	for _, tc := range []struct {
		name      string
		follower  followerStatus
		positions positionStats
		wantF     *admin.BinlogFollower
		wantP     *admin.PositionReads
	}{
		{name: "proxy_local: neither"},
		{
			name:      "per_table, following",
			follower:  fakeFollower{Live: true, Pos: pos, LagTransactions: 3, LagSeconds: 0.5, ServerID: 3057},
			positions: fakePositions{reads: 10, served: 23},
			wantF: &admin.BinlogFollower{Live: true, Position: "0-1-15234", LagTransactions: ptr(uint64(3)),
				LagSeconds: ptr(0.5), ServerID: 3057},
			wantP: &admin.PositionReads{Reads: 10, Statements: 23, StatementsPerRead: 2.3},
		},
		{
			name:      "per_table, refused before its lag is known",
			follower:  fakeFollower{Denied: true, LagTransactions: math.NaN(), LagSeconds: math.NaN(), ServerID: 7},
			positions: fakePositions{},
			wantF:     &admin.BinlogFollower{Refused: true, ServerID: 7},
			wantP:     &admin.PositionReads{},
		},
		{
			name:      "global: position reads only",
			positions: fakePositions{reads: 4, served: 4},
			wantP:     &admin.PositionReads{Reads: 4, Statements: 4, StatementsPerRead: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, p := binlogInfo(tc.follower, tc.positions)
			assert.Equal(t, tc.wantF, f)
			assert.Equal(t, tc.wantP, p)
		})
	}
}
