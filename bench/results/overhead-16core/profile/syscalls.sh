#!/usr/bin/env bash
# On the many-core machine: system calls per query of gatekeeper and of HAProxy (each on
# cores 6-9 with 4 threads) under sysbench oltp_point_select at 64 threads, with strace -c.
set -u
B=/opt/b; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
T=$PWD/devbench/tools
export LD_LIBRARY_PATH=$B/lib LUA_PATH="$B/share/sysbench/?.lua;;"
rm -rf /tmp/devdd && tar xzf $B/datadir.tgz -C /tmp
taskset -c 0-5 $B/bin/mariadbd --no-defaults --datadir=/tmp/devdd --socket=/tmp/ms.sock --port=3458 --bind-address=127.0.0.1 --user=root \
  --lc-messages-dir=$B/share/mysql --character-sets-dir=$B/share/mysql/charsets --max-connections=4000 \
  --innodb-buffer-pool-size=4G --innodb-flush-log-at-trx-commit=2 --thread-cache-size=512 > $OUT/mariadb.log 2>&1 &
DB=$!
for i in $(seq 1 60); do $B/bin/mariadb -uapp -papp -h127.0.0.1 -P3458 -e 'select 1' >/dev/null 2>&1 && break; sleep 0.5; done
SB="$B/bin/sysbench --mysql-host=127.0.0.1 --mysql-user=app --mysql-password=app --mysql-db=sbtest --tables=8 --table-size=100000"
taskset -c 10-15 $SB --mysql-port=3458 --threads=8 $B/share/sysbench/oltp_read_write.lua prepare > $OUT/prepare.log 2>&1
printf 'global\n  maxconn 8000\n  nbthread 4\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 1h\n  timeout server 1h\nlisten mysql\n  bind 127.0.0.1:6300\n  server db 127.0.0.1:3458\n' > /tmp/hs.cfg
taskset -c 6-9 $B/bin/haproxy -f /tmp/hs.cfg > $OUT/haproxy.log 2>&1 &
HAP=$!
GOMAXPROCS=4 taskset -c 6-9 bin/gatekeeper serve --listen 127.0.0.1:6333 --admin-listen 127.0.0.1:6380 --primary 127.0.0.1:3458 > $OUT/gk.log 2>&1 &
GK=$!
sleep 1
for t in gatekeeper:6333:$GK haproxy:6300:$HAP; do
  IFS=: read name port pid <<<"$t"
  taskset -c 10-15 $SB --mysql-port=$port --threads=64 --time=12 --report-interval=1 $B/share/sysbench/oltp_point_select.lua run > $OUT/sb-$name.log 2>&1 &
  SBP=$!
  sleep 3
  if [ -n "${STRACE:-}" ]; then
    LD_LIBRARY_PATH=$T:$B/lib timeout 6 $T/strace -c -f -p $pid -o $OUT/strace-$name.txt 2>/dev/null
  else
    read u0 s0 < <(awk '{print $14, $15}' /proc/$pid/stat)
    sleep 6
    read u1 s1 < <(awk '{print $14, $15}' /proc/$pid/stat)
    echo "$name: utime_ticks=$((u1-u0)) stime_ticks=$((s1-s0))" | tee -a $OUT/summary.txt
  fi
  wait $SBP
  echo "$name: $(awk '/queries:/ {print $2, $3}' $OUT/sb-$name.log)" | tee -a $OUT/summary.txt
done
kill $GK $HAP $DB; wait
