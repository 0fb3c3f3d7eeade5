#!/usr/bin/env bash
# What a hand-over to a new process (systemctl reload, POST /-/handover) costs the clients:
# --clients connections held through gatekeeper, each round a burst of one statement on
# every connection alone, then a hand-over and the same burst as soon as it is answered
# (bench/cmd/handover). Each mode (passthrough, pooled) runs with a fixed admission capacity
# (10s, which holds nothing back) and with the adaptive one (auto), so that what admission
# does with a burst shows apart from what the hand-over adds.
#
#   bench/handover.sh [--clients N] [--rounds N] [--out DIR]
#
# Defaults: 500 clients, 5 rounds, bench/results/handover. Writes DIR/README.md.
# Uses the backends of GK_PRIMARY when set, else starts its own (see bench/lib.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENTS=500 ROUNDS=5 OUT=bench/results/handover
while [ $# -gt 0 ]; do
	case $1 in
	--clients) CLIENTS=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench/handover.sh: unknown flag $1; see --help" >&2; exit 2 ;;
	esac
done
. bench/lib.sh
bench_setup 27306
GATEKEEPER=${GATEKEEPER:-$WORK/gatekeeper}
[ -x "$GATEKEEPER" ] || go build -o "$GATEKEEPER" ./cmd/gatekeeper
HANDOVER=$WORK/handover
(cd bench && go build -o "$HANDOVER" ./cmd/handover)
# The proxy runs from a copy in WORK: a hand-over starts the file at the running binary's path.
cp "$GATEKEEPER" "$WORK/gk"
printf 'users:\n  - user: %s\n    password: "%s"\n' "$GK_USER" "$GK_PASSWORD" >"$WORK/users.yaml"
chmod 600 "$WORK/users.yaml"
mkdir -p "$OUT"
{
	echo "# A hand-over under a burst of $CLIENTS clients"
	echo
	echo "Command: \`bench/handover.sh --clients $CLIENTS --rounds $ROUNDS\` ($(date -u +%F), gatekeeper $(git describe --always --dirty))."
	echo "Machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), shared."
	echo
	echo "Each round: one SELECT 1 on each of the $CLIENTS connections at once (alone), then POST /-/handover and, once it is answered, the same burst again (right after). Every connection is the same one at the end (CONNECTION_ID())."
} >"$OUT/README.md"
for mode in passthrough pooled; do
	for capacity in 10s auto; do
		port=$(low_port) admin=$(low_port)
		GATEKEEPER_MODE=$mode GATEKEEPER_ADMISSION_CAPACITY=$capacity GATEKEEPER_AUTH_USERS_FILE=$WORK/users.yaml \
			GATEKEEPER_LISTEN=127.0.0.1:$port GATEKEEPER_ADMIN_LISTEN=127.0.0.1:$admin GATEKEEPER_BACKENDS_PRIMARY=$GK_PRIMARY \
			GATEKEEPER_CLIENT_MAX_CONNECTIONS=$((CLIENTS + 100)) \
			"$WORK/gk" serve >"$WORK/gk-$mode-$capacity.log" 2>&1 &
		pid=$!
		PIDS+=("$pid")
		wait_login "$mode" "$pid" "$port" "$WORK/gk-$mode-$capacity.log"
		echo "bench/handover.sh: $mode, admission.capacity $capacity" >&2
		"$HANDOVER" -addr "127.0.0.1:$port" -admin "127.0.0.1:$admin" -user "$GK_USER" -password "$GK_PASSWORD" \
			-db "$GK_DATABASE" -clients "$CLIENTS" -rounds "$ROUNDS" >"$WORK/table" || {
			tail -n 20 "$WORK/gk-$mode-$capacity.log" >&2
			exit 1
		}
		serving=$(awk '/^serving / { print $2 }' "$WORK/table")
		{
			echo
			echo "## $mode, admission.capacity $capacity"
			echo
			grep '^|' "$WORK/table"
		} >>"$OUT/README.md"
		# The first process exited at the first hand-over; the last one serves now.
		wait "$pid" 2>/dev/null || true
		kill -TERM "$serving" 2>/dev/null || true
		for _ in $(seq 1 100); do # until it exits (or is a zombie no one reaps)
			{ [ -d "/proc/$serving" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$serving/status" 2>/dev/null; } || break
			sleep 0.1
		done
	done
done
cat "$OUT/README.md"
