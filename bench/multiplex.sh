#!/usr/bin/env bash
# Many application connections over a few database connections: bench/cmd/multiplex's
# clients, each holding one connection for the whole run and thinking between short
# transactions, through gatekeeper in pooled mode and in passthrough, on the same backends in
# the same run; a markdown table of throughput, latency, the primary's Threads_connected and
# the proxy's CPU time and memory.
#
#   bench/multiplex.sh [--clients N] [--think D] [--duration D] [--warmup D] [--ramp D]
#                      [--max-open N] [--rounds N] [--out DIR]
#
# Defaults: 2000 clients, 1s mean think time, 60s measured after 10s of warm-up (the clients
# connect over the first 5s), pools.max_open 64, one round, bench/results/multiplex. Rounds
# alternate the order of the modes (pooled, passthrough, then passthrough, pooled, ...); with
# more than one the table shows every round and the medians. Writes DIR/README.md and each
# run's JSON beside it.
#
# Uses the backends of GK_PRIMARY when set (its max_connections must be at least clients+50,
# for passthrough's connection per client), else starts its own with max_connections
# clients+200 and stops them at the end. The proxy holds a descriptor per client and one per
# backend connection: the open-file limit is raised to clients*2+500, or the script stops.
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENTS=2000 THINK=1s DURATION=60s WARMUP=10s RAMP= MAX_OPEN=64 ROUNDS=1 OUT=bench/results/multiplex
ARGS="$*"
usage() {
	echo "usage: $0 [--clients N] [--think D] [--duration D] [--warmup D] [--ramp D] [--max-open N] [--rounds N] [--out DIR]" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || usage
	case $1 in
	--clients) CLIENTS=$2 ;;
	--think) THINK=$2 ;;
	--duration) DURATION=$2 ;;
	--warmup) WARMUP=$2 ;;
	--ramp) RAMP=$2 ;;
	--max-open) MAX_OPEN=$2 ;;
	--rounds) ROUNDS=$2 ;;
	--out) OUT=$2 ;;
	*) usage ;;
	esac
	shift 2
done
for n in "$CLIENTS" "$MAX_OPEN" "$ROUNDS"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "bench/multiplex.sh: --clients, --max-open and --rounds take a positive whole number, not '$n'" >&2; exit 2; }
done
fail() { echo "bench/multiplex.sh: $*" >&2; exit 1; }
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq); it reads the runs' JSON for the table"

# The proxy holds a socket per client and, in passthrough, one per backend connection.
FILES=$((CLIENTS * 2 + 500))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$FILES" ]; then
	ulimit -Sn "$FILES" 2>/dev/null || ulimit -n "$FILES" 2>/dev/null ||
		fail "$CLIENTS clients need $FILES open files in the proxy; ulimit -n is $(ulimit -n) and its hard limit $(ulimit -Hn) stops it there: raise the hard limit (as root, or LimitNOFILE= for a service) or give fewer --clients"
fi

. bench/lib.sh
[ -z "${GK_PRIMARY:-}" ] && export GK_BACKENDS_MAX_CONNECTIONS=$((CLIENTS + 200))
bench_setup 53306
DB=${GK_DATABASE:-gktest}
sql() { mariadb --no-defaults -h"${GK_PRIMARY%:*}" -P"$PRIMARY_PORT" -u"$GK_USER" -p"$GK_PASSWORD" -N -e "$1"; }
if [ -n "${OWN_BACKENDS:-}" ]; then
	# Writes are not replayed on the replicas, which would take processor time on the same
	# machine; the proxy only talks to the primary.
	for r in "$GK_REPLICA1" "$GK_REPLICA2"; do
		mariadb --no-defaults -h"${r%:*}" -P"${r##*:}" -u"$GK_USER" -p"$GK_PASSWORD" -e 'STOP ALL SLAVES'
	done
fi
MAX_CONNECTIONS=$(sql 'SELECT @@max_connections')
if [ "$MAX_CONNECTIONS" -lt $((CLIENTS + 50)) ]; then
	if [ -n "${OWN_BACKENDS:-}" ]; then
		fail "the primary started with max_connections $MAX_CONNECTIONS, not $GK_BACKENDS_MAX_CONNECTIONS (too few open files for mariadbd? see its log); passthrough needs $((CLIENTS + 50))"
	fi
	fail "the primary at $GK_PRIMARY allows $MAX_CONNECTIONS connections; passthrough opens one per client and needs at least $((CLIENTS + 50)): SET GLOBAL max_connections = $((CLIENTS + 200)), or give fewer --clients"
