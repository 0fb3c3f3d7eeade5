#!/usr/bin/env bash
# On the many-core machine, with a devbench bundle unpacked at /opt/b (bin/gatekeeper the
# build to profile): a CPU profile of gatekeeper passthrough, admission off (GOMAXPROCS=4 on
# cores 6-9), under sysbench oltp_point_select at 64 threads (cores 10-15), MariaDB on 0-5,
# and the proxy's user and system ticks over the sysbench run.
set -u
B=/opt/b; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
rm -rf /tmp/devdd && tar xzf $B/datadir.tgz -C /tmp
export LD_LIBRARY_PATH=$B/lib LUA_PATH="$B/share/sysbench/?.lua;;"
taskset -c 0-5 $B/bin/mariadbd --no-defaults --datadir=/tmp/devdd --socket=/tmp/mp.sock --port=3457 --bind-address=127.0.0.1 --user=root \
  --lc-messages-dir=$B/share/mysql --character-sets-dir=$B/share/mysql/charsets --max-connections=4000 \
  --innodb-buffer-pool-size=4G --innodb-flush-log-at-trx-commit=2 --thread-cache-size=512 > /tmp/mariadb.log 2>&1 &
DB=$!
for _ in $(seq 1 60); do $B/bin/mariadb -uapp -papp -h127.0.0.1 -P3457 -e 'select 1' >/dev/null 2>&1 && break; sleep 0.5; done
SB="$B/bin/sysbench --mysql-host=127.0.0.1 --mysql-user=app --mysql-password=app --mysql-db=sbtest --tables=4 --table-size=20000"
taskset -c 10-15 $SB --mysql-port=3457 --threads=4 $B/share/sysbench/oltp_point_select.lua prepare > /tmp/prepare.log 2>&1
printf 'mode: passthrough\nlisten: 127.0.0.1:6233\nadmin:\n  listen: 127.0.0.1:6280\n  pprof: true\nadmission:\n  enabled: false\nbackends:\n  primary: 127.0.0.1:3457\n' > /tmp/gkp.yaml
GOMAXPROCS=4 taskset -c 6-9 $B/bin/gatekeeper serve --config /tmp/gkp.yaml > /tmp/gk.log 2>&1 &
GK=$!
sleep 1
fetch() { curl -s "$1" -o "$2" 2>/dev/null || python3 -c "import sys,urllib.request;open(sys.argv[2],'wb').write(urllib.request.urlopen(sys.argv[1]).read())" "$1" "$2"; }
c0=$(awk '{print $14, $15}' /proc/$GK/stat)
taskset -c 10-15 $SB --mysql-port=6233 --threads=64 --time=14 $B/share/sysbench/oltp_point_select.lua run > /tmp/sb.log 2>&1 &
SBP=$!
sleep 2; fetch "http://127.0.0.1:6280/debug/pprof/profile?seconds=10" "$OUT/cpu-point-64.pprof"
wait $SBP
c1=$(awk '{print $14, $15}' /proc/$GK/stat)
echo "$(grep queries: /tmp/sb.log) user and system ticks before '$c0' after '$c1'" | tee "$OUT/profile.txt"
kill $GK $DB; wait 2>/dev/null
