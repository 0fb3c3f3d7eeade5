#!/usr/bin/env bash
# Overhead of the proxy: sysbench against the primary directly and through gatekeeper, in
# passthrough mode and in pooled mode, in the same run, alternating the sides round by round,
# and a markdown table of medians with each proxy's processor time per query.
#
#   bench/sysbench-overhead.sh [--rounds N] [--time SECONDS] [--threads "1 8 64"]
#                              [--workloads "oltp_point_select oltp_read_write"]
#                              [--out FILE] [--no-socat] [--no-pooled]
#
# Uses the backends of GK_PRIMARY when set (eval "$(scripts/test-backends.sh up)"), else
# starts its own with scripts/test-backends.sh and stops them at the end. The pooled side is
# a second gatekeeper in pooled mode, its pools.max_open and max_idle the largest thread
# count; --no-pooled leaves it out. When socat is installed, a plain TCP relay (no protocol
# work at all) is measured too, as the floor any proxy process pays on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=3 TIME=10 THREADS="1 8 64" WORKLOADS="oltp_point_select oltp_read_write"
OUT=bench/results/sysbench-overhead.md SOCAT=auto POOLED=yes
TABLES=4 TABLE_SIZE=50000
ARGS="$*"
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=$2; shift 2 ;;
	--time) TIME=$2; shift 2 ;;
	--threads) THREADS=$2; shift 2 ;;
	--workloads) WORKLOADS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--no-socat) SOCAT=no; shift ;;
	--no-pooled) POOLED=no; shift ;;
	*) echo "usage: $0 [--rounds N] [--time S] [--threads LIST] [--workloads LIST] [--out FILE] [--no-socat] [--no-pooled]" >&2; exit 2 ;;
	esac
done
command -v sysbench >/dev/null || { echo "sysbench is not installed (apt-get install sysbench)" >&2; exit 1; }
[ "$SOCAT" = auto ] && { command -v socat >/dev/null && SOCAT=yes || SOCAT=no; }

. bench/lib.sh
bench_setup 33306

make -s build
declare -A PID_OF=()
PASSTHROUGH_PORT=$(free_port)
GATEKEEPER_MODE=passthrough bin/gatekeeper serve --primary "$GK_PRIMARY" --listen 127.0.0.1:$PASSTHROUGH_PORT \
	--admin-listen "" 2>"$WORK/gatekeeper.log" &
PIDS+=($!)
PID_OF[passthrough]=$!
SIDES="direct:$PRIMARY_PORT passthrough:$PASSTHROUGH_PORT"
if [ "$POOLED" = yes ]; then
	MAX_OPEN=$(echo "$THREADS" | tr ' ' '\n' | sort -n | tail -n 1)
	(umask 077 && printf 'users:\n  - user: %s\n    password: %s\n' "$GK_USER" "$GK_PASSWORD" >"$WORK/users.yaml")
	POOLED_PORT=$(free_port)
	GATEKEEPER_MODE=pooled GATEKEEPER_AUTH_USERS_FILE="$WORK/users.yaml" GATEKEEPER_POOLS_MAX_OPEN=$MAX_OPEN \
		GATEKEEPER_POOLS_MAX_IDLE=$MAX_OPEN bin/gatekeeper serve --primary "$GK_PRIMARY" \
		--listen 127.0.0.1:$POOLED_PORT --admin-listen "" 2>"$WORK/gatekeeper-pooled.log" &
	PIDS+=($!)
	PID_OF[pooled]=$!
	SIDES="$SIDES pooled:$POOLED_PORT"
fi
if [ "$SOCAT" = yes ]; then
	SOCAT_PORT=$(free_port)
	socat TCP-LISTEN:$SOCAT_PORT,bind=127.0.0.1,fork,reuseaddr,nodelay,backlog=4096 TCP:$GK_PRIMARY,nodelay &
	PIDS+=($!)
	PID_OF[socat]=$!
	SIDES="$SIDES socat:$SOCAT_PORT"
fi
for side in $SIDES; do
	for _ in $(seq 1 50); do
		mariadb --no-defaults -h127.0.0.1 -P"${side#*:}" -u"$GK_USER" -p"$GK_PASSWORD" -e 'SELECT 1' >/dev/null 2>&1 && break
		sleep 0.1
	done
done

sb() { # sb WORKLOAD PORT THREADS SECONDS [prepare|run|cleanup]
	sysbench "$1" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$2" --mysql-user="$GK_USER" \
		--mysql-password="$GK_PASSWORD" --mysql-db=sbtest --tables=$TABLES --table-size=$TABLE_SIZE \
		--threads="$3" --time="$4" --percentile=95 --report-interval=0 --db-ps-mode=auto "$5"
}

