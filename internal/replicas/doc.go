// Package replicas keeps track of the backend servers behind the proxy: whether each one
// answers, and (as read routing arrives) their replication positions and the choice of the
// replica a read may go to.
//
// Health is checked by a Probe that opens a connection and reads the server's greeting, the
// cheapest exchange that proves a MySQL server is there and accepting connections. A server
// that answers with an error instead (too many connections, host blocked) is unhealthy, with
// that error as the reason. Results are cached briefly so that frequent readiness polls do
// not become connection storms against the database.
package replicas
