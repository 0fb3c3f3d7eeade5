// Package proxy accepts client connections and runs one session per connection: the
// handshake with the client and the backend, then the loop that reads each command, sends it
// to the backend and streams the response back.
//
// A session is a small state machine over the MySQL protocol. It keeps what later decisions
// need: whether a transaction is open (from the status flags of each response's terminal
// packet), autocommit, the current schema, the prepared statements. Above the commands it
// keeps units, the grain of admission: an autocommit statement is a unit of its own; an
// explicit transaction is one unit from its first statement until the status flags say it
// ended. In passthrough mode every unit runs on the connection's own dedicated backend, the
// one the client authenticated against. In pooled mode (pooled*.go) the proxy authenticates
// the client itself, and each unit leases a connection from the primary's pool
// (internal/backend) that goes back when the unit ends, unless the session is pinned to it
// by state that cannot move; the session's state (variables, schema, prepared statements)
// is carried to whichever connection runs the next unit. A session gets its collaborators
// (admission, cost recording, login, pools) from the server and reaches nothing else of it.
//
// Failures are turned into MySQL error packets in one place (errors.go), with messages that
// start with "gatekeeper:" and say what to do. A backend that dies in the middle of a
// response closes the client connection: a truncated result must never look complete.
//
// The Server owns the listener and the set of live sessions, and nothing else. On shutdown it
// stops accepting, lets sessions finish the statement or transaction they are in, closes
// idle ones at once and, after the drain timeout, closes what remains.
package proxy
