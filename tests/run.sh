#!/usr/bin/env bash
# The test suite: ./run.sh test [--quick]. Prints "N passed, N failed,
# N skipped" last; exits non-zero when a test failed.
set -euo pipefail

# The tests send SIGINT and SIGHUP and expect what a terminal gives. A
# suite started with signals ignored (under nohup, as a background job
# of a script) would pass that on to every process it starts, and bash
# cannot undo an ignored signal it was started with: start again with
# the default handling.
if [ "${KCFI_LAB_TEST_SIGNALS:-}" != default ]; then
	export KCFI_LAB_TEST_SIGNALS=default
	exec env --default-signal=HUP,INT,QUIT,TERM,PIPE "$0" "$@"
fi

KCFI_LAB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export KCFI_LAB_ROOT
# shellcheck source=tests/lib.sh
. "$KCFI_LAB_ROOT/tests/lib.sh"

QUICK=""
ONLY=""
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) QUICK=1 ;;
	--only)
		ONLY=$2
		shift
		;;
	-h | --help)
		echo "usage: ./run.sh test [--quick] [--only REGEX]"
		exit 0
		;;
	*)
		echo "usage: ./run.sh test [--quick] [--only REGEX]" >&2
		exit 2
		;;
	esac
	shift
done

# This run's, not the suites its tests start.
KEEP_LOGS=${KCFI_LAB_TEST_LOGS:-}
unset KCFI_LAB_TEST_LOGS
TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/kcfi-lab-test.XXXXXX")
export TEST_TMP
# Every process this run starts carries its pid in the environment (a
# tmux server passes it on to its panes): the reaper ends those only,
# never a learner's QEMU or gdb that runs in the same home.
export KCFI_LAB_TEST_RUN=$$
# Inside a tmux the suite did not start, the lab would open its windows
# there: a server of its own for every test.
unset TMUX
# The files whose tests start no QEMU, gdb or tmux of this machine's
# and hold no lock of the lab's home that a main-lane test needs (they
# use homes of their own, or build a kernel the main lane does not use
# until they are done; the fresh-machine lanes' guests run in a root and
# a pid namespace of their own): they run in a second lane, beside the
# others (a guest boot keeps one core busy, these the other). A full-N
# file there starts when the main lane has run every file before it
# (the other kernels' builds and the lanes need the default kernel
# built); a main-lane test that switches to another kernel waits for
# the side lane's builds (wait_for_other_kernels). In --quick the static
# checks run beside the rest.
EVERY_KERNEL_FROM=full-5-kernels.sh
BESIDE=(quick-static.sh)
[ -n "$QUICK" ] || BESIDE+=(quick-cli.sh quick-exercises.sh full-1-kernels.sh full-1-lanes.sh)
SIDE_PID=""
# The side lane's files as it finishes them (a mutant's test has a
# TEST_TMP of its own: not derived from it).
SIDE_DONE="$TEST_TMP/side.done"
cleanup() {
	if [ -n "$SIDE_PID" ]; then
		kill -TERM -- "-$(cat "$TEST_TMP/side.test" 2>/dev/null || echo 0)" 2>/dev/null || true
		kill -TERM -- "-$SIDE_PID" 2>/dev/null || true
	fi
	# Every test's log, kept where KCFI_LAB_TEST_LOGS says (a passing
	# test's log shows where its time went).
	if [ -n "$KEEP_LOGS" ] && mkdir -p "$KEEP_LOGS"; then
		cp "$TEST_TMP"/test_*.log "$KEEP_LOGS/" 2>/dev/null || true
	fi
	rm -rf "$TEST_TMP"
}
trap cleanup EXIT

# Nothing here may load code into the host kernel: these shims record any
# call and the last test fails if one happened.
SHIMS="$TEST_TMP/shims"
mkdir -p "$SHIMS"
for tool in insmod modprobe rmmod kexec; do
	printf '#!/bin/sh\necho "%s $*" >>"%s/host-kernel-calls"\nexit 1\n' "$tool" "$TEST_TMP" >"$SHIMS/$tool"
	chmod +x "$SHIMS/$tool"
done
export PATH="$SHIMS:$PATH"

# The full suite installs what is missing first, then runs the quick
# tests, then the ones that need kernels.
files=("$KCFI_LAB_ROOT"/tests/quick-*.sh)
if [ -z "$QUICK" ]; then
	files=("$KCFI_LAB_ROOT"/tests/full-0-*.sh "${files[@]}" "$KCFI_LAB_ROOT"/tests/full-[1-9]-*.sh)
fi
for f in "${files[@]}"; do
	# shellcheck source=/dev/null
	. "$f"
done

passed=0 failed=0 skipped=0

# shellcheck source=tests/reap.sh
. "$KCFI_LAB_ROOT/tests/reap.sh"

