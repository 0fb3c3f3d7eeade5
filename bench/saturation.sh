#!/usr/bin/env bash
# A saturated database host with the proxy beside the database: 128 clients run a full table
# scan in a loop, keeping every processor busy with as many server threads, while 4 clients
# run SELECT 1 in a loop; for each route the quick statements' mean, p50, p95 and count and
# the scans' throughput, medians over the rounds. The kernel shares the processors per
# thread, so an unweighted proxy's few threads get little beside a hundred busy ones, and
# every statement waits for them; the routes show that cost and what removes it.
#
#   bench/saturation.sh [--rounds N] [--capacity D] [--routes LIST] [--duration D] [--warmup D]
#                       [--rows N] [--scan-clients N] [--short-clients N] [--short-interval D]
#                       [--nice N] [--layout flat|services] [--unit-weight N] [--unit-nice N]
#                       [--out DIR]
#
# Routes (comma or space separated; default all), taking turns in reverse order every other
# round, each proxy started afresh for its run:
#   direct              the database itself
#   admission-off       gatekeeper with admission.enabled false (a relay that still measures)
#   admission-off-nice  the same under nice -n --nice (default -10), standing in for the
#                       systemd unit's Nice= and CPUWeight=; needs root, skipped otherwise
#   admission-off-unit  with --layout services: the same in a cgroup of the weight of
#                       deploy/gatekeeper.service's CPUWeight= and at its Nice=
#   admission           admission.enabled true with a static admission.capacity (--capacity,
#                       default 500ms)
#   admission-auto      admission.capacity auto; run only when the binary accepts it
#                       (gatekeeper check-config), else reported as not supported by this build
# --layout services puts the primary, the load generator and each proxy in a cgroup of its own,
# as systemd puts each service in one: the primary and the load generator at the default
# weight (CPUWeight=100), a proxy at that weight too under admission-off, and as
# deploy/gatekeeper.service has it (its CPUWeight= and Nice=) under every other route. It needs
# root and the cgroup cpu controller (v1 /sys/fs/cgroup/cpu, or v2 with cpu enabled), and
# leaves admission-off-nice out (nice orders threads within a cgroup, and the proxy is alone
# in its own). --unit-weight and --unit-nice run the unit's proxies at another CPUWeight= and
# Nice= than deploy/gatekeeper.service's, to try a setting before the unit takes it.
# --layout flat (the default) runs them all in the cgroup the script runs in, and leaves
# admission-off-unit out.
# --short-interval D paces each short client to a statement every D (a probe of the wait);
# without it (0) they run back to back, so that on a machine of few processors their own
# processor use bounds their mean: with 4 clients, the mean is 4 divided by their throughput.
# Defaults: 2 rounds, each run 20s measured after 5s of warm-up (from the last client
# connected), a table of 200000 rows (a scan alone takes tens of ms), 128 scan and 4 short
# clients; writes bench/results/saturation/ (README.md and results.csv, a line a run).
#
# Uses the backends of GK_PRIMARY when set, else starts its own on loopback ports 63306-63308
# (replication stopped) and stops them at the end; GATEKEEPER=/path runs that binary instead
# of building bin/gatekeeper. Every process it starts listens on 127.0.0.1 only and is stopped
# by its PID at exit. Under a minute a route and round, plus a minute of setup.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_ROUTES="direct admission-off admission-off-nice admission-off-unit admission admission-auto"
ROUTES=$ALL_ROUTES ROUNDS=2 CAPACITY=500ms DURATION=20s WARMUP=5s ROWS=200000
SCAN_CLIENTS=128 SHORT_CLIENTS=4 SHORT_INTERVAL=0 NICE=-10 OUT=bench/results/saturation LAYOUT=flat
UNIT_WEIGHT= UNIT_NICE=
ARGS="bench/saturation.sh$([ $# -eq 0 ] || printf ' %q' "$@")"
[ -n "${GATEKEEPER:-}" ] && ARGS="GATEKEEPER=$(printf '%q' "$GATEKEEPER") $ARGS"
usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit "$1"
}
fail() { echo "bench/saturation.sh: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
	case $1 in -h | --help) usage 0 ;; esac
	[ $# -ge 2 ] || usage 2 >&2
	case $1 in
	--rounds) ROUNDS=$2 ;;
	--capacity) CAPACITY=$2 ;;
	--routes) ROUTES=$2 ;;
	--duration) DURATION=$2 ;;
	--warmup) WARMUP=$2 ;;
	--rows) ROWS=$2 ;;
	--scan-clients) SCAN_CLIENTS=$2 ;;
	--short-clients) SHORT_CLIENTS=$2 ;;
	--short-interval) SHORT_INTERVAL=$2 ;;
	--nice) NICE=$2 ;;
	--layout) LAYOUT=$2 ;;
	--unit-weight) UNIT_WEIGHT=$2 ;;
	--unit-nice) UNIT_NICE=$2 ;;
	--out) OUT=$2 ;;
	*) usage 2 >&2 ;;
	esac
	shift 2
