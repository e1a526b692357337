#!/usr/bin/env bash
# What a test left running, and how the suite ends it: the processes
# this run started (QEMU, gdb, tmux, the session launchers), never a
# learner's in the same home nor the other lane's. Sourced by
# tests/run.sh.

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
		# Started by this run, not by someone else in the same home.
		started_by_this_run "$pid" || continue
		# The side lane's own (make check runs gdb on the lab's tool
		# build) are the side lane's business.
		[ -z "${SIDE_PID:-}" ] || ! descends_from "$pid" "$SIDE_PID" || continue
		case "$cmd" in
		*"$KCFI_LAB_HOME/"* | *"$TEST_TMP/"* | *"kcfi-lab-test-$$"*) printf '%s %s\n' "$pid" "$cmd" ;;
		esac
	done
	return 0
}

# started_by_this_run PID: PID's environment holds this run's mark.
started_by_this_run() {
	tr '\0' '\n' 2>/dev/null <"/proc/$1/environ" | exact_line "KCFI_LAB_TEST_RUN=${KCFI_LAB_TEST_RUN:-none}"
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
