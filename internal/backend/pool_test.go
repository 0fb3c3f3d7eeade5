package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol/mysqltest"
)

var testKey = KeyOf(mysql.CLIENT_MULTI_RESULTS|mysql.CLIENT_TRANSACTIONS, 0)

func user(name, password string) auth.Credential {
	return auth.Credential{User: name, Password: password, HasPassword: true}
}

func newTestPool(t *testing.T, srv *mysqltest.Server, cfg PoolConfig) *Pool {
	t.Helper()
	p := NewPool(&Dialer{Addr: srv.Addr, ConnectTimeout: 2 * time.Second}, cfg, nil, slog.New(slog.DiscardHandler))
	t.Cleanup(p.Close)
	return p
}

func want(cred auth.Credential) *Want {
	return &Want{Credential: cred, Key: testKey, Charset: 45}
}

func TestAcquireReusesTheConnection(t *testing.T) {
	srv := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw"}})
	p := newTestPool(t, srv, PoolConfig{})
	w := want(user("app", "pw"))
	s := NewState("", 45)
	var last *Conn
	for i := range 5 {
		l, err := p.Acquire(context.Background(), withState(w, s))
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && l.Conn() != last {
			t.Errorf("lease %d got another connection than the idle one", i)
		}
		last = l.Conn()
		w.Prefer = last
		l.Release()
	}
	if srv.Logins() != 1 {
		t.Errorf("logins = %d, want 1", srv.Logins())
	}
	if st := p.Stats(); st.Open != 1 || st.Idle != 1 || st.Leased != 0 {
		t.Errorf("stats = %+v, want one idle connection", st)
	}
	if !last.Tracking() {
		t.Error("session tracking is not on: the proxy would not see SET")
	}
}

