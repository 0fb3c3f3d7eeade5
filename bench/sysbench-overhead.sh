#!/usr/bin/env bash
# Overhead of the proxy: sysbench against the primary directly and through gatekeeper, in
# the same run, alternating the two sides round by round, and a markdown table of medians.
#
#   bench/sysbench-overhead.sh [--rounds N] [--time SECONDS] [--threads "1 8 64"]
#                              [--workloads "oltp_point_select oltp_read_write"]
#                              [--out FILE] [--no-socat]
#
# Uses the backends of GK_PRIMARY when set (eval "$(scripts/test-backends.sh up)"), else
# starts its own with scripts/test-backends.sh and stops them at the end. When socat is
# installed, a plain TCP relay (no protocol work at all) is measured too, as the floor any
# proxy process pays on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=3 TIME=10 THREADS="1 8 64" WORKLOADS="oltp_point_select oltp_read_write"
OUT=bench/results/sysbench-overhead.md SOCAT=auto
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
	*) echo "usage: $0 [--rounds N] [--time S] [--threads LIST] [--workloads LIST] [--out FILE] [--no-socat]" >&2; exit 2 ;;
	esac
done
command -v sysbench >/dev/null || { echo "sysbench is not installed (apt-get install sysbench)" >&2; exit 1; }
[ "$SOCAT" = auto ] && { command -v socat >/dev/null && SOCAT=yes || SOCAT=no; }

. bench/lib.sh
bench_setup 33306

make -s build
PROXY_PORT=$(free_port)
bin/gatekeeper serve --primary "$GK_PRIMARY" --listen 127.0.0.1:$PROXY_PORT --admin-listen "" \
	2>"$WORK/gatekeeper.log" &
PIDS+=($!)
if [ "$SOCAT" = yes ]; then
	SOCAT_PORT=$(free_port)
	socat TCP-LISTEN:$SOCAT_PORT,bind=127.0.0.1,fork,reuseaddr,nodelay,backlog=4096 TCP:$GK_PRIMARY,nodelay &
	PIDS+=($!)
fi
for _ in $(seq 1 50); do
	mariadb --no-defaults -h127.0.0.1 -P$PROXY_PORT -u"$GK_USER" -p"$GK_PASSWORD" -e 'SELECT 1' >/dev/null 2>&1 && break
	sleep 0.1
done

sb() { # sb WORKLOAD PORT THREADS SECONDS [prepare|run|cleanup]
	sysbench "$1" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$2" --mysql-user="$GK_USER" \
		--mysql-password="$GK_PASSWORD" --mysql-db=sbtest --tables=$TABLES --table-size=$TABLE_SIZE \
		--threads="$3" --time="$4" --percentile=95 --report-interval=0 --db-ps-mode=auto "$5"
}
echo "preparing $TABLES tables of $TABLE_SIZE rows" >&2
sb oltp_read_write "$PRIMARY_PORT" 4 0 cleanup >/dev/null 2>&1 || true
sb oltp_read_write "$PRIMARY_PORT" 4 0 prepare >/dev/null

SIDES="direct:$PRIMARY_PORT proxy:$PROXY_PORT"
[ "$SOCAT" = yes ] && SIDES="$SIDES socat:$SOCAT_PORT"
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
				if ! out=$(sb "$w" "${side#*:}" "$th" "$TIME" run 2>&1); then
					echo "$w threads=$th round=$r ${side%%:*}: sysbench failed; retrying once:" >&2
					tail -n 5 <<<"$out" >&2
					out=$(sb "$w" "${side#*:}" "$th" "$TIME" run 2>&1) || { tail -n 20 <<<"$out" >&2; exit 1; }
				fi
				qps=$(awk '/queries:/ {gsub(/\(/,"",$3); print $3}' <<<"$out")
				avg=$(awk '/avg:/ {print $2}' <<<"$out")
				p95=$(awk '/95th percentile:/ {print $3}' <<<"$out")
				errs=$(awk '/ignored errors:/ {print $3}' <<<"$out")
				printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$th" "${side%%:*}" "$r" "$qps" "$avg" "$p95" "$errs" >>"$RAW"
				echo "$w threads=$th round=$r ${side%%:*}: $qps qps, avg ${avg}ms, p95 ${p95}ms" >&2
			done
		done
	done
