#!/usr/bin/env bash
# A flood of distinct cacheable statements against the result cache's memory bound:
# bench/cmd/cacheflood sends the same --statements distinct point selects, each a text of
# its own, through a gatekeeper proxy with the result cache off (the baseline: today's
# proxy) and then through one with it on (cache.max_bytes --max-bytes), identical
# otherwise; the report gives each one's memory at the end (VmRSS, VmHWM, the Go heap in
# use and allocated, the cache's bytes, entries, fills and evictions) and judges the
# cache-on proxy's memory above the baseline's against max_bytes plus 5% of it.
#
#   bench/cache-flood.sh [--max-bytes SIZE] [--statements N] [--connections N] [--rows N]
#                        [--gomemlimit LIMIT] [--quick] [--out DIR]
#
# Defaults: 1,000,000 statements (--quick: 100,000), 16 connections in a closed loop,
# max_bytes 64MiB, cf_t of 10000 rows (created straight on the primary). --gomemlimit sets
# GOMEMLIMIT (e.g. 200MiB) in both proxies' environment; unset by default. Both caches'
# configuration has cache.mode auto and a rule that caches every read of cf_t: auto mode
# alone stops filling a statement type whose results are not reused, and none of the
# flood's are, so without the rule the cache would stay nearly empty.
#
# Writes DIR/README.md (default bench/results/cache-flood) with the command, the machine
# and the table, and the run's JSON beside it. Uses the backends of GK_PRIMARY when set,
# else starts its own on loopback ports 29306-29308 and stops them at the end; the proxies
# listen on free ports below 32768. GATEKEEPER=/path runs that binary instead of building
# bin/gatekeeper. Every process it starts is stopped by its PID at exit. About 3 minutes
# with the defaults on 2 processors (about 12,000 statements a second), 30 seconds with
# --quick.
set -euo pipefail
cd "$(dirname "$0")/.."

MAX_BYTES=64MiB STATEMENTS=1000000 CONNECTIONS=16 ROWS=10000 MEMLIMIT= OUT=bench/results/cache-flood
ARGS="bench/cache-flood.sh$([ $# -eq 0 ] || printf ' %q' "$@")"
[ -n "${GATEKEEPER:-}" ] && ARGS="GATEKEEPER=$(printf '%q' "$GATEKEEPER") $ARGS"
usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit "$1"
}
fail() { echo "bench/cache-flood.sh: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage 0 ;;
	--quick) STATEMENTS=100000; shift; continue ;;
	esac
	[ $# -ge 2 ] || usage 2 >&2
	case $1 in
	--max-bytes) MAX_BYTES=$2 ;;
	--statements) STATEMENTS=$2 ;;
	--connections) CONNECTIONS=$2 ;;
	--rows) ROWS=$2 ;;
	--gomemlimit) MEMLIMIT=$2 ;;
	--out) OUT=$2 ;;
	*) usage 2 >&2 ;;
	esac
	shift 2
done
for n in "$STATEMENTS" "$CONNECTIONS" "$ROWS"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || fail "--statements, --connections and --rows take a positive whole number, not '$n'"
done
[ -z "$MEMLIMIT" ] || [[ $MEMLIMIT =~ ^[0-9]+(B|KiB|MiB|GiB|TiB)?$ ]] ||
	fail "--gomemlimit takes a size as GOMEMLIMIT reads it, such as 200MiB, not '$MEMLIMIT'"

. bench/lib.sh
MAX=$(bytes_of "$MAX_BYTES") && [ "$MAX" -gt 0 ] || fail "--max-bytes takes a size such as 64MiB or 67108864, not '$MAX_BYTES'"
ENTRY=$((MAX < 1 << 20 ? MAX : 1 << 20)) # cache.max_entry_bytes: its default, at most max_bytes

command -v curl >/dev/null || fail "curl is not installed (apt-get install curl); it waits for the proxies' metrics"
command -v python3 >/dev/null || fail "python3 is not installed; it finds free ports below 32768"
if [ -z "${GATEKEEPER:-}" ]; then
	make -s build || fail "make build failed; fix the build or give GATEKEEPER=/path"
	GATEKEEPER=bin/gatekeeper
fi
"$GATEKEEPER" version >/dev/null 2>&1 || fail "gatekeeper ($GATEKEEPER) does not run; build it (make build) or give GATEKEEPER=/path"

bench_setup 29306
DB=${GK_DATABASE:-gktest}
sql() { mariadb --no-defaults -h"${GK_PRIMARY%:*}" -P"$PRIMARY_PORT" -u"$GK_USER" -p"$GK_PASSWORD" -N -e "$1"; }
dsn() { echo "$GK_USER:$GK_PASSWORD@tcp($1)/$DB"; }

# The proxies' shared configuration; the monitor's password, and for the baseline
# cache.mode off, come from the environment.
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
  - name: flood
    match: {table: cf_t}
    cache: "on"
