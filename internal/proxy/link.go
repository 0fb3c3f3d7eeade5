package proxy

import (
	"context"
	"net"
	"os"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// backendLink is the seam between the statement path and the backends: how a session
// logs in, and where its units get their connection. A mode is one implementation of it:
// passthrough's dedicated connection (dedicated), and pooled mode's leases from the
// primary's pool or, with routing, a replica's (pooledLink). The path has no branch on the
// mode; what a mode adds to it (commands it answers itself, statement ids it maps, state
// it learns) comes through the link's hooks.
type backendLink interface {
	backendSource
	commandHooks
	// login runs the handshake with the client, and with the backend as the mode needs.
	login() error
	// addr returns the address of the backend of the open unit, or of the last one.
	addr() string
	// readOnly tells whether the session made its transactions read-only (SET SESSION
	// TRANSACTION READ ONLY).
	readOnly() bool
	// view returns what snapshots show of the session's backend side; backendNow the
	// backend connection it holds now. Any goroutine may call backendNow.
	view() linkView
	backendNow() (addr string, thread uint32)
	// movable says why the session cannot move to another process now, "" when it can;
	// record adds the link's part to rec, returning duplicates of the sockets that move
	// with it, and restore takes it, with those sockets, in the other process.
	movable() string
	record(rec *SessionRecord) ([]*os.File, error)
	restore(rec *SessionRecord, backends []net.Conn) error
}

// backendSource hands out the backend connection of each unit and takes it back.
type backendSource interface {
	// acquire returns the connection the unit runs on, where p.route says; it moves the
	// unit (session.fallBack) when a replica cannot give one.
	acquire(p *plan) (*protocol.Conn, error)
	// held tells whether the session holds a connection between units that admitted
	// units may need (admission.Request.Holding).
	held() bool
	// pinned tells whether state the session left on its connection keeps it there.
	pinned() bool
	// release ends the open unit: its connection goes back unless the session is pinned.
	release()
	// drop gives up the open unit's connection, which failed before answering.
	drop()
	// close gives back what the session holds as it ends.
	close()
	// abort closes the backend socket from another goroutine, after the drain timeout.
	abort()
}

// commandHooks are what a mode adds to the statement path.
type commandHooks interface {
	// intercept answers the commands the mode answers itself, before a unit starts.
	// handled tells that the command was dealt with; keep that the session goes on.
	intercept(p *plan) (handled, keep bool)
	// prepare readies the command for the unit's connection. When it cannot run, the
	// client has been told why and ok is false; keep is false when the session must end.
	prepare(p *plan) (ok, keep bool)
	// note learns from the response what the mode keeps of the session.
	note(p *plan)
	// cacheScope appends to k what, beside the user and the statement's text, shapes the
	// result of the command's read: the session state and the capabilities, and for an
	// execution the prepared statement and its bound values. ok is false when the mode
	// cannot tell it: the read is not cached.
	cacheScope(p *plan, k []byte) (key []byte, ok bool)
}

// linkView is what snapshots show of a session's backend side.
type linkView struct {
	// credential is pooled (the proxy logs in as the user), derived (passthrough, with a
	// credential derived at login) or none.
	credential string
	pins       uint32
}

// mode makes each session's backend link.
type mode interface {
	link(s *session) backendLink
}

// dialBackend opens a TCP connection to addr within the connect timeout.
func dialBackend(ctx context.Context, addr string, timeout, deadAfter time.Duration) (net.Conn, error) {
	c, err := backend.NetDialer(timeout, deadAfter).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return c, nil
}
