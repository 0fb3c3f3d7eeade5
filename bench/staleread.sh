#!/usr/bin/env bash
# Stale reads through gatekeeper's replica routing: bench/cmd/staleread's 32 clients write
# and read through gatekeeper in pooled mode, which routes reads to two replicas, while one
# replica at a time has its SQL thread stopped (2s every 5s); for each consistency mode the
# reads that returned data older than a write acknowledged before they were sent (stale),
# older than the session's own write (own-write misses) and older than what the same
# connection read before (monotonic violations), beside the share of reads the replicas
# served.
#
#   bench/staleread.sh [--quick] [--reads N] [--inject-lag D] [--inject-every D] [--modes LIST]
#                      [--out DIR]
#
# Modes (comma or space separated; default all), each against a proxy started afresh with
# routing.consistency set to it, and every read marked /* gk:consistency=MODE */ as well:
#   strong    every acknowledged write is seen: stale reads expected 0
#   eventual  the negative control: stale reads expected, which shows the check sees them
#   session   a session's own writes are seen: own-write misses expected 0
# Defaults: 100000 reads a mode (--quick: 20000); writes DIR/README.md (default
# bench/results/staleread) and each mode's JSON beside it.
#
# Uses the backends of GK_PRIMARY, GK_REPLICA1 and GK_REPLICA2 when set, else starts its own
# on loopback ports 36306-36308 and stops them at the end; GATEKEEPER=/path runs that binary
# instead of building bin/gatekeeper. Every process it starts is stopped by its PID at exit,
# and the replicas' replication is started again. About 30 seconds a mode, plus a minute of
# setup.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_MODES="strong eventual session"
MODES=$ALL_MODES READS=100000 LAG=2s EVERY=5s OUT=bench/results/staleread
ARGS="bench/staleread.sh$([ $# -eq 0 ] || printf ' %q' "$@")"
[ -n "${GATEKEEPER:-}" ] && ARGS="GATEKEEPER=$(printf '%q' "$GATEKEEPER") $ARGS"
usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit "$1"
}
fail() { echo "bench/staleread.sh: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage 0 ;;
	--quick) READS=20000; shift; continue ;;
	esac
	[ $# -ge 2 ] || usage 2 >&2
	case $1 in
	--reads) READS=$2 ;;
	--inject-lag) LAG=$2 ;;
	--inject-every) EVERY=$2 ;;
	--modes) MODES=$2 ;;
	--out) OUT=$2 ;;
	*) usage 2 >&2 ;;
	esac
	shift 2
