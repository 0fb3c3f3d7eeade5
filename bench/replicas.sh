#!/usr/bin/env bash
# Reads with 0, 1 and 2 replicas: sysbench's read-only workloads (bench/overhead.sh) and the
# bookstore's browsing mix (bench/bookstore.sh), directly against the primary and through
# gatekeeper in pooled mode routing reads to no replica, one and two, from a devbench bundle
# whose servers the scripts start. With 12 or more processors every database server, the
# proxy and the load generator run on cores of their own, so that a replica adds capacity;
# on fewer they share every core and the figures show the machine, not the scaling.
#
#   bench/replicas.sh --bundle DIR [--threads LIST] [--clients N] [--rounds N] [--time S]
#       [--warmup DUR] [--duration DUR] [--out DIR]
#
# Defaults: sysbench oltp_read_only (autocommit reads, --skip-trx) and oltp_point_select at 64
# threads, 2 rounds of 8 s (--time); the browsing mix at 200 closed-loop clients, 20 s of warm-up
# (--warmup) and 30 s measured (--duration), once per mode; about 10 minutes on 16 cores.
# Writes DIR/README.md (default bench/results/replicas) with the QPS and interactions per
# second of each replica count against pooled mode's, and each part's own report in
# DIR/sysbench and DIR/bookstore.
# GATEKEEPER, SCENARIO and BOOKSTORE name binaries built beforehand, for a machine without Go
# (make build; go build -o bin/scenario ./bench/cmd/scenario; likewise bench/cmd/bookstore);
# the bundle's own gatekeeper is taken when GATEKEEPER is not set.
# The routed targets send reads to the replicas alone, as routing.primary_reads' default does;
# GATEKEEPER_ROUTING_PRIMARY_READS=true lets the primary take reads beside them.
set -euo pipefail
cd "$(dirname "$0")/.."

BUNDLE='' THREADS=64 CLIENTS=200 ROUNDS=2 TIME=8 WARMUP=20s DURATION=30s OUT=bench/results/replicas
ARGS="${GATEKEEPER_ROUTING_PRIMARY_READS:+GATEKEEPER_ROUTING_PRIMARY_READS=$GATEKEEPER_ROUTING_PRIMARY_READS }bench/replicas.sh$([ $# -eq 0 ] || printf ' %q' "$@")"
usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit "$1"
}
fail() { echo "bench/replicas.sh: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage 0 ;;
	esac
	[ $# -ge 2 ] || usage 2 >&2
	case $1 in
	--bundle) BUNDLE=$2 ;;
	--threads) THREADS=$2 ;;
	--clients) CLIENTS=$2 ;;
	--rounds) ROUNDS=$2 ;;
	--time) TIME=$2 ;;
	--warmup) WARMUP=$2 ;;
	--duration) DURATION=$2 ;;
	--out) OUT=$2 ;;
	*) usage 2 >&2 ;;
	esac
	shift 2
done
[ -n "$BUNDLE" ] || fail "--bundle DIR is required: a devbench bundle unpacked there (see bench/overhead.sh)"
[ -x "$BUNDLE/bin/mariadbd" ] || fail "--bundle $BUNDLE: no bin/mariadbd there; unpack bundle.tgz into it"
[[ $CLIENTS =~ ^[1-9][0-9]*$ ]] || fail "--clients takes a positive whole number, not '$CLIENTS'"
GATEKEEPER=${GATEKEEPER:-$BUNDLE/bin/gatekeeper}
export GATEKEEPER
unset GK_PRIMARY GK_REPLICA1 GK_REPLICA2 GK_REPLICAS

# The same split as bench/overhead.sh's with replicas: a fifth of the processors for each
# database server, and for the bookstore the rest for the proxy and the load generator.
NPROC=$(nproc)
PIN=()
if [ "$NPROC" -ge 12 ]; then
	db=$((NPROC / 5))
	PIN=(--db-cpus "0-$((db - 1))" --replica-cpus "$db-$((2 * db - 1)) $((2 * db))-$((3 * db - 1))"
		--client-cpus "$((3 * db))-$((NPROC - 1))")
fi