done
for n in "$ROUNDS" "$ROWS" "$SCAN_CLIENTS" "$SHORT_CLIENTS"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || fail "--rounds, --rows, --scan-clients and --short-clients take positive whole numbers, not '$n'"
done
[[ $SHORT_INTERVAL =~ ^(0|[0-9]+(\.[0-9]+)?(us|ms|s))$ ]] || fail "--short-interval takes a duration such as 10ms (0: back to back), not '$SHORT_INTERVAL'"
[[ $NICE =~ ^-?[0-9]+$ ]] || fail "--nice takes a nice level such as -10, not '$NICE'"
[[ $LAYOUT == flat || $LAYOUT == services ]] || fail "--layout takes flat or services, not '$LAYOUT'"
# The unit's weight and nice level, for --layout services.
UNIT=deploy/gatekeeper.service
UNIT_SETTINGS="as $UNIT runs it"
[ -n "$UNIT_WEIGHT$UNIT_NICE" ] && UNIT_SETTINGS="at the settings the command gave in place of $UNIT's"
UNIT_WEIGHT=${UNIT_WEIGHT:-$(awk -F= '$1 == "CPUWeight" {print $2}' "$UNIT")}
UNIT_NICE=${UNIT_NICE:-$(awk -F= '$1 == "Nice" {print $2}' "$UNIT")}
[[ $UNIT_WEIGHT =~ ^[1-9][0-9]*$ && $UNIT_NICE =~ ^-?[0-9]+$ ]] || fail "the unit's CPUWeight= and Nice= ($UNIT, or --unit-weight and --unit-nice) must be a whole number from 1 and a nice level, not '$UNIT_WEIGHT' and '$UNIT_NICE'"
wanted=
for r in ${ROUTES//,/ }; do
	[[ " $ALL_ROUTES " == *" $r "* ]] || fail "unknown route '$r'; the routes are: $ALL_ROUTES"
	wanted="$wanted $r"
done
ROUTES=
for r in $ALL_ROUTES; do [[ " $wanted " == *" $r "* ]] && ROUTES="$ROUTES $r"; done
ROUTES=${ROUTES# }
[ -n "$ROUTES" ] || fail "--routes names no route"

if [ -z "${GATEKEEPER:-}" ]; then
	make -s build || fail "make build failed; fix the build or give GATEKEEPER=/path"
	GATEKEEPER=bin/gatekeeper
fi
"$GATEKEEPER" version >/dev/null 2>&1 || fail "gatekeeper ($GATEKEEPER) does not run; build it (make build) or give GATEKEEPER=/path"

. bench/lib.sh
bench_setup 63306
if [ -n "${OWN_BACKENDS:-}" ]; then
	# The replicas would replay the table's load on the same processors; the proxy only
	# talks to the primary.
	for r in "$GK_REPLICA1" "$GK_REPLICA2"; do
		mariadb --no-defaults -h"${r%:*}" -P"${r##*:}" -u"$GK_USER" -p"$GK_PASSWORD" -e 'STOP ALL SLAVES'
	done
fi
DB=${GK_DATABASE:-gktest}
sql() { mariadb --no-defaults -h"${GK_PRIMARY%:*}" -P"$PRIMARY_PORT" -u"$GK_USER" -p"$GK_PASSWORD" -N -e "$1"; }

# Routes that cannot run here are left out, with the reason in the report.
declare -A SKIPPED=()
if [ "$LAYOUT" = services ]; then
	SKIPPED[admission-off-nice]="not with --layout services: nice orders threads within a cgroup, and the proxy is alone in its own"
else
	SKIPPED[admission-off-unit]="needs --layout services: the unit's CPUWeight= weighs a cgroup against the database's"
	[ "$(id -u)" -eq 0 ] || SKIPPED[admission-off-nice]="needs root to run at nice $NICE; not run"
fi
if [[ " $ROUTES " == *" admission-auto "* ]]; then
	printf 'admission:\n  enabled: true\n  capacity: auto\n' >"$WORK/auto.yaml"
	if ! why=$("$GATEKEEPER" check-config "$WORK/auto.yaml" 2>&1); then
		SKIPPED[admission-auto]="not supported by this build: $(head -n 1 <<<"$why" | sed 's/^.*admission\.capacity: //')"
	fi
fi
RUN_ROUTES=
for r in $ROUTES; do [ -z "${SKIPPED[$r]:-}" ] && RUN_ROUTES="$RUN_ROUTES $r"; done
RUN_ROUTES=${RUN_ROUTES# }
for r in "${!SKIPPED[@]}"; do echo "bench/saturation.sh: $r: ${SKIPPED[$r]}" >&2; done
[ -n "$RUN_ROUTES" ] || fail "no route can run here"

go build -o "$WORK/saturation" ./bench/cmd/saturation
GEN=("$WORK/saturation")
# "${IN_CGROUP[@]}" DIR CMD... runs CMD in the cgroup DIR, in the same process (so that $! is
# CMD's PID when it runs in the background).
IN_CGROUP=(bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _)
if [ "$LAYOUT" = services ]; then
	[ "$(id -u)" -eq 0 ] || fail "--layout services needs root, to put the processes in cgroups"
	DB_PID=$(primary_pid) ||
		fail "--layout services: the primary's process is not on this machine"
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control || fail "the cgroup v2 cpu controller is not enabled for children of /sys/fs/cgroup"
		CG_TOP=/sys/fs/cgroup WEIGHT_FILE=cpu.weight WEIGHT_DEFAULT=100 WEIGHT_UNIT=$UNIT_WEIGHT
	elif [ -d /sys/fs/cgroup/cpu ]; then
		# cgroup v1: cpu.shares, 1024 for systemd's default weight of 100.
		CG_TOP=/sys/fs/cgroup/cpu WEIGHT_FILE=cpu.shares WEIGHT_DEFAULT=1024 WEIGHT_UNIT=$((UNIT_WEIGHT * 1024 / 100))
	else
		fail "--layout services: no cgroup cpu controller at /sys/fs/cgroup"
	fi
	CG=$CG_TOP/gk-saturation-$$
	cgroups_undo() {
		echo "$DB_PID" >"$CG_TOP/cgroup.procs" 2>/dev/null || true
		bench_cleanup
		for name in db clients proxy; do rmdir "$CG-$name" 2>/dev/null || true; done
	}
	trap cgroups_undo EXIT
	for name in db clients proxy; do
		mkdir "$CG-$name"
		echo "$WEIGHT_DEFAULT" >"$CG-$name/$WEIGHT_FILE"
	done
	echo "$DB_PID" >"$CG-db/cgroup.procs"
	GEN=("${IN_CGROUP[@]}" "$CG-clients" "$WORK/saturation")
fi
LOAD_ARGS=(--user "$GK_USER" --password "$GK_PASSWORD" --db "$DB")
"${GEN[@]}" prepare --addr "$GK_PRIMARY" "${LOAD_ARGS[@]}" --rows "$ROWS"
# What a scan costs alone: one client scanning for a few seconds, nothing else running.
"${GEN[@]}" run --addr "$GK_PRIMARY" "${LOAD_ARGS[@]}" --route alone --scan-clients 1 --short-clients 0 \
	--warmup 1s --duration 3s --csv "$WORK/alone.csv" 2>/dev/null
SCAN_ALONE=$(awk -F, 'NR == 2 {printf "%.0f", $10}' "$WORK/alone.csv")

# wait_idle waits until the primary runs nothing but the query asking, so that a run does not
# start beside the last one's scans still ending.
wait_idle() {
	for _ in $(seq 1 600); do
		[ "$(sql "SHOW GLOBAL STATUS LIKE 'Threads_running'" | awk '{print $2}')" -le 1 ] && return 0
		sleep 0.1
	done
	echo "bench/saturation.sh: the primary still runs $(sql "SHOW GLOBAL STATUS LIKE 'Threads_running'" | awk '{print $2}') threads after 60s; going on" >&2
}

# start_proxy ROUTE LOG starts gatekeeper for ROUTE on a free port and waits until it takes
# a login; sets PROXY_PID and PROXY_PORT.
start_proxy() {
	local settings=(GATEKEEPER_MODE=passthrough GATEKEEPER_SHUTDOWN_DRAIN_TIMEOUT=5s) run=()
	case $1 in
	admission-off) settings+=(GATEKEEPER_ADMISSION_ENABLED=false) ;;
	admission-off-nice) settings+=(GATEKEEPER_ADMISSION_ENABLED=false) run=(nice -n "$NICE") ;;
	admission-off-unit) settings+=(GATEKEEPER_ADMISSION_ENABLED=false) ;;
	admission) settings+=(GATEKEEPER_ADMISSION_ENABLED=true GATEKEEPER_ADMISSION_CAPACITY="$CAPACITY") ;;
	admission-auto) settings+=(GATEKEEPER_ADMISSION_ENABLED=true GATEKEEPER_ADMISSION_CAPACITY=auto) ;;
	esac
	if [ "$LAYOUT" = services ]; then
		# A unit without CPUWeight= and Nice= under admission-off, the unit as shipped otherwise.
		if [ "$1" = admission-off ]; then
			echo "$WEIGHT_DEFAULT" >"$CG-proxy/$WEIGHT_FILE"
		else
			echo "$WEIGHT_UNIT" >"$CG-proxy/$WEIGHT_FILE"
			run=(nice -n "$UNIT_NICE")
		fi
		run=("${IN_CGROUP[@]}" "$CG-proxy" "${run[@]}")
	fi
	PROXY_PORT=$(free_port)
	"${run[@]}" env "${settings[@]}" "$GATEKEEPER" serve --primary "$GK_PRIMARY" \
		--listen 127.0.0.1:"$PROXY_PORT" --admin-listen "" 2>"$2" &
	PROXY_PID=$!
	PIDS+=("$PROXY_PID")
	wait_login "$1" "$PROXY_PID" "$PROXY_PORT" "$2"
}

