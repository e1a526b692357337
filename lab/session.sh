#!/usr/bin/env bash
# The --gdb session: QEMU's console and gdb-multiarch side by side in tmux,
# and the console alone in tmux without --gdb. Sourced by run.sh.

# write_gdbinit ARCH PORT FILE: vmlinux, the kernel's lx- commands, the
# lab's scripts, attached to QEMU's gdbstub.
write_gdbinit() {
	local arch=$1 port=$2 file=$3 out
	out=$(build_dir "$arch")
	cat >"$file" <<-GDB
		set pagination off
		set confirm off
		add-auto-load-safe-path $out
		file $out/vmlinux
		source $KCFI_LAB_ROOT/gdb-scripts/kcfi.py
		source $KCFI_LAB_ROOT/gdb-scripts/exercises.gdb
		target remote 127.0.0.1:$port
	GDB
}

# launcher FILE CMD...: a script that runs CMD, then ends the tmux window,
# so that closing either pane closes QEMU and gdb both.
write_launcher() {
	local file=$1 dir=$2 target=$3
	shift 3
	{
		echo '#!/usr/bin/env bash'
		printf 'dir=%q\n' "$dir"
		# shellcheck disable=SC2016
		echo 'stop() { [ -f "$dir/qemu.pid" ] && kill "$(cat "$dir/qemu.pid")" 2>/dev/null; true; }'
		echo 'trap stop HUP TERM'
		printf '%q ' "$@"
		echo
		echo 'stop'
		printf 'tmux kill-window -t %q 2>/dev/null\n' "$target"
		# shellcheck disable=SC2016
		echo 'rm -rf "$dir"'
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

# run_session ARCH MODE: console (and gdb with --gdb) in tmux.
run_session() {
	local arch=$1 mode=$2 name dir port="" target
	name="kcfi-lab-$arch-$$"
	dir="$KCFI_LAB_HOME/run/$name"
	mkdir -p "$dir"
	[ -n "${OPT_GDB:-}" ] && port=$(gdb_port)
	local initrd
	initrd=$(guest_initrd "$arch" "" "$dir")
	qemu_args "$arch" "$initrd" "$mode" "$port" >"$dir/args"
	local -a qemu
	mapfile -t qemu <"$dir/args"
	qemu+=(-nographic -pidfile "$dir/qemu.pid")
	target="$name"
	[ -n "${TMUX:-}" ] || target="$name:0"
	write_launcher "$dir/console.sh" "$dir" "$target" "${qemu[@]}"
	if [ -n "${TMUX:-}" ]; then
		tmux new-window -d -n "$name" "$dir/console.sh"
	else
		tmux new-session -d -s "$name" -x 200 -y 50 -n "$arch" "$dir/console.sh"
	fi
	tmux set-option -t "$target" remain-on-exit off >/dev/null 2>&1 || true
	if [ -n "$port" ]; then
		wait_for_port "$port" || die "QEMU's gdbstub did not open 127.0.0.1:$port"
		write_gdbinit "$arch" "$port" "$dir/gdbinit"
		write_launcher "$dir/gdb.sh" "$dir" "$target" gdb-multiarch -q -x "$dir/gdbinit"
		tmux split-window -h -t "$target" "$dir/gdb.sh"
		info "gdb is attached to 127.0.0.1:$port with QEMU halted: set breakpoints, then 'continue'"
	fi
	info "tmux ${TMUX:+window}${TMUX:-session} '$name': QEMU console${port:+ | gdb}; Ctrl-a x in the console or 'quit' in gdb closes it"
	if [ -n "${TMUX:-}" ]; then
		tmux select-window -t "$target"
	elif is_tty; then
		tmux attach-session -t "$name"
	else
		info "no terminal: attach with 'tmux attach -t $name'"
	fi
}
