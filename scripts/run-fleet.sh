#!/usr/bin/env bash
# A local fleet: an etcd server, the MariaDB backends of scripts/test-backends.sh, and two
# gatekeeper proxies (pooled, reads routed to both replicas) that share each backend's
# capacity and take their shared settings from etcd. Ctrl-C stops the proxies and etcd; the
# MariaDB servers stay up (GK_BACKENDS_DIR=... scripts/test-backends.sh down stops them).
#
#   scripts/run-fleet.sh            (make run-fleet)
#
# BIN is the gatekeeper binary (default bin/gatekeeper), GK_BACKENDS_DIR where the backends
# live, ETCD_PORT etcd's client port (default 2379; peers on the next port).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/gatekeeper}
ETCD_PORT=${ETCD_PORT:-2379}
command -v etcd >/dev/null || { echo "run-fleet: etcd is not installed: apt-get install etcd-server etcd-client" >&2; exit 2; }
scripts/test-backends.sh up >/dev/null
eval "$(scripts/test-backends.sh env)"

work=$(mktemp -d "${TMPDIR:-/tmp}/gatekeeper-fleet.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

url=http://127.0.0.1:$ETCD_PORT peer=http://127.0.0.1:$((ETCD_PORT + 1))
etcd --name default --data-dir "$work/etcd" --listen-client-urls "$url" --advertise-client-urls "$url" \
	--listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" --initial-cluster "default=$peer" \
	--log-level error >"$work/etcd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	etcdctl --endpoints "$url" endpoint health >/dev/null 2>&1 && break
	sleep 0.1
done
etcdctl --endpoints "$url" endpoint health >/dev/null 2>&1 || { echo "run-fleet: etcd did not start:" >&2; cat "$work/etcd.log" >&2; exit 1; }

for i in 0 1; do
	GATEKEEPER_MODE=pooled GATEKEEPER_AUTH_FROM_BACKEND=true \
	GATEKEEPER_MONITOR_USER="$GK_USER" GATEKEEPER_MONITOR_PASSWORD="$GK_PASSWORD" \
	GATEKEEPER_FLEET_ETCD="127.0.0.1:$ETCD_PORT" GATEKEEPER_FLEET_NAME="gk$((i + 1))" \
	GATEKEEPER_LISTEN="127.0.0.1:$((6033 + i))" GATEKEEPER_ADMIN_LISTEN="127.0.0.1:$((6080 + i))" \
		"$BIN" serve --primary "$GK_PRIMARY" --replica "$GK_REPLICA1" --replica "$GK_REPLICA2" \
		>"$work/gk$((i + 1)).log" 2>&1 &
	pids+=($!)
done
cat <<MSG
run-fleet: etcd at 127.0.0.1:$ETCD_PORT; proxies gk1 on 127.0.0.1:6033 (admin :6080) and gk2 on 127.0.0.1:6034 (admin :6081)
run-fleet: connect with: mariadb -h127.0.0.1 -P6033 -u$GK_USER -p$GK_PASSWORD $GK_DATABASE
run-fleet: the fleet: curl -s http://127.0.0.1:6080/api/v1/fleet; bin/gatekeeper top --admin 127.0.0.1:6081
run-fleet: a shared setting: etcdctl --endpoints 127.0.0.1:$ETCD_PORT put /gatekeeper/config/admission.capacity 120ms
run-fleet: logs in $work; Ctrl-C stops the proxies and etcd
MSG
wait -n "${pids[@]}"
echo "run-fleet: a process ended; stopping the others (logs follow)" >&2
tail -n 20 "$work"/*.log >&2