stop_proxy() {
	stop_pid "$PROXY_PID"
}

mkdir -p "$OUT"
CSV=$OUT/results.csv
rm -f "$CSV"
for round in $(seq 1 "$ROUNDS"); do
	order=$RUN_ROUTES
	[ $((round % 2)) -eq 0 ] && order=$(tr ' ' '\n' <<<"$RUN_ROUTES" | tac | paste -sd' ')
	for route in $order; do
		wait_idle
		echo "bench/saturation.sh: round $round, $route" >&2
		addr=$GK_PRIMARY pid=()
		if [ "$route" != direct ]; then
			start_proxy "$route" "$WORK/gatekeeper-$round-$route.log"
			addr=127.0.0.1:$PROXY_PORT pid=(--proxy-pid "$PROXY_PID")
		fi
		if ! "${GEN[@]}" run --addr "$addr" "${LOAD_ARGS[@]}" "${pid[@]}" --route "$route" --round "$round" \
			--scan-clients "$SCAN_CLIENTS" --short-clients "$SHORT_CLIENTS" --short-interval "$SHORT_INTERVAL" --warmup "$WARMUP" \
			--duration "$DURATION" --csv "$CSV"; then
			[ "$route" != direct ] && tail -n 20 "$WORK/gatekeeper-$round-$route.log" >&2
			fail "round $round, $route: the load generator failed"
		fi
		[ "$route" != direct ] && stop_proxy
	done
