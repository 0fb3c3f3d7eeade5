#!/usr/bin/env bash
# The database loses half its processor mid-run, then gets it back: does the adaptive
# capacity follow, and how close does it stay to the best static capacity of each state?
#
#   bench/stepchange.sh [--clients N] [--phase D] [--capacities LIST] [--warmup D]
#                       [--duration D] [--full CPUS] [--interval D] [--runs N] [--rounds N]
#                       [--static-csv FILE] [--db-cpus LIST --client-cpus LIST] [--out DIR]
#
# The primary's server process runs in a cgroup of its own whose processor quota is --full
# processors (default 1) or half of that. The bookstore (shopping mix, --clients closed-loop
# clients, default 200) runs through gatekeeper with sjf and type key tag:
#   1. with admission.capacity auto, for 3 phases of --phase (default 60s) each after a
#      warm-up of --phase: full, half, full again; every second the proxy's capacity and the
#      units it completed are sampled (--interval: admission.capacity_interval, default 2s);
#      --runs (default 1) runs it that many times, each on a fresh proxy;
#   2. with each static capacity of --capacities (default 40ms,80ms,160ms,320ms,640ms) in
#      each state, a fresh proxy each, --warmup (default 15s) then --duration (default 30s)
#      measured, --rounds times (default 1; every other round in the reverse order, so that a
#      drift of the machine's speed does not favour one end); --static-csv adds the runs of
#      an earlier run's static.csv (--capacities '' then runs none).
# The two alternate: adaptive run 1, static round 1, adaptive run 2, static round 2, and so
# on, so that each adaptive run has static runs of its own hour beside it ("within rounds").
# --db-cpus runs the primary on the processors of a taskset list and --client-cpus the proxy
# and the clients on others (both or neither), so that the database's processors are its
# own and the quota is of them.
# Throughput is the proxy's completed units a second (gatekeeper_units_total), the same
# measure for every run. It reports each phase's throughput over its last half against the
# best static capacity of that state, and how long the capacity took to settle after each
# change: the time from which it stayed within a factor 1.5 of where it ended the phase.
# With more than one run or round it compares medians: a static capacity's median over its
# rounds, and each phase's median over the runs (one 30 s run of a static capacity on two
# shared processors can be off by a fifth).
# Writes bench/results/stepchange/ (README.md, trace.csv, static.csv).
#
# Needs root and the cgroup cpu controller (v1 /sys/fs/cgroup/cpu, or v2 with cpu enabled).
# Uses the backends of GK_PRIMARY when they run on this machine, else starts its own on
# loopback ports 35306-35308 (replication stopped) and stops them at the end; GATEKEEPER=/path
# runs that binary instead of building bin/gatekeeper. Every process it starts listens on
# 127.0.0.1 and is stopped by its PID at exit; the primary leaves the cgroup at exit.
# About --runs x 4 x --phase plus --rounds x 10 x (--warmup + --duration), and a minute to
# load: 12 minutes at the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENTS=200 PHASE=60s CAPACITIES=40ms,80ms,160ms,320ms,640ms WARMUP=15s DURATION=30s FULL=1
OUT=bench/results/stepchange STATIC_CSV= INTERVAL=2s RUNS=1 ROUNDS=1 DB_CPUS= CLIENT_CPUS=
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
	--warmup) WARMUP=$2 ;;
	--duration) DURATION=$2 ;;
	--full) FULL=$2 ;;
	--static-csv) STATIC_CSV=$2 ;;
	--interval) INTERVAL=$2 ;;
	--runs) RUNS=$2 ;;
	--rounds) ROUNDS=$2 ;;
	--db-cpus) DB_CPUS=$2 ;;
	--client-cpus) CLIENT_CPUS=$2 ;;
	--out) OUT=$2 ;;
	*) usage 2 >&2 ;;
	esac
	shift 2
