#!/usr/bin/env bash
# The bookstore scenario: the TPC-W-like workload against MariaDB directly and through
# gatekeeper in passthrough and in each admission mode, closed loop over a sweep of client
# counts and open loop at 0.9 of the peak; writes CSV, a markdown report and PNG plots.
#
#   bench/bookstore.sh [--quick] [--capacity D] [--db-cpus L --client-cpus L] [--replica-cpus "L L"]
#                      [--bundle DIR] [any flag of bench/cmd/scenario]
#
# Without --capacity, gatekeeper calibrate first finds each admission mode's capacity with
# the same workload, under the mode's own discipline and aging (--quick takes 180ms for all,
# a smoke test's capacity). --quick is
# the short sweep of make bench-quick (under 5 minutes), written to
# bench/results/bookstore-quick. Uses the backends of GK_PRIMARY when set, else starts its
# own (replication stopped, so that the replicas do not replay the writes on the same
# cores, unless a routed-N mode reads from them) and stops them at the end. The modes
# pooled and routed-1, routed-2 (--mix browsing) measure reads with 0, 1 and 2 replicas. --db-cpus runs the primary on the processors of a taskset
# list and --client-cpus the load generator and the proxies on others, so that they do not
# take processor time from the database (the primary must run on this machine).
#
# --bundle DIR runs the database servers of a devbench bundle unpacked at DIR (see
# bench/overhead.sh), for a machine that has nothing else: the primary, and two replicas
# replicating it when a routed-N mode is asked for (--replica-cpus pins them). Without Go
# there, give the binaries built beforehand: GATEKEEPER, SCENARIO (bench/cmd/scenario) and
# BOOKSTORE (bench/cmd/bookstore).
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=no CAPACITY= OUT= DB_CPUS= CLIENT_CPUS= REPLICA_CPUS= BUNDLE=
ARGS=()
ALL="$*"
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		echo "Flags of bench/cmd/scenario: go run ./bench/cmd/scenario --help"
		exit 0 ;;
	--quick) QUICK=yes; shift ;;
	--capacity) CAPACITY=$2; shift 2 ;;
	--capacity=*) CAPACITY=${1#*=}; shift ;;
	--db-cpus) DB_CPUS=$2; shift 2 ;;
	--client-cpus) CLIENT_CPUS=$2; shift 2 ;;
	--replica-cpus) REPLICA_CPUS=$2; shift 2 ;;
	--bundle) BUNDLE=$2; shift 2 ;;
	--out) OUT=$2; ARGS+=("$1" "$2"); shift 2 ;;
	*) ARGS+=("$1"); shift ;;
	esac
done

. bench/lib.sh
LIBS=()
if [ -n "$BUNDLE" ]; then
	[ -x "$BUNDLE/bin/mariadbd" ] || { echo "bench/bookstore.sh: --bundle $BUNDLE: no bin/mariadbd there; unpack bundle.tgz into it" >&2; exit 2; }
	MARIADBD=$BUNDLE/bin/mariadbd MARIADB=$BUNDLE/bin/mariadb
	LIBS=(env "LD_LIBRARY_PATH=$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
	GK_USER=app GK_PASSWORD=app GK_PRIMARY=127.0.0.1:$(free_port)
	export GK_USER GK_PASSWORD GK_PRIMARY
fi
bench_setup 43306
if [ -n "$BUNDLE" ]; then
	replicas=0
	[[ " $ALL " == *routed-* ]] && replicas=2
	read -r -a replica_cpus <<<"$REPLICA_CPUS"
	bundle_backends "$replicas" "$DB_CPUS" "${replica_cpus[@]}"
fi
# The routed-N modes read from the replicas, which then must replicate.
if [ -n "${OWN_BACKENDS:-}" ] && [[ " $ALL " != *routed-* ]]; then
	for r in "$GK_REPLICA1" "$GK_REPLICA2"; do
		mariadb --no-defaults -h"${r%:*}" -P"${r##*:}" -u"$GK_USER" -p"$GK_PASSWORD" -e 'STOP ALL SLAVES'
	done
fi

if [ -n "$DB_CPUS$CLIENT_CPUS" ] && { [ -z "$DB_CPUS" ] || [ -z "$CLIENT_CPUS" ]; }; then
	echo "bench/bookstore.sh: give --db-cpus and --client-cpus together, as in --db-cpus 0 --client-cpus 1" >&2
	exit 2
fi
CPUS=$(nproc --all)
PIN=()
if [ -n "$DB_CPUS" ]; then
	[ -n "$BUNDLE" ] || pin_primary "$DB_CPUS" # the bundle's primary started on them
	CPUS=$(count_cpus "$DB_CPUS")
	PIN=(taskset -c "$CLIENT_CPUS")
fi

if [ -z "${GATEKEEPER:-}" ]; then
	make -s build
	GATEKEEPER=bin/gatekeeper
fi
[ -n "${SCENARIO:-}" ] || { SCENARIO=$WORK/scenario; go build -o "$SCENARIO" ./bench/cmd/scenario; }
[ -n "${BOOKSTORE:-}" ] || { BOOKSTORE=$WORK/bookstore; go build -o "$BOOKSTORE" ./bench/cmd/bookstore; }

QUICK_ARGS=()
if [ "$QUICK" = yes ]; then
	QUICK_ARGS=(--modes direct,sjf@auto,sjf --clients 50,200 --warmup 5s --duration 15s)
	[ -z "$OUT" ] && QUICK_ARGS+=(--out bench/results/bookstore-quick)
	OUT=${OUT:-bench/results/bookstore-quick}
	# Steps short enough for a quick run measure noise, not the curve (3 s steps chose 10
	# and 14 ms where 10 s steps find the plateau from 89 ms): take the capacity of the full
	# sweep (bench/results/bookstore-capacity-choice.md) unless one is given.
	CAPACITY=${CAPACITY:-180ms}
fi
OUT=${OUT:-bench/results/bookstore}
mkdir -p "$OUT"
DB=bookstore
"$BOOKSTORE" load --dsn "$GK_USER:$GK_PASSWORD@tcp($GK_PRIMARY)/" --database "$DB" >&2
rm -f "$OUT/calibrate.txt" "$OUT"/calibrate-*.txt
CAPACITY_ARGS=()
[ -n "$CAPACITY" ] && CAPACITY_ARGS=(--capacity "$CAPACITY")
# Run under the taskset of --client-cpus, as are the calibrations the scenario starts.
"${PIN[@]}" "$SCENARIO" --gatekeeper "$GATEKEEPER" --database "$DB" --load=false "${CAPACITY_ARGS[@]}" \
	--command "bench/bookstore.sh $ALL" "${QUICK_ARGS[@]}" "${ARGS[@]}"
