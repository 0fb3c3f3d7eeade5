package proxy

import (
	"encoding/binary"
	"errors"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// In pooled mode the connection id a client sees is the proxy's (its session id), while
// its statements run on backend connections with ids of their own. CONNECTION_ID() and
// KILL are translated so that they mean what the client means.

// answerConnectionID answers SELECT CONNECTION_ID(), run as text or as a prepared
// statement (binary), with the client's own id, in a column called name.
func (l *pooledLink) answerConnectionID(name string, binaryRow bool) bool {
	s := l.s
	c := s.client
	deprecateEOF := l.pl.ClientCaps&mysql.CLIENT_DEPRECATE_EOF != 0
	id := uint64(uint32(s.id))
	var b []byte
	write := func(p []byte) bool {
		if err := c.WritePacket(p); err != nil {
			return false
		}
		b = p[:0]
		return true
	}
	ok := write(protocol.AppendLenenc(b, 1)) &&
		write(protocol.AppendColumn(b, name, protocol.TypeLongLong,
			protocol.FlagNotNull|protocol.FlagUnsigned|protocol.FlagBinary, 10, l.pl.Want.Key.MariaDBCapabilities))
	if ok && !deprecateEOF {
		ok = write(protocol.AppendEOF(b, 0, s.status()))
	}
	if ok {
		if binaryRow {
			// A binary row: its header, a NULL bitmap of one byte, the 8-byte value.
			ok = write(binary.LittleEndian.AppendUint64(append(b, 0, 0), id))
		} else {
			ok = write(protocol.AppendLenencString(b, strconv.FormatUint(id, 10)))
		}
	}
	if ok {
		if deprecateEOF {
			end := protocol.AppendOK(b, 0, 0, s.status(), 0)
			end[0] = mysql.EOF_HEADER
			ok = write(end)
		} else {
			ok = write(protocol.AppendEOF(b, 0, s.status()))
		}
	}
	return ok && c.Flush() == nil
}

// killPooled carries out KILL [QUERY] id for the session of that id. A session with a
// statement running on a backend connection has it killed there, by a KILL of the
// backend's thread sent as this client's user; KILL CONNECTION also closes the client's
// connection. A client may kill only its own user's sessions.
func (l *pooledLink) kill(id uint64, query bool) bool {
	s := l.s
	target := s.index.sessionByID(id)
	switch {
	case target == nil:
		s.sendError(&clientError{code: codeUnknownThread, state: stateGeneral,
			msg: "Unknown thread id: " + strconv.FormatUint(id, 10)})
		return s.client.IOErr() == nil
	case target == s && query:
		// The KILL kills itself, as on the server.
		s.sendError(&clientError{code: codeInterrupted, state: stateInterrupted, msg: "Query execution was interrupted"})
		return s.client.IOErr() == nil
	case target == s:
		s.sendError(&clientError{code: 1927, state: stateInterrupted, msg: "Connection was killed"})
		return false
	case target.user != s.user:
		s.sendError(&clientError{code: codeNotOwner, state: stateGeneral,
			msg: "You are not owner of thread " + strconv.FormatUint(id, 10)})
		return s.client.IOErr() == nil
	}
	// In pooled mode every session's link is pooled mode's.
	victim := target.link.(*pooledLink).pl
	thread, addr, running := victim.BeginKill()
	defer victim.EndKill()
	if !query {
		target.killClient()
	}
	if running {
		err := l.killThread(thread, addr, query)
		var se *protocol.ServerError
		switch {
		case errors.As(err, &se) && se.Code == codeUnknownThread:
			// The statement ended, and its connection with it, before the KILL arrived:
			// what was to be killed is gone.
		case errors.As(err, &se):
			s.relayError(se)
			return s.client.IOErr() == nil
		case err != nil:
			s.sendLeaseError(err, 0)
			return s.client.IOErr() == nil
		}
	}
	return s.writeLocalOK()
}

// killThread sends KILL [QUERY] thread to the backend at addr as this client's user, on
// the connection the session holds when it is there, or on one leased for it.
func (l *pooledLink) killThread(thread uint32, addr string, query bool) error {
	text := "KILL CONNECTION "
	if query {
		text = "KILL QUERY "
	}
	text += strconv.FormatUint(uint64(thread), 10)
	if lease := l.pl.Lease(); lease != nil && lease.Conn().Addr() == addr {
		return lease.Conn().Kill(text)
	}
	lease, err := l.m.poolOf(addr).Acquire(l.s.ctx, &l.pl.Want)
	if err != nil {
		return err
	}
	defer lease.Release()
	return lease.Conn().Kill(text)
}
