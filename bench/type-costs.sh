#!/usr/bin/env bash
# Do the proxy's learned costs agree with what clients measure? For sysbench workloads whose
# events are single statements, compare the mean cost the proxy learned for the statement's
# type (GET /api/v1/types) with the average latency sysbench measured for it in the same run
# (and, for scale, against the database directly); for oltp_read_write, compare the
# transaction type learned under classify.type_key=transaction with sysbench's
# per-transaction latency. One thread, so the cost is that of the statement, not of
# queueing. Writes a markdown table.
#
#   bench/type-costs.sh [--rounds N] [--time SECONDS] [--out FILE]
#
# Uses the backends of GK_PRIMARY when set (eval "$(scripts/test-backends.sh up)"), else
# starts its own and stops them at the end. Needs sysbench, curl and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=3 TIME=10 OUT=bench/results/type-costs.md
ARGS="$*"
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=$2; shift 2 ;;
	--time) TIME=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	*) echo "usage: $0 [--rounds N] [--time S] [--out FILE]" >&2; exit 2 ;;
	esac
done
for tool in sysbench curl python3; do
	command -v $tool >/dev/null || { echo "$tool is not installed" >&2; exit 1; }
done

. bench/lib.sh
bench_setup 34306

make -s build
# One proxy types statements by digest, the other whole transactions. Both estimate a type's
# cost as the mean of the last $TIME seconds (estimator.window), which is what sysbench
# averages over a run; the default moving average weighs the last few dozen units and
# wanders around that mean.
start_proxy() { # start_proxy TYPE_KEY -> sets PORT and ADMIN
	PORT=$(free_port) ADMIN=127.0.0.1:$(free_port)
	GATEKEEPER_CLASSIFY_TYPE_KEY=$1 GATEKEEPER_ESTIMATOR_WINDOW=${TIME}s bin/gatekeeper serve --primary "$GK_PRIMARY" \
		--listen 127.0.0.1:$PORT --admin-listen "$ADMIN" 2>"$WORK/gatekeeper-$1.log" &
	PIDS+=($!)
	for _ in $(seq 1 50); do
		curl -fs "http://$ADMIN/healthz" >/dev/null && return
		sleep 0.1
	done
	echo "gatekeeper did not start:" >&2
	cat "$WORK/gatekeeper-$1.log" >&2
	exit 1
}
start_proxy digest
DIGEST_PORT=$PORT DIGEST_ADMIN=$ADMIN
start_proxy transaction
TXN_PORT=$PORT TXN_ADMIN=$ADMIN

sb() { # sb WORKLOAD PORT SECONDS COMMAND
	sysbench "$1" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$2" --mysql-user="$GK_USER" \
		--mysql-password="$GK_PASSWORD" --mysql-db=sbtest --tables=1 --table-size=50000 \
		--threads=1 --time="$3" --report-interval=0 --db-ps-mode=auto --histogram=off "$4"
}
sb oltp_read_write "$PRIMARY_PORT" 0 cleanup >/dev/null 2>&1 || true
sb oltp_read_write "$PRIMARY_PORT" 0 prepare >/dev/null

# The type that took the most units since the last reset: "count<TAB>mean ms<TAB>sample".
top_type() {
	curl -fs "http://$1/api/v1/types" | python3 -c '
import json, sys
ts = [t for t in json.load(sys.stdin)["types"] if t["type"] != "other"]
t = max(ts, key=lambda t: t["count"])
print("%d\t%.6f\t%s" % (t["count"], t["mean_ms"], " ".join(t["sample"].split())))'
}
# Average latency in ms from the sum and the count (sysbench prints avg to 0.01 ms only).
latency() { awk '/total number of events:/ {n=$5} /sum:/ {s=$2} END {printf "%.4f", s/n}' <<<"$1"; }

