package chaos

import "strings"

// Check describes one check of the suite: the test that runs it, and what it sets up and
// asserts, as the results table shows them.
type Check struct {
	// Test is the name of the Go test that runs the check; its subtests are its modes or
	// variants, each printing its own line.
	Test string
	// Title names the check in the results table.
	Title string
	// Setup says what the check does and what it asserts.
	Setup string
}

// Checks are the checks of the suite, in the order they run.
var Checks = []Check{
	{
		Test:  "TestPrimaryKilled",
		Title: "kill -9 of the primary",
		Setup: "Both modes; bin/gatekeeper as a subprocess, the primary started again by scripts/test-backends.sh. " +
			"Mid-transaction: BEGIN, INSERT, then DO SLEEP(30); the primary gets SIGKILL while it sleeps. " +
			"Mid-stream: a 100 MB result (100,000 rows of 1,000 bytes) read slowly; SIGKILL after 10,000 rows. " +
			"Asserts: the client gets an error within 10 s, a COMMIT sent on the same connection is not answered OK, " +
			"a cut result is never presented as complete, " +
			"the uncommitted row is gone after the primary restarts on the same datadir, and a new client is served " +
			"through the same proxy process within 15 s of the restart.",
	},
	{
		Test:  "TestProxyRestartUnderWrites",
		Title: "SIGTERM and restart of the proxy under write load",
		Setup: "Both modes; bin/gatekeeper serve as a subprocess, shutdown.drain_timeout 3s, SIGTERMed and started again on the same port " +
			"4 times, 2.5 s apart. 8 writers INSERT rows with unique ids and keep a ledger of the ids whose INSERT was acknowledged; " +
			"after an error of unknown outcome a writer retries the id with a check-then-insert (INSERT ... SELECT ... WHERE NOT EXISTS). " +
			"Asserts: no acknowledged id missing from the table, no id in it twice.",
	},
	{
		Test:  "TestHandover",
		Title: "hand-over to a new process under load",
		Setup: "Both modes; bin/gatekeeper run from a temporary path, admission.capacity fixed at 10s (the check is of the " +
			"hand-over's own pauses), shutdown.drain_timeout 10s, a self-signed TLS certificate. 500 clients hold one " +
			"connection each and run INSERTs of unique ids, transactions, read-backs of their own writes and SELECTs, a statement " +
			"every 100 ms; 30 of them keep sql_mode, time_zone, a schema and 2 prepared statements. Once the load settles: 5 " +
			"hand-overs 3 s apart (POST /-/handover or SIGUSR2; the same binary 3 times, then a build of an older commit that reads the " +
			"same state, 101515b, renamed over the path, twice) and one to a build of another hand-over format. Asserts: no disconnect (CONNECTION_ID() the " +
			"same at the end), no error, no wrong answer; every acknowledged id in the table once; session state as on the " +
			"primary and unchanged; MAINPID= from the old process and READY=1 from the new; the old process exits 0; TLS clients " +
			"and pooled sessions pinned by a temporary table or GET_LOCK drained and counted by reason; the refused hand-over " +
			"answers 409, the refusing build exits 3, the same process goes on serving; the counts carry from process to process.",
	},
	{
		Test:  "TestNetworkFaults",
		Title: "network faults between proxy and backend",
		Setup: "Both modes; a MariaDB server in a network namespace behind a veth pair; faults by tc netem on both ends of the pair, " +
			"or, where the kernel has no netem, by nftables rules in the namespace (loss, blackhole) and a TCP relay on the host (delay). backends.connect_timeout 2s, backends.dead_after 10s. " +
			"Delay 200 ms each way: statements succeed. Loss 30% each way: every login is answered within client.handshake_timeout (10 s) + 2 s and every statement within 2 minutes (TCP's own back-off, not the proxy, stretches them), errors only by timeouts (a 16 KiB row cut off when the proxy gives up its backend connection on a timeout counts as one). " +
			"Blackhole (every packet dropped): a new client is answered within connect_timeout + 2 s, a statement in flight " +
			"within dead_after + 5 s (the proxy gives up a backend that answers nothing, not even TCP keepalive probes); after each fault is removed " +
			"a new client is served within 7 s (pooled mode's dial backoff, at most 5 s, and a dial).",
	},
	{
		Test:  "TestSlowloris",
		Title: "slowloris client",
		Setup: "Both modes; client.handshake_timeout 2s. 20 clients (from 127.0.0.3) read the greeting and send their handshake " +
			"response one byte a second; meanwhile a client from 127.0.0.2 connects, runs SELECT 1 and disconnects in a loop. " +
			"Asserts: each slow client is closed within handshake_timeout + 1 s, every other client is served, each within 1 s.",
	},
	{
		Test:  "TestIdleSockets",
		Title: "2,000 idle sockets",
		Setup: "Both modes; 2,000 TCP connections to the proxy that never send a byte; the primary's Threads_connected read on a " +
			"direct connection every 50 ms, its peak less the value before is what the sockets cost the primary. " +
			"Asserts, where the proxy has client.max_handshakes (set to 100): the peak stays within it.",
	},
	{
		Test:  "TestIdleLogins",
		Title: "10,000 logged-in idle clients",
		Setup: "Pooled mode, pools.max_open 32; bin/gatekeeper as a subprocess; 10,000 clients log in (the protocol spoken " +
			"directly, mysql_native_password) and stay idle. VmRSS of the proxy before and after, and the primary's " +
			"Threads_connected. Asserts: every login succeeds, the primary's connections stay within pools.max_open, and the " +
			"proxy's memory stays under 64 KiB per idle client.",
	},
	{
		Test:  "TestReplicaKilled",
		Title: "a replica killed",
		Setup: "Pooled mode routing reads to both replicas (strong consistency, replicas.poll_interval 5ms, routing.max_lag 1s). " +
			"64 clients read in a loop (a 1,000-row table, by primary key range) while one client writes a row every 10 ms. " +
			"kill -9 of replica 1 after 2 s; replica 1 restarted on its datadir 3 s later. Then replica 2's applier is stopped " +
			"for 3 s. Asserts: no client hangs (every statement answers within 10 s), the only errors are for statements in " +
			"flight on the killed replica, reads go to the replicas before and after, the lagging replica is shunned within " +
			"one poll interval plus 1 s of passing the bound, and both replicas take reads again.",
	},
	{
		Test:  "TestBinlogFollowerPrimaryRestart",
		Title: "the binlog follower: kill -9 of the primary",
		Setup: "Pooled mode routing reads to both replicas, strong consistency with routing.strong_rule per_table (the binlog follower " +
			"records every write committed on the primary; a strong read waits for it to pass the primary's position). " +
			"The load of every follower check: 4 writers each raise the version of a row of their own every 20 ms, 3 straight to the primary " +
			"(writes only the follower can learn of) and 1 through the proxy; 16 readers read the rows through the proxy in a loop, " +
			"and a read is stale when it returns a version below the highest acknowledged before it began. After 2 s, kill -9 of the primary, " +
			"started again at once on its datadir by scripts/test-backends.sh. Asserts: no stale read; every statement through the proxy " +
			"answered within 10 s; the follower seen down within 2 s, and up again (gatekeeper_binlog_follower_up 1, " +
			"gatekeeper_binlog_reconnects_total raised) within 7 s of the primary's return (its longest backoff, 5 s, and 2 s); " +
			"strong reads on the replicas before the kill, and again within 5 s of the follower's return.",
	},
	{
		Test:  "TestBinlogFollowerNetworkCut",
		Title: "the binlog follower: the network to the primary cut",
		Setup: "The load of the kill -9 check; the proxy reaches the primary through a TCP relay listening in a network namespace, " +
			"behind the veth pair of the network faults (the writers straight to the primary do not cross it), backends.dead_after 3s. " +
			"The pair is blackholed (tc netem loss 100% on both ends, or nftables drop) until the follower is seen down " +
			"(gatekeeper_binlog_follower_up 0), and 2 s more; " +
			"then restored. Asserts: the follower seen down within 5 s (its read timeout, three 1 s heartbeats; and 2 s); no stale read; " +
			"every statement through the proxy answered within 10 s; the follower up again, reconnects raised, within 17 s of the " +
			"restore (an attempt to connect begun during the cut ends within go-mysql's 10 s connect timeout, the next follows within " +
			"the longest backoff, 5 s; and 2 s); strong reads on the replicas before the cut, and again within 5 s of the follower's return.",
	},
	{
		Test:  "TestBinlogFollowerPurgedPosition",
		Title: "the binlog follower: its position purged",
		Setup: "The load of the kill -9 check; the proxy reaches the primary through a TCP relay on loopback, which resets every " +
			"connection and refuses new ones (the follower disconnected at once). Once a write straight to the primary has committed " +
			"past the follower's position: FLUSH BINARY LOGS, the replicas wait (MASTER_GTID_WAIT) until they have all before the new log, " +
			"PURGE BINARY LOGS TO it; then the relay relays again, and the follower asks for a position no log holds (error 1236). " +
			"Asserts: no stale read; every statement through the proxy answered within 10 s; the follower up again, " +
			"gatekeeper_binlog_resyncs_total raised (it starts over from the primary's present position, a floor every read then needs), " +
			"within 12 s of the restore (the backoff under way, at most 5 s, the refusal, a second backoff, at most 5 s; and 2 s); " +
			"strong reads on the replicas before the cut, and again within 5 s of the follower's return.",
	},
	{
		Test:  "TestBinlogFollowerMissingGrant",
		Title: "the binlog follower: monitor.user without REPLICATION SLAVE",
		Setup: "The load of the kill -9 check, but its 4 writers write through the proxy (strong reads then count the proxy's own " +
			"writes, proxy_local, the documented fallback); monitor.user has SELECT, PROCESS, BINLOG MONITOR and SLAVE MONITOR, not " +
			"REPLICATION SLAVE. After 2 s of load the account is granted REPLICATION SLAVE. Asserts: the follower refused at start " +
			"(gatekeeper_binlog_denied_total raised, gatekeeper_binlog_follower_up 0 until the grant) with an error line in the proxy's " +
			"log naming the grant; no stale read; no " +
			"statement fails; every statement answered within 10 s; strong reads on the replicas while refused; the follower up " +
			"within 12 s of the grant (it tries again every 10 s after a refusal; and 2 s), and strong reads on the replicas again " +
			"within 5 s.",
	},
	{
		Test:  "TestAdmissionAbuse",
		Title: "admission abuse",
		Setup: "Passthrough; admission.enabled, capacity 50ms, max_queue 100, reserve.floor 20ms. SELECT 1 runs once, so that its " +
			"type is measured; then 300 clients run SELECT SLEEP(0.5) " +
			"in a loop (10 ms pause after an error); once the queue refuses them, 20 times a fresh client logs in and times one SELECT 1. " +
			"Asserts: median and maximum within 50 ms.",
	},
	{
		Test:  "TestFailover",
		Title: "failover: kill -9 of the primary, a switchover, a split brain",
		Setup: "Pooled mode over the primary and both replicas, roles read every 1 s (backends.role_interval), strong reads " +
			"routed to the replicas (strong_rule per_table), failover.buffer_timeout 10s; 16 writers (every fourth in explicit " +
			"transactions) insert ledger rows through the proxy, keeping the ids acknowledged, and 32 readers check through the proxy " +
			"that they never read less of a writer's rows than was acknowledged before they asked. Kill: after 3 s, kill -9 of the " +
			"primary; 2 s later the replica that received the most applies it, stops replicating and is made writable, and the " +
			"other replicates from it, as an orchestrator does; run once with failover.durable_acks off and once with replica. " +
			"Asserts: writes acknowledged again within 1 s of the promotion; no statement fails but those in flight at the kill (from the signal until its port refuses connections); no " +
			"stale read (without durable acks, a read that missed only a write the failover lost is counted apart); no row applied twice; with durable_acks, no acknowledged write missing on the new primary (without, the " +
			"number missing is reported); Threads_running read from the new primary; the write latency before the kill in each run. Switchover: POST pause-writes, the primary " +
			"made read_only, a replica promoted as above with the old primary replicating from it, POST resume-writes. Asserts: no " +
			"client error, no acknowledged write missing, no stale read; the pause is reported. Split brain: a replica stops " +
			"replicating and is made writable beside the primary. Asserts: writes fail with an error naming both servers within " +
			"5 s, none reaches either server, and writes go on once it is read-only again. Fresh backends after each variant.",
	},
	{
		Test:  "TestFleet",
		Title: "a fleet of three proxies through etcd: a member killed, etcd stopped, the shared configuration",
		Setup: "A real etcd (Debian's etcd-server) and three passthrough proxies in one fleet (fleet.interval 500ms, " +
			"fleet.lease_ttl 3s), admission.capacity 90ms from the shared configuration in etcd, 4 clients per proxy " +
			"running DO SLEEP(0.01) throughout. kill -9 of one member; etcd killed for 3 s, then started again with a " +
			"fourth proxy joining; admission.capacity changed to 120ms in etcd, then a misspelled key written; a proxy " +
			"started with that key, and one with GATEKEEPER_ADMISION_ENABLED; check-config with each. Asserts: the members' capacities add up " +
			"to the fleet's (within 2%); the killed member's share is with the others within the lease + 1 s; without " +
			"etcd the shares stay and every member serves; once etcd is back three members share again; the change is " +
			"applied by every member within 1 s; the misspelled key is refused by every member with the running " +
			"configuration kept; both misspelled starts and check-configs fail naming the setting meant; no client error at the members " +
			"not killed.",
	},
}

// CheckOf returns the check a test or subtest belongs to.
func CheckOf(test string) (Check, bool) {
	top, _, _ := strings.Cut(test, "/")
	for _, c := range Checks {
		if c.Test == top {
			return c, true
		}
	}
	return Check{}, false
}
