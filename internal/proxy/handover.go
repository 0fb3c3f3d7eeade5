package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/handover"
	"github.com/gatekeeperdb/gatekeeper/internal/pooled"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
)

// A hand-over moves the server's client connections to another process, each as it goes
// idle between units, with what the proxy knows of its session (SessionRecord): the new
// process serves the client from its next command on, on the same socket. The server's
// drain (Shutdown) is what brings each session to that point: a session idle outside a
// transaction moves at once, one in a transaction when its transaction ends. A session
// that cannot move (Handoff's reasons) ends as a drain ends it.

// SessionRecord is a client session as it moves to another process.
type SessionRecord struct {
	// ID is the connection id the client knows (CONNECTION_ID() in pooled mode).
	ID    uint64    `json:"id"`
	Mode  string    `json:"mode"`
	Since time.Time `json:"since"`
	// Pending are bytes of the client's next command already read off the socket.
	Pending    []byte `json:"pending,omitempty"`
	User       string `json:"user"`
	Schema     string `json:"schema,omitempty"`
	Program    string `json:"program,omitempty"`
	Autocommit bool   `json:"autocommit"`
	// Accepted: a unit of the session was admitted before (a session in progress).
	Accepted bool `json:"accepted,omitempty"`
	// Stmts are the classifier's findings on the client's prepared statements
	// (passthrough; pooled mode's are classified again from their texts).
	Stmts       []StmtRecord           `json:"stmts,omitempty"`
	Routing     *routing.SessionRecord `json:"routing,omitempty"`
	Passthrough *PassthroughRecord     `json:"passthrough,omitempty"`
	Pooled      *PooledRecord          `json:"pooled,omitempty"`
}

// StmtRecord is what the classifier found in a prepared statement.
type StmtRecord struct {
	ID        uint32        `json:"id"`
	Hash      uint64        `json:"hash"`
	Digest    []byte        `json:"digest,omitempty"`
	Tag       []byte        `json:"tag,omitempty"`
	Volatile  bool          `json:"volatile,omitempty"`
	Kind      classify.Kind `json:"kind"`
	Uses      classify.Uses `json:"uses,omitempty"`
	Multi     bool          `json:"multi,omitempty"`
	Opaque    bool          `json:"opaque,omitempty"`
	StartsTxn bool          `json:"starts_txn,omitempty"`
	ReadOnly  bool          `json:"read_only,omitempty"`
	ReadWrite bool          `json:"read_write,omitempty"`
}

// PassthroughRecord is a passthrough session's backend side; its connection's socket
// moves with the client's.
type PassthroughRecord struct {
	Thread       uint32                `json:"thread"`
	Capabilities uint32                `json:"capabilities"`
	Credential   auth.SecretCredential `json:"credential"`
}

// PooledRecord is a pooled session's backend side.
type PooledRecord struct {
	pooled.Record
	Scramble []byte `json:"scramble,omitempty"`
}

// Handoff is the server's side of a hand-over: Send moves a session's record and sockets
// (the client's first) to the other process. Sessions call it as each goes idle, several
// at once.
type Handoff struct {
	Send func(rec *SessionRecord, files []*os.File) error

	mu      sync.Mutex
	handed  int
	drained map[string]int
}

// Counts returns the sessions handed over, and those drained instead, by reason.
func (h *Handoff) Counts() (handed int, drained map[string]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.drained))
	for k, v := range h.drained {
		out[k] = v
	}
	return h.handed, out
}

// send moves a session.
func (h *Handoff) send(rec *SessionRecord, files []*os.File) error {
	if err := h.Send(rec, files); err != nil {
		return err
	}
	h.mu.Lock()
	h.handed++
	h.mu.Unlock()
	return nil
}

func (h *Handoff) drain(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.drained == nil {
		h.drained = map[string]int{}
	}
	h.drained[reason]++
}

// HandOver hands the server's sessions over through h as each goes idle outside a
// transaction, and drains those that cannot move; it is Shutdown otherwise, and returns
// as Shutdown does. Call Detach first: the listeners go to the other process.
func (s *Server) HandOver(ctx context.Context, h *Handoff) error {
	s.handoff.Store(h)
	return s.Shutdown(ctx)
}

// ErrDetached is returned by Serve once Detach took its listener.
var ErrDetached = errors.New("proxy: listener handed over")

// Detach stops accepting and returns duplicates of the listening sockets, in the order
// Serve was given them, for another process; the sockets stay open, and connections that
// arrive meanwhile wait in their backlog. next is the last connection id given: the other
// process goes on above it. Attach serves them again when the other process fails.
func (s *Server) Detach() (files []*os.File, next uint64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lns := s.listeners
	for _, ln := range lns {
		f, err := handover.Dup(ln)
		if err != nil {
			handover.CloseFiles(files)
			return nil, 0, fmt.Errorf("listener %s: %w", ln.Addr(), err)
		}
		files = append(files, f)
	}
	s.detached = true
	for _, ln := range lns {
		_ = ln.Close()
	}
	s.listeners = nil
	return files, s.nextID.Load(), nil
}

