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
#   bench/staleread.sh [--writers LIST] [--rules LIST] [--hot-table] [--lag-on LIST]
#                      [--connections N] [--cache] [--write-fraction F] [--quick] [--reads N]
#                      [--inject-lag D] [--inject-every D] [--out DIR]
#
# Modes (comma or space separated; default all), each against a proxy started afresh with
# routing.consistency set to it, and every read marked /* gk:consistency=MODE */ as well:
#   strong    every acknowledged write is seen: stale reads expected 0
#   eventual  the negative control: stale reads expected, which shows the check sees them
#   session   a session's own writes are seen: own-write misses expected 0
#
# Strong reads and who writes: with any of --writers, --rules, --hot-table, --lag-on and
# --connections, the script runs instead one run per writers' origin in --writers (and
# --lag-on item), every read through a proxy with routing.consistency strong:
#   --writers LIST  where the writes go (default same):
#                     same    through the proxy the reads go through (today's runs)
#                     second  through a second gatekeeper process (same backends, same
#                             config, its own port); the readers' proxy learns them from the
#                             primary's binary log
#                     direct  straight to the primary
#   --rules LIST    routing.strong_rule of the readers' proxy (default per_table): per_table,
#                   global, proxy_local. With several, a proxy of each runs side by side and
#                   the clients take turns on them, a phase of --inject-every each (the
#                   replicas caught up with the primary at each switch, so that each proxy is
#                   held to the writes of its own phase) until each has had --reads; the report
#                   compares their replica shares, read latencies (p50, p95) and the strong
#                   reads served per read of the primary's position. proxy_local is correct
#                   only with --writers same: with second or direct it is the negative
#                   control, its stale reads showing that the check sees the other writers.
#   --hot-table     every write goes to one hot table (sr_t15), every read to the others:
#                   per_table keeps those reads on replicas, global needs a replica with the
#                   primary's whole position.
#   --lag-on LIST   which replicas each lag injection holds back (default one): one (one
#                   replica at a time, in turn), all (both at once: every replica trails the
#                   primary); one run per origin and item.
#   --connections N the checker's clients (default 32), each on a connection of its own to
#                   the readers' proxy (and one to the writers' when that is another).
#   --cache         every proxy runs with the result cache on (cache.mode auto): a read is
#                   answered from memory when no writer changed its tables since.
#   --write-fraction F  the share of operations that are writes (default 0.1); fewer writes
#                   leave cached results valid longer.
# Expected: 0 stale reads under per_table and global; under per_table 70% of reads or more on
# replicas, and with --hot-table over 90% (global far below); per_table's p50 at most 0.3 ms
# above proxy_local's. The committed results came from
#   bench/staleread.sh --writers same,second,direct --rules per_table,proxy_local \
#       --out bench/results/staleread-every-writer
#   bench/staleread.sh --hot-table --rules per_table,global --lag-on one,all --inject-lag 4s \
#       --out bench/results/staleread-hot-table
#   bench/staleread.sh --rules per_table,proxy_local --connections 4 --out bench/results/staleread-strong-cost
#
# Defaults: 100000 reads a mode or rule (--quick: 20000); writes DIR/README.md (default
# bench/results/staleread) and each run's JSON beside it (MODE.json, or writers-ORIGIN.json
# and, lag on all, writers-ORIGIN-lag-all.json).
#
# Uses the backends of GK_PRIMARY, GK_REPLICA1 and GK_REPLICA2 when set, else starts its own
# on loopback ports 26306-26308 and stops them at the end; the proxies listen on free ports
# below 32768 (the kernel's ephemeral range starts there). GATEKEEPER=/path runs that binary
# instead of building bin/gatekeeper. Every process it starts is stopped by its PID at exit,
# and the replicas' replication is started again. About 30 seconds a mode or rule, plus a
# minute of setup.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_MODES="strong eventual session" ALL_WRITERS="same second direct" ALL_RULES="per_table global proxy_local"
MODES=$ALL_MODES READS=100000 LAG=2s EVERY=5s OUT=bench/results/staleread
WRITERS= RULES= HOT= LAG_ON= CONNECTIONS=32 CACHE= WRITE_FRACTION=0.1
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
	--hot-table) HOT=1; shift; continue ;;
	--cache) CACHE=auto; shift; continue ;;
	esac
	[ $# -ge 2 ] || usage 2 >&2
	case $1 in
	--reads) READS=$2 ;;
	--inject-lag) LAG=$2 ;;
	--inject-every) EVERY=$2 ;;
	--modes) MODES=$2 ;;
	--writers) WRITERS=$2 ;;
	--rules) RULES=$2 ;;
	--lag-on) LAG_ON=$2 ;;
	--connections) CONNECTIONS=$2 ;;
	--write-fraction) WRITE_FRACTION=$2 ;;
	--out) OUT=$2 ;;
	*) usage 2 >&2 ;;
	esac
	shift 2
