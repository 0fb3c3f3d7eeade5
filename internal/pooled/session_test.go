package pooled

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol/mysqltest"
)

// fixture is a pooled session over a real pool of connections to an in-process fake
// server, as the proxy builds one for a client that logged in as app.
type fixture struct {
	srv  *mysqltest.Server
	pool *backend.Pool
	sh   *Shared
	s    *Session
}

// newFixture starts a fake server with opts (user app, password pw, unless opts name
// users), a pool to it and a session that logged in with charset 45 and no schema.
func newFixture(t *testing.T, opts mysqltest.Options) *fixture {
	t.Helper()
	if opts.Users == nil {
		opts.Users = map[string]string{"app": "pw"}
	}
	srv := mysqltest.NewServer(t, opts)
	log := slog.New(slog.DiscardHandler)
	pool := backend.NewPool(&backend.Dialer{Addr: srv.Addr, ConnectTimeout: 2 * time.Second}, backend.PoolConfig{}, nil, log)
	t.Cleanup(pool.Close)
	sh := NewShared(prometheus.NewRegistry())
	s := NewSession(sh, log)
	s.Want = backend.Want{
		Credential: auth.Credential{User: "app", Password: "pw", HasPassword: true},
		Key:        backend.KeyOf(mysql.CLIENT_MULTI_RESULTS|mysql.CLIENT_TRANSACTIONS|mysql.CLIENT_PROTOCOL_41, 0),
		Charset:    45,
	}
	s.State = backend.NewState("", 45)
	return &fixture{srv: srv, pool: pool, sh: sh, s: s}
}

// acquire leases a connection for the session's next unit, as the proxy does.
func (f *fixture) acquire(t *testing.T) *backend.Lease {
	t.Helper()
	l, err := f.pool.Acquire(context.Background(), f.s.WantNow())
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	return l
}

// take starts a unit on l.
func (f *fixture) take(t *testing.T, l *backend.Lease) *backend.Conn {
	t.Helper()
	if err := f.s.Take(context.Background(), l, false); err != nil {
		t.Fatalf("take: %v", err)
	}
	return l.Conn()
}

// acquireConn leases c, idle in the pool, for the session's next unit.
func (f *fixture) acquireConn(t *testing.T, c *backend.Conn) *backend.Lease {
	t.Helper()
	f.s.Want.Prefer = c
	l := f.acquire(t)
	if l.Conn() != c {
		t.Fatal("the pool did not give the preferred connection")
	}
	return l
}

// takeConn starts a unit on c, idle in the pool.
func (f *fixture) takeConn(t *testing.T, c *backend.Conn) { f.take(t, f.acquireConn(t, c)) }

// neighbour returns another session, of the same user, over the same pool.
func (f *fixture) neighbour() *fixture {
	g := *f
	g.s = NewSession(f.sh, f.s.log)
	g.s.Want, g.s.State = f.s.Want, backend.NewState("", f.s.State.Charset)
	return &g
}

// unit starts a unit on a connection leased for it.
func (f *fixture) unit(t *testing.T) *backend.Conn {
	t.Helper()
	return f.take(t, f.acquire(t))
}

// server returns the fake server's side of c.
func (f *fixture) server(c *backend.Conn) *mysqltest.Conn { return f.srv.Conn(c.ThreadID()) }

// sink is a client that takes whatever the relay writes to it.
type sink struct{ net.Conn }

func (sink) Write(p []byte) (int, error) { return len(p), nil }

// send sends the command payload p on the session's connection and relays the response,
// as the proxy does, to a client that drops it.
func (f *fixture) send(t *testing.T, p []byte) *protocol.Response {
	t.Helper()
	c := f.s.Lease().Conn()
	c.BeforeCommand()
	pc := c.Packets()
	pc.ResetSequence()
	if err := pc.WritePacket(p); err != nil {
		t.Fatal(err)
	}
	if err := pc.Flush(); err != nil {
		t.Fatal(err)
	}
	relay := protocol.Relay{Client: protocol.NewConn(sink{}), Backend: pc, Capabilities: c.Capabilities()}
	res := &protocol.Response{}
	if err := relay.ForwardResponse(p[0], res); err != nil {
		t.Fatalf("relay %s: %v", protocol.CommandName(p[0]), err)
	}
	return res
}

// query runs q, a statement the classifier read as st, on the session's connection and
// notes what it did.
func (f *fixture) query(t *testing.T, st Statement, q string) *protocol.Response {
	t.Helper()
	res := f.send(t, append([]byte{mysql.COM_QUERY}, q...))
	if res.Err != nil {
		t.Fatalf("%s: %v", q, res.Err)
	}
	f.s.Note(mysql.COM_QUERY, &st, res, []byte(q), true)
	return res
}

