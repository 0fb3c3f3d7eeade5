#!/usr/bin/env bash
# The database loses half its processor mid-run, then gets it back: does the adaptive
# capacity follow, and how close does it stay to the best static capacity of each state?
#
#   bench/stepchange.sh [--clients N] [--phase D] [--capacities LIST] [--full CPUS]
#                       [--interval D] [--rounds N] [--first-round N]
#                       [--db-cpus LIST --client-cpus LIST] [--loss quota|hog] [--law L] [--out DIR]
#
# The primary's server process runs in a cgroup of its own whose processor quota is --full
# processors (default 1) or half of that (--loss quota, the default). With --loss hog (which
# needs --db-cpus) the quota stays at --full and the primary loses half its processors to a
# busy loop on each of them, in a cgroup of the same weight as the primary's: the scheduler
# shares each processor between the two in slices of milliseconds, where a quota lets the
# primary run flat out until it has spent its share of each 100 ms and then stops it for the
# rest.
# The bookstore (shopping mix, --clients closed-loop clients, default 200) runs through
# gatekeeper with sjf and type key tag, loaded afresh, on a fresh proxy and with fresh clients
# each run, through one schedule of 4 phases of --phase (default 60s): a warm-up at full, then
# full, half and full again. Every second it samples the proxy's capacity, the units it completed and
# refused, the adaptive capacity's decision and stretch, and the processor time the primary
# used. A round runs the schedule with admission.capacity auto (--interval:
# admission.capacity_interval, default 2s; --law: admission.capacity_law, default gradient)
# and with each static capacity of --capacities
# (default 25ms,50ms,100ms,200ms), every other round in the reverse order, so that a drift
# of the machine's speed favours neither end; --rounds rounds (default 1). --first-round N
# numbers them from N on (default 1) and adds them to the trace already in --out, so that
# a run can be continued with more rounds and the report covers them all; the alternation
# goes by the round's number.
# Every capacity, adaptive or static, runs the same schedule, and each phase is compared
# over the same seconds of it: the bookstore's throughput at a fixed capacity changes with
# the time since its clients started (at 50 ms, by half between the first full phase and
# the last), so a static capacity measured in a run of its own, from its own start, is no
# measure for a phase two minutes into the schedule.
# Throughput is the proxy's completed units a second (gatekeeper_units_total). It reports
# each phase's throughput over its last half against the best static capacity's in that
# phase (medians over the rounds), each round's ratio against that capacity's run in the
# same round, and how long the adaptive capacity took to settle after each change: the
# time from which it stayed within a factor 1.5, and 2, of its median over the phase's last
# half.
# It also reports the mean response time of the bookstore's short interactions (every class
# but Best Sellers and Admin Confirm) over the same seconds, from the completions the
# bookstore counts each second: a capacity that keeps the throughput but lets units queue
# inside the database shows there.
# On a shared virtual machine a processor second does more or less work from moment to
# moment, and the primary's throughput moves with it. bench/cmd/cpuspeed runs a fixed loop
# on the primary's first processor (any, without --db-cpus) five times a second, some 0.3 ms
# each, and every second of the trace has the speed it read. The report fits, within each
# phase, log units/s as a level of each policy's own plus a slope common to all times log
# speed, and gives each policy's throughput at the benchmark's median speed as well: on a
# 2-processor VM the throughput moved some four times as fast as the loop's speed, and the
# fit took the spread of one capacity's rounds from 0.27 to 0.09 (standard deviation of
# log units/s).
# Writes bench/results/stepchange/ (README.md, trace.csv, classes.csv, and the charts of
# bench/cmd/stepplot: capacity.png and throughput.png).
#
# Needs root and the cgroup cpu controller (v1 /sys/fs/cgroup/cpu, or v2 with cpu enabled).
# Uses the backends of GK_PRIMARY when they run on this machine, else starts its own on
# loopback ports 35306-35308 (replication stopped) and stops them at the end; GATEKEEPER=/path
# runs that binary instead of building bin/gatekeeper. Every process it starts listens on
# 127.0.0.1 and is stopped by its PID at exit; the primary leaves the cgroup at exit.
# About --rounds x (1 + capacities) x (4 x --phase and the load, some seconds): 21 minutes at
# the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENTS=200 PHASE=60s CAPACITIES=25ms,50ms,100ms,200ms FULL=1 FIRST=1
OUT=bench/results/stepchange INTERVAL=2s ROUNDS=1 DB_CPUS= CLIENT_CPUS= LOSS=quota LAW=gradient
ARGS="bench/stepchange.sh$([ $# -eq 0 ] || printf ' %q' "$@")"
usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit "$1"
}
fail() { echo "bench/stepchange.sh: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
	case $1 in -h | --help) usage 0 ;; esac
	[ $# -ge 2 ] || usage 2 >&2
	case $1 in
	--clients) CLIENTS=$2 ;;
	--phase) PHASE=$2 ;;
	--capacities) CAPACITIES=$2 ;;
	--full) FULL=$2 ;;
	--interval) INTERVAL=$2 ;;
	--rounds) ROUNDS=$2 ;;
	--first-round) FIRST=$2 ;;
	--db-cpus) DB_CPUS=$2 ;;
	--client-cpus) CLIENT_CPUS=$2 ;;
	--loss) LOSS=$2 ;;
	--law) LAW=$2 ;;
	--out) OUT=$2 ;;
	*) usage 2 >&2 ;;
	esac
	shift 2
