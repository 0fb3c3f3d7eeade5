package pooled

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/backend"
)

// Session is one client session's side of pooled mode: what a connection for it must be,
// the state every connection it runs on is brought to, its pins, its prepared statements,
// and the connection it holds. It belongs to the session's goroutine, except where a
// method says otherwise.
type Session struct {
	sh  *Shared
	log *slog.Logger
	// Want is what a connection for the session must be: who it logs in as, the shape of
	// the packets its client expects, the character set and schema of its login.
	Want backend.Want
	// State is the session state, carried to each connection a unit runs on.
	State *backend.State
	// ClientCaps are the capabilities agreed with the client.
	ClientCaps uint32
	Pins       Pins
	// stmts are the client's prepared statements, under the proxy's ids; stmtBytes the
	// bytes of their texts. cursors and longData count the statements with an open
	// cursor, or with data sent for their next execution.
	stmts                        map[uint32]*Stmt
	nextID                       uint32
	cursors, longData, stmtBytes int
	// unflushed: the server holds session-state records for the next OK of the leased
	// connection, which the last response (an EOF-ended result set) could not carry.
	unflushed bool
	// inGauge: the session counts in the pinned-sessions gauge.
	inGauge bool

	// mu guards lease and killing, which other goroutines read (a KILL, a snapshot, a
	// drain). The session's goroutine writes them under mu and reads lease without it.
	mu sync.Mutex
	// lease is the connection of the open unit, or of a pinned session between units.
	lease *backend.Lease
	// killing is set while a KILL QUERY of the session's statement is on its way to its
	// connection, which must then not go to another session.
	killing bool
}

// NewSession returns the pooled side of a session, which sets Want, State and ClientCaps
// as it logs in.
func NewSession(sh *Shared, log *slog.Logger) *Session {
	return &Session{sh: sh, log: log, stmts: map[uint32]*Stmt{}}
}

// Lease returns the connection the session holds: of its open unit, or of a pinned
// session between units; nil when it holds none.
func (s *Session) Lease() *backend.Lease { return s.lease }

// Conn returns the connection the session holds, nil when none. Any goroutine may call it.
func (s *Session) Conn() *backend.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease == nil {
		return nil
	}
	return s.lease.Conn()
}

// WantNow returns what a connection for the session's next unit must be, its state as it
// is now included, for Pool.Acquire.
func (s *Session) WantNow() *backend.Want {
	s.Want.State = s.State
	return &s.Want
}

// Take makes lease the session's, first bringing its connection to the session's state
// (with the last insert id too when needLastInsertID). On failure the connection is
// discarded.
func (s *Session) Take(ctx context.Context, lease *backend.Lease, needLastInsertID bool) error {
	c := lease.Conn()
	if !s.State.Matches(c) || needLastInsertID {
		if err := c.Sync(ctx, &s.Want, s.State, needLastInsertID); err != nil {
			lease.Discard()
			return err
		}
		s.sh.syncs.Inc()
	}
	s.mu.Lock()
	s.lease = lease
	s.mu.Unlock()
	return nil
}

// Release ends a unit: the connection goes back to the pool (closed instead when broken,
// or when a KILL may be on its way to it), unless the session is pinned to it. onReplica
// says the unit ran on a replica: what it left for the next unit (FOUND_ROWS,
// LAST_INSERT_ID(expr), SET TRANSACTION) stays with the replica's connection, so that the
// next unit, which may write, is not held to it. released tells that the session holds no
// connection now, having held one.
func (s *Session) Release(onReplica, broken bool) (released bool) {
	if s.lease == nil {
		return false
	}
	s.Pins.Bits &^= s.Pins.expiring
	if onReplica {
		s.Pins.Bits &^= transientPins
	}
	s.SyncGauge()
	s.Pins.expiring = s.Pins.Bits & transientPins
	if s.Pins.Bits != 0 {
		return false
	}
	c := s.lease.Conn()
	if s.unflushed {
		// Take the records the server still holds, so that they reach no other session;
		// they describe what the session saw already.
		s.unflushed = false
		if err := c.FlushState(); err != nil {
			broken = true
		}
	}
	c.Adopt(s.State)
	lease, killing := s.drop()
	if broken || killing {
		lease.Discard()
	} else {
		lease.Release()
	}
	return true
}

// drop takes the lease from the session, saying whether a KILL may be on its way to it.
func (s *Session) drop() (lease *backend.Lease, killing bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lease, s.lease = s.lease, nil
	return lease, s.killing
}

// Discard gives up the connection the session holds, which failed: it is closed.
func (s *Session) Discard() {
	if lease, _ := s.drop(); lease != nil {
		lease.Discard()
	}
}

// resetTimeout bounds the reset of a closing session's connection.
const resetTimeout = 2 * time.Second

// Close gives the connection of a closing session back: reset first when the session left
// state on it (pinned, or dirty: inside a transaction or a unit), closed when it broke.
func (s *Session) Close(broken, dirty bool) {
	s.setPinned(false)
	lease, killing := s.drop()
	if lease == nil {
		return
	}
	c := lease.Conn()
	if broken || killing {
		lease.Discard()
		return
	}
	if s.Pins.Bits != 0 || dirty {
		_ = c.Packets().SetDeadline(time.Now().Add(resetTimeout))
		err := c.Reset()
		_ = c.Packets().SetDeadline(time.Time{})
		if err != nil {
			lease.Discard()
			return
		}
		s.sh.resets.Inc()
	}
	lease.Release()
}

// Reset forgets the session state, as COM_RESET_CONNECTION does on a server: the
// variables, the prepared statements, and the pins with the connection they held, which
// is reset before it goes back to the pool (as it is when a unit is open).
func (s *Session) Reset(unitOpen bool) {
	s.State.Clear()
	clear(s.stmts)
	s.cursors, s.longData, s.stmtBytes = 0, 0, 0
	pinned := s.Pins.Bits != 0
	s.Pins = Pins{}
	s.setPinned(false)
	if s.lease == nil {
		return
	}
	lease, killing := s.drop()
	if killing {
		lease.Discard() // a KILL may be on its way to it
		return
	}
	c := lease.Conn()
	if pinned || unitOpen {
		if err := c.Reset(); err != nil {
			lease.Discard()
			return
		}
		s.sh.resets.Inc()
	}
	c.Adopt(s.State)
	lease.Release()
}

// BeginKill marks the session as the target of a KILL and returns the backend thread of
// the connection it holds, and the backend's address: until EndKill, that connection is
// discarded rather than given to another session. held is false when it holds none. Any
// goroutine may call it.
func (s *Session) BeginKill() (thread uint32, addr string, held bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease == nil {
		return 0, "", false
	}
	s.killing = true
	c := s.lease.Conn()
	return c.ThreadID(), c.Addr(), true
}

// EndKill ends what BeginKill began. Any goroutine may call it.
func (s *Session) EndKill() {
	s.mu.Lock()
	s.killing = false
	s.mu.Unlock()
}

// Abort closes the socket of the connection the session holds, from another goroutine,
// after the drain timeout; the session's goroutine then fails on it.
func (s *Session) Abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease != nil {
		_ = s.lease.Conn().Packets().NetConn().Close()
	}
}
