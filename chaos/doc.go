// Package chaos is gatekeeper's fault-injection suite: it breaks what the proxy depends on
// and measures what clients see. The primary is killed with SIGKILL in the middle of a
// transaction and of a 100 MB result; the proxy is stopped with SIGTERM and started again
// under a write load whose acknowledged writes are kept in a ledger; the network between
// the proxy and its backend delays, loses and swallows packets; clients connect and never
// speak, speak one byte a second, log in by the ten thousand and sit idle, or flood the
// admission queue with slow statements. The binlog follower, which lets strong reads see
// writes that bypass the proxy, loses its primary (killed, cut off, its position purged, its
// grant missing) under a strong read load, each read held to the writes acknowledged before
// it began.
//
// Every check runs real processes on loopback: MariaDB servers started by
// scripts/test-backends.sh (a primary and two replicas), the gatekeeper binary as a
// subprocess (so that it can be signalled and its memory read), and, for the network
// faults, a MariaDB server of its own inside a network namespace (for the follower's cut, a
// relay to the primary listening there), reached over a veth pair whose packets tc netem or
// nftables drop and delay. Every check is bounded in time, and
// everything a check starts is stopped by its process id when it ends.
//
// A check prints its result on one line, "chaos: <check>: <figure>", and passes or fails
// on an assertion stated in its setup (Checks lists them). A check that cannot run on the
// machine (no network namespaces, no netem, too low a file limit) says so on that line,
// "chaos: <check>: not available here: <reason>", and is skipped with the same reason.
//
// The suite is heavy (it kills servers, opens ten thousand sockets and, as root, builds
// network namespaces), so `go test ./...` compiles it but runs it only with GK_CHAOS=1; it
// tests the binary named by GK_CHAOS_GATEKEEPER, or one it builds from this checkout.
// `make chaos` builds bin/gatekeeper and runs the suite through chaos/cmd/chaos, which prints
// the lines as they come and writes the results table, bench/results/chaos/README.md.
//
// Two variables lengthen the network loss check to measure its tails: GK_CHAOS_LOSS_RUN (a
// duration, default 8s) is how long operations run under loss, and GK_CHAOS_LOSS_DIRECT=1
// follows each operation through the proxy with the same one straight to the server, on a
// line of its own, to tell the network's share of the times from the proxy's.
package chaos