# Processor time of the proxies, from /proc/PID/stat in clock ticks: user plus system, and
# that of the children the process has waited for (socat forks one per connection).
CLK_TCK=$(getconf CLK_TCK)
cpu_ticks() { awk '{sub(/^.*\) /, ""); print $12 + $13 + $14 + $15}' "/proc/$1/stat"; }
# settle_children waits, up to 2s, until process $1 has reaped its children, so that their
# time is in its account.
settle_children() {
	for _ in $(seq 1 20); do
		pgrep -P "$1" >/dev/null || return 0
		sleep 0.1
	done
}

# measure WORKLOAD SIDE THREADS runs sysbench on SIDE (name:port) and sets OUTPUT, and CPU_US
# to the processor time of the side's proxy per query in µs (- for direct); returns
# sysbench's status.
measure() {
	local name=${2%%:*} pid t0=0 t1 queries
	pid=${PID_OF[$name]:-}
	[ -n "$pid" ] && t0=$(cpu_ticks "$pid")
	OUTPUT=$(sb "$1" "${2#*:}" "$3" "$TIME" run 2>&1) || return 1
	CPU_US=-
	if [ -n "$pid" ]; then
		[ "$name" = socat ] && settle_children "$pid"
		t1=$(cpu_ticks "$pid")
		queries=$(awk '/queries:/ {print $2}' <<<"$OUTPUT")
		CPU_US=$(awk -v d=$((t1 - t0)) -v hz="$CLK_TCK" -v n="$queries" 'BEGIN {printf "%.1f", (n > 0 ? d / hz * 1e6 / n : 0)}')
	fi
}

echo "preparing $TABLES tables of $TABLE_SIZE rows" >&2
sb oltp_read_write "$PRIMARY_PORT" 4 0 cleanup >/dev/null 2>&1 || true
sb oltp_read_write "$PRIMARY_PORT" 4 0 prepare >/dev/null

RAW=$WORK/raw.tsv
: >"$RAW"
for w in $WORKLOADS; do
	for th in $THREADS; do
		for side in $SIDES; do # warm up each path; a failed warm-up is shown, not fatal
			sb "$w" "${side#*:}" "$th" 3 run >"$WORK/warmup.log" 2>&1 ||
				{ echo "$w threads=$th ${side%%:*}: warm-up failed:" >&2; tail -n 5 "$WORK/warmup.log" >&2; }
		done
		for r in $(seq 1 "$ROUNDS"); do
			order=$SIDES
			[ $((r % 2)) -eq 0 ] && order=$(echo "$SIDES" | tr ' ' '\n' | tac | tr '\n' ' ')
			for side in $order; do
				# A run that fails (a refused connection, say) is shown and tried once more,
				# so one hiccup does not throw away the rounds already measured.
				if ! measure "$w" "$side" "$th"; then
					echo "$w threads=$th round=$r ${side%%:*}: sysbench failed; retrying once:" >&2
					tail -n 5 <<<"$OUTPUT" >&2
					measure "$w" "$side" "$th" || { tail -n 20 <<<"$OUTPUT" >&2; exit 1; }
				fi
				qps=$(awk '/queries:/ {gsub(/\(/,"",$3); print $3}' <<<"$OUTPUT")
				avg=$(awk '/avg:/ {print $2}' <<<"$OUTPUT")
				p95=$(awk '/95th percentile:/ {print $3}' <<<"$OUTPUT")
				errs=$(awk '/ignored errors:/ {print $3}' <<<"$OUTPUT")
				printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$th" "${side%%:*}" "$r" "$qps" "$avg" "$p95" "$errs" "$CPU_US" >>"$RAW"
				echo "$w threads=$th round=$r ${side%%:*}: $qps qps, avg ${avg}ms, p95 ${p95}ms, proxy CPU ${CPU_US}µs/query" >&2
			done
		done
	done
