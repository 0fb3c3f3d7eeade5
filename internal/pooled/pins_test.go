package pooled

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol/mysqltest"
)

// ran notes a successful COM_QUERY of a statement of kind that uses u.
func (f *fixture) ran(kind classify.Kind, u classify.Uses) {
	f.s.Note(mysql.COM_QUERY, &Statement{Valid: true, Kind: kind, Uses: u}, &protocol.Response{}, nil, true)
}

// pinsTotal returns gatekeeper_session_pins_total by reason, the reasons never counted
// left out.
func (f *fixture) pinsTotal() map[string]float64 {
	out := map[string]float64{}
	for r := range numPinReasons {
		if v := testutil.ToFloat64(f.sh.pinsTotal[r]); v != 0 {
			out[r.String()] = v
		}
	}
	return out
}

func TestUsesPinWithTheirReason(t *testing.T) {
	tests := []struct {
		uses classify.Uses
		want []string
	}{
		{classify.UsesUserVariable, []string{"user_variable"}},
		{classify.UsesGetLock, []string{"get_lock"}},
		{classify.UsesLockTables, []string{"lock_tables"}},
		{classify.UsesTemporaryTable, []string{"temporary_table"}},
		{classify.UsesPrepare, []string{"prepared_sql"}},
		{classify.UsesFoundRows, []string{"found_rows"}},
		{classify.UsesSetLastInsertID, []string{"last_insert_id"}},
		{classify.UsesNextTransaction, []string{"next_transaction"}},
		{classify.UsesSessionTracking, []string{"session_tracking"}},
		{classify.UsesHandler, []string{"handler"}},
		{classify.UsesXAStart, []string{"xa"}},
		{classify.UsesUserVariable | classify.UsesTemporaryTable, []string{"user_variable", "temporary_table"}},
		// What leaves nothing on the connection, or only takes state away.
		{classify.UsesReleaseLock, nil},
		{classify.UsesReleaseAllLocks, nil},
		{classify.UsesUnlockTables, nil},
		{classify.UsesDropTemporaryTable, nil},
		{classify.UsesDeallocate, nil},
		{classify.UsesLastInsertID, nil},
		{classify.UsesXAEnd, nil},
		{classify.UsesConnectionID, nil},
		{classify.UsesKill, nil},
	}
	for _, tt := range tests {
		t.Run(tt.uses.String(), func(t *testing.T) {
			f := newFixture(t, mysqltest.Options{})
			f.unit(t)
			f.ran(classify.Session, tt.uses)
			f.ran(classify.Session, tt.uses) // a second statement counts no second pin
			if got := Names(f.s.Pins.Bits); !slices.Equal(got, tt.want) {
				t.Errorf("pins = %v, want %v", got, tt.want)
			}
			want := map[string]float64{}
			for _, name := range tt.want {
				want[name] = 1
			}
			if got := f.pinsTotal(); !maps.Equal(got, want) {
				t.Errorf("gatekeeper_session_pins_total = %v, want %v", got, want)
			}
		})
	}
}

// Only what ran counts: a statement the classifier could not read, one that failed, and
// commands that run none pin nothing; COM_SET_OPTION pins.
func TestPinsOfCommands(t *testing.T) {
	pinning := Statement{Valid: true, Kind: classify.Session, Uses: classify.UsesUserVariable}
	tests := []struct {
		name string
		cmd  byte
		st   Statement
		res  protocol.Response
		want []string
	}{
		{name: "query", cmd: mysql.COM_QUERY, st: pinning, want: []string{"user_variable"}},
		{name: "execution", cmd: mysql.COM_STMT_EXECUTE, st: pinning, want: []string{"user_variable"}},
		{name: "not read", cmd: mysql.COM_QUERY, st: Statement{Uses: classify.UsesUserVariable}},
		{name: "failed", cmd: mysql.COM_QUERY, st: pinning, res: protocol.Response{Err: &protocol.ServerError{Code: mysql.ER_PARSE_ERROR}}},
		{name: "prepare", cmd: mysql.COM_STMT_PREPARE, st: pinning},
		{name: "set option", cmd: mysql.COM_SET_OPTION, want: []string{"set_option"}},
		{name: "set option refused", cmd: mysql.COM_SET_OPTION, res: protocol.Response{Err: &protocol.ServerError{Code: mysql.ER_UNKNOWN_COM_ERROR}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, mysqltest.Options{})
			f.unit(t)
			f.s.Note(tt.cmd, &tt.st, &tt.res, nil, true)
			if got := Names(f.s.Pins.Bits); !slices.Equal(got, tt.want) {
				t.Errorf("pins = %v, want %v", got, tt.want)
			}
		})
	}
}