mkdir -p "$OUT"
echo "bench/replicas.sh: sysbench, 0, 1 and 2 replicas" >&2
bench/overhead.sh --bundle "$BUNDLE" --targets direct,pooled,routed1,routed \
	--workloads "oltp_read_only oltp_point_select" --threads "$THREADS" --rounds "$ROUNDS" --time "$TIME" --warmup 2 \
	--skip-trx --out "$OUT/sysbench"
echo "bench/replicas.sh: the bookstore's browsing mix, 0, 1 and 2 replicas" >&2
bench/bookstore.sh --bundle "$BUNDLE" "${PIN[@]}" --modes direct,pooled,routed-1,routed-2 --mix browsing \
	--clients "$CLIENTS" --warmup "$WARMUP" --duration "$DURATION" --open 0 --out "$OUT/bookstore" 2>&1 | tee "$OUT/bookstore.log" >&2

# The summary: each target's median over the rounds against pooled mode's.
sysbench_rows() {
	awk -F, 'NR > 1 { v[$1 " " $2 " " $4] = v[$1 " " $2 " " $4] " " $5 }
	function median(s,    n, a, i, j, x) {
		n = split(s, a, " ")
		for (i = 2; i <= n; i++) { x = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END {
		for (k in v) { split(k, f, " "); m[k] = median(v[k]); cells[f[1] " " f[2]] = 1 }
		for (c in cells) {
			base = m[c " gatekeeper-pooled"]
			printf "| sysbench %s, %s threads | %.0f | %.0f | %.0f (%.2fx) | %.0f (%.2fx) |\n", substr(c, 1, index(c, " ") - 1),
				substr(c, index(c, " ") + 1), m[c " direct"], base, m[c " gatekeeper-routed1"], m[c " gatekeeper-routed1"] / base,
				m[c " gatekeeper-routed"], m[c " gatekeeper-routed"] / base
		}
	}' "$OUT/sysbench/results.csv" | sort
}
bookstore_row() {
	awk -F, 'NR > 1 && $5 == "total" && $2 == "closed" { t[$1] = $11 }
	END {
		base = t["pooled"]
		printf "| bookstore browsing, %s clients | %.1f | %.1f | %.1f (%.2fx) | %.1f (%.2fx) |\n", clients, t["direct"], base,
			t["routed-1"], t["routed-1"] / base, t["routed-2"], t["routed-2"] / base
	}' clients="$CLIENTS" "$OUT/bookstore/results.csv"
}
{
	echo "# Reads with 0, 1 and 2 replicas"
	echo
	echo "Machine: $NPROC processors ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(uname -sr);"
	if [ ${#PIN[@]} -gt 0 ]; then
		echo "each database server on ${PIN[1]}, ${PIN[3]% *} and ${PIN[3]#* } (as overhead.sh and bookstore.sh pin them), the rest for the proxy and the load."
	else
		echo "not pinned: every server, the proxy and the load share the processors, so replicas cannot add capacity here."
	fi
	echo "Date $(date -u +%Y-%m-%d), gatekeeper $("$GATEKEEPER" version | awk '{print $2}'). Command: \`$ARGS\`"
	echo
	echo "routing.primary_reads: ${GATEKEEPER_ROUTING_PRIMARY_READS:-false}, so the primary takes reads $([ "${GATEKEEPER_ROUTING_PRIMARY_READS:-false}" = true ] && echo "beside the replicas" || echo "only with no replica")."
	echo
	echo "QPS for sysbench (median of $ROUNDS rounds), interactions a second for the bookstore (one run); the"
	echo "ratios are over pooled mode's, which sends every read to the primary. Reports:"
	echo "[sysbench](sysbench/README.md), [bookstore](bookstore/README.md)."
	echo
	echo "| workload | direct | pooled, 0 replicas | routed, 1 replica | routed, 2 replicas |"
	echo "|---|---:|---:|---:|---:|"
	sysbench_rows
	bookstore_row
	echo
	grep -h "reads the routing proxies sent to replicas" "$OUT/sysbench/README.md" | sed 's/^/sysbench: /' || true
	grep -h "reads on replicas" "$OUT/bookstore.log" | sed 's/^/bookstore: /; s/$/  /' || true
} >"$OUT/README.md"
rm -f "$OUT/bookstore.log"
echo "bench/replicas.sh: wrote $OUT/README.md" >&2
cat "$OUT/README.md"
