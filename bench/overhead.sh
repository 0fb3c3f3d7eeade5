#!/usr/bin/env bash
# What a query costs through each proxy, side by side in one run: sysbench against the
# database directly, through gatekeeper (passthrough, admission on, pooled), HAProxy in TCP
# mode and ProxySQL, alternating the targets round by round. For every run it reads each
# proxy's processor time from /proc/PID/stat (user and system) before and after and reports
# CPU µs per query beside QPS, average and p95 latency, and the user and system parts of
# it apart; the report gives medians, each
# proxy's latency added to direct's at 1 thread against HAProxy's, a CSV of every run and
# plots of CPU per query. With gatekeeper and gatekeeper-admission both, it also gives their
# difference round by round and the mean time admission held a statement.
#
#   bench/overhead.sh [--targets LIST] [--workloads LIST] [--threads LIST] [--rounds N]
#                     [--time SECONDS] [--warmup SECONDS] [--tables N] [--table-size N]
#                     [--db-cpus CPUS] [--proxy-cpus CPUS] [--sysbench-cpus CPUS]
#                     [--replica-cpus "CPUS CPUS"] [--proxy-threads N] [--no-pin]
#                     [--ps-mode MODE] [--skip-trx] [--admission-capacity C]
#                     [--bundle DIR] [--out DIR]
#
# Targets (comma or space separated; default all): direct, gatekeeper (passthrough),
# gatekeeper-admission (admission on with capacity auto, as make run starts it, or the
# capacity of --admission-capacity: one that no load reaches, 10s say, measures admission's
# bookkeeping alone, while under auto a database that the threads saturate has the units
# queue in the proxy instead of in the database, which costs the proxy more per query),
# gatekeeper-pooled (pools.max_open the largest thread count), gatekeeper-routed (the same,
# routing autocommit reads to the two replicas of GK_REPLICA1 and GK_REPLICA2, which
# scripts/test-backends.sh starts; --skip-trx makes oltp_read_only's reads autocommit, so
# that they can go there), gatekeeper-routed1 (the same with GK_REPLICA1 alone: with
# gatekeeper-pooled and gatekeeper-routed, reads with 0, 1 and 2 replicas), gatekeeper-baseline (pooled mode as gatekeeper-pooled, run from
# the binary GATEKEEPER_BASELINE: another build, say the commit before a change, in the same
# run; GATEKEEPER_BASELINE_MODE=passthrough runs it as the gatekeeper target instead, =routed
# as gatekeeper-routed; GATEKEEPER_BASELINE_ENV adds VAR=VALUE settings to it alone, so that
# the same binary can be its own baseline under another setting, e.g.
# GATEKEEPER_BASELINE_ENV=GATEKEEPER_ROUTING_STRONG_RULE=proxy_local); gatekeeper, gatekeeper-pooled, gatekeeper-routed and gatekeeper-baseline run with
# admission off,
# haproxy (mode tcp, Debian's package, installed with apt-get when missing and apt works),
# proxysql (ProxySQL 2.7.1 from ../shared/tools/devbench/proxysql-2.7.1.tgz, or PROXYSQL_TGZ,
# or a binary given as PROXYSQL=/path with its libraries in PROXYSQL_LIB or beside it in
# ../lib). A target that cannot start stops the script with its log; leave it out with
# --targets. Defaults: oltp_point_select, oltp_read_only and oltp_read_write at 1, 16 and 64
# threads, 3 rounds of 10s after a 3s warm-up per target and cell; writes
# bench/results/overhead/ (README.md, results.csv, cpu-WORKLOAD.png).
#
# Cores: with 8 or more processors the database, the proxies and sysbench run on separate
# cores (taskset): a quarter of them for the proxies, the rest split between the database and
# sysbench, so 16 cores give database 0-5, proxies 6-9, sysbench 10-15 (--db-cpus,
# --proxy-cpus and --sysbench-cpus take taskset lists instead); each proxy gets as
# many threads as it has cores (GOMAXPROCS, haproxy nbthread, ProxySQL threads). Below 8 they
# share every core, proxies get min(nproc, 4) threads, and CPU per query is the figure that
# holds. The README names the machine (nproc, model, kernel). With a gatekeeper-routed target
# and 12 or more processors, each of the three database servers gets a fifth of them, the
# proxies a quarter and sysbench the rest, so 16 cores give primary 0-2, replicas 3-5 and
# 6-8, proxies 9-12, sysbench 13-15 (--replica-cpus takes the replicas' two lists); the
# replicas are pinned only where the script starts them (--bundle).
#
# Binaries come from PATH, each overridable: MARIADBD, MARIADB, SYSBENCH, HAPROXY,
# GATEKEEPER (default bin/gatekeeper, built with make build), PROXYSQL or PROXYSQL_TGZ.
# The database is that of GK_PRIMARY when set (eval "$(scripts/test-backends.sh up)"), else
# scripts/test-backends.sh starts one and stops it at the end.
#
# --bundle DIR runs from a devbench bundle (../shared/tools/devbench/make-bundle.sh) unpacked
# at DIR, on a machine with no network: every binary from DIR/bin, LD_LIBRARY_PATH=DIR/lib for
# them, sysbench's scripts from DIR/share/sysbench, and its own MariaDB started from
# DIR/datadir.tgz (user app/app, database sbtest); no apt-get and no make build. With a
# gatekeeper-routed target it starts two replicas from the same data directory too,
# replicating from the primary by GTID. On a
# development machine, from the checkout (.bundle is left out of git by .git/info/exclude):
#   make build
#   grep -qx /.bundle .git/info/exclude || echo /.bundle >>.git/info/exclude
#   ../shared/tools/devbench/make-bundle.sh .bundle bin/gatekeeper
#   cp ../shared/tools/devbench/proxysql-2.7.1.tgz .bundle/
# then carry the checkout (with .bundle) to the many-core machine and there, from it:
#   mkdir -p /opt/b && tar xzf .bundle/bundle.tgz -C /opt/b
#   PROXYSQL_TGZ=.bundle/proxysql-2.7.1.tgz bench/overhead.sh --bundle /opt/b
# Without Go there, the README says how to draw the plots from results.csv afterwards.
# Reads with 0, 1 and 2 replicas, each server on cores of its own, from the same bundle:
#   bench/overhead.sh --bundle /opt/b --targets direct,pooled,routed1,routed \
#     --workloads "oltp_read_only oltp_point_select" --threads "16 64" --skip-trx --out bench/results/replicas
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_TARGETS="direct gatekeeper gatekeeper-admission gatekeeper-pooled gatekeeper-routed1 gatekeeper-routed gatekeeper-baseline haproxy proxysql"
TARGETS=$ALL_TARGETS WORKLOADS="oltp_point_select oltp_read_only oltp_read_write" THREADS="1 16 64"
ROUNDS=3 TIME=10 WARMUP=3 TABLES='' TABLE_SIZE='' OUT=bench/results/overhead BUNDLE='' PIN=auto
DB_CPUS='' PROXY_CPUS='' SB_CPUS='' REPLICA_CPUS='' PROXY_THREADS='' PS_MODE=auto SKIP_TRX=off
ADMISSION_CAPACITY=auto
# The command as run, for the report: the overriding environment and the arguments, quoted.
ARGS=''
for v in GK_PRIMARY MARIADBD MARIADB SYSBENCH HAPROXY GATEKEEPER GATEKEEPER_BASELINE GATEKEEPER_BASELINE_MODE GATEKEEPER_BASELINE_ENV PROXYSQL PROXYSQL_LIB PROXYSQL_TGZ; do
	[ -n "${!v:-}" ] && ARGS+="$v=$(printf '%q' "${!v}") "