done
seconds() {
	[[ $1 =~ ^([0-9]+)s$ ]] || fail "durations are whole seconds, as in 60s, not '$1'"
	echo "${BASH_REMATCH[1]}"
}
PHASE_S=$(seconds "$PHASE")
[ "$PHASE_S" -ge 4 ] || fail "--phase must be 4s at least: each phase is measured over its last half"
[[ $LAW =~ ^(gradient|rules)$ ]] || fail "--law takes gradient or rules, not '$LAW'"
[[ $CLIENTS =~ ^[1-9][0-9]*$ ]] || fail "--clients takes a positive whole number, not '$CLIENTS'"
[[ $CAPACITIES =~ ^[0-9]+(ms|s)(,[0-9]+(ms|s))*$ ]] ||
	fail "--capacities takes static capacities to compare with, as in 25ms,50ms,100ms, not '$CAPACITIES'"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || fail "--rounds takes a positive whole number, not '$ROUNDS'"
[[ $FIRST =~ ^[1-9][0-9]*$ ]] || fail "--first-round takes a positive whole number, not '$FIRST'"
[[ $FULL =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "--full takes a number of processors, as in 1 or 1.5, not '$FULL'"
if [ -n "$DB_CPUS$CLIENT_CPUS" ] && { [ -z "$DB_CPUS" ] || [ -z "$CLIENT_CPUS" ]; }; then
	fail "--db-cpus and --client-cpus go together, as in --db-cpus 0 --client-cpus 1"
fi
case $LOSS in
quota) ;;
hog) [ -n "$DB_CPUS" ] || fail "--loss hog needs --db-cpus (and --client-cpus): the busy loops run on the primary's processors" ;;
*) fail "--loss takes quota or hog, not '$LOSS'" ;;
esac
[ "$(id -u)" -eq 0 ] || fail "needs root, to give the primary a processor quota in a cgroup"
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	grep -qw cpu /sys/fs/cgroup/cgroup.controllers || fail "the cgroup v2 cpu controller is not available"
	CG=/sys/fs/cgroup/gk-stepchange-$$
elif [ -d /sys/fs/cgroup/cpu ]; then
	CG=/sys/fs/cgroup/cpu/gk-stepchange-$$
else
	fail "no cgroup cpu controller at /sys/fs/cgroup"
fi

if [ -z "${GATEKEEPER:-}" ]; then
	make -s build || fail "make build failed; fix the build or give GATEKEEPER=/path"
	GATEKEEPER=bin/gatekeeper
fi

. bench/lib.sh
bench_setup 35306
if [ -n "${OWN_BACKENDS:-}" ]; then
	for r in "$GK_REPLICA1" "$GK_REPLICA2"; do
		mariadb --no-defaults -h"${r%:*}" -P"${r##*:}" -u"$GK_USER" -p"$GK_PASSWORD" -e 'STOP ALL SLAVES'
	done
fi
sql() { mariadb --no-defaults -h"${GK_PRIMARY%:*}" -P"$PRIMARY_PORT" -u"$GK_USER" -p"$GK_PASSWORD" -N -e "$1"; }
DB_PID=$(primary_pid) ||
	fail "the primary's process is not on this machine; run the script beside it"
PIN=()
if [ -n "$DB_CPUS" ]; then
	pin_primary "$DB_CPUS" || exit 1
	PIN=(taskset -c "$CLIENT_CPUS")
fi

