package routing

import (
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// Response is what Ack reads of a response, read whole and not yet acknowledged to the
// client.
type Response struct {
	// Err: the response is an error.
	Err bool
	// InTxn: its status says a transaction is open.
	InTxn bool
	// AffectedRows is its OK's count.
	AffectedRows uint64
	// GTIDs are the commit positions it carries (the last_gtid session-state records).
	GTIDs []replicas.GTID
}

// Ack runs once a response is read whole and before its end reaches the client: the
// commit position it carries, if any, is recorded for the tables the unit wrote, so that no
// read that arrives after the acknowledgement misses the write. st is the statement the
// response answers (nil for a command without one).
func (s *Session) Ack(st *Statement, r *Response) {
	if s == nil {
		return
	}
	if st != nil && st.Tables != nil && (st.Kind == classify.Write || st.Kind == classify.DDL || st.Opaque) {
		s.wrote = true
		s.written = appendKeys(s.written, st.Tables.written)
		s.writeUnknown = s.writeUnknown || st.Tables.writeUnknown || st.Opaque
		if len(st.Tables.sessionKey) > 0 {
			s.sessionKey = append(s.sessionKey[:0], st.Tables.sessionKey...)
		}
	}
	if r.Err && !s.wrote {
		return
	}
	versions := s.p.router.Versions()
	for _, g := range r.GTIDs {
		versions.Wrote(s.written, s.writeUnknown, g)
		s.own = s.own.With(g)
		if len(s.sessionKey) > 0 {
			s.p.sessions.Wrote(s.sessionKey, g)
		}
	}
	found := len(r.GTIDs) > 0
	if r.InTxn && !found {
		return // the writes commit later
	}
	if s.wrote && !found && (r.AffectedRows > 0 || s.writeUnknown) {
		// Acknowledged without a position: what the primary has after it covers it.
		versions.WroteUnknown(time.Now())
	}
	if st != nil && st.Kind == classify.DDL && !r.Err {
		s.p.router.ReloadClosure()
	}
	s.written, s.writeUnknown, s.wrote = s.written[:0], false, false
	s.sessionKey = s.sessionKey[:0]
}
