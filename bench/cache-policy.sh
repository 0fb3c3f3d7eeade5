#!/usr/bin/env bash
# Result-cache replacement, cost-aware against LRU: two gatekeeper proxies, identical but for
# cache.replacement (cost_aware, lru), each with a cache smaller than the reads' working
# set, take turns on the same seeded trace of reads (bench/cmd/cachepolicy); the report
# compares the database time each one's hits saved per second, its hit ratio and
# throughput, and the memory each used (the cache's bytes and entries, the Go heap in use,
# the process's VmRSS and VmHWM).
#
#   bench/cache-policy.sh [--max-bytes SIZE] [--requests N] [--phases N] [--warmup N]
#                         [--clients N] [--rows N] [--groups N] [--zipf S] [--mix LIST]
#                         [--seed N] [--quick] [--out DIR]
#
# The workload (bench/cmd/cachepolicy's doc says more): reads of cp_items (--rows rows,
# created straight on the primary) of four kinds: point (a row by primary key: cheap,
# small), range (40 rows by primary key: cheap, large), report (totals over 40 of --groups
# groups through an index: costly, small) and bigreport (the same totals by group and
# bucket: costly, large), mixed by --mix (default point=55,range=20,report=15,bigreport=10),
# each kind's keys drawn from a Zipf distribution of exponent --zipf (default 1.1). Every
# key is a statement of its own, literals in its text; nothing writes.
#
# Each proxy runs the same --warmup requests first (default 10000, unmeasured), then the
# proxies take turns, a phase of --requests each (default 10000), for --phases phases
# (default 10; the order reversed every other phase), --clients connections (default 8) in
# a closed loop. Both caches are cache.mode auto with cache.max_bytes --max-bytes (default
# 1MiB; the report says the working set's size: about 7 MiB of column bytes by default)
# and a rule that caches every read of cp_items, so that auto mode's choice of types, which
# may differ between the policies, does not enter the comparison. Before the run each
# kind's cost on its own is measured straight on the primary (100 requests of each, one at
# a time), and the report values each proxy's hits at those costs too: the proxy's own
# measure of a hit's worth is its result's time when it was filled, which is longer when
# the database was busier, as it is under the policy with more misses. --quick: 2000
# requests a phase, 4 phases, 2000 warm-up requests.
#
# Writes DIR/README.md (default bench/results/cache-policy) with the command, the machine
# and the tables, and the run's JSON beside it. Uses the backends of GK_PRIMARY when set,
# else starts its own on loopback ports 28306-28308 and stops them at the end; the proxies
# listen on free ports below 32768. GATEKEEPER=/path runs that binary instead of building
# bin/gatekeeper. Every process it starts is stopped by its PID at exit. About 2 minutes
# with the defaults on 2 processors, 20 seconds with --quick.
set -euo pipefail
cd "$(dirname "$0")/.."

MAX_BYTES=1MiB REQUESTS=10000 PHASES=10 WARMUP=10000 CLIENTS=8 ROWS=20000 NGROUPS=200 ZIPF=1.1
MIX=point=55,range=20,report=15,bigreport=10 SEED=1 OUT=bench/results/cache-policy
ARGS="bench/cache-policy.sh$([ $# -eq 0 ] || printf ' %q' "$@")"
[ -n "${GATEKEEPER:-}" ] && ARGS="GATEKEEPER=$(printf '%q' "$GATEKEEPER") $ARGS"
usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit "$1"
}
fail() { echo "bench/cache-policy.sh: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage 0 ;;
	--quick) REQUESTS=2000 PHASES=4 WARMUP=2000; shift; continue ;;
	esac
	[ $# -ge 2 ] || usage 2 >&2
	case $1 in
	--max-bytes) MAX_BYTES=$2 ;;
	--requests) REQUESTS=$2 ;;
	--phases) PHASES=$2 ;;
	--warmup) WARMUP=$2 ;;
	--clients) CLIENTS=$2 ;;
	--rows) ROWS=$2 ;;
	--groups) NGROUPS=$2 ;;
	--zipf) ZIPF=$2 ;;
	--mix) MIX=$2 ;;
	--seed) SEED=$2 ;;
	--out) OUT=$2 ;;
	*) usage 2 >&2 ;;
	esac
	shift 2
