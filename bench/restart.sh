#!/usr/bin/env bash
# A restarted proxy under load: does the adaptive capacity resume where it was, and do the
# first seconds after a restart do as well as a static capacity?
#
#   bench/restart.sh [--clients LIST] [--rounds N] [--static D] [--out DIR]
#
# The bookstore (shopping mix, --clients closed-loop clients, default 50,200) runs through
# gatekeeper with sjf: capacity auto, with a state file (estimator.state_file) that each
# cell's proxy saves when stopped (SIGTERM) and the next cell's proxy of the mode resumes
# from, and sjf at a static --static capacity (default 180ms, bench-quick's). Every cell is a
# fresh proxy that gets its clients at once and is measured from its first second for 15 s,
# with no warm-up: for the auto mode, every cell after its first is the first 15 s after a
# restart under load (the clients of the cell before have stopped; the new ones start with
# the proxy, on the bookstore loaded afresh). The mode's first cell (the first count of
# --clients, round 1) starts cold; every later one resumes from the cell before it, the
# next count's round 1 from the last count's last round. --rounds restarts a count after
# its round 1 (default 3). The modes alternate order by round. Writes --out (default bench/results/capacity-restart): the
# scenario's report and trace (capacity.csv), and restarts.md, each run's throughput and
# short-interaction mean, restarts against the static capacity's run of the same round.
#
# Uses the backends of GK_PRIMARY when set, else starts its own (see bench/lib.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENTS=50,200 ROUNDS=3 STATIC=180ms OUT=bench/results/capacity-restart
while [ $# -gt 0 ]; do
	case $1 in
	--clients) CLIENTS=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--static) STATIC=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench/restart.sh: unknown flag $1; see --help" >&2; exit 2 ;;
	esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "bench/restart.sh: --rounds takes a positive whole number, not '$ROUNDS'" >&2; exit 2; }
mkdir -p "$OUT"
LOG=$OUT/runs.log
bench/bookstore.sh --modes "sjf@auto,sjf@$STATIC" --clients "$CLIENTS" --warmup 0s --duration 15s \
	--repeat $((ROUNDS + 1)) --open 0 --keep-state --out "$OUT" 2>&1 | tee "$LOG"
{
	echo "# The first 15 s after a restart"
	echo
	echo "Command: \`bench/restart.sh --clients $CLIENTS --rounds $ROUNDS --static $STATIC --out $OUT\` ($(date -u +%F))."
	echo "The first cell of sjf@auto (the first count's round 1) starts cold; every later cell's proxy resumes from the state the cell before saved on stopping."
	echo
	echo "| clients | round | sjf@auto interactions/s | sjf@$STATIC interactions/s | ratio | sjf@auto short ms | sjf@$STATIC short ms |"
	echo "|---:|---:|---:|---:|---:|---:|---:|"
	awk -v static="sjf@$STATIC" '
		/ closed .* clients, run [0-9]+:/ {
			mode = $1; n = $3; run = $6; sub(":", "", run); tput = $7; sub("/s", "", tput)
			for (i = 1; i <= NF; i++) if ($i == "short") short = $(i + 1)
			key = n " " run
			if (mode == "sjf@auto") { a[key] = tput; as[key] = short } else if (mode == static) { s[key] = tput; ss[key] = short }
			keys[key] = 1
		}
		END {
			for (k in keys) if ((k in a) && (k in s)) {
				split(k, p, " ")
				printf "| %s | %s | %s | %s | %.2f | %s | %s |\n", p[1], p[2], a[k], s[k], a[k] / s[k], as[k], ss[k]
			}
		}' "$LOG" | sort -t'|' -k2,2n -k3,3n
} >"$OUT/restarts.md"
cat "$OUT/restarts.md"
