#!/usr/bin/env bash
# Run every fuzz target of the repository in turn, each for FUZZTIME:
#
#   scripts/fuzz.sh [REGEXP]        # only the targets whose names match REGEXP
#   make fuzz FUZZTIME=10m
#
# The targets are found anew each run (every `func Fuzz...` in a *_test.go file). For each
# the script prints the executions, the new interesting inputs (go test keeps them in its
# cache's fuzz corpus, $(go env GOCACHE)/fuzz) and the outcome. A failing target does not
# stop the run: go test -fuzz has written the failing input to the target's
# testdata/fuzz/<Target>/, where plain `go test` runs it from then on as a regression input
# (commit it with the fix); the script names the target, the file and the failure, goes on
# with the next target, and exits 1 at the end.
#
# Environment:
#   FUZZTIME  how long each target runs (go test -fuzztime: 1m, 10m, 100000x); default 1m
#   GO        the go command; default go
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-1m}
filter=${1:-.}

log() { echo "fuzz: $*"; }

# "package-dir target" for every fuzz target, in a stable order.
mapfile -t targets < <(
	grep -rn --include='*_test.go' --exclude-dir=.git --exclude-dir=testdata --exclude-dir=vendor '^func Fuzz' . |
		sed -E 's|^\./(.*/)?[^/]+_test\.go:[0-9]+:func (Fuzz[A-Za-z0-9_]*)\(.*|\1 \2|' |
		awk '{ d = $1; n = $2; if (n == "") { n = d; d = "." } sub(/\/$/, "", d); print d, n }' |
		grep -E " .*${filter}" | sort -u
)
if [ ${#targets[@]} -eq 0 ]; then
	log "no fuzz target matches '$filter'"
	exit 1
fi
log "${#targets[@]} targets, $FUZZTIME each"

summary=()
failed=0
for t in "${targets[@]}"; do
	read -r dir name <<<"$t"
	out=$(mktemp)
	start=$SECONDS
	log "$dir $name: running for $FUZZTIME"
	status=0
	"$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "./$dir" >"$out" 2>&1 || status=$?
	# The last progress line: "fuzz: elapsed: 1m0s, execs: 123 (2/sec), new interesting: 4 (total: 40)".
	progress=$(grep -E '^fuzz: elapsed: .*execs: ' "$out" | tail -1 || true)
	execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$progress")
	fresh=$(sed -nE 's/.*new interesting: ([0-9]+).*/\1/p' <<<"$progress")
	total=$(sed -nE 's/.*\(total: ([0-9]+)\).*/\1/p' <<<"$progress")
	line="$dir $name: ${execs:-?} executions, ${fresh:-?} new interesting inputs (corpus ${total:-?}), $((SECONDS - start))s"
	if [ "$status" -ne 0 ]; then
		input=$(sed -nE 's/.*Failing input written to (testdata\/fuzz\/[^ ]+).*/\1/p' "$out" | tail -1)
		log "FAILED: $line"
		if [ -n "$input" ]; then
			log "the failing input is $dir/$input; go test ./$dir now runs it as a regression input:"
			head -c 2000 "$dir/$input"
			echo
		else
			log "no failing input was written (a seed corpus entry failed, or the build did)"
		fi
		sed -n '/--- FAIL/,$p' "$out" | head -60
		grep -q -- '--- FAIL' "$out" || tail -40 "$out"
		rm -f "$out"
		summary+=("FAILED: $line")
		failed=1
		continue
	fi
	rm -f "$out"
	log "ok: $line"
	summary+=("$line")
done
if [ "$failed" -ne 0 ]; then
	log "some targets failed:"
else
	log "every target passed:"
fi
printf '  %s\n' "${summary[@]}"
exit "$failed"
