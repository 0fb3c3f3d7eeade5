// Package backend holds the proxy's own connections to database servers: dialing and logging
// in as a client's user, a pool of connections per backend address, the lease through which
// a client session borrows one connection for a unit of work, and the session state that
// must hold on whichever connection runs the session's next unit.
//
// # Leases
//
// A session asks for a connection with Pool.Acquire and a Want: who to log in as, the shape
// of packets its client expects (Key), and the connection it used last, which it gets back
// when that one is idle. The lease ends with Release, which puts the connection back in the
// pool, or Discard, which closes it. A connection that broke in the middle of an exchange,
// or whose state the proxy no longer knows, is discarded, never pooled: the next client
// must not read the rest of somebody else's result or run inside somebody else's
// transaction. Vitess' smartconnpool (Recycle and Taint) is the model.
//
// The pool bounds the connections open to its backend (MaxOpen). When all are leased, a
// request waits, first come first served, for a connection to come back, at most
// WaitTimeout. An idle connection is checked before it is handed out (a peek at its socket,
// which tells a connection the server closed), idle ones are closed after IdleTimeout and
// old ones after MaxLifetime. When dialing fails, further dials wait out a growing backoff,
// so that a backend that refuses the proxy's login is not hammered.
//
// # Session state
//
// A pooled connection is shared by many client sessions over time, so what a session set on
// it must follow the session. State is that session state: the default schema, the
// character set of the handshake, the session variables changed by SET (learned from the
// server's session tracking, which every pooled connection turns on), and the last insert
// id. When a session's next unit runs on a connection whose state differs, Sync brings the
// connection to the session's state: the variables that differ are set, and those the
// session never set go back to their values at login (x=DEFAULT, and SET NAMES of the
// login's character set). Another user or character set is a COM_CHANGE_USER. Everything
// Sync sends goes in one write and costs one round trip. State the proxy cannot carry over
// (temporary tables, user-level locks, user variables) pins the session to its connection;
// that decision is the session's, not this package's.
//
// Each connection also keeps the server-side prepared statements made on it, by text and by
// the Snapshot of session state they were prepared in (the schema and SQL mode give a text
// its meaning), so a statement a client prepared once can run on any connection: it is
// prepared again where it is missing, under its snapshot (PrepareUnder), and the cache is
// bounded per connection.
package backend
