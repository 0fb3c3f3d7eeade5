# Shared by the bench scripts: a work directory, processes stopped at exit, backends.
#
#   . bench/lib.sh; bench_setup BACKENDS_PORT
#
# Sets WORK (removed at exit) and PIDS (processes to stop at exit: append to it). Uses the
# backends of GK_PRIMARY when set, else starts its own on BACKENDS_PORT.. and stops them at
# exit. Sets PRIMARY_PORT.

bench_setup() {
	BACKENDS_PORT=$1
	WORK=$(mktemp -d)
	PIDS=()
	trap bench_cleanup EXIT
	if [ -z "${GK_PRIMARY:-}" ]; then
		OWN_BACKENDS=1
		eval "$(GK_BACKENDS_DIR=$WORK/backends GK_BACKENDS_PORT=$BACKENDS_PORT scripts/test-backends.sh up)"
	fi
	PRIMARY_PORT=${GK_PRIMARY##*:}
}

bench_cleanup() {
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	if [ -n "${OWN_BACKENDS:-}" ]; then
		GK_BACKENDS_DIR=$WORK/backends GK_BACKENDS_PORT=$BACKENDS_PORT scripts/test-backends.sh down || true
	fi
	rm -rf "$WORK"
}

# free_port prints a TCP port free on the loopback interface.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
		echo $((20000 + RANDOM % 20000))
}
