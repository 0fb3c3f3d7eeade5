// Package mysqltest is an in-process fake MySQL server for unit tests, in the manner of
// net/http/httptest.
//
// A test starts one with NewServer, points the code under test at Server.Addr, and
// afterwards asks the server what it saw: every connection in accept order (Server.Conns),
// and for each its user, schema, session and user variables, live prepared statements and
// every command it received. The server is a real wire-protocol peer: it listens on a
// loopback port, speaks the protocol with the packet code of package protocol, and is
// driven in this package's own tests by a real client library. It follows the mock backend
// of pingcap/tiproxy (pkg/proxy/backend/testsuite_test.go), grown into a stateful server
// so that tests of the backend pool, session-state replay, pinning and prepared-statement
// mapping can assert on what a backend was actually told.
//
// It is not a SQL engine. It answers a handful of statement shapes itself, because they
// are the session state a proxy must track and replay: SET of session and user variables
// (SET NAMES and SET SESSION TRANSACTION included), USE, BEGIN / START TRANSACTION /
// COMMIT / ROLLBACK, SELECT of @@variables, @variables, CONNECTION_ID() and DATABASE(),
// DO, and KILL [QUERY|CONNECTION]. Everything else goes to Options.Handler, which answers
// with a Reply: an error, a result set of strings, or an OK, optionally after a delay
// that KILL QUERY can cut short. The recogniser is a scanner that knows quotes, comments
// and parentheses; a statement it does not understand whole is the Handler's.
//
// What it models of a session:
//
//   - Authentication is mysql_native_password against Options.Users. A client that answers
//     the greeting with another method is switched to mysql_native_password;
//     COM_CHANGE_USER always is, with a fresh scramble. Failures are ERR 1045 and close
//     the connection, as does a schema named UnknownSchema. TLS and compression are not
//     offered.
//   - The status flags carry SERVER_STATUS_AUTOCOMMIT and SERVER_STATUS_IN_TRANS. A
//     transaction opens only with BEGIN or START TRANSACTION, never implicitly under
//     autocommit=0.
//   - Session-state tracking follows MariaDB: with CLIENT_SESSION_TRACK, schema changes
//     are reported by default, system variables once session_track_system_variables names
//     them (or '*'), and the state-change flag once session_track_state_change is ON. The
//     value reported is the value as set, unquoted, not the server's canonical form
//     (except autocommit, reported ON or OFF). A login naming a schema reports it too.
//   - COM_RESET_CONNECTION and COM_CHANGE_USER drop variables, prepared statements and
//     tracking settings, end the transaction and turn autocommit back on.
//   - Prepared statements are counted per connection from 1. Preparing one that returns
//     rows asks the Handler for its columns (without waiting for its Delay). Executing one
//     runs its SQL as a query would and answers rows in the binary protocol, every column
//     VAR_STRING; parameter values are recorded, not decoded. An execute that does not bind parameter
//     types for a statement that never had them bound fails with ERR 1210, as a server
//     does, so that a proxy forgetting to re-send types after re-preparing is caught.
//   - With CLIENT_MULTI_STATEMENTS a query's statements run one after another, chained by
//     SERVER_MORE_RESULTS_EXISTS, until one fails.
//
// What it does not do: plan or run SQL, hold tables or data, check privileges or that a
// schema exists, open cursors, send LOCAL INFILE requests, warnings or column types other
// than VAR_STRING, or decode parameter values. Those belong to the integration suite
// against real servers.
//
// Each connection is served by one goroutine, which owns the socket; what a test reads
// is guarded by a mutex, so a test may inspect a connection while it runs. The server
// stops in the test's cleanup, closing every connection and waiting for their goroutines.
package mysqltest