done
for n in "$REQUESTS" "$PHASES" "$CLIENTS" "$ROWS" "$NGROUPS" "$SEED"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || fail "--requests, --phases, --clients, --rows, --groups and --seed take a positive whole number, not '$n'"
done
[[ $WARMUP =~ ^[0-9]+$ ]] || fail "--warmup takes a whole number, not '$WARMUP'"

. bench/lib.sh
MAX=$(bytes_of "$MAX_BYTES") && [ "$MAX" -gt 0 ] || fail "--max-bytes takes a size such as 1MiB or 524288, not '$MAX_BYTES'"
ENTRY=$((MAX < 1 << 20 ? MAX : 1 << 20)) # cache.max_entry_bytes: its default, at most max_bytes

command -v jq >/dev/null || fail "jq is not installed (apt-get install jq); it reads the run's JSON for the report"
command -v curl >/dev/null || fail "curl is not installed (apt-get install curl); it waits for the proxies' metrics"
command -v python3 >/dev/null || fail "python3 is not installed; it finds free ports below 32768"
if [ -z "${GATEKEEPER:-}" ]; then
	make -s build || fail "make build failed; fix the build or give GATEKEEPER=/path"
	GATEKEEPER=bin/gatekeeper
fi
"$GATEKEEPER" version >/dev/null 2>&1 || fail "gatekeeper ($GATEKEEPER) does not run; build it (make build) or give GATEKEEPER=/path"

bench_setup 28306
DB=${GK_DATABASE:-gktest}
sql() { mariadb --no-defaults -h"${GK_PRIMARY%:*}" -P"$PRIMARY_PORT" -u"$GK_USER" -p"$GK_PASSWORD" -N -e "$1"; }
dsn() { echo "$GK_USER:$GK_PASSWORD@tcp($1)/$DB"; }

# The proxies' shared configuration; the monitor's password comes from the environment.
CONFIG=$WORK/gatekeeper.yaml
cat >"$CONFIG" <<EOF
mode: pooled
auth:
  from_backend: true
monitor:
  user: $GK_USER
cache:
  mode: auto
  max_bytes: $MAX
  max_entry_bytes: $ENTRY
rules:
  - name: cp-items
    match: {table: cp_items}
    cache: "on"
EOF
# The cache serves no hit unless the monitor user may follow the primary's binary log.
if ! why=$(GATEKEEPER_MONITOR_PASSWORD="$GK_PASSWORD" GATEKEEPER_BACKENDS_PRIMARY="$GK_PRIMARY" \
	"$GATEKEEPER" check-config "$CONFIG" 2>&1); then
	fail "the proxies' configuration is refused (a gatekeeper without the result cache?): $(head -n 3 <<<"$why")"
fi
grep -q 'may read the binary log' <<<"$why" ||
	fail "the result cache would serve no hit: $(grep -m 1 warning <<<"$why" || echo "$why")"

go build -o "$WORK/cachepolicy" ./bench/cmd/cachepolicy
"$WORK/cachepolicy" --prepare --primary-dsn "$(dsn "$GK_PRIMARY")" --rows "$ROWS" --groups "$NGROUPS"

# start_proxy NAME REPLACEMENT starts gatekeeper with CONFIG and cache.replacement
# REPLACEMENT on free ports, its log in WORK/NAME.log, and waits until it takes a login
# and serves its metrics; sets PROXY_PID, PROXY_PORT and ADMIN_PORT.
start_proxy() {
	local name=$1 log=$WORK/$1.log
	PROXY_PORT=$(low_port)
	ADMIN_PORT=$(low_port)
	env GATEKEEPER_MONITOR_PASSWORD="$GK_PASSWORD" GATEKEEPER_CACHE_REPLACEMENT="$2" GATEKEEPER_SHUTDOWN_DRAIN_TIMEOUT=5s \
		"$GATEKEEPER" serve --config "$CONFIG" --listen 127.0.0.1:"$PROXY_PORT" \
		--admin-listen 127.0.0.1:"$ADMIN_PORT" --primary "$GK_PRIMARY" 2>"$log" &
	PROXY_PID=$!
	PIDS+=("$PROXY_PID")
	wait_login "$name" "$PROXY_PID" "$PROXY_PORT" "$log"
	for _ in $(seq 1 50); do
		curl -sf -o /dev/null "http://127.0.0.1:$ADMIN_PORT/metrics" && return 0
		sleep 0.1
	done
	tail -n 20 "$log" >&2
	fail "$name: no metrics at 127.0.0.1:$ADMIN_PORT after 5s"
}