done
[[ $READS =~ ^[1-9][0-9]*$ ]] || fail "--reads takes a positive whole number, not '$READS'"
[[ $CONNECTIONS =~ ^[1-9][0-9]*$ ]] || fail "--connections takes a positive whole number, not '$CONNECTIONS'"
# check_list NAME ALLOWED LIST fails unless every word of LIST is one of ALLOWED, and no
# word is there twice.
check_list() {
	local w seen=" "
	for w in $3; do
		[[ " $2 " == *" $w "* ]] || fail "unknown $1 '$w'; they are: $2"
		[[ $seen != *" $w "* ]] || fail "$1 '$w' given twice"
		seen="$seen$w "
	done
}
MODES=${MODES//,/ } WRITERS=${WRITERS//,/ } RULES=${RULES//,/ } LAG_ON=${LAG_ON//,/ }
check_list mode "$ALL_MODES" "$MODES"
check_list "writers' origin" "$ALL_WRITERS" "$WRITERS"
check_list rule "$ALL_RULES" "$RULES"
check_list "--lag-on item" "one all" "$LAG_ON"
# STRONG: the runs of strong reads by writers' origin, lag and rule, instead of the modes.
STRONG=
if [ -n "$WRITERS$RULES$HOT$LAG_ON" ] || [ "$CONNECTIONS" != 32 ]; then
	STRONG=1
	WRITERS=${WRITERS:-same} RULES=${RULES:-per_table} LAG_ON=${LAG_ON:-one}
fi
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq); it reads the runs' JSON for the table"
command -v curl >/dev/null || fail "curl is not installed (apt-get install curl); it waits for the proxy's metrics"
command -v python3 >/dev/null || fail "python3 is not installed; it finds free ports below 32768"
if [ -n "${GK_PRIMARY:-}" ] && { [ -z "${GK_REPLICA1:-}" ] || [ -z "${GK_REPLICA2:-}" ]; }; then
	fail "GK_PRIMARY is set without GK_REPLICA1 and GK_REPLICA2; routing needs both replicas (or unset GK_PRIMARY to start backends)"
fi

if [ -z "${GATEKEEPER:-}" ]; then
	make -s build || fail "make build failed; fix the build or give GATEKEEPER=/path"
	GATEKEEPER=bin/gatekeeper
fi
"$GATEKEEPER" version >/dev/null 2>&1 || fail "gatekeeper ($GATEKEEPER) does not run; build it (make build) or give GATEKEEPER=/path"

. bench/lib.sh
bench_setup 26306
DB=${GK_DATABASE:-gktest}
sql() { mariadb --no-defaults -h"${GK_PRIMARY%:*}" -P"$PRIMARY_PORT" -u"$GK_USER" -p"$GK_PASSWORD" -N -e "$1"; }

# A build without replica routing refuses the routing keys, and one without the binlog
# follower refuses routing.strong_rule; say so rather than measure a proxy that sends every
# read to the primary, or counts only its own writes.
printf 'mode: pooled\nauth:\n  from_backend: true\nmonitor:\n  user: %s\nrouting:\n  consistency: strong\n' "$GK_USER" >"$WORK/routing.yaml"
if ! why=$("$GATEKEEPER" check-config "$WORK/routing.yaml" 2>&1); then
	fail "this gatekeeper has no replica routing (routing.consistency): $(head -n 1 <<<"$why")"
fi
if [ -n "$STRONG" ]; then
	for rule in $RULES; do
		printf '  strong_rule: %s\n' "$rule" >>"$WORK/routing.yaml"
		if ! why=$("$GATEKEEPER" check-config "$WORK/routing.yaml" 2>&1); then
			fail "this gatekeeper has no routing.strong_rule $rule (it counts only its own writes): $(head -n 1 <<<"$why")"
		fi
		sed -i '$d' "$WORK/routing.yaml"
	done