// Attach undoes Detach: new connections are accepted again; the caller serves the
// listeners it makes of files.
func (s *Server) Attach() {
	s.mu.Lock()
	s.detached = false
	s.mu.Unlock()
}

// Adopt serves a session another process handed over: rec, with its sockets in files
// (the client's first), which Adopt takes. Its id is one that process gave: SetNextID
// with that process's last one first.
func (s *Server) Adopt(rec *SessionRecord, files []*os.File) error {
	defer handover.CloseFiles(files)
	if len(files) == 0 {
		return errors.New("hand-over: a session without its client's socket")
	}
	if want := s.cfg.Mode; rec.Mode != want {
		return fmt.Errorf("hand-over: a %s session, and this process runs mode %s", rec.Mode, want)
	}
	conns := make([]net.Conn, 0, len(files))
	for _, f := range files {
		c, err := net.FileConn(f)
		if err != nil {
			for _, c := range conns {
				_ = c.Close()
			}
			return fmt.Errorf("hand-over: %w", err)
		}
		conns = append(conns, c)
	}
	sess := newSession(s.collaborators, rec.ID, conns[0])
	if err := sess.restore(rec, conns[1:]); err != nil {
		for _, c := range conns {
			_ = c.Close()
		}
		return err
	}
	s.launch(sess, sess.resume)
	return nil
}

// SetNextID makes the next connection id given one above next, the last another process
// gave.
func (s *Server) SetNextID(next uint64) { s.nextID.Store(next) }

// CountHandover counts a hand-over this process started, by result.
func (s *Server) CountHandover(result string, n int) {
	s.metrics.handovers.WithLabelValues(result).Add(float64(n))
}

// CountHandedOver counts connections another process handed over to this one, or
// drained instead, as that process reported them.
func (s *Server) CountHandedOver(handed int, drained map[string]int) {
	s.metrics.handoverConns.WithLabelValues("handed_over", "").Add(float64(handed))
	for reason, n := range drained {
		s.metrics.handoverConns.WithLabelValues("drained", reason).Add(float64(n))
	}
}

// handOff moves the session to the other process of a hand-over, at a point where it
// waits for its client's next command outside a transaction. It reports whether the
// session moved; one that did not is counted with why and ends as a drain ends it.
func (s *session) handOff(h *Handoff) bool {
	reason := s.immovable()
	var rec *SessionRecord
	var files []*os.File
	if reason == "" {
		var err error
		if rec, files, err = s.handoverRecord(); err != nil {
			s.log.Warn("cannot hand the connection over; closing it", "err", err)
			reason = "error"
		}
	}
	if reason == "" {
		err := h.send(rec, files)
		handover.CloseFiles(files)
		if err != nil {
			s.log.Warn("cannot hand the connection over; closing it", "err", err)
			reason = "error"
		}
	}
	if reason != "" {
		h.drain(reason)
		s.log.Info("closing connection: it cannot move to the new process", "reason", reason)
		return false
	}
	s.handedOff = true
	s.log.Debug("connection handed over")
	return true
}

// immovable says why the session cannot move to another process, or "".
func (s *session) immovable() string {
	if _, ok := s.client.NetConn().(*tls.Conn); ok {
		return "tls"
	}
	if s.backendBroken {
		return "backend_broken"
	}
	if s.unit.open || s.inTxn {
		return "in_transaction"
	}
	if s.client.Unflushed() > 0 {
		if err := s.client.Flush(); err != nil {
			return "client_gone"
		}
	}
	return s.link.movable()
}

// handoverRecord returns the session as a record, with duplicates of its sockets, the
// client's first.
func (s *session) handoverRecord() (*SessionRecord, []*os.File, error) {
	rec := &SessionRecord{ID: s.id, Mode: s.cfg.Mode, Since: s.info.since, Pending: s.client.Unread(),
		User: s.user, Schema: s.schema, Program: s.programName, Autocommit: s.autocommit,
		Accepted: s.charge.accepted, Routing: s.routes.Record()}
	client, err := handover.Dup(s.client.NetConn())
	if err != nil {
		return nil, nil, fmt.Errorf("client socket: %w", err)
	}
	files := []*os.File{client}
	more, err := s.link.record(rec)
	if err != nil {
		handover.CloseFiles(files)
		return nil, nil, err
	}
	return rec, append(files, more...), nil
}