done

MODEL=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
{
	echo "# Saturation: quick statements beside $SCAN_CLIENTS table scans, with the proxy on the database's host"
	echo
	echo "$SCAN_CLIENTS clients run a full scan of a $ROWS-row table in a loop (\`SELECT SUM(k)\`, k not"
	if [ "$SHORT_INTERVAL" = 0 ]; then
		echo "indexed; alone it takes ${SCAN_ALONE} ms) and $SHORT_CLIENTS clients run \`SELECT 1\` in a loop, each on"
	else
		echo "indexed; alone it takes ${SCAN_ALONE} ms) and $SHORT_CLIENTS clients run \`SELECT 1\` once every $SHORT_INTERVAL, each on"
	fi
	echo "a connection of its own, for ${DURATION} measured after ${WARMUP} of warm-up. The database, the proxy and the"
	echo "load generator share the machine, as a proxy installed beside its database does. Routes:"
	echo "direct is the database itself; admission-off is gatekeeper with admission.enabled false;"
	echo "admission-off-nice is the same started under \`nice -n $NICE\` (what the systemd unit's"
	echo "\`Nice=\` does; its \`CPUWeight=\` does it per cgroup); admission has admission.enabled true with"
	echo "a static admission.capacity of $CAPACITY; admission-auto has admission.capacity auto. Each proxy"
	echo "is started afresh for its run (estimates learnt in the warm-up), the routes take turns in"
	echo "reverse order every other round, and the primary is idle before each run."
	if [ "$LAYOUT" = services ]; then
		echo
		echo "Layout: services. The primary, the load generator and each proxy ran in a cgroup of their own, as"
		echo "systemd puts each service in one: the primary and the load generator at the default weight"
		echo "(CPUWeight=100, $WEIGHT_FILE $WEIGHT_DEFAULT), the proxy of admission-off at that weight too, as a unit"
		echo "without \`CPUWeight=\` and \`Nice=\`, and every other proxy $UNIT_SETTINGS:"
		echo "\`CPUWeight=$UNIT_WEIGHT\` ($WEIGHT_FILE $WEIGHT_UNIT) and \`Nice=$UNIT_NICE\` (admission-off-unit is"
		echo "admission-off so)."
	fi
	echo
	echo "Medians over $ROUNDS rounds; short is \`SELECT 1\`, its count what the $SHORT_CLIENTS clients completed in"
	echo "the measured period; errors are summed over the rounds (1205: refused by admission);"
	echo "proxy CPU is the proxy's user plus system time over the period, in processors."
	echo "Every run is in [results.csv](results.csv)."
	echo
	"${GEN[@]}" report --csv "$CSV"
	for r in $ROUTES; do
		[ -n "${SKIPPED[$r]:-}" ] && echo "| $r | — | ${SKIPPED[$r]} | | | | | | | | |"
	done
	echo
	echo "Command: \`$ARGS\`"
	echo
	echo "Machine: $(nproc) processors ($MODEL), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr);"
	echo "date $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git describe --always --dirty 2>/dev/null || echo unknown);"
	echo "gatekeeper $("$GATEKEEPER" version | awk '{print $2}'); database $(sql 'SELECT VERSION()'); $(go version | awk '{print $3}')."
} >"$OUT/README.md"
echo "bench/saturation.sh: wrote $OUT/README.md and $CSV" >&2
cat "$OUT/README.md"