# workload, proxy for it, its admin address
CASES="oltp_point_select:$DIGEST_PORT:$DIGEST_ADMIN select_random_points:$DIGEST_PORT:$DIGEST_ADMIN
select_random_ranges:$DIGEST_PORT:$DIGEST_ADMIN oltp_update_index:$DIGEST_PORT:$DIGEST_ADMIN
oltp_update_non_index:$DIGEST_PORT:$DIGEST_ADMIN oltp_read_write:$TXN_PORT:$TXN_ADMIN"
RAW=$WORK/raw.tsv
: >"$RAW"
for c in $CASES; do
	IFS=: read -r w port admin adminport <<<"$c"
	admin=$admin:$adminport
	sb "$w" "$PRIMARY_PORT" 2 run >/dev/null # warm up the buffer pool
	for r in $(seq 1 "$ROUNDS"); do
		# Alternate which side goes first.
		for side in $([ $((r % 2)) -eq 1 ] && echo "proxy direct" || echo "direct proxy"); do
			if [ "$side" = direct ]; then
				direct=$(latency "$(sb "$w" "$PRIMARY_PORT" "$TIME" run)")
			else
				curl -fs -X POST "http://$admin/api/v1/types/reset" >/dev/null
				via=$(latency "$(sb "$w" "$port" "$TIME" run)")
				IFS=$'\t' read -r count mean sample <<<"$(top_type "$admin")"
			fi
		done
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$r" "$mean" "$count" "$direct" "$via" "$sample" >>"$RAW"
		echo "$w round $r: learned ${mean}ms over $count units; client direct ${direct}ms, via proxy ${via}ms" >&2
	done
done
sb oltp_read_write "$PRIMARY_PORT" 0 cleanup >/dev/null 2>&1 || true

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
col() { awk -F'\t' -v w="$1" -v c="$2" '$1==w {print $c}' "$RAW" | median; }

mkdir -p "$(dirname "$OUT")"
{
	echo "# Learned costs against client-measured latency"
	echo
	echo "For each workload, one sysbench thread runs ${TIME}s through the proxy (after a reset of"
	echo "the estimates) and ${TIME}s against the database directly, alternating which goes first,"
	echo "$ROUNDS rounds; medians. *Learned* is the mean cost of the workload's most frequent type in"
	echo "\`/api/v1/types\` after the run: the backend busy time the proxy measured, from sending the"
	echo "statement to the last packet of its response, averaged over the run (the proxies run with"
	echo "\`estimator.window: ${TIME}s\`). *Client via proxy* is sysbench's average"
	echo "latency per event in that same run, as the client measured it; *direct* is sysbench's"
	echo "average latency against the database without the proxy, for scale. Single-statement"
	echo "workloads run under \`classify.type_key: digest\`, \`oltp_read_write\` (one transaction of"
	echo "18 statements per event) under \`transaction\`. The learned cost should agree with what the"
	echo "client measured within 25%."
	echo
	echo "| workload | type (sample) | units | learned ms | client via proxy ms | learned / client | direct ms |"
	echo "|---|---|---:|---:|---:|---:|---:|"
	for c in $CASES; do
		w=${c%%:*}
		mean=$(col "$w" 3) count=$(col "$w" 4) direct=$(col "$w" 5) via=$(col "$w" 6)
		sample=$(awk -F'\t' -v w="$w" '$1==w {s=$7} END {print s}' "$RAW" | cut -c1-70)
		ratio=$(awk -v a="$mean" -v b="$via" 'BEGIN {printf "%.2f", a/b}')
		printf '| %s | `%s` | %.0f | %.3f | %s | %s | %s |\n' "$w" "$sample" "$count" "$mean" "$via" "$ratio" "$direct"
	done
	echo
	echo "Command: \`bench/type-costs.sh${ARGS:+ $ARGS}\` ($(date -u +%Y-%m-%d), gatekeeper $(bin/gatekeeper version | awk '{print $2}'))"
	echo
	echo "Machine: $(nproc) CPUs ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo);"
	echo "$(uname -sr); $(mariadbd --version 2>/dev/null | awk '{print $1, $3}' || true); $(sysbench --version)."
} >"$OUT"
echo "wrote $OUT" >&2
cat "$OUT"