ARMS=(cost_aware lru)
CLIENT_ARGS=()
for name in "${ARMS[@]}"; do
	start_proxy "$name" "$name"
	CLIENT_ARGS+=(--arm "$name" --dsn "$(dsn "127.0.0.1:$PROXY_PORT")" --admin "127.0.0.1:$ADMIN_PORT" --pid "$PROXY_PID")
done

mkdir -p "$OUT"
JSON=$OUT/cache-policy.json
rm -f "$JSON"
if ! "$WORK/cachepolicy" "${CLIENT_ARGS[@]}" --rows "$ROWS" --groups "$NGROUPS" --zipf "$ZIPF" --mix "$MIX" \
	--warmup "$WARMUP" --requests "$REQUESTS" --phases "$PHASES" --clients "$CLIENTS" --seed "$SEED" \
	--primary-dsn "$(dsn "$GK_PRIMARY")" --json "$JSON" >"$WORK/tables.md"; then
	for name in "${ARMS[@]}"; do tail -n 10 "$WORK/$name.log" >&2; done
	fail "the load generator failed"
fi

MODEL=$(lscpu 2>/dev/null | awk -F: '/^Model name/ {sub(/^ +/, "", $2); print $2; exit}')
{
	echo "# Result-cache replacement: cost-aware against LRU, side by side"
	echo
	echo "Two gatekeeper proxies in pooled mode on the same primary, identical but for"
	echo "\`cache.replacement\` (cost_aware: GreedyDual-Size-Frequency; lru), each with"
	echo "\`cache.max_bytes\` $MAX_BYTES ($MAX bytes), take turns on the same seeded trace of reads: each"
	echo "runs the same $WARMUP warm-up requests, then $PHASES phases of $REQUESTS requests each, the same"
	echo "requests for both in a phase, in turns (the order reversed every other phase), $CLIENTS client"
	echo "connections in a closed loop. Only one proxy runs at a time."
	echo
	echo "The reads, of cp_items ($ROWS rows, $NGROUPS groups, created straight on the primary), mixed"
	echo "$MIX, each kind's keys drawn from a Zipf distribution of exponent $ZIPF"
	echo "(seed $SEED); every key is a statement of its own, nothing writes:"
	echo
	jq -r '.workload.kinds[] | "- \(.name) (\(.keys) keys): \(.what), e.g. `\(.sample)`"' "$JSON"
	echo
	echo "Database s saved: \`gatekeeper_cache_saved_seconds_total\` over the measured phases, each hit"
	echo "counting its result's measured database time; saved s per s: that over the proxy's measured"
	echo "time (the sum of its phases); at calibrated costs: each kind's hits (from \`/api/v1/cache\`) times"
	echo "the kind's mean time alone on the primary, measured before the run, over the same time."
	echo "Hits, misses, requests/s over the measured phases. Cache MiB,"
	echo "entries (\`gatekeeper_cache_bytes\`, \`gatekeeper_cache_entries\`), heap in use"
	echo "(\`go_memstats_heap_inuse_bytes\`), RSS and peak RSS (VmRSS, VmHWM of /proc/PID/status) at"
	echo "the end; evictions since the start."
	echo
	cat "$WORK/tables.md"
	echo
	echo "The proxies' configuration (the monitor's password from the environment; the replacement"
	echo "from GATEKEEPER_CACHE_REPLACEMENT):"
	echo
	echo '```yaml'
	cat "$CONFIG"
	echo '```'
	echo
	echo "Command: \`$ARGS\` ($(date -u '+%Y-%m-%d %H:%M UTC'))"
	echo
	# diff-index, not git diff or describe --dirty, which may write the index.
	echo "Commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff-index --quiet HEAD -- 2>/dev/null || echo ', with uncommitted changes');"
	echo "gatekeeper $("$GATEKEEPER" version | awk '{print $2}'); database $(sql 'SELECT VERSION()'); $(go version | awk '{print $3}')."
	echo "Machine: $(nproc) processors (${MODEL:-unknown model}), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr);"
	echo "the database, the proxies and the load generator share it."
	echo
	echo "The run's result, as bench/cmd/cachepolicy writes it with --json: [\`${JSON##*/}\`](${JSON##*/})"
} >"$OUT/README.md"
echo "bench/cache-policy.sh: wrote $OUT/README.md" >&2
cat "$OUT/README.md"
