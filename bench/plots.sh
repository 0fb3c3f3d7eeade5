#!/usr/bin/env bash
# Draws the plots of bookstore results again from the results.csv in each result's directory,
# with bench/cmd/scenario --replot, under the names the run gave them, and those of
# bench/overhead.sh's with bench/cmd/overhead. Only the headline plots are committed
# (bench/results/.gitignore); make plots draws the rest.
#
#   bench/plots.sh [DIR...]   (default: every directory under bench/results with a results.csv)
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=$(mktemp -d)
trap 'rm -rf "$BIN"' EXIT
${GO:-go} build -o "$BIN/scenario" ./bench/cmd/scenario
${GO:-go} build -o "$BIN/overhead" ./bench/cmd/overhead

[ $# -gt 0 ] || set -- bench/results/*/
for dir in "$@"; do
	dir=${dir%/}
	[ -f "$dir/results.csv" ] || continue
	if head -n 1 "$dir/results.csv" | grep -q '^workload,threads,round,target,'; then
		"$BIN/overhead" -csv "$dir/results.csv"
		continue
	fi
	head -n 1 "$dir/results.csv" | grep -q '^mode,loop,' || continue # not a bookstore run (saturation: no plots)
	# A run that charged each statement its busy time (backend_cpus 0, or before the option)
	# splits its responses into execution and wait; its report names no backend_cpus above 0.
	cpus=()
	grep -q 'backend_cpus [1-9]' "$dir/README.md" || cpus=(--backend-cpus 0)
	"$BIN/scenario" --replot "${cpus[@]}" --out "$dir"
done