// Uses that take state away unpin only when none of it is left.
func TestPinsEndWithTheirState(t *testing.T) {
	tests := []struct {
		name  string
		steps []classify.Uses
		want  []string // the pins after each step
	}{
		{name: "every GET_LOCK released",
			steps: []classify.Uses{classify.UsesGetLock, classify.UsesGetLock, classify.UsesReleaseLock, classify.UsesReleaseLock},
			want:  []string{"get_lock", "get_lock", "get_lock", ""}},
		{name: "a RELEASE_LOCK too many",
			steps: []classify.Uses{classify.UsesReleaseLock, classify.UsesGetLock, classify.UsesReleaseLock},
			want:  []string{"", "get_lock", ""}},
		{name: "RELEASE_ALL_LOCKS",
			steps: []classify.Uses{classify.UsesGetLock, classify.UsesGetLock, classify.UsesReleaseAllLocks, classify.UsesGetLock},
			want:  []string{"get_lock", "get_lock", "", "get_lock"}},
		{name: "UNLOCK TABLES",
			steps: []classify.Uses{classify.UsesLockTables, classify.UsesUnlockTables},
			want:  []string{"lock_tables", ""}},
		{name: "XA END",
			steps: []classify.Uses{classify.UsesXAStart, classify.UsesXAEnd},
			want:  []string{"xa", ""}},
		{name: "other pins stay",
			steps: []classify.Uses{classify.UsesUserVariable | classify.UsesLockTables, classify.UsesUnlockTables},
			want:  []string{"user_variable,lock_tables", "user_variable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, mysqltest.Options{})
			f.unit(t)
			for i, u := range tt.steps {
				f.ran(classify.Session, u)
				if got := strings.Join(Names(f.s.Pins.Bits), ","); got != tt.want[i] {
					t.Errorf("after %v (step %d): pins %q, want %q", u, i, got, tt.want[i])
				}
			}
		})
	}
}

// FOUND_ROWS(), LAST_INSERT_ID(expr) and SET TRANSACTION leave state for the next unit:
// the session keeps its connection for the rest of the unit and the whole next one.
func TestTransientPinsLastOneMoreUnit(t *testing.T) {
	for _, tt := range []struct {
		uses classify.Uses
		pin  string
	}{
		{classify.UsesFoundRows, "found_rows"},
		{classify.UsesSetLastInsertID, "last_insert_id"},
		{classify.UsesNextTransaction, "next_transaction"},
	} {
		t.Run(tt.pin, func(t *testing.T) {
			t.Run("primary", func(t *testing.T) {
				f := newFixture(t, mysqltest.Options{})
				c := f.unit(t)
				f.ran(classify.Read, tt.uses)
				f.ran(classify.Read, 0) // the rest of the unit
				f.wantUnitEnd(t, false, true, tt.pin)
				f.ran(classify.Read, 0) // the next unit, on the same connection
				if f.s.Conn() != c {
					t.Fatal("the next unit runs on another connection")
				}
				f.wantUnitEnd(t, false, false, "")
			})
			t.Run("set again", func(t *testing.T) {
				f := newFixture(t, mysqltest.Options{})
				f.unit(t)
				f.ran(classify.Read, tt.uses)
				f.wantUnitEnd(t, false, true, tt.pin)
				f.ran(classify.Read, tt.uses)
				f.wantUnitEnd(t, false, true, tt.pin)
				f.wantUnitEnd(t, false, false, "")
			})
			t.Run("replica", func(t *testing.T) {
				f := newFixture(t, mysqltest.Options{})
				f.unit(t)
				f.ran(classify.Read, tt.uses)
				f.wantUnitEnd(t, true, false, "")
			})
			t.Run("replica, pinned otherwise", func(t *testing.T) {
				f := newFixture(t, mysqltest.Options{})
				f.unit(t)
				f.ran(classify.Read, tt.uses|classify.UsesUserVariable)
				f.wantUnitEnd(t, true, true, "user_variable")
			})
		})
	}
}

// wantUnitEnd ends a unit (on a replica when onReplica) and checks what the session kept.
func (f *fixture) wantUnitEnd(t *testing.T, onReplica, wantKept bool, wantPins string) {
	t.Helper()
	if released := f.s.Release(onReplica, false); released == wantKept {
		t.Errorf("Release released the connection: %v, want %v", released, !wantKept)
	}
	if got := strings.Join(Names(f.s.Pins.Bits), ","); got != wantPins {
		t.Errorf("pins after the unit: %q, want %q", got, wantPins)
	}
	wantIdle := 1
	if wantKept {
		wantIdle = 0
	}
	if idle, _ := f.idle(); idle != wantIdle {
		t.Errorf("idle connections = %d, want %d", idle, wantIdle)
	}
}