fi

go build -o "$WORK/staleread" ./bench/cmd/staleread
dsn() { echo "$GK_USER:$GK_PASSWORD@tcp($1)/$DB"; }

# start_proxy NAME LOG [VAR=VALUE...] starts gatekeeper in pooled mode, routing to both
# replicas with routing.consistency strong unless a VAR says otherwise (each VAR=VALUE is
# set in its environment, e.g. GATEKEEPER_ROUTING_STRONG_RULE=global), on free ports, and
# waits until it takes a login and serves its metrics; sets PROXY_PID, PROXY_PORT and
# ADMIN_PORT.
start_proxy() {
	local name=$1 log=$2
	shift 2
	PROXY_PORT=$(low_port)
	ADMIN_PORT=$(low_port)
	env GATEKEEPER_MODE=pooled GATEKEEPER_AUTH_FROM_BACKEND=true \
		GATEKEEPER_MONITOR_USER="$GK_USER" GATEKEEPER_MONITOR_PASSWORD="$GK_PASSWORD" \
		GATEKEEPER_ROUTING_CONSISTENCY=strong GATEKEEPER_SHUTDOWN_DRAIN_TIMEOUT=5s \
		${CACHE:+GATEKEEPER_CACHE_MODE=$CACHE} "$@" \
		"$GATEKEEPER" serve --listen 127.0.0.1:"$PROXY_PORT" --admin-listen 127.0.0.1:"$ADMIN_PORT" \
		--primary "$GK_PRIMARY" --replica "$GK_REPLICA1" --replica "$GK_REPLICA2" 2>"$log" &
	PROXY_PID=$!
	PIDS+=("$PROXY_PID")
	wait_login "$name" "$PROXY_PID" "$PROXY_PORT" "$log"
	for _ in $(seq 1 50); do
		curl -sf -o /dev/null "http://127.0.0.1:$ADMIN_PORT/metrics" && return 0
		sleep 0.1
	done
	echo "bench/staleread.sh: $name: no metrics at 127.0.0.1:$ADMIN_PORT after 5s; the replica share will say why" >&2
}

# check NAME LOGS ARGS... runs the checker with ARGS (besides the backends, the reads, the
# lag and the JSON, OUT/NAME.json); it returns the checker's status, with the tails of the
# proxies' LOGS (space separated) when it failed. It runs in the background, on the list of
# processes stopped at exit, so that a signal to the script reaches it and it starts the
# replicas' replication again.
check() {
	local name=$1 logs=$2
	shift 2
	"$WORK/staleread" --primary-dsn "$(dsn "$GK_PRIMARY")" \
		--replica-dsn "$(dsn "$GK_REPLICA1")" --replica-dsn "$(dsn "$GK_REPLICA2")" \
		--reads "$READS" --inject-lag "$LAG" --inject-every "$EVERY" --write-fraction "$WRITE_FRACTION" \
		--primary "$GK_PRIMARY" --json "$OUT/$name.json" "$@" &
	local pid=$! status=0 log
	PIDS+=("$pid")
	wait "$pid" || status=$?
	stop_pid "$pid"
	if [ "$status" -ne 0 ]; then
		for log in $logs; do
			echo "== $log" >&2
			tail -n 20 "$log" >&2
		done
		echo "bench/staleread.sh: $name: the checker failed (status $status); the proxies' logs are above" >&2
	fi
	return "$status"
}

# prepare creates the checker's tables before a proxy starts. The tables, the trigger and
# the foreign key exist before the proxy starts, as a production schema does: the proxy
# reads which tables a write also writes at its start and after DDL it relays, and the
# checker's own setup goes straight to the primary.
prepare() {
	"$WORK/staleread" --prepare --primary-dsn "$(dsn "$GK_PRIMARY")" \
		--replica-dsn "$(dsn "$GK_REPLICA1")" --replica-dsn "$(dsn "$GK_REPLICA2")"
}

# WRITERS_SAID says where each origin's writes went, for the report.
declare -A WRITERS_SAID=(
	[same]="through the proxy the reads go through"
	[second]="through a second gatekeeper process (same backends and configuration, its own port)"
	[direct]="straight to the primary"
)

# LAG_SAID says what each --lag-on item held back, for the report.
declare -A LAG_SAID=(
	[one]="lag on one replica at a time"
	[all]="lag on both replicas at once"
)