done
sb oltp_read_write "$PRIMARY_PORT" 4 0 cleanup >/dev/null 2>&1 || true

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
col() { awk -F'\t' -v w="$1" -v t="$2" -v s="$3" -v c="$4" '$1==w && $2==t && $3==s {print $c}' "$RAW" | median; }

mkdir -p "$(dirname "$OUT")"
{
	echo "# Proxy overhead: sysbench direct vs through gatekeeper"
	echo
	echo "Medians of $ROUNDS alternating rounds of ${TIME}s per cell; the sides take turns, in"
	echo "reverse order every other round. QPS ratio is proxy/direct; added latency is proxy minus"
	echo "direct (sysbench's own per-event latency: one query for oltp_point_select, one"
	echo "transaction of 18 statements for oltp_read_write)."
	[ "$SOCAT" = yes ] && echo "The socat column is a plain TCP relay that does no protocol work: the floor any proxy process pays on this machine." 
	echo
	if [ "$SOCAT" = yes ]; then
		echo "| workload | threads | direct QPS | proxy QPS | ratio | socat ratio | direct avg ms | proxy avg ms | added avg µs | direct p95 ms | proxy p95 ms |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	else
		echo "| workload | threads | direct QPS | proxy QPS | ratio | direct avg ms | proxy avg ms | added avg µs | direct p95 ms | proxy p95 ms |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	fi
	for w in $WORKLOADS; do
		for th in $THREADS; do
			dq=$(col "$w" "$th" direct 5) pq=$(col "$w" "$th" proxy 5)
			da=$(col "$w" "$th" direct 6) pa=$(col "$w" "$th" proxy 6)
			dp=$(col "$w" "$th" direct 7) pp=$(col "$w" "$th" proxy 7)
			ratio=$(awk -v a="$pq" -v b="$dq" 'BEGIN {printf "%.2f", a/b}')
			added=$(awk -v a="$pa" -v b="$da" 'BEGIN {printf "%.0f", (a-b)*1000}')
			if [ "$SOCAT" = yes ]; then
				sq=$(col "$w" "$th" socat 5)
				sratio=$(awk -v a="$sq" -v b="$dq" 'BEGIN {printf "%.2f", a/b}')
				printf '| %s | %s | %.0f | %.0f | %sx | %sx | %s | %s | %s | %s | %s |\n' "$w" "$th" "$dq" "$pq" "$ratio" "$sratio" "$da" "$pa" "$added" "$dp" "$pp"
			else
				printf '| %s | %s | %.0f | %.0f | %sx | %s | %s | %s | %s | %s |\n' "$w" "$th" "$dq" "$pq" "$ratio" "$da" "$pa" "$added" "$dp" "$pp"
			fi
		done
	done
	echo
	echo "Command: \`bench/sysbench-overhead.sh${ARGS:+ $ARGS}\` ($(date -u +%Y-%m-%d), gatekeeper $(bin/gatekeeper version | awk '{print $2}'))"
	echo
	echo "Machine: $(nproc) CPUs ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo);"
	echo "$(uname -sr); $(mariadbd --version 2>/dev/null | awk '{print $1, $3}' || true); $(sysbench --version); $(go version | awk '{print $3}')."
	echo "Database, sysbench and proxy share the machine; sysbench: $TABLES tables of $TABLE_SIZE rows."
	echo
	echo "<details><summary>Every round</summary>"
	echo
	echo "| workload | threads | side | round | QPS | avg ms | p95 ms | ignored errors |"
	echo "|---|---:|---|---:|---:|---:|---:|---:|"
	awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8}' "$RAW"
	echo
	echo "</details>"
} >"$OUT"
echo "wrote $OUT" >&2
cat "$OUT"