EOF
# The cache serves no hit unless the monitor user may follow the primary's binary log.
if ! why=$(GATEKEEPER_MONITOR_PASSWORD="$GK_PASSWORD" GATEKEEPER_BACKENDS_PRIMARY="$GK_PRIMARY" \
	"$GATEKEEPER" check-config "$CONFIG" 2>&1); then
	fail "the proxies' configuration is refused (a gatekeeper without the result cache?): $(head -n 3 <<<"$why")"
fi
grep -q 'may read the binary log' <<<"$why" ||
	fail "the result cache would serve no hit: $(grep -m 1 warning <<<"$why" || echo "$why")"

go build -o "$WORK/cacheflood" ./bench/cmd/cacheflood
"$WORK/cacheflood" --prepare --primary-dsn "$(dsn "$GK_PRIMARY")" --rows "$ROWS"

# start_proxy NAME CACHE_MODE starts gatekeeper with CONFIG and cache.mode CACHE_MODE on
# free ports, its log in WORK/NAME.log, and waits until it takes a login and serves its
# metrics; sets PROXY_PID, PROXY_PORT and ADMIN_PORT.
start_proxy() {
	local name=$1 log=$WORK/$1.log settings=()
	[ -n "$MEMLIMIT" ] && settings+=(GOMEMLIMIT="$MEMLIMIT")
	PROXY_PORT=$(low_port)
	ADMIN_PORT=$(low_port)
	env GATEKEEPER_MONITOR_PASSWORD="$GK_PASSWORD" GATEKEEPER_CACHE_MODE="$2" GATEKEEPER_SHUTDOWN_DRAIN_TIMEOUT=5s \
		"${settings[@]}" "$GATEKEEPER" serve --config "$CONFIG" --listen 127.0.0.1:"$PROXY_PORT" \
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

# The baseline first: the cache-on proxy then runs with no other flood in flight.
ARMS=(off on)
CLIENT_ARGS=()
for name in "${ARMS[@]}"; do
	mode=auto
	[ "$name" = off ] && mode=off
	start_proxy "$name" "$mode"
	CLIENT_ARGS+=(--arm "$name" --dsn "$(dsn "127.0.0.1:$PROXY_PORT")" --admin "127.0.0.1:$ADMIN_PORT" --pid "$PROXY_PID")
done

mkdir -p "$OUT"
JSON=$OUT/cache-flood.json
rm -f "$JSON"
if ! "$WORK/cacheflood" "${CLIENT_ARGS[@]}" --statements "$STATEMENTS" --connections "$CONNECTIONS" --rows "$ROWS" \
	--max-bytes "$MAX" --json "$JSON" >"$WORK/table.md"; then
	for name in "${ARMS[@]}"; do tail -n 10 "$WORK/$name.log" >&2; done
	fail "the load generator failed"
fi

MODEL=$(lscpu 2>/dev/null | awk -F: '/^Model name/ {sub(/^ +/, "", $2); print $2; exit}')
{
	echo "# Result cache under a flood of distinct statements: memory against cache.max_bytes"
	echo
	echo "$STATEMENTS distinct point selects (\`SELECT id, pad FROM cf_t WHERE id = <i mod $ROWS + 1>"
	echo "AND <i> = <i>\`: a text of its own each, a result of one small row), sent by $CONNECTIONS client"
	echo "connections in a closed loop, first through a gatekeeper proxy with the result cache off"
	echo "(off, the baseline), then through one with it on (on: every statement a miss that fills an"
	echo "entry, and past \`cache.max_bytes\` $MAX_BYTES ($MAX bytes) an eviction), the proxies identical"
	echo "otherwise, both in pooled mode on the same primary; GOMEMLIMIT ${MEMLIMIT:-unset}. Expected: the"
	echo "cache-on proxy's memory at most max_bytes + 5% above the baseline's."
	echo
	echo "At the end of each flood: VmRSS (RSS) and VmHWM (peak RSS, since the process started) from"
	echo "/proc/PID/status, \`go_memstats_heap_inuse_bytes\`, \`_heap_alloc_bytes\` and \`_sys_bytes\`, and"
	echo "the cache's \`gatekeeper_cache_bytes\`, \`_entries\`, \`_fills_total\` and \`_evictions_total\`; max"
	echo "RSS and max heap in use: the most read during the flood, once a second."
	echo
	cat "$WORK/table.md"
	echo
	echo "The proxies' configuration (the monitor's password from the environment; the baseline's"
	echo "cache.mode off from GATEKEEPER_CACHE_MODE):"
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
	echo "The run's result, as bench/cmd/cacheflood writes it with --json: [\`${JSON##*/}\`](${JSON##*/})"
} >"$OUT/README.md"
echo "bench/cache-flood.sh: wrote $OUT/README.md" >&2
cat "$OUT/README.md"