# The cgroup: quota QUOTA processors for the primary; left at exit. The busy loops of
# --loss hog run in a sibling cgroup, HOG_CG.
mkdir "$CG"
HOG_CG=$CG-hog HOGS=()
cgroup_undo() {
	hog off
	rmdir "$HOG_CG" 2>/dev/null || true
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		echo "$DB_PID" >/sys/fs/cgroup/cgroup.procs 2>/dev/null || true
	else
		echo "$DB_PID" >/sys/fs/cgroup/cpu/cgroup.procs 2>/dev/null || true
	fi
	rmdir "$CG" 2>/dev/null || true
	bench_cleanup
}
trap cgroup_undo EXIT
quota() {
	local us
	us=$(awk -v q="$1" 'BEGIN {printf "%d", q * 100000}')
	if [ -f "$CG/cpu.max" ]; then
		echo "$us 100000" >"$CG/cpu.max"
	else
		echo 100000 >"$CG/cpu.cfs_period_us"
		echo "$us" >"$CG/cpu.cfs_quota_us"
	fi
}
HALF=$(awk -v f="$FULL" 'BEGIN {print f / 2}')
quota "$FULL"
echo "$DB_PID" >"$CG/cgroup.procs"

# cpu_list LIST prints the processors of a taskset list (0-2,5: 0 1 2 5).
cpu_list() {
	local part
	for part in ${1//,/ }; do
		if [[ $part =~ ^([0-9]+)-([0-9]+)$ ]]; then seq "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"; else echo "$part"; fi
	done
}

# hog on|off starts or stops a busy loop on each of the primary's processors.
hog() {
	local cpu pid
	if [ "$1" = off ]; then
		for pid in "${HOGS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
		HOGS=()
		# return 0, not return: in the EXIT trap a bare return gives the status of the
		# command that failed before it, and set -e then ended the trap before the
		# backends were stopped.
		return 0
	fi
	[ -d "$HOG_CG" ] || mkdir "$HOG_CG"
	for cpu in $(cpu_list "$DB_CPUS"); do
		taskset -c "$cpu" bash -c 'while :; do :; done' &
		HOGS+=("$!")
		echo "$!" >"$HOG_CG/cgroup.procs"
	done
}

# db_state full|half gives the primary all its processors or half of them.
db_state() {
	if [ "$LOSS" = hog ]; then
		hog off
		[ "$1" = full ] || hog on
	elif [ "$1" = full ]; then
		quota "$FULL"
	else
		quota "$HALF"
	fi
}

go build -o "$WORK/bookstore" ./bench/cmd/bookstore
go build -o "$WORK/cpuspeed" ./bench/cmd/cpuspeed
SPEED_PIN=()
[ -z "$DB_CPUS" ] || SPEED_PIN=(taskset -c "$(cpu_list "$DB_CPUS" | head -n 1)")
"${SPEED_PIN[@]}" "$WORK/cpuspeed" >"$WORK/speed.txt" &
PIDS+=("$!")
DB=bookstore
# load_bookstore loads the bookstore afresh: the runs add orders, and Best Sellers ranks the
# items of the latest ones, so without it what a run costs would depend on the runs before it.
load_bookstore() {
	"$WORK/bookstore" load --dsn "$GK_USER:$GK_PASSWORD@tcp($GK_PRIMARY)/" --database "$DB" >&2
}

# start_proxy CAPACITY starts gatekeeper with admission on at CAPACITY (auto or a duration);
# sets PROXY_PID, PROXY_PORT and ADMIN_PORT.
start_proxy() {
	PROXY_PORT=$(free_port) ADMIN_PORT=$(free_port)
	cat >"$WORK/gatekeeper.yaml" <<-EOF
		listen: 127.0.0.1:$PROXY_PORT
		admin:
		  listen: 127.0.0.1:$ADMIN_PORT
		backends:
		  primary: $GK_PRIMARY
		classify:
		  type_key: tag
		estimator:
		  backend_cpus: 0
		log:
		  level: info
		admission:
		  enabled: true
		  capacity: $1
		  capacity_interval: $INTERVAL
		  capacity_law: $LAW
		  discipline: sjf
		  queue_timeout: 30s
		  max_queue: 100000
	EOF
	"${PIN[@]}" "$GATEKEEPER" serve --config "$WORK/gatekeeper.yaml" 2>"$WORK/gatekeeper-$1.log" &
	PROXY_PID=$!
	PIDS+=("$PROXY_PID")
	wait_login "$1" "$PROXY_PID" "$PROXY_PORT" "$WORK/gatekeeper-$1.log"
}

# db_cpu prints the processor seconds the primary has used so far.
db_cpu() {
	cpu_ticks "$DB_PID" | awk -v tick="$CLK_TCK" '{printf "%.2f", ($1 + $2) / tick}'
}

# sample prints the time, the capacity in seconds, the units completed so far, the units
# running and waiting, the adaptive capacity's last decision and stretch, the primary's
# processor seconds so far, the units refused so far (queue timeout, queue full...), the
# adaptive capacity's solo checks so far, the time alone its stretch divides by, its size
# floor and its bound on units running, and the speed of the primary's processor over the
# last second (cpuspeed's last five readings).
sample() {
	local speed
	speed=$(tail -n 5 "$WORK/speed.txt" | awk '{s += $2; n++} END {printf "%.1f", n ? s / n : 0}')
	curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | awk -v t="$(date +%s.%N)" -v db="$(db_cpu)" -v speed="$speed" '
		/^gatekeeper_admission_capacity_seconds / {c = $2}
		/^gatekeeper_units_total\{/ {u += $2}
		/^gatekeeper_admission_running / {r = $2}
		/^gatekeeper_admission_queue_length / {q = $2}
		/^gatekeeper_admission_capacity_last_decision\{/ && $2 == 1 {split($1, a, "\""); d = a[2]}
		/^gatekeeper_admission_capacity_stretch_ratio / {s = $2}
		/^gatekeeper_admission_refused_total\{/ {x += $2}
		/^gatekeeper_admission_capacity_solo_checks_total / {k = $2}
		/^gatekeeper_admission_capacity_alone_seconds / {l = $2}
		/^gatekeeper_admission_capacity_size_floor_seconds / {f = $2}
		/^gatekeeper_admission_capacity_max_running / {m = $2}
		END {printf "%.3f,%s,%d,%d,%d,%s,%.3f,%s,%d,%d,%.6f,%.6f,%d,%s\n", t, c, u, r, q, d, s, db, x, k, l, f, m, speed}'
}

# load SECONDS runs the bookstore's clients through the proxy; sets LOAD_PID.
load() {
	"${PIN[@]}" "$WORK/bookstore" run --dsn "$GK_USER:$GK_PASSWORD@tcp(127.0.0.1:$PROXY_PORT)/$DB" --mix shopping \
		--clients "$CLIENTS" --duration "${1}s" --warmup 0s --timeout 60s --seconds "$WORK/seconds.csv" >"$WORK/load.out" 2>&1 &
	LOAD_PID=$!
	PIDS+=("$LOAD_PID")
}

mkdir -p "$OUT"
TRACE=$OUT/trace.csv CLASSES=$OUT/classes.csv
TRACE_HEAD=second,state,capacity_s,units,running,queued,decision,stretch,db_cpu_s,refused,checks,alone_s,size_floor_s,max_running,cpu_speed,policy,round
if [ "$FIRST" -eq 1 ]; then
	echo "$TRACE_HEAD" >"$TRACE"
	echo "second,class,completed,mean_ms,policy,round" >"$CLASSES"
elif [ "$(head -1 "$TRACE" 2>/dev/null)" != "$TRACE_HEAD" ] || [ ! -s "$CLASSES" ]; then
	fail "--first-round $FIRST continues a run, but $OUT has no trace.csv and classes.csv of this script to add to"
fi
LAST=$((FIRST + ROUNDS - 1))
read -r -a CAPS <<<"${CAPACITIES//,/ }"

# schedule POLICY ROUND: one run of the schedule, warm-up, full, half, full again, on a
# fresh proxy with capacity POLICY (auto or a static one), sampled every second.
schedule() {
	local policy=$1 round=$2 s state t0 c u rest
	echo "bench/stepchange.sh: $policy (round $round of $FIRST-$LAST), ${PHASE} warm-up then full, half, full" >&2
	db_state full
	load_bookstore
	start_proxy "$policy"
	load $((4 * PHASE_S + 5))
	t0=$(date +%s.%N)
	state=warmup
	for s in $(seq 0 $((4 * PHASE_S - 1))); do
		case $((s / PHASE_S)) in
		1) [ "$state" = full ] || { state=full; db_state full; } ;;
		2) [ "$state" = half ] || { state=half; db_state half; } ;;
		3) [ "$state" = again ] || { state=again; db_state full; } ;;
		esac
		IFS=, read -r _ c u rest <<<"$(sample)"
		echo "$s,$state,$c,$u,$rest,$policy,$round" >>"$TRACE"
		# Sleep to the next whole second since the start.
		sleep "$(awk -v t0="$t0" -v s="$s" -v now="$(date +%s.%N)" 'BEGIN {d = t0 + s + 1 - now; print (d > 0 ? d : 0)}')"
	done
	stop_pid "$LOAD_PID"
	stop_pid "$PROXY_PID"
	db_state full
	# The bookstore's completions by class, on the trace's seconds.
	[ -s "$WORK/seconds.csv" ] || fail "the bookstore wrote no seconds; its output: $(tail -5 "$WORK/load.out")"
	awk -F, -v t0="$t0" -v n=$((4 * PHASE_S)) -v tail=",$policy,$round" 'NR > 1 {
		s = int($1 - t0); if (s >= 0 && s < n) print s "," $2 "," $3 "," $4 tail }' "$WORK/seconds.csv" >>"$CLASSES"
	rm -f "$WORK/seconds.csv"
}