func TestAcquireWaitsForAConnectionAndTimesOut(t *testing.T) {
	srv := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw"}})
	p := newTestPool(t, srv, PoolConfig{MaxOpen: 2, WaitTimeout: 200 * time.Millisecond})
	w := want(user("app", "pw"))
	a, err := p.Acquire(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Acquire(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Lease)
	go func() {
		l, err := p.Acquire(context.Background(), w)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	waitUntil(t, func() bool { return p.Stats().Waiting == 1 })
	a.Release()
	c := <-got
	if c.Conn() != a.Conn() {
		t.Error("the waiter did not get the connection given back")
	}
	start := time.Now()
	_, err = p.Acquire(context.Background(), w)
	if !errors.Is(err, ErrWaitTimeout) {
		t.Fatalf("err = %v, want ErrWaitTimeout", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 2*time.Second {
		t.Errorf("waited %v, want about the wait timeout", d)
	}
	b.Release()
	c.Release()
	if st := p.Stats(); st.Open != 2 || st.Waiting != 0 {
		t.Errorf("stats = %+v", st)
	}
	if srv.Logins() != 2 {
		t.Errorf("logins = %d, want 2: never more than MaxOpen", srv.Logins())
	}
}

func TestDiscardedAndDeadConnectionsAreNotReused(t *testing.T) {
	srv := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw"}})
	p := newTestPool(t, srv, PoolConfig{})
	w := want(user("app", "pw"))
	l, err := p.Acquire(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	first := l.Conn()
	l.Discard()
	l, err = p.Acquire(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	if l.Conn() == first {
		t.Fatal("a discarded connection came back")
	}
	second := l.Conn()
	l.Release()
	srv.CloseAll() // the server hangs up on the idle connection
	waitUntil(t, func() bool { return srv.Open() == 0 })
	waitUntil(t, func() bool { return second.pc.CheckIdle() != nil })
	l, err = p.Acquire(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	if l.Conn() == second {
		t.Fatal("a connection the server closed was handed out")
	}
	if err := l.Conn().exec([]byte("DO 1")); err != nil {
		t.Fatalf("the new connection does not work: %v", err)
	}
	l.Release()
	if srv.Logins() != 3 {
		t.Errorf("logins = %d, want 3", srv.Logins())
	}
}

func TestSyncCarriesTheSessionState(t *testing.T) {
	srv := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw", "other": "pw2"}})
	p := newTestPool(t, srv, PoolConfig{MaxOpen: 1})
	ctx := context.Background()
	w := want(user("app", "pw"))

	// Session A sets two variables and a schema, and leaves them on the connection.
	a := NewState("", 45)
	l, err := p.Acquire(ctx, withState(w, a))
	if err != nil {
		t.Fatal(err)
	}
	a.SetVar("sql_mode", "ANSI")
	a.SetVar("time_zone", "+01:00")
	a.Schema = "shop"
	if err := l.Conn().Sync(ctx, w, a, false); err != nil {
		t.Fatal(err)
	}
	fc := srv.Conns()[0]
	if v := fc.Vars(); v["sql_mode"] != "ANSI" || v["time_zone"] != "+01:00" || fc.Schema() != "shop" {
		t.Fatalf("server state %v schema %q", v, fc.Schema())
	}
	l.Release()

	// Session B set only sql_mode, to another value: A's time_zone goes back to the
	// server's default, so B does not inherit it.
	b := NewState("shop", 45)
	b.SetVar("sql_mode", "TRADITIONAL")
	l, err = p.Acquire(ctx, withState(w, b))
	if err != nil {
		t.Fatal(err)
	}
	before := len(fc.Commands())
	if b.Matches(l.Conn()) {
		t.Fatal("B matches a connection in A's state")
	}
	if err := l.Conn().Sync(ctx, w, b, false); err != nil {
		t.Fatal(err)
	}
	if v := settings(fc.Vars()); v["sql_mode"] != "TRADITIONAL" || v["time_zone"] != "DEFAULT" {
		t.Errorf("after B's sync the server has %v, want sql_mode=TRADITIONAL and time_zone=DEFAULT", v)
	}
	if cmds := fc.Commands()[before:]; len(cmds) != 1 || cmds[0].Text != "SET SESSION time_zone=DEFAULT, sql_mode='TRADITIONAL'" {
		t.Errorf("commands = %v, want one SET that puts time_zone back and sets sql_mode", cmds)
	}
	if !b.Matches(l.Conn()) {
		t.Error("after Sync the connection does not match B")
	}
	// Nothing to do the second time.
	before = len(fc.Commands())
	if err := l.Conn().Sync(ctx, w, b, false); err != nil {
		t.Fatal(err)
	}
	if n := len(fc.Commands()) - before; n != 0 {
		t.Errorf("a second Sync sent %d commands, want none", n)
	}
	l.Release()

	// Another user: the connection logs in again with COM_CHANGE_USER.
	w2 := want(user("other", "pw2"))
	c := NewState("shop", 45)
	l, err = p.Acquire(ctx, withState(w2, c))
	if err != nil {
		t.Fatal(err)
	}
	before = len(fc.Commands())
	if err := l.Conn().Sync(ctx, w2, c, false); err != nil {
		t.Fatal(err)
	}
	v := settings(fc.Vars())
	for name := range charsetVars {
		delete(v, name) // SET NAMES gives them a fresh login's values
	}
	if fc.User() != "other" || len(v) != 0 {
		t.Errorf("server user %q vars %v, want other and no variables but the character set's", fc.User(), fc.Vars())
	}
	if cmds := fc.Commands()[before:]; len(cmds) < 2 || cmds[0].Byte != mysql.COM_CHANGE_USER || !strings.HasPrefix(cmds[1].Text, "SET NAMES ") {
		t.Errorf("commands = %v, want COM_CHANGE_USER, then SET NAMES", cmds)
	}
	l.Release()
	if srv.Logins() != 1 {
		t.Errorf("logins = %d, want 1: one connection served three sessions", srv.Logins())
	}
}

func TestRefusedLoginsBackOff(t *testing.T) {
	srv := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw", "other": "pw2"}})
	p := newTestPool(t, srv, PoolConfig{})
	w := want(user("app", "wrong"))
	_, err := p.Acquire(context.Background(), w)
	if !errors.Is(err, ErrLoginRefused) {
		t.Fatalf("err = %v, want ErrLoginRefused", err)
	}
	var se *protocol.ServerError
	if !errors.As(err, &se) || se.Code != 1045 {
		t.Errorf("err = %v, want the server's 1045 inside", err)
	}
	attempts := len(srv.Conns())
	for range 20 {
		if _, err := p.Acquire(context.Background(), w); !errors.Is(err, ErrBackoff) {
			t.Fatalf("err = %v, want ErrBackoff", err)
		}
	}
	if n := len(srv.Conns()); n != attempts {
		t.Errorf("%d more connections to a backend that refuses the login, want none", n-attempts)
	}
	// Another user is not held back.
	l, err := p.Acquire(context.Background(), want(user("other", "pw2")))
	if err != nil {
		t.Fatalf("another user's login: %v", err)
	}
	l.Release()
}

func TestStatementsArePreparedOncePerConnectionAndBounded(t *testing.T) {
	srv := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw"}})
	p := newTestPool(t, srv, PoolConfig{})
	l, err := p.Acquire(context.Background(), want(user("app", "pw")))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	c := l.Conn()
	st, err := c.Prepare([]byte("SELECT ? + ?"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Params != 2 || c.Stmt([]byte("SELECT ? + ?"), 0) != st {
		t.Errorf("statement %+v not kept by text", st)
	}
	if _, err := c.Prepare([]byte("SELECT * FROM"), 0); err != nil {
		var se *protocol.ServerError
		if !errors.As(err, &se) {
			t.Fatalf("a statement the server refuses: %v, want its error", err)
		}
	}
	for i := range MaxStatementsPerConn + 10 {
		if _, err := c.Prepare(fmt.Appendf(nil, "SELECT %d", i), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.exec([]byte("DO 1")); err != nil { // the closes go out with the next command
		t.Fatal(err)
	}
	if c.Statements() != MaxStatementsPerConn {
		t.Errorf("kept %d statements, want %d", c.Statements(), MaxStatementsPerConn)
	}
	if n := len(srv.Conns()[0].Prepared()); n > MaxStatementsPerConn {
		t.Errorf("the server holds %d statements, want at most %d", n, MaxStatementsPerConn)
	}
}

func TestAnotherKeyGetsAConnectionOfItsOwn(t *testing.T) {
	srv := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw"}})
	p := newTestPool(t, srv, PoolConfig{MaxOpen: 1})
	w := want(user("app", "pw"))
	l, err := p.Acquire(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	w2 := want(user("app", "pw"))
	w2.Key = KeyOf(mysql.CLIENT_DEPRECATE_EOF, 0)
	l, err = p.Acquire(context.Background(), w2)
	if err != nil {
		t.Fatal(err)
	}
	if l.Conn().Capabilities()&mysql.CLIENT_DEPRECATE_EOF == 0 {
		t.Error("the connection for a client with CLIENT_DEPRECATE_EOF does not have it")
	}
	l.Release()
	if st := p.Stats(); st.Open != 1 {
		t.Errorf("open = %d, want 1: the other key's connection replaced the first", st.Open)
	}
}

// settings drops the proxy's own session-tracking variables from a server's variables.
func settings(vars map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range vars {
		if !strings.HasPrefix(k, "session_track_") {
			out[k] = v
		}
	}
	return out
}

// waitUntil polls cond until it holds, for at most five seconds.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatal("condition not reached in 5s")
		case <-tick.C:
		}
	}
}

// A unit's lease costs no allocation once the connection is open: a pooled session pays
// it for every autocommit statement.
func TestLeaseAllocatesNothing(t *testing.T) {
	srv := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw"}})
	p := newTestPool(t, srv, PoolConfig{})
	w := want(user("app", "pw"))
	s := NewState("", 45)
	s.SetVar("sql_mode", "ANSI")
	l, err := p.Acquire(context.Background(), withState(w, s))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Conn().Sync(context.Background(), w, s, false); err != nil {
		t.Fatal(err)
	}
	w.Prefer = l.Conn()
	l.Release()
	allocs := testing.AllocsPerRun(200, func() {
		l, err := p.Acquire(context.Background(), withState(w, s))
		if err != nil {
			t.Fatal(err)
		}
		if !s.Matches(l.Conn()) {
			t.Fatal("the preferred connection lost the session's state")
		}
		l.Conn().Adopt(s)
		l.Release()
	})
	if allocs != 0 {
		t.Errorf("%v allocations per lease, want 0", allocs)
	}
}

func BenchmarkLease(b *testing.B) {
	srv := mysqltest.NewServer(b, mysqltest.Options{Users: map[string]string{"app": "pw"}})
	p := NewPool(&Dialer{Addr: srv.Addr}, PoolConfig{}, nil, slog.New(slog.DiscardHandler))
	defer p.Close()
	w := want(user("app", "pw"))
	s := NewState("", 45)
	b.ReportAllocs()
	for b.Loop() {
		l, err := p.Acquire(context.Background(), withState(w, s))
		if err != nil {
			b.Fatal(err)
		}
		w.Prefer = l.Conn()
		l.Release()
	}
}

func TestSetStatement(t *testing.T) {
	vars := func(kv ...string) *varSet {
		v := emptyVars
		for i := 0; i < len(kv); i += 2 {
			v = v.with(kv[i], kv[i+1])
		}
		return v
	}
	latin := &loginNames{charset: "utf8mb4", collation: "utf8mb4_general_ci"}
	for _, tc := range []struct {
		name       string
		have, want *varSet
		names      *loginNames
		set        string
		ok         bool
	}{
		{"nothing to do", vars("sql_mode", "ANSI"), vars("sql_mode", "ANSI"), nil, "", true},
		{"a new value", vars(), vars("sql_mode", "ANSI", "time_zone", "+01:00"), nil, "SET SESSION sql_mode='ANSI', time_zone='+01:00'", true},
		{"numbers bare", vars(), vars("wait_timeout", "100", "long_query_time", "0.5"), nil, "SET SESSION long_query_time=0.5, wait_timeout=100", true},
		{"back to the default", vars("sql_mode", "ANSI", "time_zone", "+01:00"), vars("sql_mode", "ANSI"), nil, "SET SESSION time_zone=DEFAULT", true},
		{"quotes escaped", vars(), vars("sql_mode", `a'b\c`), nil, `SET SESSION sql_mode='a\'b\\c'`, true},
		{"NULL results", vars(), vars("character_set_results", ""), nil, "SET SESSION character_set_results=NULL", true},
		{"character sets back to the login's", vars("character_set_client", "latin1", "character_set_connection", "latin1"), vars(), latin,
			"SET NAMES 'utf8mb4' COLLATE 'utf8mb4_general_ci'", true},
		{"login's names unknown", vars("collation_connection", "latin1_bin"), vars(), nil, "", false},
		{"names then the session's own", vars("character_set_client", "latin1", "collation_connection", "latin1_bin"), vars("character_set_client", "latin1"), latin,
			"SET NAMES 'utf8mb4' COLLATE 'utf8mb4_general_ci', character_set_client='latin1'", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, ok := setStatement(tc.have, tc.want, tc.names)
			if string(set) != tc.set || ok != tc.ok {
				t.Errorf("got %q, %v; want %q, %v", set, ok, tc.set, tc.ok)
			}
		})
	}
}

func TestPrepareUnderTheSnapshotOfItsTime(t *testing.T) {
	srv := mysqltest.NewServer(t, mysqltest.Options{Users: map[string]string{"app": "pw"}})
	p := newTestPool(t, srv, PoolConfig{})
	ctx := context.Background()
	w := want(user("app", "pw"))
	s := NewState("other", 45)
	l, err := p.Acquire(ctx, withState(w, s))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	c := l.Conn()
	if err := c.Sync(ctx, w, s, false); err != nil {
		t.Fatal(err)
	}
	then := s.Snapshot() // prepared in schema other
	s.Schema = "shop"
	s.SetVar("sql_mode", "ANSI")
	if err := c.Sync(ctx, w, s, false); err != nil {
		t.Fatal(err)
	}
	fc := srv.Conns()[len(srv.Conns())-1]
	before := len(fc.Commands())
	st, err := c.PrepareUnder(ctx, w, []byte("SELECT c FROM t"), then, s)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, cmd := range fc.Commands()[before:] {
		seen = append(seen, fmt.Sprintf("%d:%s", cmd.Byte, cmd.Text))
	}
	want := []string{
		fmt.Sprintf("%d:SET SESSION sql_mode=DEFAULT", mysql.COM_QUERY),
		fmt.Sprintf("%d:other", mysql.COM_INIT_DB),
		fmt.Sprintf("%d:SELECT c FROM t", mysql.COM_STMT_PREPARE),
		fmt.Sprintf("%d:SET SESSION sql_mode='ANSI'", mysql.COM_QUERY),
		fmt.Sprintf("%d:shop", mysql.COM_INIT_DB),
	}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("commands\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
	if !s.Matches(c) || fc.Schema() != "shop" {
		t.Error("the connection is not back in the session's state")
	}
	if c.Stmt([]byte("SELECT c FROM t"), then.Key()) != st || c.Stmt([]byte("SELECT c FROM t"), s.Snapshot().Key()) != nil {
		t.Error("the statement is kept under the snapshot it was prepared in, and only under it")
	}
}

// withState sets the session state a lease is asked for with.
func withState(w *Want, s *State) *Want {
	w.State = s
	return w
}

// TestRedialEndsABackoffBegunBeforeASighting: dials to a backend that is away back off;
// a sighting of the backend after the backoff began ends it (the next Acquire dials), one
// from before does not.
func TestRedialEndsABackoffBegunBeforeASighting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: dials are refused
	p := NewPool(&Dialer{Addr: addr, ConnectTimeout: time.Second}, PoolConfig{}, nil, slog.New(slog.DiscardHandler))
	t.Cleanup(p.Close)
	w := want(user("app", "pw"))
	before := time.Now()
	if _, err := p.Acquire(context.Background(), w); err == nil || errors.Is(err, ErrBackoff) {
		t.Fatalf("err = %v, want the dial's error", err)
	}
	if _, err := p.Acquire(context.Background(), w); !errors.Is(err, ErrBackoff) {
		t.Fatalf("err = %v, want ErrBackoff", err)
	}
	if p.Redial(before.Add(-time.Second)) {
		t.Error("a sighting from before the dial failed ended the backoff")
	}
	if !p.Redial(time.Now()) {
		t.Fatal("a sighting after the dial failed did not end the backoff")
	}
	if _, err := p.Acquire(context.Background(), w); err == nil || errors.Is(err, ErrBackoff) {
		t.Fatalf("err = %v, want a new dial and its error", err)
	}
	if p.Redial(before) {
		t.Error("a sighting from before the new dial ended its backoff")
	}
}