fi

make -s build
go build -o "$WORK/multiplex" ./bench/cmd/multiplex
"$WORK/multiplex" --prepare --addr "$GK_PRIMARY" --user "$GK_USER" --password "$GK_PASSWORD" --db "$DB"
USERS=$WORK/users.yaml
(umask 077 && printf 'users:\n  - user: %s\n    password: %s\n' "$GK_USER" "$GK_PASSWORD" >"$USERS")

threads_connected() { sql "SHOW GLOBAL STATUS LIKE 'Threads_connected'" | awk '{print $2}'; }
IDLE_THREADS=$(threads_connected)

# start_proxy MODE LOG starts gatekeeper in MODE on a free port and waits until it takes a
# login; sets PROXY_PID and PROXY_PORT.
start_proxy() {
	local settings=(GATEKEEPER_MODE="$1" GATEKEEPER_SHUTDOWN_DRAIN_TIMEOUT=5s)
	[ "$1" = pooled ] && settings+=(GATEKEEPER_AUTH_USERS_FILE="$USERS"
		GATEKEEPER_POOLS_MAX_OPEN="$MAX_OPEN" GATEKEEPER_POOLS_MAX_IDLE="$MAX_OPEN")
	PROXY_PORT=$(free_port)
	env "${settings[@]}" bin/gatekeeper serve --primary "$GK_PRIMARY" --listen 127.0.0.1:"$PROXY_PORT" \
		--admin-listen "" 2>"$2" &
	PROXY_PID=$!
	PIDS+=("$PROXY_PID")
	wait_login "$1" "$PROXY_PID" "$PROXY_PORT" "$2"
}

# stop_proxy stops the proxy and waits until the primary is back to the connections it had
# before the first run, so that a run does not see the last one's connections closing.
stop_proxy() {
	stop_pid "$PROXY_PID"
	for _ in $(seq 1 300); do
		[ "$(threads_connected)" -le "$IDLE_THREADS" ] && return 0
		sleep 0.1
	done
	echo "bench/multiplex.sh: the primary still has $(threads_connected) connections, $IDLE_THREADS before the runs; going on" >&2
}

mkdir -p "$OUT"
rm -f "$OUT"/round-*.json
RAMP_ARGS=()
[ -n "$RAMP" ] && RAMP_ARGS=(--ramp "$RAMP")
ROWS=$WORK/rows.tsv
: >"$ROWS"
for r in $(seq 1 "$ROUNDS"); do
	modes="pooled passthrough"
	[ $((r % 2)) -eq 0 ] && modes="passthrough pooled"
	for mode in $modes; do
		echo "round $r: $mode, $CLIENTS clients, think $THINK" >&2
		start_proxy "$mode" "$WORK/gatekeeper-$r-$mode.log"
		json=$OUT/round-$r-$mode.json
		# The clients of both modes of a round draw the same think times and rows.
		if ! "$WORK/multiplex" --addr 127.0.0.1:"$PROXY_PORT" --user "$GK_USER" --password "$GK_PASSWORD" \
			--db "$DB" --clients "$CLIENTS" --think "$THINK" --duration "$DURATION" --warmup "$WARMUP" \
			"${RAMP_ARGS[@]}" --seed "$r" --monitor "$GK_USER:$GK_PASSWORD@tcp($GK_PRIMARY)/" \
			--proxy-pid "$PROXY_PID" --json "$json"; then
			tail -n 20 "$WORK/gatekeeper-$r-$mode.log" >&2
			fail "round $r, $mode: the load generator failed"
		fi
		stop_proxy
		jq -r --arg mode "$mode" --arg round "$r" '[
			$mode, $round, .clients, .think, .units_per_second,
			.latency_ms.p50, .latency_ms.p99, .latency_ms.max, .errors_total,
			(.errors | to_entries | map("\(.key): \(.value)") | join(", ")),
			.connect_failures, .threads_connected.max, .threads_connected.median,
			.threads_connected.baseline, .proxy.cpu_seconds_per_1000_units, .proxy.rss_bytes / 1048576
		] | @tsv' "$json" >>"$ROWS"
	done
