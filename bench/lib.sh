# Shared by the bench scripts: a work directory, processes stopped at exit, backends.
#
#   . bench/lib.sh; bench_setup BACKENDS_PORT
#
# Sets WORK (removed at exit) and PIDS (processes to stop at exit: append to it). Uses the
# backends of GK_PRIMARY when set, else starts its own on BACKENDS_PORT.. and stops them at
# exit. Sets PRIMARY_PORT. From a devbench bundle, set GK_PRIMARY to a free port first and
# start the servers with bundle_backends.

bench_setup() {
	BACKENDS_PORT=$1
	WORK=$(mktemp -d)
	PIDS=()
	trap bench_cleanup EXIT
	# Stopped by a signal, exit through the EXIT trap too, so that nothing is left running.
	trap 'exit 130' INT
	trap 'exit 143' TERM
	if [ -z "${GK_PRIMARY:-}" ]; then
		OWN_BACKENDS=1
		eval "$(GK_BACKENDS_DIR=$WORK/backends GK_BACKENDS_PORT=$BACKENDS_PORT scripts/test-backends.sh up)"
	fi
	PRIMARY_PORT=${GK_PRIMARY##*:}
}

bench_cleanup() {
	if [ -n "${PINNED_PID:-}" ] && [ -z "${OWN_BACKENDS:-}" ]; then
		taskset -a -p -c "$PINNED_FROM" "$PINNED_PID" >/dev/null 2>&1 || true
	fi
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	if [ -n "${OWN_BACKENDS:-}" ]; then
		GK_BACKENDS_DIR=$WORK/backends GK_BACKENDS_PORT=$BACKENDS_PORT scripts/test-backends.sh down || true
	fi
	rm -rf "$WORK"
}

# wait_login NAME PID PORT LOG waits up to 10s until gatekeeper NAME (process PID, its
# stderr in LOG) takes a login on 127.0.0.1:PORT; it exits the script when it does not.
wait_login() {
	for _ in $(seq 1 100); do
		mariadb --no-defaults -h127.0.0.1 -P"$3" -u"$GK_USER" -p"$GK_PASSWORD" -e 'SELECT 1' >/dev/null 2>&1 && return 0
		if ! kill -0 "$2" 2>/dev/null; then
			tail -n 20 "$4" >&2
			echo "$0: gatekeeper ($1) exited at start" >&2
			exit 1
		fi
		sleep 0.1
	done
	tail -n 20 "$4" >&2
	echo "$0: gatekeeper ($1) did not take a login on 127.0.0.1:$3 within 10s" >&2
	exit 1
}

# stop_pid PID stops a process started by the script and takes it off PIDS.
stop_pid() {
	kill -TERM "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	local keep=() p
	for p in "${PIDS[@]}"; do
		if [ "$p" != "$1" ]; then keep+=("$p"); fi
	done
	PIDS=("${keep[@]}")
}

# free_port prints a TCP port free on the loopback interface.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
		echo $((20000 + RANDOM % 20000))
}

# low_port prints a TCP port below 32768 free on the loopback interface now: benchmarks
# keep clear of the kernel's ephemeral range, where the clients' own ports come from.
low_port() {
	python3 -c '
import random, socket
for _ in range(200):
    p = random.randrange(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
else:
    raise SystemExit("no free port in 20000-32000")'
}

# bytes_of prints the bytes of a size written as N, NB, NKiB, NMiB or NGiB; it fails on
# anything else.
bytes_of() {
	[[ $1 =~ ^([0-9]+)(B|KiB|MiB|GiB)?$ ]] || return 1
	local n=${BASH_REMATCH[1]}
	case ${BASH_REMATCH[2]} in
	KiB) n=$((n << 10)) ;;
	MiB) n=$((n << 20)) ;;
	GiB) n=$((n << 30)) ;;
	esac
	echo "$n"
}

# primary_pid prints the PID of the primary's server process, read from its pid file; it
# fails, printing nothing, when that process does not run on this machine.
primary_pid() {
	local pid
	pid=$(cat "$(mariadb --no-defaults -h"${GK_PRIMARY%:*}" -P"$PRIMARY_PORT" -u"$GK_USER" -p"$GK_PASSWORD" -N -e 'SELECT @@pid_file')" 2>/dev/null) &&
		[ -n "$pid" ] && [ -d "/proc/$pid" ] && echo "$pid"
}

# pin_primary CPUS runs the primary's server process, every thread of it, on the processors
# CPUS (a taskset list such as 0 or 0-1), and gives it back its own at exit. The server
# must run on this machine.
pin_primary() {
	if ! PINNED_PID=$(primary_pid); then
		echo "bench: --db-cpus: the primary's process is not on this machine; drop --db-cpus" >&2
		PINNED_PID=
		return 1
	fi
	PINNED_FROM=$(awk '/^Cpus_allowed_list:/{print $2}' "/proc/$PINNED_PID/status")
	taskset -a -p -c "$1" "$PINNED_PID" >/dev/null
	echo "bench: the primary (pid $PINNED_PID) runs on CPUs $1" >&2
}