run_test() {
	local name=$1 log="$TEST_TMP/$1.log" rc=0 start=$SECONDS before="" pid left
	[ -n "$SIDE_LANE" ] || before=$(lab_processes)
	# In the background, so that errexit holds inside the test (it is
	# ignored in a subshell that is the left side of "||"), and in a
	# process group of its own, so that reap_test finds all it started.
	# inherit_errexit: an assertion inside $(...) still stops the test.
	set -m
	(
		set -euo pipefail
		shopt -s inherit_errexit
		cd "$KCFI_LAB_ROOT"
		"$name"
	) >"$log" 2>&1 </dev/null &
	pid=$!
	set +m
	[ -z "$SIDE_LANE" ] || echo "$pid" >"$TEST_TMP/side.test"
	wait "$pid" || rc=$?
	left=$(reap_test "$pid" "$before")
	if [ -n "$left" ]; then
		printf '%s\n' "$left" >>"$log"
		if [ "$rc" = 0 ]; then
			echo "FAIL: the test left processes running" >>"$log"
			rc=1
		fi
	fi
	case "$rc" in
	0)
		passed=$((passed + 1))
		printf 'ok   %-52s %4ds\n' "$name" "$((SECONDS - start))"
		;;
	77)
		skipped=$((skipped + 1))
		printf 'skip %-52s %s\n' "$name" "$(grep -m1 '^SKIP:' "$log" | cut -c7-)"
		;;
	*)
		failed=$((failed + 1))
		printf 'FAIL %-52s %4ds\n' "$name" "$((SECONDS - start))"
		tail -n 25 "$log" | sed 's/^/     | /'
		;;
	esac
}

# run_file FILE: FILE's tests, in the order they are defined.
run_file() {
	local name
	while read -r name; do
		[ -z "$ONLY" ] || [[ "$name" =~ $ONLY ]] || continue
		run_test "$name"
	done < <(grep -oE '^test_[a-z0-9_]+' "$1")
}

is_beside() {
	local b
	for b in "${BESIDE[@]}"; do
		[ "${1##*/}" != "$b" ] || return 0
	done
	return 1
}

# start_side_lane: BESIDE's files, in the background, in a process group
# of their own; their report and counts go to files that finish_side_lane
# reads.
start_side_lane() {
	local f
	set -m
	(
		SIDE_LANE=1
		# Its own counts: the parent's so far (full-0's) stay the parent's.
		# shellcheck disable=SC2030 # this subshell's, written to side.counts
		passed=0 failed=0 skipped=0
		for f in "${files[@]}"; do
			is_beside "$f" || continue
			[[ "${f##*/}" != full-* ]] || wait_for_main_lane "$f"
			run_file "$f"
			echo "$f" >>"$SIDE_DONE"
		done
		echo "$passed $failed $skipped" >"$TEST_TMP/side.counts"
	) >"$TEST_TMP/side.out" 2>&1 &
	SIDE_PID=$!
	set +m
}

# wait_for_main_lane FILE: until the main lane has run every one of its
# files that comes before FILE (it writes each name to main.done).
wait_for_main_lane() {
	local f
	for f in "${files[@]}"; do
		[ "$f" != "$1" ] || return 0
		is_beside "$f" && continue
		until grep -qxF -- "$f" "$TEST_TMP/main.done" 2>/dev/null; do
			sleep 2
		done
	done
}

finish_side_lane() {
	local p f s
	[ -n "$SIDE_PID" ] || return 0
	wait "$SIDE_PID" || true
	SIDE_PID=""
	cat "$TEST_TMP/side.out"
	if read -r p f s <"$TEST_TMP/side.counts"; then
		# shellcheck disable=SC2031 # the parent's counts, not the side lane's
		passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	else
		failed=$((failed + 1))
		echo "FAIL the side lane ended without its counts"
	fi
}

# Setup (full-0) first, since the side lane's tests need its tools; then
# the side lane beside the rest, file by file.
SIDE_LANE=""
for f in "${files[@]}"; do
	if [ -z "$SIDE_PID" ] && [[ "${f##*/}" != full-0-* ]]; then
		start_side_lane
	fi
	is_beside "$f" && continue
	# From this file on, the main lane's files need every kernel: those
	# before it switch kernels through use_kernel, which waits.
	[[ "${f##*/}" != full-* || "${f##*/}" < "$EVERY_KERNEL_FROM" ]] || wait_for_other_kernels
	run_file "$f"
	echo "$f" >>"$TEST_TMP/main.done"
done
finish_side_lane

test_zz_host_kernel_untouched() {
	[ ! -s "$TEST_TMP/host-kernel-calls" ] ||
		fail "the lab called host kernel tools: $(cat "$TEST_TMP/host-kernel-calls")"
}
run_test test_zz_host_kernel_untouched

# The mutation test's count, when it ran (tests/full-7-mutations.sh).
[ ! -s "$TEST_TMP/mutations.txt" ] || sed -n 1p "$TEST_TMP/mutations.txt"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