// restore makes a new session the one rec records, on the backend connections that came
// with it.
func (s *session) restore(rec *SessionRecord, backends []net.Conn) error {
	s.info.since = rec.Since
	s.user, s.schema, s.programName, s.autocommit = rec.User, rec.Schema, rec.Program, rec.Autocommit
	s.charge.accepted = rec.Accepted
	s.client.Prime(rec.Pending)
	s.client.SetLimit(int(s.cfg.Client.MaxPacketSize))
	s.info.loginIn, s.info.loginOut = s.client.BytesRead, s.client.BytesWritten
	if err := s.routes.Restore(rec.Routing); err != nil {
		return fmt.Errorf("hand-over: routing: %w", err)
	}
	for _, st := range rec.Stmts {
		s.stmts[st.ID] = statement{valid: true, hash: st.Hash, digest: st.Digest, tag: st.Tag, volatile: st.Volatile,
			Statement: routing.Statement{Kind: st.Kind, Uses: st.Uses, Multi: st.Multi, Opaque: st.Opaque,
				StartsTxn: st.StartsTxn, ReadOnly: st.ReadOnly, ReadWrite: st.ReadWrite}}
	}
	return s.link.restore(rec, backends)
}

// stmtRecords returns the classifier's findings on the client's prepared statements.
func (s *session) stmtRecords() []StmtRecord {
	out := make([]StmtRecord, 0, len(s.stmts))
	for id, st := range s.stmts {
		out = append(out, StmtRecord{ID: id, Hash: st.hash, Digest: st.digest, Tag: st.tag, Volatile: st.volatile,
			Kind: st.Kind, Uses: st.Uses, Multi: st.Multi, Opaque: st.Opaque, StartsTxn: st.StartsTxn,
			ReadOnly: st.ReadOnly, ReadWrite: st.ReadWrite})
	}
	return out
}

// resume serves a session handed over from another process: its login is done.
func (s *session) resume() {
	s.hot = s.metrics.hot.open()
	defer s.close()
	s.log.Debug("session taken over", "user", s.user, "schema", s.schema)
	s.publish()
	for s.awaitCommand() {
		if !s.dispatch() {
			return
		}
	}
}

// movable: a passthrough session moves with its backend connection, unless that runs TLS.
func (d *dedicated) movable() string {
	if d.conn == nil {
		return "backend_broken"
	}
	if _, ok := d.conn.NetConn().(*tls.Conn); ok {
		return "backend_tls"
	}
	if d.conn.Buffered() > 0 || d.conn.Unflushed() > 0 {
		return "backend_busy"
	}
	return ""
}

func (d *dedicated) record(rec *SessionRecord) ([]*os.File, error) {
	s := d.s
	rec.Stmts = s.stmtRecords()
	rec.Passthrough = &PassthroughRecord{Thread: d.thread, Capabilities: s.wire.Capabilities, Credential: d.cred.Secret()}
	f, err := handover.Dup(d.conn.NetConn())
	if err != nil {
		return nil, fmt.Errorf("backend socket: %w", err)
	}
	return []*os.File{f}, nil
}

func (d *dedicated) restore(rec *SessionRecord, backends []net.Conn) error {
	s := d.s
	if rec.Passthrough == nil || len(backends) != 1 {
		return errors.New("hand-over: a passthrough session without its backend connection")
	}
	b := protocol.NewConn(backends[0])
	d.mu.Lock()
	d.conn = b
	d.mu.Unlock()
	d.thread, d.cred = rec.Passthrough.Thread, rec.Passthrough.Credential.Credential()
	protocol.Pair(s.client, b)
	s.wire = protocol.Relay{Client: s.client, Backend: b, Capabilities: rec.Passthrough.Capabilities}
	d.watch = s.adm.watch.watch(b.NetConn(), s.backendHungUp)
	return nil
}

// movable: a pooled session moves unless its connection carries state no other has.
func (l *pooledLink) movable() string { return l.pl.Movable() }

func (l *pooledLink) record(rec *SessionRecord) ([]*os.File, error) {
	rec.Pooled = &PooledRecord{Record: l.pl.Record(), Scramble: l.scramble}
	return nil, nil
}

func (l *pooledLink) restore(rec *SessionRecord, _ []net.Conn) error {
	s := l.s
	if rec.Pooled == nil {
		return errors.New("hand-over: a pooled session without its state")
	}
	l.pl.Restore(rec.Pooled.Record, l.m.attrs)
	l.scramble = rec.Pooled.Scramble
	if accounts := s.gate.accounts; accounts != nil {
		if u, ok := accounts.Lookup(rec.User, s.info.addr); ok {
			// Counted against the user's max_connections, as at its login; a session
			// already in progress is not refused for it.
			l.leave, _ = accounts.Enter(u)
		}
	}
	s.wire = protocol.Relay{Client: s.client, Capabilities: rec.Pooled.ClientCaps}
	if s.routes != nil {
		s.wire.BeforeAck = s.beforeAck
	}
	// The statements are classified again from their texts, in the schema each was
	// prepared in: what routing keeps of their tables is this process's.
	for _, st := range rec.Pooled.Stmts {
		s.rememberPrepared(s.statementOf(s.cls.Classify(st.Text), st.Snapshot.Schema), st.ID)
	}
	return nil
}
