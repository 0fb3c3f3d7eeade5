#!/usr/bin/env bash
# Real MariaDB test backends without Docker: a primary and two replicas with GTID
# replication, as plain mariadbd processes in a state directory on loopback ports.
#
#   scripts/test-backends.sh up      start (or reuse) them; prints the env lines on stdout
#   scripts/test-backends.sh env     print their addresses and credentials as shell variables
#   scripts/test-backends.sh status  say how each server and the replication are doing
#   scripts/test-backends.sh down    stop what up started (by PID) and remove the directory
#
#   eval "$(scripts/test-backends.sh up)"
#
# Environment:
#   GK_BACKENDS_DIR   state directory (default ${TMPDIR:-/tmp}/gatekeeper-backends)
#   GK_BACKENDS_PORT  primary port (default 13306); the replicas use PORT+1 and PORT+2
#   GK_BACKENDS_MAX_CONNECTIONS  max_connections of each server (default 2000)
set -euo pipefail

DIR=${GK_BACKENDS_DIR:-${TMPDIR:-/tmp}/gatekeeper-backends}
PORT=${GK_BACKENDS_PORT:-13306}
MAX_CONNECTIONS=${GK_BACKENDS_MAX_CONNECTIONS:-2000}
NAMES=(primary replica1 replica2)
USER_NAME=gk USER_PASSWORD=gk DATABASE=gktest
ED_USER=gk_ed ED_PASSWORD=gked
REPL_USER=repl REPL_PASSWORD=repl-secret
START_TIMEOUT=60

log() { echo "test-backends: $*" >&2; }
die() { log "$*"; exit 1; }

port_of() {
	case $1 in
	primary) echo "$PORT" ;;
	replica1) echo $((PORT + 1)) ;;
	replica2) echo $((PORT + 2)) ;;
	esac
}
server_id_of() {
	case $1 in
	primary) echo 1 ;;
	replica1) echo 2 ;;
	replica2) echo 3 ;;
	esac
}
sock() { echo "$DIR/$1.sock"; }
pidfile() { echo "$DIR/$1.pid"; }

# Tools, by their MariaDB names or the older MySQL ones.
find_tool() {
	local t
	for t in "$@"; do
		if command -v "$t" >/dev/null 2>&1; then
			command -v "$t"
			return 0
		fi
		if [ -x "/usr/sbin/$t" ]; then
			echo "/usr/sbin/$t"
			return 0
		fi
	done
	return 1
}

install_packages() {
	local sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null 2>&1 || die "mariadb-server is missing and sudo is not available: install mariadb-server, mariadb-client and openssl"
		sudo=(sudo)
	fi
	log "installing $* with apt-get"
	"${sudo[@]}" apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "$@" >&2
}