done
ARGS+="bench/overhead.sh$([ $# -eq 0 ] || printf ' %q' "$@")"
usage() {
	sed -n '12,17s/^#//p' "$0" >&2
	exit 2
}
fail() { echo "bench/overhead.sh: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
	case $1 in
	--no-pin) PIN=no; shift; continue ;;
	--skip-trx) SKIP_TRX=on; shift; continue ;;
	-h | --help) usage ;;
	esac
	[ $# -ge 2 ] || usage
	case $1 in
	--targets) TARGETS=$2 ;;
	--workloads) WORKLOADS=$2 ;;
	--threads) THREADS=$2 ;;
	--rounds) ROUNDS=$2 ;;
	--time) TIME=$2 ;;
	--warmup) WARMUP=$2 ;;
	--tables) TABLES=$2 ;;
	--table-size) TABLE_SIZE=$2 ;;
	--db-cpus) DB_CPUS=$2 ;;
	--proxy-cpus) PROXY_CPUS=$2 ;;
	--sysbench-cpus) SB_CPUS=$2 ;;
	--replica-cpus) REPLICA_CPUS=$2 ;;
	--proxy-threads) PROXY_THREADS=$2 ;;
	--ps-mode) PS_MODE=$2 ;;
	--admission-capacity) ADMISSION_CAPACITY=$2 ;;
	--bundle) BUNDLE=$2 ;;
	--out) OUT=$2 ;;
	*) usage ;;
	esac
	shift 2
done

# Targets by their names, with the short ones accepted too.
wanted=
for t in ${TARGETS//,/ }; do
	case $t in
	all) wanted="$wanted $ALL_TARGETS" ;;
	passthrough) wanted="$wanted gatekeeper" ;;
	admission) wanted="$wanted gatekeeper-admission" ;;
	pooled) wanted="$wanted gatekeeper-pooled" ;;
	routed) wanted="$wanted gatekeeper-routed" ;;
	routed1) wanted="$wanted gatekeeper-routed1" ;;
	baseline) wanted="$wanted gatekeeper-baseline" ;;
	direct | gatekeeper | gatekeeper-admission | gatekeeper-pooled | gatekeeper-routed1 | gatekeeper-routed | gatekeeper-baseline | haproxy | proxysql) wanted="$wanted $t" ;;
	*) fail "unknown target '$t'; the targets are: $ALL_TARGETS" ;;
	esac
