#!/usr/bin/env bash
# On the many-core machine: a CPU profile of gatekeeper passthrough (GOMAXPROCS=4 on cores
# 6-9) under sysbench oltp_point_select at 64 threads (cores 10-15), MariaDB on 0-5.
set -u
B=/opt/b; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
[ -x $B/bin/mariadbd ] || { mkdir -p $B && tar xzf devbench/bundle.tgz -C $B; }
rm -rf /tmp/devdd && tar xzf $B/datadir.tgz -C /tmp
export LD_LIBRARY_PATH=$B/lib LUA_PATH="$B/share/sysbench/?.lua;;"
pkill -f 'mariadbd.*3457' 2>/dev/null
taskset -c 0-5 $B/bin/mariadbd --no-defaults --datadir=/tmp/devdd --socket=/tmp/mp.sock --port=3457 --bind-address=127.0.0.1 --user=root \
  --lc-messages-dir=$B/share/mysql --character-sets-dir=$B/share/mysql/charsets --max-connections=4000 \
  --innodb-buffer-pool-size=4G --innodb-flush-log-at-trx-commit=2 --thread-cache-size=512 > $OUT/mariadb.log 2>&1 &
DB=$!
for i in $(seq 1 60); do $B/bin/mariadb -uapp -papp -h127.0.0.1 -P3457 -e 'select 1' >/dev/null 2>&1 && break; sleep 0.5; done
SB="$B/bin/sysbench --mysql-host=127.0.0.1 --mysql-user=app --mysql-password=app --mysql-db=sbtest --tables=8 --table-size=100000"
taskset -c 10-15 $SB --mysql-port=3457 --threads=8 $B/share/sysbench/oltp_read_write.lua prepare > $OUT/prepare.log 2>&1
printf 'listen: 127.0.0.1:6233\nadmin:\n  listen: 127.0.0.1:6280\n  pprof: true\nbackends:\n  primary: 127.0.0.1:3457\n' > /tmp/gkp.yaml
GOMAXPROCS=4 taskset -c 6-9 bin/gatekeeper serve --config /tmp/gkp.yaml > $OUT/gk.log 2>&1 &
GK=$!
sleep 1
fetch() { curl -s "$1" -o "$2" 2>/dev/null || wget -q -O "$2" "$1" 2>/dev/null || python3 -c "import sys,urllib.request;open(sys.argv[2],'wb').write(urllib.request.urlopen(sys.argv[1]).read())" "$1" "$2"; }
for th in 64 16; do
  c0=$(awk '{print $14+$15}' /proc/$GK/stat)
  taskset -c 10-15 $SB --mysql-port=6233 --threads=$th --time=20 $B/share/sysbench/oltp_point_select.lua run > $OUT/sb-$th.log 2>&1 &
  SBP=$!
  sleep 3; fetch "http://127.0.0.1:6280/debug/pprof/profile?seconds=12" $OUT/cpu-point-$th.pprof
  wait $SBP
  c1=$(awk '{print $14+$15}' /proc/$GK/stat)
  q=$(awk '/queries:/ {print $2}' $OUT/sb-$th.log)
  echo "threads=$th queries=$q gk_cpu_ticks=$((c1-c0)) us_per_query=$(awk -v d=$((c1-c0)) -v q=$q 'BEGIN{printf "%.1f", d*10000/q}')" | tee -a $OUT/summary.txt
done
kill $GK $DB; wait
