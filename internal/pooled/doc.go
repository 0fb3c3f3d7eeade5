// Package pooled is a client session's side of pooled mode: what lets many client sessions
// share a few backend connections while each sees a server of its own.
//
// Between units a client holds no backend connection. When its next unit starts, the
// session takes a connection leased from a pool (package backend) and brings it to the
// session's state first (Take: the schema, character set, session variables and last
// insert id, replayed in one round trip). What the unit does to that state is learnt from
// the server's session tracking (Note): a variable set, a schema changed. State the proxy
// cannot carry to another connection (a user variable, a lock, a temporary table, a
// prepared statement of SQL PREPARE, an open cursor, a variable it cannot read back) pins
// the session to its connection until the state goes; the pin and its reason are counted
// (Pins). When the unit ends the connection goes back to the pool, unless pinned (Release).
//
// Prepared statements are the client's, not a connection's: the client knows each by an
// id the proxy gives it, and on whatever connection runs an execution the statement is the
// one prepared from the same text in the same state (a schema, an SQL mode), prepared there
// again when missing (Prepare). The parameter types the client bound last are sent again to
// a connection where the client never bound them.
//
// Nothing here writes to the client: the session decides what the client is told.
// Vitess's smartconnpool and PgBouncer's transaction pooling are the models; the pins are
// what PgBouncer documents as unsupported in transaction mode, kept working by pinning.
package pooled