done
sb oltp_read_write "$PRIMARY_PORT" 4 0 cleanup >/dev/null 2>&1 || true

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
col() { awk -F'\t' -v w="$1" -v t="$2" -v s="$3" -v c="$4" '$1==w && $2==t && $3==s {print $c}' "$RAW" | median; }
div() { awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN {printf f, (b > 0 ? a / b : 0)}'; }

# The table's columns: QPS, ratio to direct, mean and added latency, p95 of direct and of each
# gatekeeper side, the processor time per query of each proxy, and pooled against passthrough.
PROXIES=passthrough
[ "$POOLED" = yes ] && PROXIES="passthrough pooled"
RELAYS=$PROXIES
[ "$SOCAT" = yes ] && RELAYS="$PROXIES socat"
header="| workload | threads | direct QPS"
for s in $PROXIES; do header+=" | $s QPS"; done
for s in $RELAYS; do header+=" | $s ratio"; done
header+=" | direct avg ms"
for s in $PROXIES; do header+=" | $s avg ms"; done
for s in $PROXIES; do header+=" | $s added avg µs"; done
header+=" | direct p95 ms"
for s in $PROXIES; do header+=" | $s p95 ms"; done
for s in $RELAYS; do header+=" | $s CPU µs/query"; done
[ "$POOLED" = yes ] && header+=" | pooled/passthrough QPS | pooled/passthrough CPU/query"
header+=" |"
align="|---$(printf '|---:%.0s' $(seq 1 "$(grep -o ' | ' <<<"$header" | wc -l)"))|"

mkdir -p "$(dirname "$OUT")"
{
	echo "# Proxy overhead: sysbench direct vs through gatekeeper"
	echo
	echo "Medians of $ROUNDS alternating rounds of ${TIME}s per cell; the sides take turns, in"
	echo "reverse order every other round. Passthrough is gatekeeper's default mode (a backend"
	[ "$POOLED" = yes ] && echo "connection per client); pooled is gatekeeper in pooled mode (it logs clients in itself and lends"
	[ "$POOLED" = yes ] && echo "them backend connections per statement or transaction, pools.max_open and max_idle $MAX_OPEN)."
	[ "$POOLED" = no ] && echo "connection per client)."
	echo "A QPS ratio is that side's QPS over direct's; added latency is the side's minus direct's"
	echo "(sysbench's own per-event latency: one query for oltp_point_select, one transaction of 18"
	echo "statements for oltp_read_write). CPU µs/query is the proxy process's user plus system time"
	echo "over a run divided by the run's queries."
	[ "$SOCAT" = yes ] && echo "The socat columns are a plain TCP relay that does no protocol work: the floor any proxy process pays on this machine (its CPU includes the process it forks per connection)."
	echo
	echo "$header"
	echo "$align"
	for w in $WORKLOADS; do
		for th in $THREADS; do
			declare -A q=() a=() p=() c=()
			for s in direct $RELAYS; do
				q[$s]=$(col "$w" "$th" "$s" 5) a[$s]=$(col "$w" "$th" "$s" 6) p[$s]=$(col "$w" "$th" "$s" 7)
			done
			for s in $RELAYS; do c[$s]=$(col "$w" "$th" "$s" 9); done
			row="| $w | $th | $(printf '%.0f' "${q[direct]}")"
			for s in $PROXIES; do row+=" | $(printf '%.0f' "${q[$s]}")"; done
			for s in $RELAYS; do row+=" | $(div "${q[$s]}" "${q[direct]}" '%.2f')x"; done
			row+=" | ${a[direct]}"
			for s in $PROXIES; do row+=" | ${a[$s]}"; done
			for s in $PROXIES; do row+=" | $(awk -v a="${a[$s]}" -v b="${a[direct]}" 'BEGIN {printf "%.0f", (a-b)*1000}')"; done
			row+=" | ${p[direct]}"
			for s in $PROXIES; do row+=" | ${p[$s]}"; done
			for s in $RELAYS; do row+=" | $(printf '%.1f' "${c[$s]}")"; done
			if [ "$POOLED" = yes ]; then
				row+=" | $(div "${q[pooled]}" "${q[passthrough]}" '%.2f')x | $(div "${c[pooled]}" "${c[passthrough]}" '%.2f')x"
			fi
			echo "$row |"
		done
	done
	echo
	echo "Command: \`bench/sysbench-overhead.sh${ARGS:+ $ARGS}\` ($(date -u +%Y-%m-%d), gatekeeper $(bin/gatekeeper version | awk '{print $2}'))"
	echo
	echo "Machine: $(nproc) CPUs ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo);"
	echo "$(uname -sr); $(mariadbd --version 2>/dev/null | awk '{print $1, $3}' || true); $(sysbench --version); $(go version | awk '{print $3}')."
	echo "Database, sysbench and proxies share the machine; sysbench: $TABLES tables of $TABLE_SIZE rows."
	echo
	echo "<details><summary>Every round</summary>"
	echo
	echo "| workload | threads | side | round | QPS | avg ms | p95 ms | ignored errors | CPU µs/query |"
	echo "|---|---:|---|---:|---:|---:|---:|---:|---:|"
	awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}' "$RAW"
	echo
	echo "</details>"
} >"$OUT"
echo "wrote $OUT" >&2
cat "$OUT"
