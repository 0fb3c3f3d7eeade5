// Package proxy accepts client connections and runs one session per connection: the login,
// then the statement path for each command the client sends.
//
// The session (session.go) holds the connection's state only: its protocol state (user,
// schema, transaction, autocommit, the statements it prepared), the open unit and its
// admission charge, and what the server's drain and idle reaper need. Units are the grain
// of admission: an autocommit statement is a unit of its own; an explicit transaction is one
// unit from its first statement until the status flags say it ended.
//
// The statement path (path.go) takes each command through named steps, each a function of
// a plan, the value that carries the command, its statement, the type and cost of the unit
// it starts and the route decision: classify (classify.go), police and admit (admit.go,
// policing.go; package admission), route (package routing), lease, relay and record. The
// path has no branch on the mode. The seam between it and the backends is backendLink
// (link.go): how a session logs in, where its units get their connection, and the hooks by
// which a mode answers commands itself, readies a command for its connection and learns
// from the response. Passthrough (passthrough.go) relays the login to the primary and
// keeps that one connection for every unit; pooled mode (pooled*.go; package pooled)
// authenticates the client itself and leases each unit a connection from the pool of the
// backend its route names, carrying the session's state to it. A read that falls back
// from a replica to the primary moves there whole, its admission charge included, in one
// place (session.fallBack).
//
// Failures are turned into MySQL error packets in one place (errors.go), with messages that
// start with "gatekeeper:" and say what to do. A backend that dies in the middle of a
// response closes the client connection: a truncated result must never look complete.
//
// The Server owns the listener and the set of live sessions, and hands each session its
// collaborators (admission, cost recording, the login's gate, the mode, routing), nothing
// else of itself. On shutdown it stops accepting, lets sessions finish the statement or
// transaction they are in, closes idle ones at once and, after the drain timeout, closes
// what remains.
package proxy