done

# table prints the runs, and with more than one round each mode's medians, as markdown rows.
table() {
	awk -F'\t' -v rounds="$ROUNDS" '
	function row(f, errs) {
		printf "| %s | %s | %s | %s | %.1f | %.2f | %.2f | %.2f | %s | %g | %g | %g | %g | %.3f | %.0f |\n",
			f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], errs, f[11], f[12], f[13], f[14], f[15], f[16]
	}
	function median(list,   v, n, i, j, t) {
		n = split(list, v, " ")
		for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j-1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
		return n % 2 ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2
	}
	{
		for (i = 1; i <= NF; i++) f[i] = $i
		row(f, $9 == 0 ? "0" : $9 " (" $10 ")")
		if (!($1 in seen)) { seen[$1] = 1; order[++modes] = $1; think[$1] = $4; clients[$1] = $3 }
		for (i = 5; i <= 16; i++) vals[$1, i] = vals[$1, i] " " $i
	}
	END {
		if (rounds < 2) exit
		for (m = 1; m <= modes; m++) {
			mode = order[m]
			g[1] = "**" mode "**"; g[2] = "median"; g[3] = clients[mode]; g[4] = think[mode]
			for (i = 5; i <= 16; i++) if (i != 10) g[i] = median(vals[mode, i])
			row(g, g[9])
		}
	}' "$ROWS"
}

{
	echo "# Multiplexing: many idle client connections through gatekeeper, pooled and passthrough"
	echo
	echo "$CLIENTS clients, each holding one connection for the whole run as an application's"
	echo "connection pool would, each thinking an exponentially distributed time (mean $THINK) and"
	echo "then running one short transaction (\`BEGIN; SELECT v FROM mN WHERE id=?; UPDATE mN SET"
	echo "v=v+1 WHERE id=?; COMMIT\` on a random row of 16 tables of 10000 rows). Pooled mode lends"
	echo "each transaction one of at most $MAX_OPEN backend connections (pools.max_open and"
	echo "pools.max_idle $MAX_OPEN); passthrough gives each client a backend connection of its own."
	echo "Measured for $DURATION after $WARMUP of warm-up; the modes take turns, in reverse order every"
	echo "other round, on the same backends."
	echo
	echo "Latency is a unit's, from BEGIN sent to COMMIT answered. Threads_connected is the primary's,"
	echo "read every 500 ms during the measured period (before: just before the clients connected,"
	echo "when pooled mode still holds the connection it lent to the login that found it ready)."
	echo "Proxy CPU is the proxy process's user plus system time over the measured period per 1000"
	echo "units; RSS is its resident memory at the end of the measured period. Errors count units"
	echo "that failed, by MySQL error number; failed connects count refused connection attempts over"
	echo "the whole run, logins included."
	echo
	echo "| mode | round | clients | think | units/s | p50 ms | p99 ms | max ms | errors | failed connects | Threads_connected max | Threads_connected median | Threads_connected before | proxy CPU s / 1000 units | proxy RSS MiB |"
	echo "|---|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|"
	table
	echo
	echo "Command: \`bench/multiplex.sh${ARGS:+ $ARGS}\` ($(date -u '+%Y-%m-%d %H:%M UTC'))"
	echo
	echo "Machine: $(nproc) CPUs ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo);"
	echo "$(uname -sr); gatekeeper $(bin/gatekeeper version | awk '{print $2}'); $(mariadbd --version 2>/dev/null | awk '{print $1, $3}' || true); $(go version | awk '{print $3}')."
	echo "Database, load generator and proxy share the machine (GOMAXPROCS unset); the primary's"
	echo "max_connections $MAX_CONNECTIONS, open-file limit $(ulimit -n)."
	echo
	echo "Each run's result, as bench/cmd/multiplex writes it with --json:"
	for f in "$OUT"/round-*.json; do echo "[\`$(basename "$f")\`]($(basename "$f"))"; done | paste -sd' ' -
} >"$OUT/README.md"
echo "wrote $OUT/README.md" >&2
cat "$OUT/README.md"