// idle returns how many connections the pool holds idle, and how many are open.
func (f *fixture) idle() (idle, open int) {
	st := f.pool.Stats()
	return st.Idle, st.Open
}

// received returns the command bytes the fake server's side of a connection received,
// its login's own included.
func received(fc *mysqltest.Conn) []byte {
	var out []byte
	for _, cmd := range fc.Commands() {
		out = append(out, cmd.Byte)
	}
	return out
}

// skipKnownBug skips a case that a known bug of the package fails, when bug names one.
func skipKnownBug(t *testing.T, bug string) {
	t.Helper()
	if bug != "" {
		t.Skip("known bug: " + bug + "; remove this skip with the fix")
	}
}

func TestTakeSyncsOnlyWhenTheStateDiffers(t *testing.T) {
	tests := []struct {
		name      string
		state     func(*Session) // what the session did before this unit
		needLID   bool
		wantSent  []string // the texts of the commands the connection got
		wantSyncs float64
	}{
		{name: "state matches"},
		{name: "variable", state: func(s *Session) { s.State.SetVar("sql_mode", "ANSI") },
			wantSent: []string{"SET SESSION sql_mode='ANSI'"}, wantSyncs: 1},
		{name: "schema", state: func(s *Session) { s.State.Schema = "shop" },
			wantSent: []string{"shop"}, wantSyncs: 1},
		{name: "last insert id read", state: sawInsertID(42), needLID: true,
			wantSent: []string{"DO LAST_INSERT_ID(42)"}, wantSyncs: 1},
		{name: "last insert id not read", state: sawInsertID(42)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, mysqltest.Options{})
			if tt.state != nil {
				tt.state(f.s)
			}
			l := f.acquire(t) // a fresh connection, in the state of a login
			fc := f.server(l.Conn())
			before := len(fc.Commands())
			if err := f.s.Take(context.Background(), l, tt.needLID); err != nil {
				t.Fatal(err)
			}
			if got := texts(fc)[before:]; !slices.Equal(got, tt.wantSent) {
				t.Errorf("the connection got %q, want %q", got, tt.wantSent)
			}
			if got := testutil.ToFloat64(f.sh.syncs); got != tt.wantSyncs {
				t.Errorf("syncs = %v, want %v", got, tt.wantSyncs)
			}
			if f.s.Lease() != l {
				t.Error("the session does not hold the lease it took")
			}
		})
	}
}

// sawInsertID sets the session's last insert id to id, as an INSERT on a connection it no
// longer holds reported it.
func sawInsertID(id uint64) func(*Session) {
	return func(s *Session) { s.State.LastInsertID = id }
}

// insertedID notes an INSERT that reported the insert id id on the connection the session
// holds.
func insertedID(id uint64) func(*Session) {
	return func(s *Session) {
		s.Note(mysql.COM_QUERY, &Statement{}, &protocol.Response{LastInsertID: id}, nil, true)
	}
}

// texts returns the texts of the commands the fake server's side of a connection
// received, its login's own included.
func texts(fc *mysqltest.Conn) []string {
	var out []string
	for _, cmd := range fc.Commands() {
		out = append(out, cmd.Text)
	}
	return out
}

// The last insert id goes to a connection where a unit reads it, unless that connection
// has it already.
func TestLastInsertIDIsCarriedToAConnectionThatNeverHadIt(t *testing.T) {
	f := newFixture(t, mysqltest.Options{})
	first, second := f.acquire(t), f.acquire(t)
	f.take(t, first)
	insertedID(42)(f.s) // an INSERT ran on the first connection
	f.s.Release(false, false)
	c := f.take(t, second) // a unit that does not read it runs on the second
	f.s.Release(false, false)

	if err := f.s.Take(context.Background(), f.acquireConn(t, c), true); err != nil {
		t.Fatal(err)
	}
	if got := texts(f.server(c)); !slices.Contains(got, "DO LAST_INSERT_ID(42)") {
		t.Errorf("the connection got %q, want DO LAST_INSERT_ID(42)", got)
	}
}

func TestTakeDiscardsAConnectionItCannotSync(t *testing.T) {
	f := newFixture(t, mysqltest.Options{})
	l := f.acquire(t)
	f.s.State.Schema = mysqltest.UnknownSchema
	if err := f.s.Take(context.Background(), l, false); err == nil {
		t.Fatal("Take into a schema the server refuses succeeded")
	}
	if f.s.Lease() != nil {
		t.Error("the session holds the connection it could not sync")
	}
	if idle, open := f.idle(); idle != 0 || open != 0 {
		t.Errorf("idle, open = %d, %d; want the connection closed", idle, open)
	}
}

