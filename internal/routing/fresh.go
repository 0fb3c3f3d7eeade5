package routing

import (
	"context"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// Fresh returns the version of what a read of t sees: the positions of the last writes,
// from any writer, to the tables it reads, as the version map holds them. With strong, the
// map holds every write committed on the primary before Fresh was called (the primary's
// position is read after the call, and the follower has recorded every write up to it). A
// result that saw that version is as fresh as a strong read of t arriving now. ok is false
// when the version cannot be told within wait (at least what a strong read waits for it),
// or when writes are not learned from the primary's binary log (the rule is not per_table,
// or the follower was refused). dst is reused.
func (p *Policy) Fresh(ctx context.Context, t *Tables, strong bool, wait time.Duration, dst replicas.Pos) (v replicas.Pos, ok bool) {
	if p == nil || p.rule() != PerTable {
		return dst[:0], false
	}
	if strong {
		if _, ok := p.horizonWithin(ctx, max(wait, p.horizonWait())); !ok {
			return dst[:0], false
		}
	}
	return p.router.Versions().Need(dst, t.read, t.readUnknown)
}

// Follows tells whether writes are learned from the primary's binary log: Fresh can
// answer.
func (p *Policy) Follows() bool { return p != nil && p.rule() == PerTable }

// ReadTables returns the keys (schema.table, lower case) of the tables t reads, and
// whether others may hide behind them. The slices are t's own.
func (t *Tables) ReadTables() (keys [][]byte, unknown bool) { return t.read, t.readUnknown }

// Keys returns the keys of the tables t reads and writes. The slices are t's own.
func (t *Tables) Keys() (read, written [][]byte) { return t.read, t.written }