mkdir -p "$OUT"
rm -f "$OUT"/*.json
FAILED=

# run_modes runs the checker against a proxy of each consistency mode.
run_modes() {
	local mode log
	for mode in $MODES; do
		echo "bench/staleread.sh: $mode: $READS reads through gatekeeper, a replica's SQL thread stopped for $LAG every $EVERY" >&2
		prepare
		log=$WORK/gatekeeper-$mode.log
		start_proxy "$mode" "$log" GATEKEEPER_ROUTING_CONSISTENCY="$mode"
		check "$mode" "$log" --dsn "$(dsn 127.0.0.1:"$PROXY_PORT")" --consistency "$mode" \
			--metrics "http://127.0.0.1:$ADMIN_PORT/metrics" || FAILED="$FAILED $mode"
		stop_pid "$PROXY_PID"
	done
}

# run_name WRITERS LAG_ON names a strong run: its JSON is OUT/NAME.json.
run_name() {
	if [ "$2" = one ]; then echo "writers-$1"; else echo "writers-$1-lag-$2"; fi
}

# run_strong runs the checker once per writers' origin and --lag-on item, the reads through
# a proxy of each rule in turn.
run_strong() {
	local writers lag_on rule log logs pids args extra
	for writers in $WRITERS; do
		for lag_on in $LAG_ON; do
			echo "bench/staleread.sh: writers $writers: $READS strong reads under each of: $RULES${HOT:+ (writes to a hot table)}; ${LAG_SAID[$lag_on]}: SQL threads stopped for $LAG every $EVERY" >&2
			prepare
			args=() logs= pids=() extra=()
			[ -n "$HOT" ] && extra+=(--hot-table)
			[ "$lag_on" = all ] && extra+=(--inject-all)
			for rule in $RULES; do
				log=$WORK/gatekeeper-$writers-$lag_on-$rule.log
				start_proxy "$rule" "$log" GATEKEEPER_ROUTING_STRONG_RULE="$rule"
				args+=(--dsn "$(dsn 127.0.0.1:"$PROXY_PORT")" --arm "$rule" --metrics "http://127.0.0.1:$ADMIN_PORT/metrics")
				logs="$logs $log" pids+=("$PROXY_PID")
			done
			case $writers in
			second)
				# The same configuration as the readers' (their first rule), on ports of its own.
				log=$WORK/gatekeeper-$writers-$lag_on-writers.log
				start_proxy "second (the writers')" "$log" GATEKEEPER_ROUTING_STRONG_RULE="${RULES%% *}"
				args+=(--write-dsn "$(dsn 127.0.0.1:"$PROXY_PORT")")
				logs="$logs $log" pids+=("$PROXY_PID")
				;;
			direct) args+=(--write-dsn "$(dsn "$GK_PRIMARY")") ;;
			esac
			check "$(run_name "$writers" "$lag_on")" "$logs" --consistency strong \
				--connections "$CONNECTIONS" --session-pairs $((CONNECTIONS / 8)) \
				"${extra[@]}" "${args[@]}" || FAILED="$FAILED $(run_name "$writers" "$lag_on")"
			for pid in "${pids[@]}"; do stop_pid "$pid"; done
		done
	done
}

if [ -n "$STRONG" ]; then run_strong; else run_modes; fi

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

# modes_report writes the modes' report.
modes_report() {
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
}

# arms_table WRITERS LAG_ON prints the table of that run, a row per rule.
arms_table() {
	local json
	json=$OUT/$(run_name "$1" "$2").json
	echo "### Writers $1: ${WRITERS_SAID[$1]}; ${LAG_SAID[$2]}"
	echo
	if [ ! -f "$json" ]; then
		echo "Failed: no result (see the script's output)."
		echo
		return
	fi
	echo "| rule | reads | writes | stale | monotonic violations | on replicas | waited | reads/s | read p50 / p95 (ms) | point select p50 / p95 (ms) | strong reads per position read | unvouched | errors |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
	jq -r '
		def share: if . == null then "not measured" else "\(. * 1000 | round / 10)%" end;
		def ms: . * 1000 | round / 1000;
		def errs: if .errors_total == 0 then "0"
			else "\(.errors_total) (" + (.errors | to_entries | map("\(.key): \(.value)") | join(", ")) + ")" end;
		def waited: if .reads_by_backend == null then "not measured" else
			([.reads_by_backend[] | to_entries[] | select(.key != "write")] as $r |
			([$r[] | select(.key == "waited") | .value] | add // 0) / ([$r[].value] | add // 1) | share) end;
		.arms[] |
		"| \(.name) | \(.reads) | \(.writes) | \(.stale) | \(.monotonic_violations) | \(.replica_share | share) | \(waited) | \(.reads_per_second | round) | " +
		"\(.latency.all.p50_ms | ms) / \(.latency.all.p95_ms | ms) | \(.latency.point.p50_ms // 0 | ms) / \(.latency.point.p95_ms // 0 | ms) | " +
		(if .strong then "\(.strong.reads_per_position_read * 10 | round / 10)" else "—" end) + " | " +
		(if .strong then "\(.strong.unvouched)" else "—" end) + " | \(errs) |"
	' "$json"
	echo
	jq -r '"\(.duration_s | round) s; \(.lag_injections) lag injections" +
		(if .switches > 0 then "; switches between the proxies: \(.switches) (\(.late_catch_ups) with a replica late to catch up)" else "" end) +
		"; reads by backend and reason in [`\(input_filename | split("/") | last)`](\(input_filename | split("/") | last))."' "$json"
	echo
}

# verdicts prints what the runs show against the expectations.
verdicts() {
	local writers lag_on json
	for writers in $WRITERS; do
		for lag_on in $LAG_ON; do
			json=$OUT/$(run_name "$writers" "$lag_on").json
			[ -f "$json" ] || continue
			jq -r --arg w "$writers" --arg hot "$HOT" --arg lag "${LAG_SAID[$lag_on]}" '
				def pct: . * 1000 | round / 10;
				def signed: . * 1000 | round / 1000 | if . >= 0 then "+\(.)" else "\(.)" end;
				def share_said:
					if .replica_share == null then "share on replicas not measured"
					elif .name != "per_table" then "\(.replica_share | pct)% on replicas"
					elif $hot != "" then "\(.replica_share | pct)% on replicas (" +
						(if .replica_share > 0.9 then "over 90%, as expected)" else "NOT over 90% as expected)" end)
					else "\(.replica_share | pct)% on replicas (" +
						(if .replica_share >= 0.7 then "at least 70%, as targeted)" else "BELOW the target of 70%)" end)
					end;
				def stale_said:
					"\(.stale) stale of \(.reads) reads (" +
					if .name != "proxy_local" then (if .stale == 0 then "as expected)" else "EXPECTED 0)" end)
					elif $w == "same" then (if .stale == 0 then "as expected: every write passes through it)" else "EXPECTED 0: every write passes through it)" end)
					else "the negative control: it counts only its own writes, and none pass through it)"
					end;
				"writers \($w), \($lag)" as $run |
				.arms as $arms | $arms[0] as $first |
				($arms[] | "- \($run), \(.name): \(stale_said); \(share_said)."),
				($arms[1:][] |
					"- \($run), \($first.name) against \(.name): read p50 \($first.latency.all.p50_ms - .latency.all.p50_ms | signed) ms" +
					(if .name == "proxy_local" and $first.name == "per_table" then
						(if $first.latency.all.p50_ms - .latency.all.p50_ms <= 0.3 then " (at most +0.3 ms, as targeted)" else " (ABOVE the target of +0.3 ms)" end)
					else "" end) +
					", p95 \($first.latency.all.p95_ms - .latency.all.p95_ms | signed) ms; point selects p50 " +
					"\(($first.latency.point.p50_ms // 0) - (.latency.point.p50_ms // 0) | signed) ms; reads/s \($first.reads_per_second | round) against \(.reads_per_second | round); " +
					"on replicas \($first.replica_share // 0 | pct)% against \(.replica_share // 0 | pct)%.")
			' "$json"
		done
	done
}

# strong_report writes the report of the strong runs.
strong_report() {
	local rules_said
	rules_said=$(echo "$RULES" | sed 's/ /, /g')
	if [ -n "$HOT" ]; then
		echo "# Strong reads with every write to one hot table: routing.strong_rule $rules_said"
	else
		echo "# Strong reads whoever writes: routing.strong_rule $rules_said"
	fi
	echo
	echo "bench/cmd/staleread's $CONNECTIONS clients, each on a connection of its own, read through gatekeeper"
	echo "in pooled mode with two replicas and routing.consistency strong (every read also marked"
	echo "/* gk:consistency=strong */), on 16 tables of 100 rows plus a table a trigger writes and one a"
	echo "foreign key's cascade writes; a share of $WRITE_FRACTION of the operations are writes (a fifth of them"
	echo "transactions of two UPDATEs). A write sets a row to a fresh, globally increasing version; once"
	echo "acknowledged, it is the least any read sent after it may return. One run per origin of the"
	echo "writes (each client writing on a second connection where they do not go through the readers'"
	echo "proxy) and per lag: meanwhile a replica's SQL thread, or both replicas' at once, as each run's"
	echo "heading says, is stopped for $LAG every $EVERY."
	if [ -n "$CACHE" ]; then
		echo
		echo "Every proxy runs with the result cache on (cache.mode $CACHE): a read is answered from memory when"
		echo "no writer changed its tables since its result was read; each run's JSON counts those reads"
		echo "(cache_hits) and the summary line says how many."
	fi
	if [ -n "$HOT" ]; then
		echo
		echo "Every write goes to one hot table, sr_t15, and every read to the other tables (no read reads"
		echo "a write back). Those tables take no write during the run, so no read of them can be stale by"
		echo "the check; the point is where the reads run: a replica that lacks the hot table's latest"
		echo "writes has every write of the tables they read."
	fi
	if [ "$(wc -w <<<"$RULES")" -gt 1 ]; then
		echo
		echo "Each run has a proxy of each rule ($rules_said) side by side, started afresh on the same"
		echo "backends; the clients take turns on them, a phase of $EVERY each (each phase with one lag"
		echo "injection, the replicas taking turns to be held back), until each has had $READS reads (the"
		echo "run ends at the switch after the last of them got there). At each switch every operation of"
		echo "the phase has ended and both replicas have applied the primary's position before the next"
		echo "phase begins, so that each proxy is held to the writes of its own phase: a proxy_local proxy"
		echo "is then correct with the writers through it."
	fi
	echo
	echo "Stale: reads that returned a version older than one acknowledged before they were sent (by any"
	echo "writer). Monotonic: reads older than what the same connection had read of the row before. On"
	echo "replicas: the proxy's reads (gatekeeper_reads_total, writes left out) served by the replicas;"
	echo "waited: those that waited for a replica to catch up (reason waited) and got one."
	echo "Reads/s: over the rule's phases. Read p50 / p95: at the client, from sending to the last row,"
	echo "every kind of read (point selects as text and prepared, joins, reads of the trigger's and the"
	echo "cascade's tables, joins inside START TRANSACTION READ ONLY); point select: the text point"
	echo "selects alone. Strong reads per position read: gatekeeper_binlog_position_read_statements_total"
	echo "over gatekeeper_binlog_position_reads_total (— where the rule reads no position). Unvouched:"
	echo "gatekeeper_reads_unvouched_total, strong reads sent to the primary because what the primary"
	echo "had committed when they arrived could not be learnt in time."
	echo
	for writers in $WRITERS; do
		for lag_on in $LAG_ON; do arms_table "$writers" "$lag_on"; done
	done
	echo "## What it shows"
	echo
	verdicts
	echo
}

MODEL=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
{
	if [ -n "$STRONG" ]; then strong_report; else modes_report; fi
	echo "Command: \`$ARGS\` ($(date -u '+%Y-%m-%d %H:%M UTC'))"
	echo
	# diff-index, not git diff or describe --dirty, which may write the index.
	echo "Commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff-index --quiet HEAD -- 2>/dev/null || echo ', with uncommitted changes');"
	echo "gatekeeper $("$GATEKEEPER" version | awk '{print $2}'); database $(sql 'SELECT VERSION()'); $(go version | awk '{print $3}')."
	echo "Machine: $(nproc) processors ($MODEL), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr);"
	echo "the database servers, the proxies and the checker share it."
	echo
	echo "Each run's result, as bench/cmd/staleread writes it with --json:"
	for json in "$OUT"/*.json; do
		[ -f "$json" ] && echo "[\`${json##*/}\`](${json##*/})"
	done | paste -sd' ' -
} >"$OUT/README.md"
echo "bench/staleread.sh: wrote $OUT/README.md" >&2
cat "$OUT/README.md"
[ -z "$FAILED" ] || fail "the checker failed in:$FAILED"
