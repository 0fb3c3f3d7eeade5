#!/usr/bin/env bash
# A fleet of gatekeeper proxies in front of one MariaDB primary: the bookstore scenario
# (bench/cmd/scenario) with modes that run N proxies configured alike, the closed-loop
# clients dealt to them in turn (client i to proxy i mod N), uncoordinated (sjf@auto*3:
# each adapts its own capacity) and coordinated through etcd (sjf@auto*3+fleet), beside
# direct and one proxy. The report sets each proxy's capacity, and their sum, against the
# capacity one proxy alone settles at; capacity.csv has every proxy's trace.
#
#   bench/fleet.sh [--etcd HOST:PORT] [--etcd-port P] [--etcd-peer-port P] [any flag of bench/cmd/scenario]
#
# Defaults: --modes direct,sjf@auto,sjf@auto*2,sjf@auto*3,sjf@auto*2+fleet,sjf@auto*3+fleet,
# --clients 400 (twice 200, where the bookstore with 100 ms think time is past its knee on a
# 2-core machine), --open 0 (no open loop), --out bench/results/fleet; flags given here come
# after these and win. Quote a --modes list with *N in it.
#
# Starts its own etcd server (/usr/bin/etcd, Debian's etcd-server) as a plain process on
# loopback, its data in the work directory, clients on --etcd-port (default 22379) and peers
# on --etcd-peer-port (default 22380), ports below the kernel's ephemeral range (32768-60999)
# so that no client's own port takes them; a default port that is taken gives way to a free
# one under 32000. The server is stopped at exit. --etcd HOST:PORT uses a server that is
# running already instead. Each run's proxies take a key prefix of their own, so that no run
# sees the members of the runs before it.
#
# Uses the backends of GK_PRIMARY when set, else starts its own (replication stopped, so that
# the replicas do not replay the writes on the same cores) and stops them at the end. Give
# the binaries built beforehand as GATEKEEPER and SCENARIO (bench/cmd/scenario), or they are
# built here.
set -euo pipefail
cd "$(dirname "$0")/.."

ETCD= ETCD_PORT= ETCD_PEER_PORT=
ARGS=()
ALL="$*"
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		echo "Flags of bench/cmd/scenario: go run ./bench/cmd/scenario --help"
		exit 0 ;;
	--etcd) ETCD=$2; shift 2 ;;
	--etcd=*) ETCD=${1#*=}; shift ;;
	--etcd-port) ETCD_PORT=$2; shift 2 ;;
	--etcd-peer-port) ETCD_PEER_PORT=$2; shift 2 ;;
	*) ARGS+=("$1"); shift ;;
	esac
done

. bench/lib.sh
bench_setup 24306
if [ -n "${OWN_BACKENDS:-}" ]; then
	for r in "$GK_REPLICA1" "$GK_REPLICA2"; do
		mariadb --no-defaults -h"${r%:*}" -P"${r##*:}" -u"$GK_USER" -p"$GK_PASSWORD" -e 'STOP ALL SLAVES'
	done
fi

# port_free PORT tells whether PORT is free on the loopback interface now.
port_free() {
	python3 -c 'import socket, sys; socket.socket().bind(("127.0.0.1", int(sys.argv[1])))' "$1" 2>/dev/null
}

# etcd_port GIVEN DEFAULT prints GIVEN, which must be free, or else DEFAULT when free, or
# else a free port under 32000.
etcd_port() {
	if [ -n "$1" ]; then
		port_free "$1" || { echo "bench/fleet.sh: port $1 is taken; give another or leave the flag out" >&2; exit 2; }
		echo "$1"
	elif port_free "$2"; then
		echo "$2"
	else
		low_port
	fi
}

# start_etcd starts etcd on ETCD_PORT and ETCD_PEER_PORT, its data and log in WORK, and waits
# up to 30 s until it answers.
start_etcd() {
	local client=http://127.0.0.1:$ETCD_PORT peer=http://127.0.0.1:$ETCD_PEER_PORT pid
	etcd --name default --data-dir "$WORK/etcd" \
		--listen-client-urls "$client" --advertise-client-urls "$client" \
		--listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
		--initial-cluster "default=$peer" --initial-cluster-state new \
		--initial-cluster-token "bench-fleet-$$" >"$WORK/etcd.log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	for _ in $(seq 1 300); do
		ETCDCTL_API=3 etcdctl --endpoints "$client" --dial-timeout 1s endpoint health >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	tail -n 20 "$WORK/etcd.log" >&2
	echo "bench/fleet.sh: etcd did not answer on $client within 30s; its log is above" >&2
	exit 1
}

if [ -z "$ETCD" ]; then
	command -v etcd >/dev/null || { echo "bench/fleet.sh: no etcd here; install etcd-server, or give --etcd HOST:PORT" >&2; exit 2; }
	ETCD_PORT=$(etcd_port "$ETCD_PORT" 22379)
	ETCD_PEER_PORT=$(etcd_port "$ETCD_PEER_PORT" 22380)
	while [ "$ETCD_PEER_PORT" = "$ETCD_PORT" ]; do ETCD_PEER_PORT=$(low_port); done
	start_etcd
	ETCD=127.0.0.1:$ETCD_PORT
	echo "bench/fleet.sh: etcd on $ETCD (pid ${PIDS[-1]})" >&2
fi

if [ -z "${GATEKEEPER:-}" ]; then
	make -s build
	GATEKEEPER=bin/gatekeeper
fi
[ -n "${SCENARIO:-}" ] || { SCENARIO=$WORK/scenario; go build -o "$SCENARIO" ./bench/cmd/scenario; }

"$SCENARIO" --gatekeeper "$GATEKEEPER" --database bookstore --etcd "$ETCD" \
	--modes 'direct,sjf@auto,sjf@auto*2,sjf@auto*3,sjf@auto*2+fleet,sjf@auto*3+fleet' \
	--clients 400 --open 0 --out bench/results/fleet \
	--command "bench/fleet.sh $ALL" "${ARGS[@]}"
