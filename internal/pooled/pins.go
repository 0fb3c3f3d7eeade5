package pooled

import (
	"github.com/gatekeeperdb/gatekeeper/internal/classify"
)

// PinReason is why a session keeps its backend connection between units.
type PinReason uint8

// Pin reasons, the reason label of gatekeeper_session_pins_total.
const (
	PinUserVariable PinReason = iota
	PinGetLock
	PinLockTables
	PinTemporaryTable
	PinPreparedSQL
	PinFoundRows
	PinLastInsertID
	PinNextTransaction
	PinSessionTracking
	PinHandler
	PinXA
	PinSQLLogBin
	PinSessionVariable
	PinSessionState
	PinLongData
	PinCursor
	PinSetOption
	PinNoTracking
	numPinReasons
)

var pinNames = [numPinReasons]string{
	"user_variable", "get_lock", "lock_tables", "temporary_table", "prepared_sql", "found_rows",
	"last_insert_id", "next_transaction", "session_tracking", "handler", "xa", "sql_log_bin",
	"session_variable", "session_state", "long_data", "cursor", "set_option", "no_tracking",
}

func (r PinReason) String() string { return pinNames[r] }

// transientPins end with the unit after the one that set them: SQL_CALC_FOUND_ROWS is read
// by the next statement, SET TRANSACTION applies to the next transaction.
const transientPins = 1<<PinFoundRows | 1<<PinLastInsertID | 1<<PinNextTransaction

// Pins are the reasons a session holds its connection, as bits of PinReason.
type Pins struct {
	Bits uint32
	// getLocks counts GET_LOCK calls not matched by RELEASE_LOCK.
	getLocks int
	// expiring are transient pins set before the current unit: they end with it.
	expiring uint32
}

// Has tells whether r is among the pins.
func (p *Pins) Has(r PinReason) bool { return p.Bits&(1<<r) != 0 }

// Names returns the names of the pin reasons in bits, for the sessions API.
func Names(bits uint32) []string {
	var out []string
	for r := range numPinReasons {
		if bits&(1<<r) != 0 {
			out = append(out, r.String())
		}
	}
	return out
}

// pin records that the session keeps its connection for r.
func (s *Session) pin(r PinReason) {
	if s.Pins.Has(r) {
		return
	}
	s.Pins.Bits |= 1 << r
	s.sh.pinsTotal[r].Inc()
	s.log.Debug("session pinned to its backend connection", "reason", r.String())
}

func (s *Session) unpin(r PinReason) { s.Pins.Bits &^= 1 << r }

// pinTransient pins for the rest of this unit and the whole of the next.
func (s *Session) pinTransient(r PinReason) {
	s.pin(r)
	s.Pins.expiring &^= 1 << r
}

// Pinned tells whether the session keeps its connection between units.
func (s *Session) Pinned() bool { return s.Pins.Bits != 0 }

// SyncGauge keeps the pinned-sessions gauge up to date with the pins.
func (s *Session) SyncGauge() { s.setPinned(s.Pins.Bits != 0) }

func (s *Session) setPinned(on bool) {
	if on == s.inGauge {
		return
	}
	s.inGauge = on
	if on {
		s.sh.pinned.Inc()
	} else {
		s.sh.pinned.Dec()
	}
}

// pinsOfStatement applies what the classifier saw of a successful statement of kind that
// uses u.
func (s *Session) pinsOfStatement(kind classify.Kind, u classify.Uses) {
	if u == 0 {
		if kind == classify.Session && !s.lease.Conn().Tracking() {
			s.pin(PinNoTracking)
		}
		return
	}
	s.pinUses(u)
	if !s.lease.Conn().Tracking() && kind == classify.Session {
		s.pin(PinNoTracking)
	}
}

// usePins are the uses that pin the session for as long as the state they leave lasts.
var usePins = [...]struct {
	use classify.Uses
	pin PinReason
}{
	{classify.UsesUserVariable, PinUserVariable},
	{classify.UsesLockTables, PinLockTables},
	{classify.UsesTemporaryTable, PinTemporaryTable},
	{classify.UsesPrepare, PinPreparedSQL},
	{classify.UsesSessionTracking, PinSessionTracking},
	{classify.UsesHandler, PinHandler},
	{classify.UsesXAStart, PinXA},
}

// pinUses pins and unpins for the uses u of a statement.
func (s *Session) pinUses(u classify.Uses) {
	for _, up := range usePins {
		if u&up.use != 0 {
			s.pin(up.pin)
		}
	}
	if u&classify.UsesGetLock != 0 {
		s.Pins.getLocks++
		s.pin(PinGetLock)
	}
	if u&classify.UsesReleaseLock != 0 && s.Pins.getLocks > 0 {
		if s.Pins.getLocks--; s.Pins.getLocks == 0 {
			s.unpin(PinGetLock)
		}
	}
	if u&classify.UsesReleaseAllLocks != 0 {
		s.Pins.getLocks = 0
		s.unpin(PinGetLock)
	}
	if u&classify.UsesUnlockTables != 0 {
		s.unpin(PinLockTables)
	}
	if u&classify.UsesFoundRows != 0 {
		s.pinTransient(PinFoundRows)
	}
	if u&classify.UsesSetLastInsertID != 0 {
		s.pinTransient(PinLastInsertID)
	}
	if u&classify.UsesNextTransaction != 0 {
		s.pinTransient(PinNextTransaction)
	}
	if u&classify.UsesXAEnd != 0 {
		s.unpin(PinXA)
	}
}