ensure_tools() {
	local missing=()
	find_tool mariadbd mysqld >/dev/null || missing+=(mariadb-server)
	find_tool mariadb mysql >/dev/null || missing+=(mariadb-client)
	command -v openssl >/dev/null 2>&1 || missing+=(openssl)
	if [ ${#missing[@]} -gt 0 ]; then
		install_packages "${missing[@]}"
	fi
	MARIADBD=$(find_tool mariadbd mysqld) || die "mariadbd not found after installing mariadb-server"
	INSTALL_DB=$(find_tool mariadb-install-db mysql_install_db) || die "mariadb-install-db not found"
	CLIENT=$(find_tool mariadb mysql) || die "mariadb client not found"
	ADMIN=$(find_tool mariadb-admin mysqladmin) || die "mariadb-admin not found"
}

sql() { # sql NAME STATEMENTS...
	local name=$1
	shift
	"$CLIENT" --no-defaults --socket="$(sock "$name")" -uroot --batch --skip-column-names -e "$*"
}

replica_status() { # SHOW SLAVE STATUS, one "Name: value" a line
	"$CLIENT" --no-defaults --socket="$(sock "$1")" -uroot -e "SHOW SLAVE STATUS\G"
}

alive() { # the server answers on its socket
	[ -S "$(sock "$1")" ] && "$ADMIN" --no-defaults --socket="$(sock "$1")" -uroot --connect-timeout=2 ping >/dev/null 2>&1
}

running_pid() { # prints the PID if the process of the pid file runs
	local f
	f=$(pidfile "$1")
	local pid
	# A server that is shutting down removes its pid file, between a test and a read too.
	pid=$(cat "$f" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

make_certs() {
	local d="$DIR/certs"
	[ -f "$d/server.pem" ] && return 0
	mkdir -p "$d"
	log "generating a test CA and a server certificate for 127.0.0.1"
	openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=gatekeeper test CA" \
		-keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
		-keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n' >"$d/server.ext"
	openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
		-days 3650 -extfile "$d/server.ext" -out "$d/server.pem" 2>/dev/null
	chmod 0644 "$d"/*.pem "$d"/*.key
}

start_server() {
	local name=$1 port pool
	port=$(port_of "$name")
	if alive "$name" && running_pid "$name" >/dev/null; then
		return 0
	fi
	if ! [ -d "$DIR/$name/mysql" ]; then
		log "initialising $name"
		local as_user=()
		[ "$(id -u)" -eq 0 ] && as_user=(--user=root)
		"$INSTALL_DB" --no-defaults --datadir="$DIR/$name" --auth-root-authentication-method=normal \
			--skip-test-db "${as_user[@]}" >"$DIR/$name.install.log" 2>&1 ||
			{ tail -20 "$DIR/$name.install.log" >&2; die "mariadb-install-db failed for $name"; }
	fi
	pool=64M
	[ "$name" = primary ] && pool=256M
	local args=(
		--no-defaults --datadir="$DIR/$name" --socket="$(sock "$name")" --pid-file="$(pidfile "$name")"
		--log-error="$DIR/$name.err" --port="$port" --bind-address=127.0.0.1
		--server-id="$(server_id_of "$name")" --log-bin="$DIR/$name/binlog" --binlog-format=ROW
		--gtid-strict-mode=1 --log-slave-updates=1 --max-connections="$MAX_CONNECTIONS" --max-allowed-packet=1G
		--local-infile=1 --skip-name-resolve --performance-schema=OFF
		--innodb-buffer-pool-size=$pool --innodb-log-file-size=64M
		--innodb-flush-log-at-trx-commit=2 --sync-binlog=0 --plugin-load-add=auth_ed25519
		--ssl-ca="$DIR/certs/ca.pem" --ssl-cert="$DIR/certs/server.pem" --ssl-key="$DIR/certs/server.key"
		--character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci
	)
	# A replica applies the functions that tests create on the primary with
	# log_bin_trust_function_creators set there (MariaDB's own suite does).
	[ "$name" != primary ] && args+=(--read-only=1 --skip-slave-start --log-bin-trust-function-creators=1)
	[ "$(id -u)" -eq 0 ] && args+=(--user=root)
	log "starting $name on 127.0.0.1:$port"
	"$MARIADBD" "${args[@]}" >>"$DIR/$name.err" 2>&1 </dev/null &
	local deadline=$((SECONDS + START_TIMEOUT))
	until alive "$name"; do
		if ! kill -0 $! 2>/dev/null; then
			tail -30 "$DIR/$name.err" >&2
			die "$name exited during startup"
		fi
		if [ $SECONDS -ge $deadline ]; then
			tail -30 "$DIR/$name.err" >&2
			die "$name did not start within ${START_TIMEOUT}s"
		fi
		sleep 0.2
	done
}

setup_primary() {
	[ "$(sql primary "SELECT COUNT(*) FROM mysql.user WHERE user='$USER_NAME'")" = 1 ] && return 0
	log "creating users and databases on the primary"
	sql primary "
		CREATE USER '$USER_NAME'@'%' IDENTIFIED BY '$USER_PASSWORD';
		GRANT ALL PRIVILEGES ON *.* TO '$USER_NAME'@'%' WITH GRANT OPTION;
		CREATE USER '$ED_USER'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('$ED_PASSWORD');
		GRANT ALL PRIVILEGES ON *.* TO '$ED_USER'@'%';
		CREATE USER '$REPL_USER'@'%' IDENTIFIED BY '$REPL_PASSWORD';
		GRANT REPLICATION SLAVE ON *.* TO '$REPL_USER'@'%';
		CREATE DATABASE IF NOT EXISTS $DATABASE;
		CREATE DATABASE IF NOT EXISTS sbtest;"
}

setup_replica() {
	local name=$1
	if [ "$(sql "$name" "SELECT COUNT(*) FROM information_schema.processlist WHERE command='Slave_IO'")" -ge 1 ] 2>/dev/null; then
		return 0
	fi
	if [ -n "$(sql "$name" "SHOW SLAVE STATUS")" ]; then
		# Restarted on its datadir (after a crash, say): it goes on from the position it
		# kept, which a fresh start from the primary's first event would conflict with.
		log "resuming replication on $name"
		sql "$name" "START SLAVE"
		return 0
	fi
	log "starting replication on $name"
	# Nothing has been written to the replica's own binlog: it replicates everything from
	# the primary's first event.
	sql "$name" "
		SET GLOBAL gtid_slave_pos = '';
		CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$(port_of primary),
			MASTER_USER='$REPL_USER', MASTER_PASSWORD='$REPL_PASSWORD',
			MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1;
		START SLAVE;"
}

wait_replica() {
	local name=$1 pos got
	pos=$(sql primary "SELECT @@gtid_binlog_pos")
	got=$(sql "$name" "SELECT MASTER_GTID_WAIT('$pos', $START_TIMEOUT)")
	if [ "$got" != 0 ]; then
		replica_status "$name" >&2 || true
		die "$name did not catch up with the primary ($pos) within ${START_TIMEOUT}s"
	fi
}

print_env() {
	cat <<EOF
export GK_BACKENDS_DIR='$DIR'
export GK_PRIMARY=127.0.0.1:$(port_of primary)
export GK_PRIMARY_SOCKET='$(sock primary)'
export GK_REPLICA1=127.0.0.1:$(port_of replica1)
export GK_REPLICA2=127.0.0.1:$(port_of replica2)
export GK_REPLICAS=127.0.0.1:$(port_of replica1),127.0.0.1:$(port_of replica2)
export GK_USER=$USER_NAME
export GK_PASSWORD=$USER_PASSWORD
export GK_DATABASE=$DATABASE
export GK_ED25519_USER=$ED_USER
export GK_ED25519_PASSWORD=$ED_PASSWORD
export GK_TLS_CA='$DIR/certs/ca.pem'
export GK_TLS_CERT='$DIR/certs/server.pem'
export GK_TLS_KEY='$DIR/certs/server.key'
EOF
}

up() {
	ensure_tools
	mkdir -p "$DIR"
	make_certs
	local name
	for name in "${NAMES[@]}"; do
		start_server "$name" || { down; exit 1; }
	done
	setup_primary || { down; exit 1; }
	for name in replica1 replica2; do
		setup_replica "$name" || { down; exit 1; }
	done
	for name in replica1 replica2; do
		wait_replica "$name" || { down; exit 1; }
	done
	log "up: primary 127.0.0.1:$(port_of primary), replicas 127.0.0.1:$(port_of replica1) and 127.0.0.1:$(port_of replica2)"
	print_env
}

down() {
	local name pid deadline
	for name in "${NAMES[@]}"; do
		pid=$(running_pid "$name") || continue
		log "stopping $name (pid $pid)"
		kill -TERM "$pid" 2>/dev/null || true
	done
	for name in "${NAMES[@]}"; do
		pid=$(running_pid "$name") || continue
		deadline=$((SECONDS + 30))
		while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			log "$name (pid $pid) did not stop in 30s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
	case "$DIR" in
	"" | / | "$HOME") die "refusing to remove state directory '$DIR'" ;;
	esac
	rm -rf "$DIR"
}

status() {
	ensure_tools
	local name ok=0 pid
	for name in "${NAMES[@]}"; do
		if pid=$(running_pid "$name") && alive "$name"; then
			echo "$name: running (pid $pid) on 127.0.0.1:$(port_of "$name")"
		else
			echo "$name: not running"
			ok=1
		fi
	done
	for name in replica1 replica2; do
		alive "$name" || continue
		local st io sqlr gtid
		st=$(replica_status "$name")
		io=$(awk '/Slave_IO_Running:/{print $2}' <<<"$st")
		sqlr=$(awk '/Slave_SQL_Running:/{print $2}' <<<"$st")
		gtid=$(awk '/Gtid_IO_Pos:/{print $2}' <<<"$st")
		echo "$name: Slave_IO_Running=$io Slave_SQL_Running=$sqlr Gtid_IO_Pos=$gtid"
		[ "$io" = Yes ] && [ "$sqlr" = Yes ] || ok=1
	done
	return $ok
}

case ${1:-} in
up) up ;;
down) down ;;
env)
	ensure_tools
	for name in "${NAMES[@]}"; do
		alive "$name" || die "$name is not running; run: $0 up"
	done
	print_env
	;;
status) status ;;
*)
	echo "usage: $0 up|down|env|status" >&2
	exit 2
	;;
esac