for round in $(seq "$FIRST" "$LAST"); do
	order=(auto "${CAPS[@]}")
	if [ $((round % 2)) -eq 0 ]; then
		order=()
		for ((i = ${#CAPS[@]} - 1; i >= 0; i--)); do order+=("${CAPS[i]}"); done
		order+=(auto)
	fi
	for policy in "${order[@]}"; do schedule "$policy" "$round"; done
done

MODEL=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
{
	echo "# Step change: the database loses half its processor, then gets it back"
	echo
	if [ "$LOSS" = hog ]; then
		echo "The primary runs in a cgroup with a quota of $FULL processor(s); at half, a busy loop on each of its processors"
		echo "($DB_CPUS), in a cgroup of the same weight, takes half of them."
	else
		echo "The primary runs in a cgroup with a quota of $FULL processor(s) (full) or $HALF (half)."
	fi
	[ -z "$DB_CPUS" ] || echo "It runs on processors $DB_CPUS, the proxy and the clients on $CLIENT_CPUS."
	echo "The bookstore's shopping mix runs through gatekeeper (sjf, type key tag, $CLIENTS closed-loop clients), on the"
	echo "bookstore loaded afresh, a fresh proxy and fresh clients each run, through one schedule: ${PHASE} of warm-up at full, then ${PHASE} at full,"
	echo "${PHASE} at half and ${PHASE} at full again. A round runs it with \`admission.capacity: auto\` (capacity_law $LAW, capacity_interval"
	echo "$INTERVAL, starting cold) and with each static capacity ($CAPACITIES), in reverse order every other round."
	echo "Throughput is units completed a second by the proxy (\`gatekeeper_units_total\`), over each phase's last"
	echo "half; the capacity has settled from the second after which it stayed within a factor 1.5 (the controller's"
	echo "step once settled, so one move reads as unsettled) and 2 of its median over the phase's last half."
	echo
	python3 bench/stepchange_report.py "$TRACE" "$PHASE_S" "$CLASSES"
	echo
	echo "Every second of every run is in [trace.csv](trace.csv) (\`policy\` is auto or the static capacity), and the"
	echo "bookstore's completed interactions of each class in each second, with their mean response time, in"
	echo "[classes.csv](classes.csv)."
	echo
	echo "Command: \`$ARGS\`"
	[ "$FIRST" -eq 1 ] || echo "(rounds $FIRST-$LAST; the rounds before them came from an earlier run into the same directory)"
	echo
	echo "Machine: $(nproc) processors ($MODEL), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr);"
	echo "date $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git describe --always --dirty 2>/dev/null || echo unknown);"
	echo "gatekeeper $("$GATEKEEPER" version | awk '{print $2}'); database $(sql 'SELECT VERSION()'); $(go version | awk '{print $3}')."
	echo
	echo "![capacity](capacity.png)"
	echo "![throughput](throughput.png)"
} >"$OUT/README.md"
# The charts of the trace: the adaptive capacity of each round, and each policy's throughput.
go run ./bench/cmd/stepplot -trace "$OUT/trace.csv" -phase "$PHASE_S" ||
	echo "bench/stepchange.sh: no charts drawn (bench/cmd/stepplot failed); the README and the trace are written" >&2
echo "bench/stepchange.sh: wrote $OUT/README.md" >&2
cat "$OUT/README.md"