func TestSessionStatementsPinWithoutTracking(t *testing.T) {
	tests := []struct {
		name     string
		tracking bool
		kind     classify.Kind
		uses     classify.Uses
		want     []string
	}{
		{name: "session statement", kind: classify.Session, want: []string{"no_tracking"}},
		{name: "session statement with uses", kind: classify.Session, uses: classify.UsesUserVariable, want: []string{"user_variable", "no_tracking"}},
		{name: "read", kind: classify.Read},
		{name: "tracked", tracking: true, kind: classify.Session},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := mysqltest.Options{Capabilities: mysqltest.DefaultCapabilities &^ mysql.CLIENT_SESSION_TRACK}
			if tt.tracking {
				opts.Capabilities = 0
			}
			f := newFixture(t, opts)
			if c := f.unit(t); c.Tracking() != tt.tracking {
				t.Fatalf("the connection tracks session state: %v, want %v", c.Tracking(), tt.tracking)
			}
			f.ran(tt.kind, tt.uses)
			if got := Names(f.s.Pins.Bits); !slices.Equal(got, tt.want) {
				t.Errorf("pins = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPinnedGaugeFollowsThePins(t *testing.T) {
	f := newFixture(t, mysqltest.Options{})
	g := f.neighbour()
	gauge := func() float64 { return testutil.ToFloat64(f.sh.pinned) }
	f.unit(t)
	g.unit(t)
	f.ran(classify.Session, classify.UsesUserVariable)
	g.ran(classify.Session, classify.UsesGetLock)
	if got := gauge(); got != 2 {
		t.Errorf("two pinned sessions: gauge %v", got)
	}
	g.ran(classify.Session, classify.UsesGetLock)
	if got := gauge(); got != 2 {
		t.Errorf("a session pinned for a second reason: gauge %v, want 2", got)
	}
	g.ran(classify.Session, classify.UsesReleaseAllLocks)
	if got := gauge(); got != 1 {
		t.Errorf("a session unpinned: gauge %v, want 1", got)
	}
	g.ran(classify.Read, classify.UsesFoundRows)
	g.s.Release(true, false)
	if got := gauge(); got != 1 {
		t.Errorf("a transient pin ended on a replica: gauge %v, want 1", got)
	}
	f.s.Close(false, false)
	if got := gauge(); got != 0 {
		t.Errorf("the pinned session closed: gauge %v, want 0", got)
	}
}

// A transient pin that ends with the unit after it ends the session's count in the gauge.
func TestPinnedGaugeDropsWhenTransientPinsEnd(t *testing.T) {
	f := newFixture(t, mysqltest.Options{})
	f.unit(t)
	f.ran(classify.Read, classify.UsesFoundRows)
	f.s.Release(false, false)
	f.ran(classify.Read, 0)
	if !f.s.Release(false, false) {
		t.Fatal("the transient pin did not end")
	}
	if got := testutil.ToFloat64(f.sh.pinned); got != 0 {
		t.Errorf("gauge = %v with no session pinned, want 0", got)
	}
}

func TestNames(t *testing.T) {
	tests := []struct {
		bits uint32
		want []string
	}{
		{0, nil},
		{1 << PinGetLock, []string{"get_lock"}},
		{1<<PinUserVariable | 1<<PinCursor | 1<<PinNoTracking, []string{"user_variable", "cursor", "no_tracking"}},
	}
	for _, tt := range tests {
		if got := Names(tt.bits); !slices.Equal(got, tt.want) {
			t.Errorf("Names(%#x) = %v, want %v", tt.bits, got, tt.want)
		}
	}
}

func TestSharedRegistersItsMetricsAndBounds(t *testing.T) {
	reg := prometheus.NewRegistry()
	sh := NewShared(reg)
	if sh.MaxStmts != 16382 || sh.MaxStmtBytes != 64<<20 {
		t.Errorf("bounds = %d statements, %d bytes; want MySQL's 16382 and 64 MiB", sh.MaxStmts, sh.MaxStmtBytes)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	var reasons []string
	for _, mf := range families {
		series[mf.GetName()] = len(mf.GetMetric())
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				reasons = append(reasons, l.GetValue())
			}
		}
	}
	want := map[string]int{
		"gatekeeper_session_pins_total":        int(numPinReasons),
		"gatekeeper_sessions_pinned":           1,
		"gatekeeper_backend_resets_total":      1,
		"gatekeeper_session_state_syncs_total": 1,
	}
	if !maps.Equal(series, want) {
		t.Errorf("series by metric = %v, want %v", series, want)
	}
	slices.Sort(reasons)
	wantReasons := slices.Clone(pinNames[:])
	slices.Sort(wantReasons)
	if !slices.Equal(reasons, wantReasons) || len(slices.Compact(slices.Clone(wantReasons))) != int(numPinReasons) {
		t.Errorf("reason labels = %v, want every pin reason once: %v", reasons, wantReasons)
	}
}
