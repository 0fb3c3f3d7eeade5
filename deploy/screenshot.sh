#!/usr/bin/env bash
# Draws deploy/prometheus/headline.png: Prometheus's own graph page, in headless Chromium,
# for the three headline queries of the dashboard (units completed, admission capacity
# against load, admission wait p95), while gatekeeper runs a sysbench load with a burst of
# slow statements through admission. Grafana is not packaged for Debian, so the picture is
# Prometheus's; the dashboard's queries are the same.
#
#   deploy/screenshot.sh [--time SECONDS] [--out FILE]
#
# Needs prometheus, chromium and sysbench (apt-get install prometheus chromium sysbench).
# Uses the backends of GK_PRIMARY when set, else starts its own.
set -euo pipefail
cd "$(dirname "$0")/.."

TIME=90 OUT=deploy/prometheus/headline.png
while [ $# -gt 0 ]; do
	case $1 in
	--time) TIME=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	*) echo "usage: $0 [--time SECONDS] [--out FILE]" >&2; exit 2 ;;
	esac
done
for tool in prometheus chromium sysbench; do
	command -v "$tool" >/dev/null || { echo "$tool is not installed (apt-get install $tool)" >&2; exit 1; }
done

. bench/lib.sh
bench_setup 35306
make -s build

LISTEN=127.0.0.1:$(free_port) ADMIN=127.0.0.1:$(free_port) PROM=127.0.0.1:$(free_port)
cat >"$WORK/gatekeeper.yaml" <<EOF
listen: $LISTEN
admin:
  listen: $ADMIN
backends:
  primary: $GK_PRIMARY
admission:
  enabled: true
  capacity: 20ms
  queue_timeout: 2s
EOF
bin/gatekeeper serve --config "$WORK/gatekeeper.yaml" 2>"$WORK/gatekeeper.log" &
PIDS+=($!)
cat >"$WORK/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $PWD/deploy/prometheus/alerts.yml
scrape_configs:
  - job_name: gatekeeper
    static_configs:
      - targets: ["$ADMIN"]
EOF
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
	--web.listen-address="$PROM" --log.level=warn 2>"$WORK/prometheus.log" &
PIDS+=($!)
for _ in $(seq 100); do
	curl -fs "http://$ADMIN/readyz" >/dev/null && curl -fs "http://$PROM/-/ready" >/dev/null && break
	sleep 0.2
done

SB=(sysbench --db-driver=mysql --mysql-host="${LISTEN%:*}" --mysql-port="${LISTEN##*:}"
	--mysql-user="$GK_USER" --mysql-password="$GK_PASSWORD" --mysql-db="$GK_DATABASE"
	--tables=2 --table-size=10000)
"${SB[@]}" oltp_read_only prepare >/dev/null
# A steady read load for the whole run, and from a third of the way in, for a third of it,
# 16 clients sending slow statements that fill the capacity and queue.
"${SB[@]}" --threads=8 --time="$TIME" --rate=400 oltp_read_only run >"$WORK/sysbench.log" &
PIDS+=($!)
sleep $((TIME / 3))
slow_pids=()
for _ in $(seq 16); do
	(
		end=$((SECONDS + TIME / 3))
		while [ $SECONDS -lt $end ]; do
			mariadb --no-defaults -h"${LISTEN%:*}" -P"${LISTEN##*:}" -u"$GK_USER" -p"$GK_PASSWORD" \
				"$GK_DATABASE" -e "/* gk:type=report */ SELECT SLEEP(0.05), COUNT(*) FROM sbtest1" \
				>/dev/null 2>&1 || true
		done
	) &
	slow_pids+=($!)
done
wait "${slow_pids[@]}"
sleep $((TIME - 2 * (TIME / 3)))
"${SB[@]}" oltp_read_only cleanup >/dev/null
grep -E 'transactions:|queries:|FATAL' "$WORK/sysbench.log" >&2 || true

# Prometheus's graph page: one panel per query, over the run.
range=$((TIME + 10))s
q() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
url="http://$PROM/graph?"
i=0
for expr in \
	'sum by (kind) (rate(gatekeeper_units_total[5s]))' \
	'{__name__=~"gatekeeper_admission_(capacity|load)_seconds"}' \
	'histogram_quantile(0.95, sum by (le) (rate(gatekeeper_admission_wait_seconds_bucket[5s])))'; do
	url+="g$i.expr=$(q "$expr")&g$i.tab=0&g$i.range_input=$range&g$i.stacked=0&"
	i=$((i + 1))
done
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,2250 \
	--virtual-time-budget=15000 --screenshot="$PWD/$OUT" "$url" 2>/dev/null
echo "screenshot: $OUT"