func TestReleaseGivesTheConnectionBack(t *testing.T) {
	tests := []struct {
		name           string
		pin, broken    bool
		kill           func(*Session) // what another goroutine did while the unit ran
		wantReleased   bool
		wantIdle, open int
	}{
		{name: "clean", wantReleased: true, wantIdle: 1, open: 1},
		{name: "broken", broken: true, wantReleased: true, wantIdle: 0, open: 0},
		{name: "kill on its way", kill: func(s *Session) { s.BeginKill() }, wantReleased: true, wantIdle: 0, open: 0},
		{name: "kill ended", kill: func(s *Session) { s.BeginKill(); s.EndKill() }, wantReleased: true, wantIdle: 1, open: 1},
		{name: "pinned", pin: true, wantReleased: false, wantIdle: 0, open: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, mysqltest.Options{})
			c := f.unit(t)
			if tt.pin {
				f.ran(classify.Session, classify.UsesUserVariable)
			}
			if tt.kill != nil {
				tt.kill(f.s)
			}
			if got := f.s.Release(false, tt.broken); got != tt.wantReleased {
				t.Errorf("Release = %v, want %v", got, tt.wantReleased)
			}
			if idle, open := f.idle(); idle != tt.wantIdle || open != tt.open {
				t.Errorf("idle, open = %d, %d; want %d, %d", idle, open, tt.wantIdle, tt.open)
			}
			if held := f.s.Conn() == c; held != !tt.wantReleased {
				t.Errorf("session holds its connection: %v, want %v", held, !tt.wantReleased)
			}
		})
	}
	t.Run("none held", func(t *testing.T) {
		f := newFixture(t, mysqltest.Options{})
		if f.s.Release(false, false) {
			t.Error("Release of a session that holds no connection says it released one")
		}
	})
}

func TestCloseResetsWhatTheSessionLeft(t *testing.T) {
	tests := []struct {
		name               string
		pin, dirty, broken bool
		kill               bool
		wantReset          bool
		wantIdle, wantOpen int
	}{
		{name: "neither pinned nor dirty", wantIdle: 1, wantOpen: 1},
		{name: "pinned", pin: true, wantReset: true, wantIdle: 1, wantOpen: 1},
		{name: "dirty", dirty: true, wantReset: true, wantIdle: 1, wantOpen: 1},
		{name: "broken", pin: true, broken: true, wantIdle: 0, wantOpen: 0},
		{name: "kill on its way", pin: true, kill: true, wantIdle: 0, wantOpen: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, mysqltest.Options{})
			fc := f.server(f.unit(t))
			if tt.pin {
				f.query(t, Statement{Valid: true, Kind: classify.Session, Uses: classify.UsesUserVariable}, "SET @a = 1")
			}
			if tt.kill {
				f.s.BeginKill()
			}
			before := len(fc.Commands())

			f.s.Close(tt.broken, tt.dirty)

			if reset := slices.Contains(received(fc)[before:], mysql.COM_RESET_CONNECTION); reset != tt.wantReset {
				t.Errorf("connection reset: %v, want %v (commands %v)", reset, tt.wantReset, received(fc)[before:])
			}
			if got := testutil.ToFloat64(f.sh.resets); got != count(tt.wantReset) {
				t.Errorf("resets = %v, want %v", got, count(tt.wantReset))
			}
			if tt.wantReset && len(fc.UserVars()) != 0 {
				t.Errorf("user variables %v survived the reset", fc.UserVars())
			}
			if idle, open := f.idle(); idle != tt.wantIdle || open != tt.wantOpen {
				t.Errorf("idle, open = %d, %d; want %d, %d", idle, open, tt.wantIdle, tt.wantOpen)
			}
			if got := testutil.ToFloat64(f.sh.pinned); got != 0 {
				t.Errorf("pinned sessions = %v after Close, want 0", got)
			}
			if f.s.Conn() != nil {
				t.Error("the closed session still holds a connection")
			}
		})
	}
	t.Run("none held", func(t *testing.T) {
		f := newFixture(t, mysqltest.Options{})
		f.s.Close(false, true)
		if got := testutil.ToFloat64(f.sh.resets); got != 0 {
			t.Errorf("resets = %v, want 0", got)
		}
	})
}

// count is what a counter of one event reads: 1 when it happened.
func count(happened bool) float64 {
	if happened {
		return 1
	}
	return 0
}

