#!/usr/bin/env bash
# Runs the full test suite N times in a row while a CPU hog keeps one core
# busy, for docs/performance.md: the suite must pass on a loaded machine.
#
#   bench/suite-under-load.sh [N]     (default 3)
#
# Prints one line per run: its number, the suite's last two lines (the
# mutation count and the totals) and the wall time. Exits non-zero when a
# run failed. The hog goes however the script ends.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${1:-3}
case "$RUNS" in '' | *[!0-9]*) echo "usage: bench/suite-under-load.sh [N]" >&2 && exit 2 ;; esac

HOG=""
# shellcheck disable=SC2317 # run by the EXIT trap
stop_hog() {
	[ -z "$HOG" ] || kill "$HOG" 2>/dev/null || true
}
trap stop_hog EXIT

# One busy process: a core's worth of load, wherever the scheduler puts it.
bash -c 'while :; do :; done' &
HOG=$!

logs=$(mktemp -d)
echo "machine: $(nproc) cores, load: one busy loop (pid $HOG)"
failed=0
for n in $(seq 1 "$RUNS"); do
	start=$SECONDS rc=0
	"$ROOT/run.sh" test >"$logs/run-$n.log" 2>&1 || rc=$?
	t=$((SECONDS - start))
	[ "$rc" = 0 ] || failed=1
	printf 'run %d: exit %d, %dm%02ds: %s\n' "$n" "$rc" $((t / 60)) $((t % 60)) \
		"$(tail -n 2 "$logs/run-$n.log" | paste -sd' ')"
	[ "$rc" = 0 ] || grep -A25 '^FAIL' "$logs/run-$n.log" | sed 's/^/    /'
done
echo "logs: $logs"
exit "$failed"
