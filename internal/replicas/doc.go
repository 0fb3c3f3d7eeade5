// Package replicas keeps track of the backend servers behind the proxy: whether each one
// answers, their replication positions and lag, the version map of the writes acknowledged
// to each table, and the balance among the backends a read may go to (Router.Pick). Which
// reads go to a replica at all, and what they must wait for, is package routing's policy.
//
// Health is checked by a Probe that opens a connection and reads the server's greeting, the
// cheapest exchange that proves a MySQL server is there and accepting connections. A server
// that answers with an error instead (too many connections, host blocked) is unhealthy, with
// that error as the reason. Results are cached briefly so that frequent readiness polls do
// not become connection storms against the database.
package replicas