done
[[ $READS =~ ^[1-9][0-9]*$ ]] || fail "--reads takes a positive whole number, not '$READS'"
for m in ${MODES//,/ }; do
	[[ " $ALL_MODES " == *" $m "* ]] || fail "unknown mode '$m'; the modes are: $ALL_MODES"
done
MODES=${MODES//,/ }
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq); it reads the runs' JSON for the table"
command -v curl >/dev/null || fail "curl is not installed (apt-get install curl); it waits for the proxy's metrics"
if [ -n "${GK_PRIMARY:-}" ] && { [ -z "${GK_REPLICA1:-}" ] || [ -z "${GK_REPLICA2:-}" ]; }; then
	fail "GK_PRIMARY is set without GK_REPLICA1 and GK_REPLICA2; routing needs both replicas (or unset GK_PRIMARY to start backends)"
fi

if [ -z "${GATEKEEPER:-}" ]; then
	make -s build || fail "make build failed; fix the build or give GATEKEEPER=/path"
	GATEKEEPER=bin/gatekeeper
fi
"$GATEKEEPER" version >/dev/null 2>&1 || fail "gatekeeper ($GATEKEEPER) does not run; build it (make build) or give GATEKEEPER=/path"

. bench/lib.sh
bench_setup 36306
DB=${GK_DATABASE:-gktest}
sql() { mariadb --no-defaults -h"${GK_PRIMARY%:*}" -P"$PRIMARY_PORT" -u"$GK_USER" -p"$GK_PASSWORD" -N -e "$1"; }

# A build without replica routing refuses the routing keys; say so rather than measure a
# proxy that sends every read to the primary.
printf 'mode: pooled\nauth:\n  from_backend: true\nmonitor:\n  user: %s\nrouting:\n  consistency: strong\n' "$GK_USER" >"$WORK/routing.yaml"
if ! why=$("$GATEKEEPER" check-config "$WORK/routing.yaml" 2>&1); then
	fail "this gatekeeper has no replica routing (routing.consistency): $(head -n 1 <<<"$why")"
fi

go build -o "$WORK/staleread" ./bench/cmd/staleread
dsn() { echo "$GK_USER:$GK_PASSWORD@tcp($1)/$DB"; }

# start_proxy MODE LOG starts gatekeeper in pooled mode, routing to both replicas with
# routing.consistency MODE, on free ports, and waits until it takes a login and serves its
# metrics; sets PROXY_PID, PROXY_PORT and ADMIN_PORT.
start_proxy() {
	PROXY_PORT=$(free_port)
	ADMIN_PORT=$(free_port)
	env GATEKEEPER_MODE=pooled GATEKEEPER_AUTH_FROM_BACKEND=true \
		GATEKEEPER_MONITOR_USER="$GK_USER" GATEKEEPER_MONITOR_PASSWORD="$GK_PASSWORD" \
		GATEKEEPER_ROUTING_CONSISTENCY="$1" GATEKEEPER_SHUTDOWN_DRAIN_TIMEOUT=5s \
		"$GATEKEEPER" serve --listen 127.0.0.1:"$PROXY_PORT" --admin-listen 127.0.0.1:"$ADMIN_PORT" \
		--primary "$GK_PRIMARY" --replica "$GK_REPLICA1" --replica "$GK_REPLICA2" 2>"$2" &
	PROXY_PID=$!
	PIDS+=("$PROXY_PID")
	wait_login "$1" "$PROXY_PID" "$PROXY_PORT" "$2"
	for _ in $(seq 1 50); do
		curl -sf -o /dev/null "http://127.0.0.1:$ADMIN_PORT/metrics" && return 0
		sleep 0.1
	done
	echo "bench/staleread.sh: $1: no metrics at 127.0.0.1:$ADMIN_PORT after 5s; the replica share will say why" >&2
}

# check MODE LOG runs the checker through the proxy; it returns the checker's status. It
# runs in the background, on the list of processes stopped at exit, so that a signal to the
# script reaches it and it starts the replicas' replication again.
check() {
	"$WORK/staleread" --dsn "$(dsn 127.0.0.1:"$PROXY_PORT")" --primary-dsn "$(dsn "$GK_PRIMARY")" \
		--replica-dsn "$(dsn "$GK_REPLICA1")" --replica-dsn "$(dsn "$GK_REPLICA2")" \
		--consistency "$1" --reads "$READS" --inject-lag "$LAG" --inject-every "$EVERY" \
		--metrics "http://127.0.0.1:$ADMIN_PORT/metrics" --primary "$GK_PRIMARY" --json "$OUT/$1.json" &
	local pid=$! status=0
	PIDS+=("$pid")
	wait "$pid" || status=$?
	stop_pid "$pid"
	if [ "$status" -ne 0 ]; then
		tail -n 20 "$2" >&2
		echo "bench/staleread.sh: $1: the checker failed (status $status); the proxy's log is above" >&2
	fi
	return "$status"
}

mkdir -p "$OUT"
rm -f "$OUT"/*.json
FAILED=
for mode in $MODES; do
	echo "bench/staleread.sh: $mode: $READS reads through gatekeeper, a replica's SQL thread stopped for $LAG every $EVERY" >&2
	# The tables, the trigger and the foreign key exist before the proxy starts, as a
	# production schema does: the proxy reads which tables a write also writes at its start
	# and after DDL it relays, and the checker's own setup goes straight to the primary.
	"$WORK/staleread" --prepare --primary-dsn "$(dsn "$GK_PRIMARY")" \
		--replica-dsn "$(dsn "$GK_REPLICA1")" --replica-dsn "$(dsn "$GK_REPLICA2")"
	start_proxy "$mode" "$WORK/gatekeeper-$mode.log"
	check "$mode" "$WORK/gatekeeper-$mode.log" || FAILED="$FAILED $mode"
	stop_pid "$PROXY_PID"
done

# row MODE prints the mode's row of the table from its JSON, or says it failed.
row() {
	local json=$OUT/$1.json
	if [ ! -f "$json" ]; then
		echo "| $1 | failed: no result (see the script's output) | | | | | | | |"
		return
	fi
	jq -r --arg mode "$1" '
		def share: if . == null then "not measured" else "\(. * 1000 | round / 10)%" end;
		def errs: if .errors_total == 0 then "0"
			else "\(.errors_total) (" + (.errors | to_entries | map("\(.key): \(.value)") | join(", ")) + ")" end;
		"| \($mode) | \(.reads) | \(.writes) | \(.stale) | \(.own_write_misses) of \(.own_write_checks) | \(.monotonic_violations) | \(.replica_share | share) | \(errs) | \(.lag_injections) |"
	' "$json"
}

# kinds prints a table of the stale reads of each kind of read, a column per mode.
kinds() {
	local first
	for mode in $MODES; do [ -f "$OUT/$mode.json" ] && { first=$OUT/$mode.json; break; }; done
	[ -n "${first:-}" ] || return 0
	echo "Stale reads by kind of read, of the reads of that kind (read-only-txn: a join inside"
	echo "START TRANSACTION READ ONLY, held to the versions acknowledged before the transaction began):"
	echo
	printf '| kind |'; for mode in $MODES; do printf ' %s |' "$mode"; done; echo
	printf '|---|'; for _ in $MODES; do printf -- '---:|'; done; echo
	for kind in $(jq -r '.reads_by_kind | keys_unsorted[]' "$first"); do
		printf '| %s |' "$kind"
		for mode in $MODES; do
			if [ -f "$OUT/$mode.json" ]; then
				jq -j --arg k "$kind" '.reads_by_kind[$k] | " \(.stale) of \(.reads) |"' "$OUT/$mode.json"
			else
				printf ' |'
			fi
		done
		echo
	done
	echo
}

MODEL=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
{
	echo "# Stale reads through replica routing, in each consistency mode"
	echo
	echo "bench/cmd/staleread's 32 clients, each on a connection of its own, run $READS reads and about"
	echo "one write in ten through gatekeeper in pooled mode with two replicas, on 16 tables of 100"
	echo "rows plus a table a trigger writes and one a foreign key's cascade writes. A write sets a row to"
	echo "a fresh, globally increasing version; once acknowledged, it is the least any read sent after"
	echo "it may return. Meanwhile one replica at a time has its SQL thread stopped for $LAG every $EVERY."
	echo "Each mode runs against a proxy started afresh with routing.consistency set to it, and every"
	echo "read also carries /* gk:consistency=MODE */. The tables, the trigger and the foreign key exist"
	echo "when the proxy starts (\`staleread --prepare\`); the run creates them afresh, by the same names,"
	echo "straight on the primary."
	echo
	echo "Writes: acknowledged ones; a transaction of two UPDATEs (a fifth of them) counts once."
	echo "Stale: reads that returned a version older than one acknowledged before they were sent."
	echo "Own-write misses: reads of the session's own last write (on the same connection, or by the"
	echo "partner of a pair of connections sharing /* gk:session=KEY */) that missed it, of such reads."
	echo "Monotonic: reads older than what the same connection had read of the row before. Replica"
	echo "share: the proxy's reads (gatekeeper_reads_total, writes left out) served by the replicas."
	echo "Errors: failed operations by MySQL error number. Expected: strong 0 stale; eventual stale"
	echo "reads (the negative control, which shows the check sees them); session 0 own-write misses."
	echo
	echo "| mode | reads | writes | stale | own-write misses | monotonic violations | replica share | errors | lag injections |"
	echo "|---|---:|---:|---:|---:|---:|---:|---|---:|"
	for mode in $MODES; do row "$mode"; done
	echo
	kinds
	echo "Command: \`$ARGS\` ($(date -u '+%Y-%m-%d %H:%M UTC'))"
	echo
	# diff-index, not git diff or describe --dirty, which may write the index.
	echo "Commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff-index --quiet HEAD -- 2>/dev/null || echo ', with uncommitted changes');"
	echo "gatekeeper $("$GATEKEEPER" version | awk '{print $2}'); database $(sql 'SELECT VERSION()'); $(go version | awk '{print $3}')."
	echo "Machine: $(nproc) processors ($MODEL), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr);"
	echo "the database servers, the proxy and the checker share it."
	echo
	echo "Each mode's result, as bench/cmd/staleread writes it with --json:"
	for mode in $MODES; do
		if [ -f "$OUT/$mode.json" ]; then echo "[\`$mode.json\`]($mode.json)"; fi
	done | paste -sd' ' -
} >"$OUT/README.md"
echo "bench/staleread.sh: wrote $OUT/README.md" >&2
cat "$OUT/README.md"
[ -z "$FAILED" ] || fail "the checker failed in:$FAILED"
