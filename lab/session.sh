#!/usr/bin/env bash
# The --gdb session: QEMU's console and gdb-multiarch side by side in tmux,
# and the console alone in tmux without --gdb. Sourced by run.sh.

# write_gdbinit ARCH PORT FILE: vmlinux, the kernel's lx- commands, the
# lab's scripts, attached to QEMU's gdbstub.
write_gdbinit() {
	local arch=$1 port=$2 file=$3 out home
	out=$(build_dir "$arch")
	# gdb's commands run ./run.sh kcfi: in this home and on this kernel,
	# whatever gdb's environment (a tmux pane's may lack both).
	home=$(python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$KCFI_LAB_HOME")
	# Written whole, then renamed: a reader never sees half a file.
	cat >"$file.tmp" <<-GDB
		set pagination off
		set confirm off
		python import os; os.environ["KCFI_LAB_HOME"] = $home; os.environ["KCFI_LAB_KERNEL"] = "$LAB_KERNEL"
		add-auto-load-safe-path $out
		file $out/vmlinux
		source $KCFI_LAB_ROOT/gdb-scripts/kcfi.py
		source $KCFI_LAB_ROOT/gdb-scripts/exercises.gdb
		target remote 127.0.0.1:$port
	GDB
	mv -f "$file.tmp" "$file"
}

# write_launcher FILE DIR CMD...: a script that runs CMD in a pane and
# then ends the session's QEMU, so that leaving either pane (Ctrl-a x in
# the console, quit in gdb) closes QEMU and gdb both (session_reaper
# closes the window and the rest).
write_launcher() {
	local file=$1 dir=$2
	shift 2
	{
		echo '#!/usr/bin/env bash'
		printf 'dir=%q\n' "$dir"
		# shellcheck disable=SC2016
		echo 'stop() { [ -f "$dir/qemu.pid" ] && kill "$(cat "$dir/qemu.pid")" 2>/dev/null; true; }'
		echo 'trap stop HUP TERM'
		printf '%q ' "$@"
		echo
		echo 'stop'
	} >"$file"
	chmod +x "$file"
}

wait_for_port() {
	local port=$1 _
	for _ in $(seq 1 100); do
		port_in_use "$port" && return 0
		sleep 0.1
	done
	return 1
}

# session_pids DIR: the processes started for a session: every command
# line that names DIR (QEMU's pid file and initrd, gdb's gdbinit, the
# launchers), except tmux's: a server that the session started keeps the
# first command line it was given, and may serve other sessions by now.
session_pids() {
	local pid comm
	for pid in $(pgrep -f -- "$1/"); do
		comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
		[[ "$comm" == tmux* ]] || echo "$pid"
	done
	return 0
}

# session_stop DIR SOCKET WINDOW: end one lab session: its QEMU, its gdb,
# the launchers, its directory, its tmux window. Safe to call twice.
session_stop() {
	local dir=$1 sock=$2 win=$3 _ pids
	# Each step may find its process gone already (a launcher's own
	# handler, a short-lived reader of DIR): never a reason to stop here.
	[ ! -f "$dir/qemu.pid" ] || kill "$(cat "$dir/qemu.pid" 2>/dev/null)" 2>/dev/null || true
	pids=$(session_pids "$dir")
	# shellcheck disable=SC2086 # a list of pids
	[ -z "$pids" ] || kill -TERM $pids 2>/dev/null || true
	for _ in $(seq 1 30); do
		pids=$(session_pids "$dir")
		[ -n "$pids" ] || break
		sleep 0.1
	done
	# shellcheck disable=SC2086
	[ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
	rm -rf "$dir"
	# The window last: once it is gone, so is the rest.
	[ -z "$win" ] || tmux -S "$sock" kill-window -t "$win" 2>/dev/null || true
	return 0
}

# process_id PID: PID and its start time (in clock ticks since boot),
# which together name one process even after PID is reused.
process_id() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	# Field 22, counted after the command name (field 2, in parentheses).
	stat=${stat##*) }
	read -r -a stat <<<"$stat"
	echo "$1 ${stat[19]}"
}

# session_reaper DIR SOCKET WINDOW: in the background, detached from the
# terminal: once the session's tmux window is gone (closed terminal,
# killed session or server, Ctrl-a x, quit in gdb) or its QEMU has
# exited, end everything the session started. Its own command line does
# not name DIR, so that session_stop spares it.
session_reaper() {
	# shellcheck disable=SC2016 # expanded by the reaper's bash
	KCFI_REAP_DIR=$1 KCFI_REAP_SOCK=$2 KCFI_REAP_WIN=$3 KCFI_LAB_ROOT=$KCFI_LAB_ROOT \
		setsid -f bash -c '
			. "$KCFI_LAB_ROOT/lab/session.sh"
			session_watch
		' </dev/null >/dev/null 2>&1
}

# session_alive DIR SOCKET WINDOW: the session's window is there, its
# QEMU runs, and the run.sh attached to it (DIR/attached) still runs.
session_alive() {
	local dir=$1 sock=$2 win=$3 pid wins owner now
	wins=$(tmux -S "$sock" list-windows -a -F '#{window_id}' 2>/dev/null) || return 1
	grep -qxF -- "$win" <<<"$wins" || return 1
	# A run.sh that ended while attached (its terminal closed, killed)
	# without ending the session: whatever the signal did, it is over.
	if owner=$(cat "$dir/attached" 2>/dev/null) && [ -n "$owner" ]; then
		now=$(process_id "${owner%% *}") || now=""
		[ "$now" = "$owner" ] || return 1
	fi
	[ -f "$dir/qemu.pid" ] || return 0
	pid=$(cat "$dir/qemu.pid" 2>/dev/null) || return 0
	kill -0 "$pid" 2>/dev/null
}

session_watch() {
	local dir=$KCFI_REAP_DIR sock=$KCFI_REAP_SOCK win=$KCFI_REAP_WIN
	trap '' HUP INT
	while [ -d "$dir" ] && session_alive "$dir" "$sock" "$win"; do
		sleep 0.5
	done
	session_stop "$dir" "$sock" "$win"
}

# run_session ARCH MODE PORT APPEND [FILE...]: console (and gdb on the
# gdbstub's PORT, when not empty) in tmux. A reaper
# ends QEMU and gdb once the window goes, however it goes; run.sh itself
# ends the session when its terminal closes or it is killed while the
# learner is attached.
run_session() {
	local arch=$1 mode=$2 port=$3 append=$4 name dir win="" sock=""
	shift 4
	name="kcfi-lab-$arch-$$"
	dir="$KCFI_LAB_HOME/run/$name"
	mkdir -p "$dir"
	local initrd
	initrd=$(guest_initrd "$arch" "" "$dir" "$@")
	qemu_args "$arch" "$initrd" "$mode" "$append" "$port" >"$dir/args"
	local -a qemu
	mapfile -t qemu <"$dir/args"
	qemu_note "$arch" "${qemu[0]}"
	qemu+=("${CONSOLE_ARGS[@]}" -pidfile "$dir/qemu.pid")
	write_launcher "$dir/console.sh" "$dir" "${qemu[@]}"
	# In a terminal of its own, run.sh attaches to the session: from here
	# on a closed terminal (HUP), a kill or a Ctrl-C before the attach
	# ends the session, whatever of it exists by then (the guest and gdb
	# run before the attach, so a terminal can close before it). The
	# handlers read win and sock when they run. A deliberate detach
	# later leaves the session running.
	local attach=""
	if [ -z "${TMUX:-}" ] && is_tty; then
		attach=1
		trap 'session_stop "$dir" "$sock" "$win"; exit 129' HUP
		trap 'session_stop "$dir" "$sock" "$win"; exit 143' TERM
		trap 'session_stop "$dir" "$sock" "$win"; exit 130' INT
	fi
	if [ -n "${TMUX:-}" ]; then
		win=$(tmux new-window -d -P -F '#{window_id}' -n "$name" "$dir/console.sh")
	else
		win=$(tmux new-session -d -P -F '#{window_id}' -s "$name" -x 200 -y 50 -n "$arch" "$dir/console.sh")
	fi
	sock=$(tmux display-message -p -t "$win" '#{socket_path}')
	tmux set-option -t "$win" remain-on-exit off >/dev/null 2>&1 || true
	# The console also goes to a log, as a scripted boot's does: what a
	# learner saw stays readable (and checkable) after the window closed.
	local log
	log=$(new_log "session-$arch")
	tmux pipe-pane -t "$win" "exec sed -u 's/\r\$//' >>'$log'" 2>/dev/null || true
	session_reaper "$dir" "$sock" "$win"
	if [ -n "$port" ]; then
		if ! wait_for_port "$port"; then
			session_stop "$dir" "$sock" "$win"
			die "QEMU's gdbstub did not open 127.0.0.1:$port"
		fi
		write_gdbinit "$arch" "$port" "$dir/gdbinit"
		write_launcher "$dir/gdb.sh" "$dir" gdb-multiarch -q -x "$dir/gdbinit"
		tmux split-window -h -t "$win" "$dir/gdb.sh"
		info "gdb is attached to 127.0.0.1:$port with QEMU halted: set breakpoints, then 'continue'"
	fi
	local kind=session
	[ -z "${TMUX:-}" ] || kind=window
	info "tmux $kind '$name': QEMU console${port:+ | gdb}; Ctrl-a x in the console or 'quit' in gdb closes it (console log: $log)"
	if [ -n "${TMUX:-}" ]; then
		tmux select-window -t "$win"
	elif [ -n "$attach" ]; then
		# While attached, the reaper ends the session if run.sh ends
		# (a signal its handlers could not see: a KILL, a hangup that
		# never came); a detach or a finished session removes the mark.
		process_id "$$" >"$dir/attached.tmp" && mv -f "$dir/attached.tmp" "$dir/attached"
		tmux attach-session -t "$name" || true
		# tmux's client also leaves when the terminal goes away, maybe
		# before the hangup reaches run.sh, or with SIGHUP ignored (nohup):
		# without a terminal now, this was no detach.
		if ! is_tty; then
			session_stop "$dir" "$sock" "$win"
			exit 129
		fi
		rm -f "$dir/attached"
		trap - HUP TERM INT
		[ ! -d "$dir" ] || info "detached; 'tmux attach -t $name' returns to the session"
	else
		info "no terminal: attach with 'tmux attach -t $name'"
	fi
}