done
seconds() {
	[[ $1 =~ ^([0-9]+)s$ ]] || fail "durations are whole seconds, as in 60s, not '$1'"
	echo "${BASH_REMATCH[1]}"
}
PHASE_S=$(seconds "$PHASE") WARMUP_S=$(seconds "$WARMUP") DURATION_S=$(seconds "$DURATION")
[[ $CLIENTS =~ ^[1-9][0-9]*$ ]] || fail "--clients takes a positive whole number, not '$CLIENTS'"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || fail "--runs takes a positive whole number, not '$RUNS'"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || fail "--rounds takes a positive whole number, not '$ROUNDS'"
[[ $FULL =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "--full takes a number of processors, as in 1 or 1.5, not '$FULL'"
if [ -n "$DB_CPUS$CLIENT_CPUS" ] && { [ -z "$DB_CPUS" ] || [ -z "$CLIENT_CPUS" ]; }; then
	fail "--db-cpus and --client-cpus go together, as in --db-cpus 0 --client-cpus 1"
fi
if [ -n "$STATIC_CSV" ]; then
	head -n 1 "$STATIC_CSV" 2>/dev/null | grep -qxE 'state,capacity,rate(,round)?' ||
		fail "--static-csv $STATIC_CSV is not the static.csv of an earlier run (state,capacity,rate)"
	STATIC_CSV=$(realpath "$STATIC_CSV")
fi
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
DB_PID=$(cat "$(sql 'SELECT @@pid_file')" 2>/dev/null) && [ -d "/proc/$DB_PID" ] ||
	fail "the primary's process is not on this machine; run the script beside it"
PIN=()
if [ -n "$DB_CPUS" ]; then
	pin_primary "$DB_CPUS" || exit 1
	PIN=(taskset -c "$CLIENT_CPUS")
fi

# The cgroup: quota QUOTA processors for the primary; left at exit.
mkdir "$CG"
cgroup_undo() {
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

go build -o "$WORK/bookstore" ./bench/cmd/bookstore
DB=bookstore
"$WORK/bookstore" load --dsn "$GK_USER:$GK_PASSWORD@tcp($GK_PRIMARY)/" --database "$DB" >&2

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
		  discipline: sjf
		  queue_timeout: 30s
		  max_queue: 100000
	EOF
	"${PIN[@]}" "$GATEKEEPER" serve --config "$WORK/gatekeeper.yaml" 2>"$WORK/gatekeeper-$1.log" &
	PROXY_PID=$!
	PIDS+=("$PROXY_PID")
	wait_login "$1" "$PROXY_PID" "$PROXY_PORT" "$WORK/gatekeeper-$1.log"
}

# sample prints the time, the capacity in seconds, the units completed so far, the units
# running and waiting, and the adaptive capacity's last decision and stretch.
sample() {
	curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | awk -v t="$(date +%s.%N)" '
		/^gatekeeper_admission_capacity_seconds / {c = $2}
		/^gatekeeper_units_total\{/ {u += $2}
		/^gatekeeper_admission_running / {r = $2}
		/^gatekeeper_admission_queue_length / {q = $2}
		/^gatekeeper_admission_capacity_last_decision\{/ && $2 == 1 {split($1, a, "\""); d = a[2]}
		/^gatekeeper_admission_capacity_stretch_ratio / {s = $2}
		END {printf "%.3f,%s,%d,%d,%d,%s,%.3f\n", t, c, u, r, q, d, s}'
}

# load SECONDS runs the bookstore's clients through the proxy; sets LOAD_PID.
load() {
	"${PIN[@]}" "$WORK/bookstore" run --dsn "$GK_USER:$GK_PASSWORD@tcp(127.0.0.1:$PROXY_PORT)/$DB" --mix shopping \
		--clients "$CLIENTS" --duration "${1}s" --warmup 0s --timeout 60s >"$WORK/load.out" 2>&1 &
	LOAD_PID=$!
	PIDS+=("$LOAD_PID")
}

mkdir -p "$OUT"
TRACE=$OUT/trace.csv STATIC=$OUT/static.csv

echo "second,state,capacity_s,units,running,queued,decision,stretch,run" >"$TRACE"
echo "state,capacity,rate,round" >"$STATIC"
if [ -n "$STATIC_CSV" ]; then
	tail -n +2 "$STATIC_CSV" | awk -F, -v OFS=, '{print $1, $2, $3, ""}' >>"$STATIC"
fi
read -r -a CAPS <<<"${CAPACITIES//,/ }"

# adaptive RUN: one run of the adaptive capacity through the three phases.
adaptive() {
	local run=$1 s state t0 c u rest
	echo "bench/stepchange.sh: auto (run $run of $RUNS), ${PHASE} warm-up then full, half, full" >&2
	quota "$FULL"
	start_proxy auto
	load $((4 * PHASE_S + 5))
	t0=$(date +%s.%N)
	state=warmup
	for s in $(seq 0 $((4 * PHASE_S - 1))); do
		case $((s / PHASE_S)) in
		1) [ "$state" = full ] || { state=full; quota "$FULL"; } ;;
		2) [ "$state" = half ] || { state=half; quota "$HALF"; echo "bench/stepchange.sh: half" >&2; } ;;
		3) [ "$state" = again ] || { state=again; quota "$FULL"; echo "bench/stepchange.sh: full again" >&2; } ;;
		esac
		IFS=, read -r _ c u rest <<<"$(sample)"
		echo "$s,$state,$c,$u,$rest,$run" >>"$TRACE"
		# Sleep to the next whole second since the start.
		sleep "$(awk -v t0="$t0" -v s="$s" -v now="$(date +%s.%N)" 'BEGIN {d = t0 + s + 1 - now; print (d > 0 ? d : 0)}')"
	done
	stop_pid "$LOAD_PID"
	stop_pid "$PROXY_PID"
	quota "$FULL"
}

# static ROUND: each static capacity in each state once.
static() {
	local round=$1 order cap st q i t1 t2 u1 u2
	order=("${CAPS[@]}")
	if [ $((round % 2)) -eq 0 ]; then
		order=()
		for ((i = ${#CAPS[@]} - 1; i >= 0; i--)); do order+=("${CAPS[i]}"); done
	fi
	for cap in "${order[@]}"; do
		for st in full half; do
			q=$FULL
			[ "$st" = half ] && q=$HALF
			quota "$q"
			echo "bench/stepchange.sh: static $cap, $st (round $round of $ROUNDS)" >&2
			start_proxy "$cap"
			load $((WARMUP_S + DURATION_S + 5))
			sleep "$WARMUP_S"
			IFS=, read -r t1 _ u1 _ <<<"$(sample)"
			sleep "$DURATION_S"
			IFS=, read -r t2 _ u2 _ <<<"$(sample)"
			stop_pid "$LOAD_PID"
			stop_pid "$PROXY_PID"
			awk -v st="$st" -v cap="$cap" -v t1="$t1" -v t2="$t2" -v u1="$u1" -v u2="$u2" \
				-v round="$round" 'BEGIN {printf "%s,%s,%.1f,%d\n", st, cap, (u2 - u1) / (t2 - t1), round}' >>"$STATIC"
		done
	done
	quota "$FULL"
}

for i in $(seq 1 $((RUNS > ROUNDS ? RUNS : ROUNDS))); do
	[ "$i" -gt "$RUNS" ] || adaptive "$i"
	[ "$i" -gt "$ROUNDS" ] || [ ${#CAPS[@]} -eq 0 ] || static "$i"
done

MODEL=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
{
	echo "# Step change: the database loses half its processor, then gets it back"
	echo
	echo "The primary runs in a cgroup with a quota of $FULL processor(s) (full) or $HALF (half)."
	[ -z "$DB_CPUS" ] || echo "It runs on processors $DB_CPUS, the proxy and the clients on $CLIENT_CPUS."
	echo "The bookstore's shopping mix runs through gatekeeper (sjf, type key tag, $CLIENTS closed-loop clients)."
	echo "With \`admission.capacity: auto\` (capacity_interval $INTERVAL) the proxy starts cold and runs ${PHASE} of warm-up at full,"
	echo "then ${PHASE} at full, ${PHASE} at half and ${PHASE} at full again, in one run ($RUNS in all, each on a fresh proxy); each static"
	if [ -n "$STATIC_CSV" ]; then
		echo "capacity runs in each state on a fresh proxy, ${WARMUP} of warm-up then ${DURATION} measured, $ROUNDS time(s)"
		echo "(some in an earlier run of the script, whose static.csv this one took: $(basename "$STATIC_CSV"))."
	else
		echo "capacity runs in each state on a fresh proxy, ${WARMUP} of warm-up then ${DURATION} measured, $ROUNDS time(s)."
	fi
	echo "Throughput is units completed a second by the proxy (\`gatekeeper_units_total\`). A phase's"
	echo "throughput is taken over its last half; the capacity has settled from the second after"
	echo "which it stayed within a factor 1.5 of its median over the phase's last half."
	echo
	python3 - "$STATIC" "$TRACE" "$PHASE_S" <<-'EOF'
		import csv, statistics, sys
		static, trace, phase = sys.argv[1], sys.argv[2], int(sys.argv[3])
		cells, byround = {}, {}
		for r in csv.DictReader(open(static)):
		    cells.setdefault((r["state"], r["capacity"]), []).append(float(r["rate"]))
		    if r.get("round"):
		        byround[(r["state"], r["capacity"], r["round"])] = float(r["rate"])
		best, runs = {}, {"full": [], "half": []}
		for (state, c), rates in cells.items():
		    rate = statistics.median(rates)
		    spread = f" ({min(rates):.0f}-{max(rates):.0f})" if len(rates) > 1 else ""
		    runs[state].append(f"{c} {rate:.0f}/s{spread}")
		    if rate > best.get(state, ("", 0))[1]:
		        best[state] = (c, rate)
		byrun = {}
		for r in csv.DictReader(open(trace)):
		    byrun.setdefault(r.get("run") or "1", []).append(r)
		if not best:
		    sys.exit("no static runs to compare with: give --capacities or --static-csv")
		phases = {}  # name: [(rate, capacity median, settled, run)] by run
		for run, rows in byrun.items():
		    cap = [float(r["capacity_s"]) for r in rows]
		    units = [int(r["units"]) for r in rows]
		    for p, name in enumerate(["full", "half", "full again"], 1):
		        a, b = p * phase, (p + 1) * phase - 1
		        h = a + phase // 2
		        med = statistics.median(cap[h:b + 1])
		        settled = a
		        for s in range(b, a - 1, -1):
		            if cap[s] > 1.5 * med or cap[s] < med / 1.5:
		                settled = s + 1
		                break
		        phases.setdefault(name, []).append(((units[b] - units[h]) / (b - h), med, settled - a, run))
		# Within rounds: each adaptive run against the best static capacity's run of the same
		# round (static round N ran right after adaptive run N).
		def state(name):
		    return "half" if name == "half" else "full"
		def within(name, g):
		    st = state(name)
		    r = byround.get((st, best[st][0], g[3]))
		    return f"{g[0] / r:.2f}" if r else "—"
		many = len(byrun) > 1
		print("| phase | state | auto units/s (last half) | auto capacity (median, last half) | settled after | best static | its units/s | auto / best | within rounds |")
		print("|---|---|---:|---:|---:|---|---:|---:|---|")
		for p, name in enumerate(["full", "half", "full again"], 1):
		    got = phases[name]
		    rate = statistics.median(g[0] for g in got)
		    bc, br = best[state(name)]
		    each = lambda f: ", ".join(f(g) for g in got)
		    if many:
		        rates = f"{rate:.1f} ({each(lambda g: f'{g[0]:.0f}')})"
		        caps = each(lambda g: f"{g[1] * 1000:.0f}") + " ms"
		        settled = each(lambda g: f"{g[2]}") + " s"
		        ratio = f"{rate / br:.2f} ({each(lambda g: f'{g[0] / br:.2f}')})"
		    else:
		        rates, caps, settled = f"{rate:.1f}", f"{got[0][1] * 1000:.0f} ms", f"{got[0][2]} s"
		        ratio = f"{rate / br:.2f}"
		    print(f"| {p} | {name} | {rates} | {caps} | {settled} | {bc} | {br:.1f} | {ratio} | {each(lambda g: within(name, g))} |")
		print()
		if many:
		    print(f"With {len(byrun)} runs of the adaptive capacity, a phase's units/s and its ratio are the median over the runs, each run's in brackets.")
		print("Within rounds divides each adaptive run's units/s by the best static capacity's in the static round that ran after it.")
		print()
		rounds = max(len(r) for r in cells.values())
		what = f"median of {rounds} rounds (lowest-highest)" if rounds > 1 else "one run each"
		print(f"Static capacities, units/s, {what}: full: " + ", ".join(runs["full"]) + "; half: " + ", ".join(runs["half"]) + ".")
	EOF
	echo
	echo "The capacity and throughput of every second are in [trace.csv](trace.csv), the static runs in"
	echo "[static.csv](static.csv)."
	echo
	echo "Command: \`$ARGS\`"
	echo
	echo "Machine: $(nproc) processors ($MODEL), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr);"
	echo "date $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git describe --always --dirty 2>/dev/null || echo unknown);"
	echo "gatekeeper $("$GATEKEEPER" version | awk '{print $2}'); database $(sql 'SELECT VERSION()'); $(go version | awk '{print $3}')."
} >"$OUT/README.md"
echo "bench/stepchange.sh: wrote $OUT/README.md" >&2
cat "$OUT/README.md"