done
TARGETS=
for t in $ALL_TARGETS; do [[ " $wanted " == *" $t "* ]] && TARGETS="$TARGETS $t"; done
TARGETS=${TARGETS# }
[[ " $TARGETS " == *" direct "* ]] || fail "--targets must include direct: every figure is read against it"
wants() { [[ " $TARGETS " == *" $1 "* ]]; }
routes() { wants gatekeeper-routed || wants gatekeeper-routed1 || { wants gatekeeper-baseline && [ "${GATEKEEPER_BASELINE_MODE:-}" = routed ]; }; }
for n in "$ROUNDS" "$TIME" $THREADS; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || fail "--rounds, --time and --threads take positive whole numbers, not '$n'"
done
[[ $WARMUP =~ ^[0-9]+$ ]] || fail "--warmup takes a whole number of seconds, not '$WARMUP'"

# Cores: pinned with 8 or more, or where a list is given, unless --no-pin.
NPROC=$(nproc)
[ "$PIN" = auto ] && [ -n "$DB_CPUS$PROXY_CPUS$SB_CPUS" ] && PIN=yes
[ "$PIN" = auto ] && { [ "$NPROC" -ge 8 ] && PIN=yes || PIN=no; }
if [ "$PIN" = yes ]; then
	command -v taskset >/dev/null || fail "taskset is not installed (util-linux); give --no-pin to run unpinned"
	if [ "$NPROC" -ge 12 ] && routes && [ -z "$DB_CPUS$PROXY_CPUS$SB_CPUS$REPLICA_CPUS" ]; then
		# Three database servers on cores of their own, so that replicas add capacity.
		db=$((NPROC / 5)) px=$((NPROC / 4))
		DB_CPUS=0-$((db - 1)) REPLICA_CPUS="$db-$((2 * db - 1)) $((2 * db))-$((3 * db - 1))"
		PROXY_CPUS=$((3 * db))-$((3 * db + px - 1)) SB_CPUS=$((3 * db + px))-$((NPROC - 1))
	elif [ "$NPROC" -ge 8 ]; then
		px=$((NPROC / 4)) db=$(((NPROC - NPROC / 4 + 1) / 2))
		DB_CPUS=${DB_CPUS:-0-$((db - 1))}
		PROXY_CPUS=${PROXY_CPUS:-$db-$((db + px - 1))}
		SB_CPUS=${SB_CPUS:-$((db + px))-$((NPROC - 1))}
	fi
	[[ -n $DB_CPUS && -n $PROXY_CPUS && -n $SB_CPUS ]] ||
		fail "with $NPROC processors there is no default split: give --db-cpus, --proxy-cpus and --sysbench-cpus together"
fi
# shellcheck source=bench/lib.sh
. bench/lib.sh
if [ "$PIN" = yes ]; then
	PROXY_THREADS=${PROXY_THREADS:-$(count_cpus "$PROXY_CPUS")}
	ON_DB=(taskset -c "$DB_CPUS") ON_PROXY=(taskset -c "$PROXY_CPUS") ON_SB=(taskset -c "$SB_CPUS")
	SPLIT="database $DB_CPUS, proxies $PROXY_CPUS ($PROXY_THREADS threads each), sysbench $SB_CPUS"
	if routes; then
		read -r -a ON_REPLICA <<<"$REPLICA_CPUS"
		if [ ${#ON_REPLICA[@]} -eq 2 ] && [ -n "$BUNDLE" ]; then
			SPLIT="primary $DB_CPUS, replicas ${ON_REPLICA[0]} and ${ON_REPLICA[1]}, proxies $PROXY_CPUS ($PROXY_THREADS threads each), sysbench $SB_CPUS"
		else
			SPLIT="$SPLIT; the replicas not pinned (they are pinned where --bundle starts them, to --replica-cpus)"
		fi
	fi
else
	PROXY_THREADS=${PROXY_THREADS:-$((NPROC < 4 ? NPROC : 4))}
	ON_DB=() ON_PROXY=() ON_SB=()
	SPLIT="not pinned: database, proxies ($PROXY_THREADS threads each) and sysbench share all $NPROC processors"
fi
[[ $PROXY_THREADS =~ ^[1-9][0-9]*$ ]] || fail "--proxy-threads takes a positive whole number, not '$PROXY_THREADS'"
TABLES=${TABLES:-$([ "$NPROC" -ge 8 ] && echo 8 || echo 4)}
TABLE_SIZE=${TABLE_SIZE:-$([ "$NPROC" -ge 8 ] && echo 100000 || echo 50000)}

# Binaries. LIBS runs a bundled binary with the bundle's libraries, leaving the system's
# tools (awk, taskset) on their own.
LIBS=()
SB_SCRIPTS=
if [ -n "$BUNDLE" ]; then
	[ -x "$BUNDLE/bin/mariadbd" ] || fail "--bundle $BUNDLE: no bin/mariadbd there; unpack bundle.tgz into it (tar xzf bundle.tgz -C $BUNDLE)"
	MARIADBD=${MARIADBD:-$BUNDLE/bin/mariadbd} MARIADB=${MARIADB:-$BUNDLE/bin/mariadb}
	SYSBENCH=${SYSBENCH:-$BUNDLE/bin/sysbench} HAPROXY=${HAPROXY:-$BUNDLE/bin/haproxy}
	GATEKEEPER=${GATEKEEPER:-$BUNDLE/bin/gatekeeper}
	LIBS=(env "LD_LIBRARY_PATH=$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "LUA_PATH=$BUNDLE/share/sysbench/?.lua;;")
	SB_SCRIPTS=$BUNDLE/share/sysbench/
	for f in "$BUNDLE/psql.tgz" "$BUNDLE/proxysql-2.7.1.tgz"; do [ -f "$f" ] && PROXYSQL_TGZ=${PROXYSQL_TGZ:-$f}; done
	GK_USER=app GK_PASSWORD=app
fi
MARIADB=${MARIADB:-mariadb} SYSBENCH=${SYSBENCH:-sysbench} HAPROXY=${HAPROXY:-haproxy}
"${LIBS[@]}" "$SYSBENCH" --version >/dev/null 2>&1 || fail "sysbench ($SYSBENCH) does not run; install it (apt-get install sysbench) or give SYSBENCH=/path"
"${LIBS[@]}" "$MARIADB" --version >/dev/null 2>&1 || fail "the mariadb client ($MARIADB) does not run; install mariadb-client or give MARIADB=/path"
if wants haproxy && ! "${LIBS[@]}" "$HAPROXY" -v >/dev/null 2>&1; then
	if [ -z "$BUNDLE" ] && [ "$HAPROXY" = haproxy ] && command -v apt-get >/dev/null; then
		echo "bench/overhead.sh: installing haproxy" >&2
		{ apt-get install -y -qq haproxy || { apt-get update -qq && apt-get install -y -qq haproxy; }; } >/dev/null 2>&1 || true
	fi
	"${LIBS[@]}" "$HAPROXY" -v >/dev/null 2>&1 ||
		fail "HAProxy ($HAPROXY) does not run and could not be installed: apt-get install haproxy, give HAPROXY=/path, or leave it out with --targets"
fi
if wants gatekeeper || wants gatekeeper-admission || wants gatekeeper-pooled || routes || wants gatekeeper-baseline; then
	if [ -z "${GATEKEEPER:-}" ]; then
		make -s build || fail "make build failed; fix the build or give GATEKEEPER=/path"
		GATEKEEPER=bin/gatekeeper
	fi
	"$GATEKEEPER" version >/dev/null 2>&1 || fail "gatekeeper ($GATEKEEPER) does not run; build it (make build) or give GATEKEEPER=/path"
fi

ulimit -n 65536 2>/dev/null || true
if [ -n "$BUNDLE" ]; then
	GK_PRIMARY=127.0.0.1:$(free_port)
	export GK_PRIMARY GK_USER GK_PASSWORD
fi
bench_setup 43306
VERSION=$([ -n "${GATEKEEPER:-}" ] && "$GATEKEEPER" version | awk '{print $2}' || git describe --always --dirty 2>/dev/null || echo unknown)

# wait_ready NAME PORT PID LOG: a query goes through PORT within 30s while PID lives, or the
# script stops with the end of LOG.
wait_ready() {
	for _ in $(seq 1 300); do
		"${LIBS[@]}" "$MARIADB" --no-defaults -h127.0.0.1 -P"$2" -u"$GK_USER" -p"$GK_PASSWORD" -e 'SELECT 1' >/dev/null 2>&1 && return 0
		[ -z "$3" ] || kill -0 "$3" 2>/dev/null || break
		sleep 0.1
	done
	echo "bench/overhead.sh: $1 did not start or does not pass a query on port $2; the end of its log ($4):" >&2
	tail -n 20 "$4" >&2 || true
	echo "bench/overhead.sh: leave it out with --targets if it cannot run here" >&2
	exit 1
}

if [ -n "$BUNDLE" ]; then # MariaDB of our own, from the bundle's data directory
	read -r -a ON_REPLICA <<<"${REPLICA_CPUS:-}"
	replicas=0
	routes && replicas=2
	bundle_backends "$replicas" "$DB_CPUS" "${ON_REPLICA[@]}"
elif [ "$PIN" = yes ] && ! pin_primary "$DB_CPUS"; then
	SPLIT="$SPLIT; the database is not on this machine, not pinned"
fi

declare -A PORT_OF=([direct]=$PRIMARY_PORT) PID_OF=() ADMIN_OF=()
MAX_THREADS=$(echo "$THREADS" | tr ' ' '\n' | sort -n | tail -n 1)
# start NAME LOG COMMAND...: starts a proxy on the proxies' cores; PORT_OF[NAME] must be set.
start() {
	local name=$1 log=$2
	shift 2
	"${ON_PROXY[@]}" "$@" >"$log" 2>&1 &
	PIDS+=($!)
	PID_OF[$name]=$!
	wait_ready "$name" "${PORT_OF[$name]}" $! "$log"
	echo "bench/overhead.sh: $name on port ${PORT_OF[$name]}, pid $!" >&2
}
start_gatekeeper() { # start_gatekeeper NAME [VAR=VALUE...]
	local name=$1 bin=$GATEKEEPER extra=()
	shift
	if [ "$name" = gatekeeper-baseline ]; then
		bin=$GATEKEEPER_BASELINE
		read -r -a extra <<<"${GATEKEEPER_BASELINE_ENV:-}"
	fi
	PORT_OF[$name]=$(free_port)
	start "$name" "$WORK/$name.log" env GOMAXPROCS="$PROXY_THREADS" "$@" "${extra[@]}" "$bin" serve \
		--primary "$GK_PRIMARY" --listen 127.0.0.1:"${PORT_OF[$name]}" --admin-listen "${ADMIN_OF[$name]:+127.0.0.1:${ADMIN_OF[$name]}}"
}
wants gatekeeper && start_gatekeeper gatekeeper GATEKEEPER_MODE=passthrough GATEKEEPER_ADMISSION_ENABLED=false
if wants gatekeeper-admission; then # its metrics say how long admission held each statement
	ADMIN_OF[gatekeeper-admission]=$(free_port)
	start_gatekeeper gatekeeper-admission GATEKEEPER_MODE=passthrough \
		GATEKEEPER_ADMISSION_ENABLED=true GATEKEEPER_ADMISSION_CAPACITY="$ADMISSION_CAPACITY"
fi
if wants gatekeeper-baseline; then
	[ -n "${GATEKEEPER_BASELINE:-}" ] && "$GATEKEEPER_BASELINE" version >/dev/null 2>&1 ||
		fail "gatekeeper-baseline runs the binary GATEKEEPER_BASELINE=/path, which is not set or does not run"
	case ${GATEKEEPER_BASELINE_MODE:=pooled} in
	pooled | passthrough | routed) ;;
	*) fail "GATEKEEPER_BASELINE_MODE is pooled, passthrough or routed, not '$GATEKEEPER_BASELINE_MODE'" ;;
	esac
fi
if wants gatekeeper-pooled || routes || wants gatekeeper-baseline; then
	(umask 077 && printf 'users:\n  - user: %s\n    password: %s\n' "$GK_USER" "$GK_PASSWORD" >"$WORK/users.yaml")
fi
if routes; then
	[ -n "${GK_REPLICA1:-}" ] && [ -n "${GK_REPLICA2:-}" ] ||
		fail "gatekeeper-routed needs the replicas of GK_REPLICA1 and GK_REPLICA2 (scripts/test-backends.sh up gives them); leave it out with --targets"
	start_routed() { # start_routed NAME REPLICAS; its metrics say where the reads went
		ADMIN_OF[$1]=$(free_port)
		start_gatekeeper "$1" GATEKEEPER_MODE=pooled GATEKEEPER_ADMISSION_ENABLED=false GATEKEEPER_AUTH_USERS_FILE="$WORK/users.yaml" \
			GATEKEEPER_POOLS_MAX_OPEN="$MAX_THREADS" GATEKEEPER_POOLS_MAX_IDLE="$MAX_THREADS" \
			GATEKEEPER_BACKENDS_REPLICAS="$2" GATEKEEPER_MONITOR_USER="$GK_USER" GATEKEEPER_MONITOR_PASSWORD="$GK_PASSWORD"
	}
	wants gatekeeper-routed1 && start_routed gatekeeper-routed1 "$GK_REPLICA1"
	wants gatekeeper-routed && start_routed gatekeeper-routed "$GK_REPLICA1,$GK_REPLICA2"
	wants gatekeeper-baseline && [ "$GATEKEEPER_BASELINE_MODE" = routed ] && start_routed gatekeeper-baseline "$GK_REPLICA1,$GK_REPLICA2"
fi
if wants gatekeeper-baseline && [ "$GATEKEEPER_BASELINE_MODE" = routed ]; then
	: # started with the routed targets
elif wants gatekeeper-baseline && [ "$GATEKEEPER_BASELINE_MODE" = passthrough ]; then
	start_gatekeeper gatekeeper-baseline GATEKEEPER_MODE=passthrough GATEKEEPER_ADMISSION_ENABLED=false
elif wants gatekeeper-baseline; then
	start_gatekeeper gatekeeper-baseline GATEKEEPER_MODE=pooled GATEKEEPER_ADMISSION_ENABLED=false GATEKEEPER_AUTH_USERS_FILE="$WORK/users.yaml" \
		GATEKEEPER_POOLS_MAX_OPEN="$MAX_THREADS" GATEKEEPER_POOLS_MAX_IDLE="$MAX_THREADS"
fi
if wants gatekeeper-pooled; then
	start_gatekeeper gatekeeper-pooled GATEKEEPER_MODE=pooled GATEKEEPER_ADMISSION_ENABLED=false GATEKEEPER_AUTH_USERS_FILE="$WORK/users.yaml" \
		GATEKEEPER_POOLS_MAX_OPEN="$MAX_THREADS" GATEKEEPER_POOLS_MAX_IDLE="$MAX_THREADS"
fi
if wants haproxy; then
	PORT_OF[haproxy]=$(free_port)
	cat >"$WORK/haproxy.cfg" <<-EOF
		global
		  maxconn 8000
		  nbthread $PROXY_THREADS
		defaults
		  mode tcp
		  timeout connect 5s
		  timeout client 1h
		  timeout server 1h
		listen mysql
		  bind 127.0.0.1:${PORT_OF[haproxy]}
		  server db $GK_PRIMARY
	EOF
	start haproxy "$WORK/haproxy.log" "${LIBS[@]}" "$HAPROXY" -db -f "$WORK/haproxy.cfg"
fi
if wants proxysql; then
	PROXYSQL_LIB=${PROXYSQL_LIB:-}
	if [ -z "${PROXYSQL:-}" ]; then
		PROXYSQL_TGZ=${PROXYSQL_TGZ:-../shared/tools/devbench/proxysql-2.7.1.tgz}
		[ -f "$PROXYSQL_TGZ" ] || fail "no ProxySQL: $PROXYSQL_TGZ is missing; give PROXYSQL_TGZ=/path/proxysql-2.7.1.tgz or PROXYSQL=/path/proxysql, or leave it out with --targets"
		mkdir -p "$WORK/proxysql-dist"
		tar xzf "$PROXYSQL_TGZ" -C "$WORK/proxysql-dist"
		PROXYSQL=$WORK/proxysql-dist/bin/proxysql PROXYSQL_LIB=$WORK/proxysql-dist/lib
	fi
	[ -z "$PROXYSQL_LIB" ] && [ -d "$(dirname "$PROXYSQL")/../lib" ] && PROXYSQL_LIB=$(dirname "$PROXYSQL")/../lib
	PROXYSQL_RUN=(env ${PROXYSQL_LIB:+"LD_LIBRARY_PATH=$PROXYSQL_LIB"} "$PROXYSQL")
	"${PROXYSQL_RUN[@]}" --version >/dev/null 2>&1 ||
		fail "ProxySQL ($PROXYSQL) does not run here: $("${PROXYSQL_RUN[@]}" --version 2>&1 | tail -n 1)"
	PORT_OF[proxysql]=$(free_port)
	# The .cnf is read only while the data directory is empty: a fresh one each run. The
	# backend user must be in mysql_users, with the password it has on the backend.
	mkdir -p "$WORK/proxysql"
	cat >"$WORK/proxysql.cnf" <<-EOF
		datadir="$WORK/proxysql"
		admin_variables=
		{
		  admin_credentials="admin:admin"
		  mysql_ifaces="127.0.0.1:$(free_port)"
		}
		mysql_variables=
		{
		  threads=$PROXY_THREADS
		  max_connections=8000
		  interfaces="127.0.0.1:${PORT_OF[proxysql]}"
		  server_version="10.11.0"
		  default_schema="information_schema"
		  monitor_enabled=false
		}
		mysql_servers=
		(
		  { address="${GK_PRIMARY%:*}" port=$PRIMARY_PORT hostgroup=0 max_connections=4000 }
		)
		mysql_users=
		(
		  { username="$GK_USER" password="$GK_PASSWORD" default_hostgroup=0 active=1 }
		)
	EOF
	start proxysql "$WORK/proxysql.log" "${PROXYSQL_RUN[@]}" -f -c "$WORK/proxysql.cnf" -D "$WORK/proxysql"
fi
PROXYSQL_VERSION='' HAPROXY_VERSION=''
wants proxysql && PROXYSQL_VERSION=$("${PROXYSQL_RUN[@]}" --version 2>/dev/null | awk '/^ProxySQL version/ {sub(/,$/, "", $3); print $3; exit}')
wants haproxy && HAPROXY_VERSION=$("${LIBS[@]}" "$HAPROXY" -v 2>/dev/null | awk 'NR == 1 {print $3}')

sb() { # sb WORKLOAD PORT THREADS SECONDS prepare|run|cleanup
	"${ON_SB[@]}" "${LIBS[@]}" "$SYSBENCH" "$SB_SCRIPTS$1${SB_SCRIPTS:+.lua}" --db-driver=mysql --mysql-host=127.0.0.1 \
		--mysql-port="$2" --mysql-user="$GK_USER" --mysql-password="$GK_PASSWORD" --mysql-db=sbtest \
		--tables="$TABLES" --table-size="$TABLE_SIZE" --threads="$3" --time="$4" --percentile=95 \
		--report-interval=0 --db-ps-mode="$PS_MODE" --skip-trx="$SKIP_TRX" "$5"
}

# measure WORKLOAD TARGET THREADS runs sysbench on TARGET and sets OUTPUT, and CPU_US,
# USER_US and SYS_US to the proxy's processor time per query in µs, all of it, user and
# system (empty for direct); returns sysbench's status.
measure() {
	local pid=${PID_OF[$2]:-} t0='0 0' t1 queries
	[ -n "$pid" ] && t0=$(cpu_ticks "$pid")
	OUTPUT=$(sb "$1" "${PORT_OF[$2]}" "$3" "$TIME" run 2>&1) || return 1
	CPU_US= USER_US= SYS_US=
	if [ -n "$pid" ]; then
		t1=$(cpu_ticks "$pid")
		queries=$(awk '/queries:/ {print $2}' <<<"$OUTPUT")
		read -r CPU_US USER_US SYS_US < <(awk -v a="$t0" -v b="$t1" -v hz="$CLK_TCK" -v n="$queries" 'BEGIN {
			split(a, A, " "); split(b, B, " "); k = n > 0 ? 1e6 / hz / n : 0
			u = (B[1] - A[1]) * k; s = (B[2] - A[2]) * k
			printf "%.2f %.2f %.2f\n", u + s, u, s
		}')
	fi
}

echo "bench/overhead.sh: preparing $TABLES tables of $TABLE_SIZE rows; $SPLIT" >&2
sb oltp_read_write "$PRIMARY_PORT" 4 0 cleanup >/dev/null 2>&1 || true
sb oltp_read_write "$PRIMARY_PORT" "$TABLES" 0 prepare >"$WORK/prepare.log" 2>&1 || { tail -n 20 "$WORK/prepare.log" >&2; fail "sysbench prepare failed"; }
if routes; then # the tables went to the primary behind the proxy's back
	pos=$("${LIBS[@]}" "$MARIADB" --no-defaults -h127.0.0.1 -P"$PRIMARY_PORT" -u"$GK_USER" -p"$GK_PASSWORD" -N -e 'SELECT @@gtid_binlog_pos')
	for r in "$GK_REPLICA1" "$GK_REPLICA2"; do
		got=$("${LIBS[@]}" "$MARIADB" --no-defaults -h"${r%:*}" -P"${r##*:}" -u"$GK_USER" -p"$GK_PASSWORD" -N -e "SELECT MASTER_GTID_WAIT('$pos', 120)")
		[ "$got" = 0 ] || fail "replica $r did not apply the prepared tables within 120 s"
	done
fi

mkdir -p "$OUT"
CSV=$OUT/results.csv
echo "workload,threads,round,target,qps,tps,avg_ms,p95_ms,queries,errors,cpu_us_per_query,user_us_per_query,sys_us_per_query" >"$CSV"
for w in $WORKLOADS; do
	for th in $THREADS; do
		if [ "$WARMUP" -gt 0 ]; then
			for t in $TARGETS; do # warm each path up; a failed warm-up is shown, not fatal
				sb "$w" "${PORT_OF[$t]}" "$th" "$WARMUP" run >"$WORK/warmup.log" 2>&1 ||
					{ echo "$w threads=$th $t: warm-up failed:" >&2; tail -n 5 "$WORK/warmup.log" >&2; }
			done
		fi
		for r in $(seq 1 "$ROUNDS"); do
			order=$TARGETS
			[ $((r % 2)) -eq 0 ] && order=$(echo "$TARGETS" | tr ' ' '\n' | tac | tr '\n' ' ')
			for t in $order; do
				# A failed run (a refused connection, say) is shown and tried once more, so
				# that one hiccup does not throw away the rounds already measured.
				if ! measure "$w" "$t" "$th"; then
					echo "$w threads=$th round=$r $t: sysbench failed; retrying once:" >&2
					tail -n 5 <<<"$OUTPUT" >&2
					measure "$w" "$t" "$th" || { tail -n 20 <<<"$OUTPUT" >&2; fail "$w threads=$th $t: sysbench failed twice"; }
				fi
				qps=$(awk '/queries:/ {gsub(/\(/, "", $3); print $3}' <<<"$OUTPUT")
				tps=$(awk '/transactions:/ {gsub(/\(/, "", $3); print $3}' <<<"$OUTPUT")
				queries=$(awk '/queries:/ {print $2}' <<<"$OUTPUT")
				avg=$(awk '/avg:/ {print $2}' <<<"$OUTPUT")
				p95=$(awk '/95th percentile:/ {print $3}' <<<"$OUTPUT")
				errs=$(awk '/ignored errors:/ {print $3}' <<<"$OUTPUT")
				echo "$w,$th,$r,$t,$qps,$tps,$avg,$p95,$queries,$errs,$CPU_US,$USER_US,$SYS_US" >>"$CSV"
				echo "$w threads=$th round=$r $t: $qps qps, avg ${avg}ms, p95 ${p95}ms${CPU_US:+, proxy CPU ${CPU_US}µs/query}" >&2
			done
		done
	done
done
sb oltp_read_write "$PRIMARY_PORT" 4 0 cleanup >/dev/null 2>&1 || true

# metrics_of NAME prints the metrics of gatekeeper NAME, which has an admin listener.
metrics_of() {
	curl -sf "http://127.0.0.1:${ADMIN_OF[$1]}/metrics" 2>/dev/null ||
		python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())' \
			"http://127.0.0.1:${ADMIN_OF[$1]}/metrics" 2>/dev/null
}

# replica_share NAME prints the share of the reads gatekeeper NAME counted
# (gatekeeper_reads_total, writes left out) that went to a replica.
replica_share() {
	local metrics
	metrics=$(metrics_of "$1") || { echo "not read"; return; }
	awk -v primary="$GK_PRIMARY" '/^gatekeeper_reads_total\{/ && !/reason="write"/ {
		all += $NF; if ($0 !~ "backend=\"" primary "\"") rep += $NF
	} END { if (all > 0) printf "%.1f%% of %d", 100 * rep / all, all; else print "no reads counted" }' <<<"$metrics"
}
# ADMISSION_WAIT: the statements gatekeeper-admission admitted over the whole run (warm-ups
# included) and their mean time in admission, from the statement's arrival to its admission
# (gatekeeper_admission_wait_seconds): what admission adds before a statement goes on.
ADMISSION_WAIT=
if wants gatekeeper-admission && metrics=$(metrics_of gatekeeper-admission); then
	ADMISSION_WAIT=$(awk '/^gatekeeper_admission_wait_seconds_sum / {s = $2} /^gatekeeper_admission_wait_seconds_count / {n = $2}
		END { if (n > 0) printf "%d statements, %.2f µs each on average", n, 1e6 * s / n }' <<<"$metrics")
fi
SHARES=
for t in gatekeeper-routed1 gatekeeper-routed; do
	wants "$t" && SHARES="$SHARES${SHARES:+; }$t $(replica_share "$t")"
done

# The plots: drawn by bench/cmd/overhead when Go is here; elsewhere the README says how to
# draw them from the CSV later.
PLOTS=
if command -v go >/dev/null && go run ./bench/cmd/overhead -csv "$CSV" -out "$OUT" >&2; then
	PLOTS=yes
fi

# The report: medians over the rounds, by awk from the CSV.
MODEL=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
report() {
	awk -F, -v workloads="$WORKLOADS" -v threads="$THREADS" -v targets="$TARGETS" -v plots="$PLOTS" -v admwait="$ADMISSION_WAIT" '
	function median(key,    n, i, j, v, a) {
		n = split(vals[key], a, " ")
		if (n == 0 || vals[key] == "") return ""
		for (i = 2; i <= n; i++) { v = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > v; j--) a[j + 1] = a[j]; a[j + 1] = v }
		return n % 2 ? a[(n + 1) / 2] + 0 : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function m(w, th, t, c) { return median(w SUBSEP th SUBSEP t SUBSEP c) }
	function f(x, fmt) { return x == "" ? "—" : sprintf(fmt, x) }
	NR > 1 {
		for (c = 5; c <= 13; c++) if ($c != "") vals[$1, $2, $4, c] = vals[$1, $2, $4, c] " " $c
		row[$1 "," $2 "," $3 "," $4] = $0; have[$4] = 1; if ($3 + 0 > maxr) maxr = $3 + 0
	}
	END {
		nw = split(workloads, W, " "); nth = split(threads, TH, " "); nt = split(targets, T, " ")
		np = 0; for (i = 1; i <= nt; i++) if (T[i] != "direct") P[++np] = T[i]
		hap = targets ~ /(^| )haproxy( |$)/
		print "## Processor time per query"
		print ""
		print "The proxy process'"'"'s user plus system time over a run, divided by the queries sysbench made in it (µs)."
		if (hap) print "The last columns are each proxy'"'"'s figure over HAProxy'"'"'s."
		print ""
		h = "| workload | threads"; a = "|---|---:"
		for (i = 1; i <= np; i++) { h = h " | " P[i]; a = a "|---:" }
		if (hap) for (i = 1; i <= np; i++) if (P[i] != "haproxy") { h = h " | " P[i] " / haproxy"; a = a "|---:" }
		print h " |"; print a "|"
		for (x = 1; x <= nw; x++) for (y = 1; y <= nth; y++) {
			r = "| " W[x] " | " TH[y]
			for (i = 1; i <= np; i++) r = r " | " f(m(W[x], TH[y], P[i], 11), "%.1f")
			if (hap) for (i = 1; i <= np; i++) if (P[i] != "haproxy") {
				c = m(W[x], TH[y], P[i], 11); hc = m(W[x], TH[y], "haproxy", 11)
				r = r " | " (c == "" || hc + 0 <= 0 ? "—" : sprintf("%.2fx", c / hc))
			}
			print r " |"
		}
		if (plots == "yes") { print ""; for (x = 1; x <= nw; x++) print "![CPU µs per query, " W[x] "](cpu-" W[x] ".png)" }
		print ""
		print "### User and system"
		print ""
		print "The same time in its two parts, user + system (µs per query): system time is the kernel'"'"'s work on the"
		print "proxy'"'"'s behalf (the socket calls), user time the proxy'"'"'s own."
		print ""
		h = "| workload | threads"; a = "|---|---:"
		for (i = 1; i <= np; i++) { h = h " | " P[i]; a = a "|---:" }
		print h " |"; print a "|"
		for (x = 1; x <= nw; x++) for (y = 1; y <= nth; y++) {
			r = "| " W[x] " | " TH[y]
			for (i = 1; i <= np; i++) {
				u = m(W[x], TH[y], P[i], 12); sy = m(W[x], TH[y], P[i], 13)
				r = r " | " (u == "" ? "—" : sprintf("%.1f + %.1f", u, sy))
			}
			print r " |"
		}
		print ""
		if ((" " threads " ") ~ / 1 /) {
			print "## Latency added at 1 thread"
			print ""
			print "Each proxy'"'"'s latency minus direct'"'"'s (µs), per sysbench event: one query for oltp_point_select, one"
			print "transaction (14 statements for oltp_read_only, 18 for oltp_read_write) for the others. The average is"
			print "1 / transactions per second (one thread waits for each event in turn), finer than sysbench'"'"'s own"
			print "average in 10 µs steps; p95 is sysbench'"'"'s. Medians over the rounds."
			if (hap) print "The last columns are each proxy'"'"'s added average minus HAProxy'"'"'s."
			print ""
			h = "| workload | direct avg µs | direct p95 µs"; a = "|---|---:|---:"
			for (i = 1; i <= np; i++) { h = h " | " P[i] " avg | " P[i] " p95"; a = a "|---:|---:" }
			if (hap) for (i = 1; i <= np; i++) if (P[i] != "haproxy") { h = h " | " P[i] " − haproxy"; a = a "|---:" }
			print h " |"; print a "|"
			one = 0
			for (x = 1; x <= nw; x++) {
				dt = m(W[x], 1, "direct", 6); dp = m(W[x], 1, "direct", 8)
				if (dt + 0 <= 0) continue
				one = 1; da = 1e6 / dt
				r = sprintf("| %s | %.0f | %.0f", W[x], da, dp * 1000)
				for (i = 1; i <= np; i++) {
					pt = m(W[x], 1, P[i], 6); pp = m(W[x], 1, P[i], 8)
					r = r " | " (pt + 0 <= 0 ? "—" : sprintf("%+.0f", 1e6 / pt - da)) " | " (pp == "" ? "—" : sprintf("%+.0f", (pp - dp) * 1000))
				}
				if (hap) for (i = 1; i <= np; i++) if (P[i] != "haproxy") {
					pt = m(W[x], 1, P[i], 6); ht = m(W[x], 1, "haproxy", 6)
					r = r " | " (pt + 0 <= 0 || ht + 0 <= 0 ? "—" : sprintf("%+.0f", 1e6 / pt - 1e6 / ht))
				}
				print r " |"
			}
			if (!one) print "| (no run at 1 thread) |"
			print ""
		}
		if (("gatekeeper-admission" in have) && ("gatekeeper" in have)) {
			print "## Admission on against off, round by round"
			print ""
			print "gatekeeper-admission minus gatekeeper in each round, where the two ran within a minute of each"
			print "other: the average latency per sysbench event (µs, from transactions a second) and the CPU per"
			print "query (µs)."
			print ""
			print "| workload | threads | figure | per round | median |"
			print "|---|---:|---|---|---:|"
			for (x = 1; x <= nw; x++) for (y = 1; y <= nth; y++) for (k = 1; k <= 2; k++) {
				list = ""; key = "diff" SUBSEP W[x] SUBSEP TH[y] SUBSEP k
				for (r = 1; r <= maxr; r++) {
					a = row[W[x] "," TH[y] "," r ",gatekeeper-admission"]; b = row[W[x] "," TH[y] "," r ",gatekeeper"]
					if (a == "" || b == "") continue
					split(a, A, ","); split(b, B, ",")
					if (k == 1) { if (A[6] + 0 <= 0 || B[6] + 0 <= 0) continue; v = 1e6 / A[6] - 1e6 / B[6] }
					else { if (A[11] == "" || B[11] == "") continue; v = A[11] - B[11] }
					vals[key] = vals[key] " " v; list = list (list == "" ? "" : ", ") sprintf("%+.1f", v)
				}
				if (list == "") continue
				printf "| %s | %s | %s | %s | %+.1f |\n", W[x], TH[y], (k == 1 ? "average latency (µs)" : "CPU per query (µs)"), list, median(key)
			}
			print ""
			if (admwait != "") {
				print "Inside the proxy, admission held " admwait " (from arrival to admission,"
				print "`gatekeeper_admission_wait_seconds`, over the whole run): that is all it adds before a statement"
				print "goes on; its release comes after the client has its answer."
				print ""
			}
		}
		print "## Every target"
		print ""
		print "Medians over the rounds; ratio is the target'"'"'s QPS over direct'"'"'s in the same cell."
		print ""
		print "| workload | threads | target | QPS | ratio to direct | avg ms | p95 ms | CPU µs/query | ignored errors |"
		print "|---|---:|---|---:|---:|---:|---:|---:|---:|"
		for (x = 1; x <= nw; x++) for (y = 1; y <= nth; y++) {
			dq = m(W[x], TH[y], "direct", 5)
			for (i = 1; i <= nt; i++) {
				q = m(W[x], TH[y], T[i], 5)
				printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", W[x], TH[y], T[i], f(q, "%.0f"),
					(q == "" || dq + 0 <= 0 ? "—" : sprintf("%.2fx", q / dq)), f(m(W[x], TH[y], T[i], 7), "%.2f"),
					f(m(W[x], TH[y], T[i], 8), "%.2f"), f(m(W[x], TH[y], T[i], 11), "%.1f"), f(m(W[x], TH[y], T[i], 10), "%.0f")
			}
		}
	}' "$CSV"
}

{
	echo "# Relay cost: CPU per query through each proxy, side by side ($NPROC processors, $MODEL)"
	echo
	echo "Machine: $NPROC processors ($MODEL), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)."
	if [ "$PIN" = yes ]; then
		echo "Cores: $SPLIT."
	else
		echo "Cores: $SPLIT; the"
		echo "proxies contend with the database and sysbench for them, so QPS and latency show the machine as much as the proxy, and the"
		echo "processor time per query is the figure that carries to other machines."
	fi
	echo
	echo "Date $(date -u +%Y-%m-%d), gatekeeper $VERSION;" \
		"$("${LIBS[@]}" "$SYSBENCH" --version)${HAPROXY_VERSION:+, HAProxy $HAPROXY_VERSION}${PROXYSQL_VERSION:+, ProxySQL $PROXYSQL_VERSION};" \
		"database $("${LIBS[@]}" "$MARIADB" --no-defaults -h127.0.0.1 -P"$PRIMARY_PORT" -u"$GK_USER" -p"$GK_PASSWORD" -N -e 'SELECT VERSION()' 2>/dev/null || echo unknown)."
	echo
	echo "Command: \`$ARGS\`"
	echo
	echo "sysbench ${WORKLOADS// /, } at ${THREADS// /, } threads, $TABLES tables of $TABLE_SIZE rows, --db-ps-mode=$PS_MODE, --skip-trx=$SKIP_TRX;"
	echo "rounds: $ROUNDS of ${TIME}s per target and cell after a ${WARMUP}s warm-up of each, the targets taking"
	echo "turns in reverse order every other round. Targets: direct is the database itself;"
	echo "gatekeeper is its passthrough mode (a backend connection per client) with admission off;"
	wants gatekeeper-admission && echo "gatekeeper-admission is the same with admission on, capacity $ADMISSION_CAPACITY;"
	wants gatekeeper-pooled && echo "gatekeeper-pooled is pooled mode with pools.max_open $MAX_THREADS, admission off;"
	wants gatekeeper-baseline && echo "gatekeeper-baseline is $(case $GATEKEEPER_BASELINE_MODE in passthrough) echo "passthrough as gatekeeper" ;; routed) echo "routed as gatekeeper-routed" ;; *) echo "pooled mode as gatekeeper-pooled" ;; esac), from the binary $("$GATEKEEPER_BASELINE" version | awk '{print $2}')${GATEKEEPER_BASELINE_ENV:+ with $GATEKEEPER_BASELINE_ENV};"
	wants gatekeeper-routed1 && echo "gatekeeper-routed1 is the same routing autocommit reads to one replica (strong consistency);"
	wants gatekeeper-routed && echo "gatekeeper-routed is the same routing autocommit reads to two replicas (strong consistency);"
	[ -n "$SHARES" ] && echo "reads the routing proxies sent to replicas, over the whole run: $SHARES;"
	echo "haproxy is mode tcp with nbthread $PROXY_THREADS; proxysql runs threads=$PROXY_THREADS with no query"
	echo "rules and monitoring off. Every run is in [results.csv](results.csv)."
	echo
	report
	if [ -z "$PLOTS" ]; then
		echo
		echo "Plots of CPU per query: \`go run ./bench/cmd/overhead -csv $CSV -out $OUT\` draws them from the CSV."
	fi
} >"$OUT/README.md"
echo "bench/overhead.sh: wrote $OUT/README.md and $CSV" >&2
cat "$OUT/README.md"