# count_cpus prints the number of processors in a taskset list such as 0-3,6.
count_cpus() {
	echo "$1" | tr ',' '\n' | awk -F- '{n += ($2 == "" ? 1 : $2 - $1 + 1)} END {print n}'
}

# bundle_backends REPLICAS PRIMARY_CPUS [REPLICA_CPUS...] starts MariaDB servers of a devbench
# bundle (../shared/tools/devbench/make-bundle.sh) unpacked at BUNDLE, on a machine that may
# have nothing else: the primary on PRIMARY_PORT, and REPLICAS replicas (0 to 2) on free ports
# replicating all of its binary log by GTID, each from a copy of the bundle's data directory
# (user app/app, database sbtest), each on the processors of its taskset list ("": any). It
# uses MARIADBD, MARIADB and LIBS (the command prefix that gives the bundle's libraries), and
# sets and exports GK_REPLICA1, GK_REPLICA2 and GK_REPLICAS for the replicas it starts.
bundle_backends() {
	local replicas=$1 cpus=$2 i port list=
	shift 2
	bundle_server primary "$PRIMARY_PORT" 1 "$cpus"
	for i in $(seq 1 "$replicas"); do
		port=$(free_port)
		bundle_server "replica$i" "$port" $((i + 1)) "${1:-}" --read-only=1
		[ $# -gt 0 ] && shift
		"${LIBS[@]}" "$MARIADB" --no-defaults -h127.0.0.1 -P"$port" -u"$GK_USER" -p"$GK_PASSWORD" -e "
			SET GLOBAL gtid_slave_pos = '';
			CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$PRIMARY_PORT, MASTER_USER='$GK_USER',
				MASTER_PASSWORD='$GK_PASSWORD', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1;
			START SLAVE;" || { echo "$0: replication could not start on replica $i" >&2; exit 1; }
		export "GK_REPLICA$i=127.0.0.1:$port"
		list="$list${list:+,}127.0.0.1:$port"
	done
	export GK_REPLICAS=$list
}

# bundle_server NAME PORT SERVER_ID CPUS [ARGS...] starts one of them, with a binary log, and
# waits up to 30 s until it answers.
bundle_server() {
	local name=$1 port=$2 id=$3 cpus=$4 on=() pid
	shift 4
	[ -n "$cpus" ] && on=(taskset -c "$cpus")
	mkdir -p "$WORK/$name"
	tar xzf "$BUNDLE/datadir.tgz" -C "$WORK/$name"
	"${on[@]}" "${LIBS[@]}" "$MARIADBD" --no-defaults --datadir="$WORK/$name/devdd" --socket="$WORK/$name.sock" \
		--port="$port" --bind-address=127.0.0.1 --user=root --lc-messages-dir="$BUNDLE/share/mysql" \
		--character-sets-dir="$BUNDLE/share/mysql/charsets" --max-connections=4000 --innodb-buffer-pool-size=4G \
		--innodb-flush-log-at-trx-commit=2 --thread-cache-size=512 --server-id="$id" --log-bin="$WORK/$name/binlog" \
		--binlog-format=ROW --sync-binlog=0 "$@" >"$WORK/$name.log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	for _ in $(seq 1 300); do
		"${LIBS[@]}" "$MARIADB" --no-defaults -h127.0.0.1 -P"$port" -u"$GK_USER" -p"$GK_PASSWORD" -e 'SELECT 1' >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	tail -n 20 "$WORK/$name.log" >&2
	echo "$0: the bundle's MariaDB ($name) did not start on port $port; its log is above" >&2
	exit 1
}

# cpu_ticks PID prints the processor time of a process in clock ticks (CLK_TCK a second),
# from /proc/PID/stat: user and system (two numbers) of the process (all its threads) and of
# its live descendants, each with that of the children they have waited for.
CLK_TCK=$(getconf CLK_TCK)
cpu_ticks() {
	local pid user=0 sys=0 u s
	for pid in $1 $(descendants "$1"); do
		read -r u s < <(awk '{sub(/^.*\) /, ""); print $12 + $14, $13 + $15}' "/proc/$pid/stat" 2>/dev/null) || continue
		user=$((user + u)) sys=$((sys + s))
	done
	echo "$user $sys"
}
descendants() {
	local c
	# shellcheck disable=SC2013 # the file is a list of PIDs separated by spaces
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do echo "$c"; descendants "$c"; done
}
