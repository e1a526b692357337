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

TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/kcfi-lab-test.XXXXXX")
export TEST_TMP
# The files whose tests start no QEMU, gdb or tmux and take no lock of
# the lab's home (they use homes of their own): they run in a second
# lane, beside the others (a guest boot keeps one core busy, these the
# other). In --quick the static checks run beside the rest.
BESIDE=(quick-static.sh)
[ -n "$QUICK" ] || BESIDE+=(quick-cli.sh quick-exercises.sh)
SIDE_PID=""
cleanup() {
	if [ -n "$SIDE_PID" ]; then
		kill -TERM -- "-$(cat "$TEST_TMP/side.test" 2>/dev/null || echo 0)" 2>/dev/null || true
		kill -TERM -- "-$SIDE_PID" 2>/dev/null || true
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

# lab_processes: pid and command line of every QEMU, gdb and tmux process
# that belongs to this KCFI_LAB_HOME or to this suite.
lab_processes() {
	local pid cmd comm
	for pid in $(pgrep -f "qemu-system-|gdb-multiarch|tmux|$KCFI_LAB_HOME/run/" || true); do
		[ "$pid" != "$$" ] || continue
		cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || continue
		comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
		# By what runs, not by what its arguments mention: a side-lane
		# test's "ln -s" of every file in /usr/bin names tmux and this
		# run's TEST_TMP, and is none of the main lane's business.
		case "$comm" in
		qemu-system-* | gdb-multiarch | tmux*) ;;
		*) [[ "$cmd" == *"$KCFI_LAB_HOME/run/"* ]] || continue ;;
		esac
		# The side lane's own (make check runs gdb on the lab's tool
		# build) are the side lane's business.
		[ -z "${SIDE_PID:-}" ] || ! descends_from "$pid" "$SIDE_PID" || continue
		case "$cmd" in
		*"$KCFI_LAB_HOME/"* | *"$TEST_TMP/"* | *"kcfi-lab-test-$$"*) printf '%s %s\n' "$pid" "$cmd" ;;
		esac
	done
	return 0
}

# descends_from PID ANCESTOR: ANCESTOR is PID's parent, or its parent's,
# and so on.
descends_from() {
	local p=$1 stat
	while [ "$p" -gt 1 ]; do
		[ "$p" != "$2" ] || return 0
		stat=$(cat "/proc/$p/stat" 2>/dev/null) || return 1
		# The fields after the command name, which may hold spaces.
		stat=${stat##*) }
		read -r _ p _ <<<"$stat"
	done
	return 1
}

# reap_test PGID BEFORE: end what a test left behind, whether it passed
# or not, so that one failure never causes another: its process group,
# its tmux servers, and any new lab process (QEMU, gdb) started from
# elsewhere, e.g. by a tmux pane. Prints what it had to kill.
reap_test() {
	local pgid=$1 before=$2 sock _ pid cmd
	kill -TERM -- "-$pgid" 2>/dev/null || true
	for _ in $(seq 1 50); do
		kill -0 -- "-$pgid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL -- "-$pgid" 2>/dev/null || true
	# tmux servers and lab processes are the main lane's to look after:
	# the side lane starts none, and a tmux server or QEMU seen now
	# belongs to one of the main lane's tests (the suite's tmux sockets
	# are named after $$, the same in both lanes).
	[ -z "$SIDE_LANE" ] || return 0
	for sock in "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/kcfi-lab-test-$$"*; do
		[ -S "$sock" ] || continue
		tmux -S "$sock" kill-server 2>/dev/null || true
		rm -f "$sock"
	done
	local -a left=()
	while read -r pid cmd; do
		[ -n "$pid" ] || continue
		grep -qxF "$pid $cmd" <<<"$before" && continue
		echo "left running: $pid $cmd"
		kill -TERM "$pid" 2>/dev/null || true
		left+=("$pid")
	done < <(lab_processes)
	# Gone before the next test looks: one failure never causes another.
	[ "${#left[@]}" -gt 0 ] || return 0
	for _ in $(seq 1 50); do
		any_alive "${left[@]}" || return 0
		sleep 0.1
	done
	kill -KILL "${left[@]}" 2>/dev/null || true
}

# any_alive PID...: one of the processes still exists.
any_alive() {
	local p
	for p in "$@"; do
		! kill -0 "$p" 2>/dev/null || return 0
	done
	return 1
}

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
		for f in "${files[@]}"; do
			! is_beside "$f" || run_file "$f"
		done
		echo "$passed $failed $skipped" >"$TEST_TMP/side.counts"
	) >"$TEST_TMP/side.out" 2>&1 &
	SIDE_PID=$!
	set +m
}

finish_side_lane() {
	local p f s
	[ -n "$SIDE_PID" ] || return 0
	wait "$SIDE_PID" || true
	SIDE_PID=""
	cat "$TEST_TMP/side.out"
	if read -r p f s <"$TEST_TMP/side.counts"; then
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
	is_beside "$f" || run_file "$f"
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