func TestResetForgetsTheSession(t *testing.T) {
	tests := []struct {
		name      string
		pin       bool // the session is pinned between units, holding its connection
		unitOpen  bool
		wantReset bool
	}{
		{name: "pinned", pin: true, wantReset: true},
		{name: "in a unit", unitOpen: true, wantReset: true},
		{name: "between units"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, mysqltest.Options{})
			f.s.State.Schema = "shop"
			fc := f.server(f.unit(t))
			f.query(t, Statement{Valid: true, Kind: classify.Session}, "SET SESSION sql_mode='ANSI'")
			prepare(t, f, "SELECT 1")
			if tt.pin {
				f.query(t, Statement{Valid: true, Kind: classify.Session, Uses: classify.UsesUserVariable}, "SET @a = 1")
			}
			if !tt.unitOpen {
				f.s.Release(false, false)
			}
			before := len(fc.Commands())

			f.s.Reset(tt.unitOpen)

			if vars := f.s.State.Vars(); len(vars) != 0 || f.s.State.Schema != "shop" {
				t.Errorf("state after reset: vars %v schema %q; want none and the schema kept", vars, f.s.State.Schema)
			}
			if n, size := f.s.Stmts(); n != 0 || size != 0 || f.s.Stmt(1) != nil {
				t.Errorf("statements after reset: %d of %d bytes, want none", n, size)
			}
			if f.s.Pinned() || testutil.ToFloat64(f.sh.pinned) != 0 {
				t.Errorf("pins %v, gauge %v after reset; want none", Names(f.s.Pins.Bits), testutil.ToFloat64(f.sh.pinned))
			}
			if reset := slices.Contains(received(fc)[before:], mysql.COM_RESET_CONNECTION); reset != tt.wantReset {
				t.Errorf("connection reset: %v, want %v (commands %v)", reset, tt.wantReset, received(fc)[before:])
			}
			if got := testutil.ToFloat64(f.sh.resets); got != count(tt.wantReset) {
				t.Errorf("resets = %v, want %v", got, count(tt.wantReset))
			}
			if idle, open := f.idle(); idle != 1 || open != 1 || f.s.Conn() != nil {
				t.Errorf("idle, open = %d, %d, held %v; want the connection back in the pool", idle, open, f.s.Conn() != nil)
			}
		})
	}
}

// A KILL of the session on its way to its connection must keep that connection from
// every other session, whatever ends the unit.
func TestResetDiscardsAConnectionAKillIsOnItsWayTo(t *testing.T) {
	f := newFixture(t, mysqltest.Options{})
	f.unit(t)
	f.ran(classify.Session, classify.UsesUserVariable)
	f.s.BeginKill()
	f.s.Reset(false)
	if idle, open := f.idle(); idle != 0 || open != 0 {
		t.Errorf("idle, open = %d, %d; want the connection closed", idle, open)
	}
}

func TestBeginKillNamesTheHeldConnection(t *testing.T) {
	f := newFixture(t, mysqltest.Options{})
	if _, _, held := f.s.BeginKill(); held {
		t.Error("BeginKill of a session that holds no connection says it holds one")
	}
	f.s.EndKill()
	c := f.unit(t)
	thread, addr, held := f.s.BeginKill()
	defer f.s.EndKill()
	if !held || thread != c.ThreadID() || addr != f.srv.Addr {
		t.Errorf("BeginKill = %d, %q, %v; want %d, %q, true", thread, addr, held, c.ThreadID(), f.srv.Addr)
	}
}

// Conn, BeginKill, EndKill and Abort come from other goroutines (a KILL, a snapshot, a
// drain) while the session's goroutine takes and releases connections; run with -race.
func TestCrossGoroutineCallsAreSafe(t *testing.T) {
	f := newFixture(t, mysqltest.Options{})
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { // ends when stop closes
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if c := f.s.Conn(); c != nil {
				_ = c.ThreadID()
			}
			f.s.BeginKill()
			f.s.EndKill()
		}
	}()
	for range 50 {
		f.unit(t)
		f.s.Release(false, false)
	}
	close(stop)
	<-done

	c := f.unit(t)
	aborted := make(chan struct{})
	go func() { // ends after one Abort
		defer close(aborted)
		f.s.Abort()
	}()
	<-aborted
	if err := c.FlushState(); err == nil {
		t.Error("a command on the aborted connection succeeded")
	}
	f.s.Discard()
	if _, open := f.idle(); open != 0 {
		t.Errorf("open = %d after the aborted connection was discarded, want 0", open)
	}
}
