#!/usr/bin/env bash
# gdb against QEMU's gdbstub: a batch walk through the check on each arch,
# and the tmux session driven as a learner would.

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_listening() {
	local port=$1 _
	for _ in $(seq 1 600); do
		[ -n "$(ss -Htln "sport = :$port")" ] && return 0
		sleep 0.2
	done
	fail "nothing listens on port $port"
}

# The gdbstub listens on loopback only.
assert_loopback_only() {
	local port=$1 addrs addr
	addrs=$(ss -Htln "sport = :$port" | awk '{ print $4 }')
	[ -n "$addrs" ] || fail "nothing listens on $port"
	for addr in $addrs; do
		[[ "$addr" =~ ^127\.0\.0\.1:[0-9]+$ ]] || fail "gdbstub listens beyond loopback: $addrs"
	done
	return 0
}

gdb_walk() {
	local arch=$1 port pid console="$TEST_TMP/gdb-$1$LAB_SUFFIX-console.log" log="$TEST_TMP/gdb-$1$LAB_SUFFIX.log"
	port=$(free_port)
	local -a extra
	mapfile -t extra < <(guest_args "$arch")
	lab "$arch" ${extra[@]+"${extra[@]}"} --gdb --gdb-port "$port" --run 'lkdtm CFI_FORWARD_PROTO; echo ALIVE' >"$console" 2>&1 &
	pid=$!
	GDB_WALK_PORT=$port
	trap 'pkill -f "tcp:127.0.0.1:$GDB_WALK_PORT" 2>/dev/null || true' EXIT
	wait_listening "$port"
	assert_loopback_only "$port"
	local check
	check=$(site_fact "$arch" lkdtm_indirect_call check.address) || fail "no check site in lkdtm_indirect_call"
	cat >"$TEST_TMP/walk.gdb" <<-GDB
		hbreak lkdtm_indirect_call
		continue
		kcfi-step-to-trap
		continue
		kcfi-step-to-trap
		printf "PC_AT_TRAP %#lx\n", \$pc
		python print("LIVE_CHECK", gdb.selected_inferior().read_memory($check, 32).tobytes().hex(" "))
		kcfi-explain
		kcfi-preamble lkdtm_increment_void
		kcfi-site lkdtm_indirect_call
		delete
		detach
	GDB
	timeout 600 gdb-multiarch -batch -nx -ex "file $(vmlinux_of "$arch")" \
		-ex "source $KCFI_LAB_ROOT/gdb-scripts/kcfi.py" -ex "target remote 127.0.0.1:$port" \
		-x "$TEST_TMP/walk.gdb" >"$log" 2>&1 || fail "gdb failed: $(tail -n 5 "$log")"
	wait "$pid" || fail "the guest run failed: $(tail -n 5 "$console")"
	cat "$log"

	local expected target trap_pc
	expected=$(preamble_type "$arch" lkdtm_increment_void)
	target=$(preamble_type "$arch" lkdtm_increment_int)
	assert_grep 'at the call: the types match' "$log" "matched call reaches the call"
	assert_grep 'at the trap: the types differ' "$log" "mismatched call reaches the trap"
	trap_pc=$(site_fact "$arch" lkdtm_indirect_call trap.address) || fail "no check site in lkdtm_indirect_call"
	# What the check compares, as kcfi-step-to-trap prints the registers
	# of the arch file's check_registers: a register that is 0 when the
	# types match holds target - expected (x86_64's r10), else one holds
	# each type (arm64's w16 and w17).
	local item r what want="" reg_re='[a-z][a-z0-9]*'
	local -a items
	IFS=',' read -r -a items <<<"$(arch_get "$arch" check_registers)"
	for item in "${items[@]}"; do
		r=${item%%:*} what=${item#*:}
		[ "${r#@}" = "$r" ] || r=$reg_re
		case "$what" in
		"target type") want+="${want:+, }$r = 0x$target \\(target type\\)" ;;
		"expected type") want+="${want:+, }$r = 0x$expected \\(expected type\\)" ;;
		*)
			assert_grep "$r = 0x00000000 \\($what\\)" "$log" "$r is 0 for the matched call"
			want+="${want:+, }$r = 0x$(printf '%08x' $(((0x$target - 0x$expected) & 0xffffffff))) \\($what\\)"
			;;
		esac
	done
	assert_grep "$want" "$log" "the check's registers at the trap"
	assert_grep "expected type 0x$expected; target " "$log" "kcfi-explain decodes the trap"
	[ -n "$trap_pc" ] || fail "no trap instruction in lkdtm_indirect_call"
	# The check the CPU ran is the one in memory: the kernel may have
	# rewritten it at boot (x86's alternatives turn je; ud2 into a jne to
	# a udb byte), so the trap is where the tool finds it in the live
	# bytes, and that is the image's trap or the kernel's rewrite of it.
	local live offset live_trap
	live=$(sed -n 's/^LIVE_CHECK //p' "$log")
	[ -n "$live" ] || fail "gdb did not read the check's bytes"
	offset=$(lab kcfi decode --arch "$arch" --json "$live" | json_field trap_offset)
	live_trap=$(printf '%#x' $((check + offset)))
	if [ "$live_trap" != "$trap_pc" ]; then
		echo "the kernel rewrote the check: its trap is at $live_trap, the image's at $trap_pc"
		trap_pc=$live_trap
	fi
	assert_grep "PC_AT_TRAP $trap_pc\$" "$log" "pc at the trap instruction, from the lab's tool"
	assert_grep 'lkdtm_increment_int' "$log" "kcfi-explain names the target"
	assert_grep "^lkdtm_increment_void at 0x[0-9a-f]+: type id 0x$expected " "$log" "kcfi-preamble"
	assert_grep "^check at 0x[0-9a-f]+ \(lkdtm_indirect_call \+ [0-9]+[^)]*\): expected type 0x$expected, target in " "$log" "kcfi-site"
	# ... and names that type as lkdtm's source does, from the DWARF.
	assert_grep '^expected prototype: void \(int \*\)$' "$log" "kcfi-site: the expected prototype"
	assert_grep 'CFI failure at lkdtm_indirect_call' "$console"
	assert_grep '^ALIVE$' "$console"
}

test_x86_64_gdb_steps_to_ud2() { gdb_walk x86_64; }
test_arm64_gdb_steps_to_brk() { gdb_walk arm64; }

# The x86_64 check's other forms under gdb: with the target in %r10 the
# check computes in %r11d, with the target in %r12 it is one byte longer.
# kcfi-step-to-trap must print the register the check computes in, and
# kcfi-explain must name the target, for both.
test_x86_64_gdb_reads_every_check_form() {
	local port pid console="$TEST_TMP/gdb-forms-console.log" log="$TEST_TMP/gdb-forms.log"
	local expected target
	port=$(free_port)
	lab x86_64 --gdb --gdb-port "$port" --run 'lkdtm CFI_FORWARD_R10 CFI_FORWARD_R12; echo ALIVE' >"$console" 2>&1 &
	pid=$!
	FORMS_PORT=$port
	trap 'pkill -f "tcp:127.0.0.1:$FORMS_PORT" 2>/dev/null || true' EXIT
	wait_listening "$port"
	cat >"$TEST_TMP/forms.gdb" <<-GDB
		hbreak lkdtm_indirect_call_r10
		hbreak lkdtm_indirect_call_r12
		continue
		kcfi-step-to-trap
		continue
		kcfi-step-to-trap
		kcfi-explain
		continue
		kcfi-step-to-trap
		continue
		kcfi-step-to-trap
		kcfi-explain
		delete
		detach
	GDB
	timeout 600 gdb-multiarch -batch -nx -ex "file $(vmlinux_of x86_64)" \
		-ex "source $KCFI_LAB_ROOT/gdb-scripts/kcfi.py" -ex "target remote 127.0.0.1:$port" \
		-x "$TEST_TMP/forms.gdb" >"$log" 2>&1 || fail "gdb failed: $(tail -n 5 "$log")"
	wait "$pid" || fail "the guest run failed: $(tail -n 5 "$console")"
	cat "$log"
	expected=$(preamble_type x86_64 lkdtm_increment_void)
	target=$(preamble_type x86_64 lkdtm_increment_int)
	assert_grep 'r11 = 0x00000000' "$log" "r11d form: r11 is 0 for the matched call"
	assert_grep "r11 = 0x$(printf '%08x' $(((0x$target - 0x$expected) & 0xffffffff)))" "$log" \
		"r11d form: r11 = target type - expected type for the mismatch"
	assert_grep "expected type 0x$expected; target r10 = 0x[0-9a-f]+ \(lkdtm_increment_int" "$log" \
		"kcfi-explain: the target in r10"
	assert_grep "expected type 0x$expected; target r12 = 0x[0-9a-f]+ \(lkdtm_increment_int" "$log" \
		"kcfi-explain: the target in r12"
	assert_grep '^ALIVE$' "$console"
}

# The suite's own cleanup: when a test of the side lane ends, its reap
# must leave alone the tmux server a main-lane test is driving (their
# sockets share the suite's prefix). It did not, and a tmux session test
# failed with "error connecting to ..." now and then.
test_side_lane_reap_spares_the_main_lanes_tmux() {
	local sock="kcfi-lab-test-$$-spare" gone
	tmux -L "$sock" new-session -d -s spare "sleep 120"
	(exit 0) &
	gone=$!
	wait "$gone"
	SIDE_LANE=1 reap_test "$gone" "" >/dev/null
	tmux -L "$sock" has-session -t spare 2>/dev/null || fail "a side-lane reap killed the main lane's tmux server"
	tmux -L "$sock" kill-server
}

# Nor may a reap take a process for the lab's because its arguments
# name tmux and this run's TEST_TMP (a side-lane test's ln -s of /usr/bin
# did): lab processes are QEMU, gdb, tmux and the session launchers.
# The side lane's make check runs gdb-multiarch on files in the lab's
# home while a main-lane test runs; the main lane's reap left it alone
# only once it asked whose process it was.
test_reap_spares_the_side_lanes_processes() {
	local pid listed_side listed_main dir="$TEST_TMP/side-gdb" me=$BASHPID
	mkdir -p "$dir"
	ln -sf "$(command -v sleep)" "$dir/gdb-multiarch"
	# A sleep whose name is gdb-multiarch and whose command line names
	# the lab's home, as make check's gdb does.
	(exec -a "$KCFI_LAB_HOME/build/tool/check/gdb-multiarch" "$dir/gdb-multiarch" 120) &
	pid=$!
	listed_side=$(SIDE_PID=$me lab_processes)
	listed_main=$(SIDE_PID="" lab_processes)
	kill "$pid"
	if grep -q "^$pid " <<<"$listed_side"; then
		fail "lab_processes lists a gdb-multiarch of the side lane"
	fi
	grep -q "^$pid " <<<"$listed_main" || fail "lab_processes misses a gdb-multiarch on the lab's files"
}

# A learner's QEMU in the same home, started by hand while the suite
# runs, is the learner's: only what this run started is reaped.
test_reap_spares_a_learners_processes() {
	local mine theirs listed dir="$TEST_TMP/learner-qemu"
	mkdir -p "$dir"
	ln -sf "$(command -v sleep)" "$dir/qemu-system-x86_64"
	(exec -a "$KCFI_LAB_HOME/build/x86_64/qemu-system-x86_64" "$dir/qemu-system-x86_64" 120) &
	mine=$!
	(
		unset KCFI_LAB_TEST_RUN
		exec -a "$KCFI_LAB_HOME/build/x86_64/qemu-system-x86_64" "$dir/qemu-system-x86_64" 120
	) &
	theirs=$!
	# The reaper of the checkout under test, as the suite loads it.
	# shellcheck disable=SC2016 # expanded by that bash
	listed=$(bash -c '. "$KCFI_LAB_ROOT/tests/lib.sh"; . "$KCFI_LAB_ROOT/tests/reap.sh"; lab_processes')
	kill "$mine" "$theirs"
	grep -q "^$mine " <<<"$listed" || fail "lab_processes misses a QEMU this run started"
	if grep -q "^$theirs " <<<"$listed"; then
		fail "lab_processes lists a QEMU this run did not start"
	fi
}

test_reap_goes_by_what_runs_not_by_its_arguments() {
	local pid listed
	bash -c 'sleep 120; :' lookalike /usr/bin/tmux /usr/bin/qemu-system-x86_64 "$TEST_TMP/lookalike" &
	pid=$!
	listed=$(lab_processes)
	kill "$pid"
	if grep -q "^$pid " <<<"$listed"; then
		fail "lab_processes lists a bash whose arguments name tmux and TEST_TMP"
	fi
}

# wait_pane TARGET REGEX [SECONDS]: until the pane shows REGEX.
wait_pane() {
	local _
	for _ in $(seq 1 $((${3:-120} * 5))); do
		tmux -L "$TMUX_SOCK" capture-pane -p -J -S -300 -t "$1" | has_match "$2" && return 0
		sleep 0.2
	done
	tmux -L "$TMUX_SOCK" capture-pane -p -J -S -40 -t "$1" >&2
	fail "pane $1 never showed /$2/"
}

tmux_session_walk() {
	local arch=$1 trap_insn win
	# A socket of its own for each walk: a server just told to exit can
	# still hold the last walk's socket, and a new session sent there
	# dies with it ("server exited unexpectedly").
	TMUX_SOCK="kcfi-lab-test-$$-session-$arch$LAB_SUFFIX"
	trap_insn=$(arch_get "$arch" trap_mnemonic)
	trap 'tmux -L "$TMUX_SOCK" kill-server 2>/dev/null || true' EXIT
	tmux -L "$TMUX_SOCK" new-session -d -s learner -x 200 -y 50 \
		"cd '$KCFI_LAB_ROOT' && ./run.sh $arch$LAB_KOPT --gdb; sleep 600"
	local _
	for _ in $(seq 1 600); do
		win=$(tmux -L "$TMUX_SOCK" list-windows -a -F '#{session_name}:#{window_name} #{window_panes}' |
			awk '$1 ~ /kcfi-lab-/ && $2 == 2 { print $1; exit }')
		[ -n "$win" ] && break
		sleep 0.5
	done
	[ -n "$win" ] || fail "no console+gdb window appeared"
	wait_pane "$win.1" '^\(gdb\) ?$' 60
	tmux -L "$TMUX_SOCK" send-keys -t "$win.1" 'hbreak lkdtm_indirect_call' Enter 'continue' Enter
	# The prompt is not waited for at the end of the last line: a late
	# kernel message can land after it. The shell evaluates $((...)), so
	# the marker appears only once the guest ran what it was sent.
	wait_pane "$win.0" "kcfi-lab\\($arch\\):[^ ]*#" 300
	# shellcheck disable=SC2016 # for the guest's shell
	tmux -L "$TMUX_SOCK" send-keys -t "$win.0" 'echo $((40 + 2))-kcfi-ready' Enter
	wait_pane "$win.0" '42-kcfi-ready' 120
	# Whole lines: the console keeps the terminal's line wrap (SeaBIOS's
	# serial console under -nographic turned it off, and the CFI report
	# was cut at the pane's edge).
	assert_eq "$(tmux -L "$TMUX_SOCK" display-message -p -t "$win.0" '#{wrap_flag}')" 1 "the console pane's line wrap"
	tmux -L "$TMUX_SOCK" send-keys -t "$win.0" 'lkdtm CFI_FORWARD_PROTO' Enter
	wait_pane "$win.1" 'Breakpoint 1, lkdtm_indirect_call' 120
	tmux -L "$TMUX_SOCK" send-keys -t "$win.1" 'kcfi-step-to-trap' Enter
	wait_pane "$win.1" 'at the call: the types match' 60
	tmux -L "$TMUX_SOCK" send-keys -t "$win.1" 'continue' Enter 'kcfi-step-to-trap' Enter
	wait_pane "$win.1" 'at the trap: the types differ' 60
	tmux -L "$TMUX_SOCK" capture-pane -p -J -S -300 -t "$win.1" | has_match "$trap_insn" ||
		fail "gdb pane does not show the $trap_insn"
	local qemu_dir
	qemu_dir="$KCFI_LAB_HOME/run/${win#*:}"
	[ -f "$qemu_dir/qemu.pid" ] || fail "no QEMU pid file in $qemu_dir"
	local qpid
	qpid=$(cat "$qemu_dir/qemu.pid")
	tmux -L "$TMUX_SOCK" send-keys -t "$win.1" 'quit' Enter
	for _ in $(seq 1 100); do
		tmux -L "$TMUX_SOCK" list-windows -a -F '#{session_name}:#{window_name}' | has_match "^$win\$" || break
		sleep 0.2
	done
	! tmux -L "$TMUX_SOCK" list-windows -a -F '#{session_name}:#{window_name}' | has_match "^$win\$" ||
		fail "the lab window is still open after quitting gdb"
	sleep 1
	! kill -0 "$qpid" 2>/dev/null || fail "QEMU ($qpid) still runs after the session closed"
	! pgrep -f "$qemu_dir/gdbinit" >/dev/null || fail "gdb still runs after the session closed"
	[ ! -d "$qemu_dir" ] || fail "session directory left behind: $qemu_dir"
	tmux -L "$TMUX_SOCK" kill-server
}

test_tmux_gdb_session_x86_64() { tmux_session_walk x86_64; }
test_tmux_gdb_session_arm64() { tmux_session_walk arm64; }

test_exercise_gdb_commands_set_their_breakpoints() {
	# What the --gdb session loads, attached to a halted guest: each exN
	# command sets the hardware breakpoints its exercise needs.
	local arch log port pid
	for arch in x86_64 arm64; do
		log="$TEST_TMP/ex-gdb-$arch.log"
		port=$(free_port)
		lab "$arch" --gdb --gdb-port "$port" --run true >"$TEST_TMP/ex-gdb-console.log" 2>&1 &
		pid=$!
		wait_listening "$port"
		timeout 300 gdb-multiarch -batch -nx -ex "file $(vmlinux_of "$arch")" \
			-ex "source $KCFI_LAB_ROOT/gdb-scripts/kcfi.py" \
			-ex "source $KCFI_LAB_ROOT/gdb-scripts/exercises.gdb" \
			-ex "target remote 127.0.0.1:$port" \
			-ex ex04 -ex ex06 -ex 'info breakpoints' -ex 'help ex05' -ex delete -ex detach >"$log" 2>&1
		wait "$pid" || fail "$arch guest run failed: $(tail -n 3 "$TEST_TMP/ex-gdb-console.log")"
		assert_grep 'hw breakpoint +keep y +0x[0-9a-f]+ in lkdtm_indirect_call ' "$log" "$arch: ex04's breakpoint"
		assert_grep "in $(arch_get "$arch" cfi_handler) " "$log" "ex06: the $arch handler"
		assert_grep 'in report_cfi_failure ' "$log" "ex06: report_cfi_failure"
		assert_grep 'Exercise 05 \(arm64\)' "$log" "help ex05"
	done
}

# session_leftovers DIR PORT: what a lab session (directory DIR, gdbstub
# PORT) left behind: processes naming DIR, a listener on PORT, DIR itself.
session_leftovers() {
	local dir=$1 port=$2 pids
	pids=$(pgrep -f -- "$dir/" || true)
	[ -z "$pids" ] || ps -o pid=,args= -p "${pids//$'\n'/,}" || true
	[ -z "$(ss -Htln "sport = :$port")" ] || echo "port $port still listening"
	[ ! -e "$dir" ] || echo "directory $dir left behind"
	return 0
}

# wait_gone DIR PORT: until nothing of the session is left (30 s).
wait_gone() {
	local _ left
	for _ in $(seq 1 150); do
		left=$(session_leftovers "$1" "$2")
		[ -n "$left" ] || return 0
		sleep 0.2
	done
	fail "left behind: $left"
}

# closed_terminal_round ROUND [run.sh|nohup]: ./run.sh --gdb in a
# terminal (script(1) gives it a pty; a private tmux server), gdb
# continues the guest, then the terminal goes away: its process is
# killed, the pty hangs up. With "run.sh", run.sh itself is killed
# instead, by SIGKILL, which no handler of its sees; with "nohup",
# run.sh ignores SIGHUP and learns of the hangup from its terminal.
closed_terminal_round() {
	local round=$1 victim=${2:-terminal} tmpdir="$TEST_TMP/tmux-term-$1" fifo="$TEST_TMP/term-$1.in" pid name dir port _
	mkdir -p "$tmpdir"
	mkfifo "$fifo"
	# The fifo held open: the terminal's keyboard.
	exec 7<>"$fifo"
	local launch=./run.sh
	[ "$victim" != nohup ] || launch="env --ignore-signal=HUP ./run.sh"
	TMUX_TMPDIR=$tmpdir TERM=xterm script -qfc "stty cols 200 rows 50; $launch x86_64 --gdb" /dev/null \
		<&7 >"$TEST_TMP/term-$round.out" 2>&1 &
	pid=$!
	for _ in $(seq 1 600); do
		# No server yet: tmux ls fails, and so does the pipeline.
		name=$(TMUX_TMPDIR=$tmpdir tmux ls -F '#{session_name}' 2>/dev/null | sed -n '/^kcfi-lab-x86_64-/p') || name=""
		dir="$KCFI_LAB_HOME/run/$name"
		[ -n "$name" ] && [ -f "$dir/gdbinit" ] && break
		sleep 0.2
	done
	[ -n "$name" ] || fail "round $round: no lab session appeared: $(tail -n 5 "$TEST_TMP/term-$round.out")"
	[ -f "$dir/gdbinit" ] ||
		fail "round $round: no lab session with gdb appeared: $(tail -n 5 "$TEST_TMP/term-$round.out")"
	port=$(sed -n 's/^target remote 127\.0\.0\.1://p' "$dir/gdbinit")
	for _ in $(seq 1 300); do
		TMUX_TMPDIR=$tmpdir tmux capture-pane -p -J -t "$name:0.1" 2>/dev/null | has_match '^\(gdb\)' && break
		sleep 0.2
	done
	TMUX_TMPDIR=$tmpdir tmux send-keys -t "$name:0.1" continue Enter
	for _ in $(seq 1 300); do
		TMUX_TMPDIR=$tmpdir tmux capture-pane -p -J -S -200 -t "$name:0.0" 2>/dev/null | has_match 'Linux version' && break
		sleep 0.2
	done
	TMUX_TMPDIR=$tmpdir tmux capture-pane -p -J -S -200 -t "$name:0.0" | has_match 'Linux version' ||
		fail "round $round: the guest did not run after continue"
	if [ "$victim" = run.sh ]; then
		# The session's name ends in run.sh's pid.
		kill -KILL "${name##*-}"
	else
		# The terminal closes.
		kill -KILL "$pid"
		exec 7>&-
	fi
	wait_gone "$dir" "$port" || {
		sed 's/^/    terminal: /' "$TEST_TMP/term-$round.out" | tail -n 15 >&2
		return 1
	}
	exec 7>&-
	wait "$pid" 2>/dev/null || true
	[ -z "$(TMUX_TMPDIR=$tmpdir tmux ls 2>/dev/null)" ] || fail "round $round: the lab's tmux server still runs"
}

test_closing_the_terminal_under_gdb_leaves_nothing() {
	closed_terminal_round 1
	closed_terminal_round 2
	closed_terminal_round 3 nohup
	# The session's reaper sees run.sh go, however it went.
	closed_terminal_round 4 run.sh
}

test_killing_the_learners_tmux_session_leaves_nothing() {
	# Inside the learner's own tmux: run.sh opens a window there; the
	# learner kills the whole session while the guest runs under gdb.
	local sock="kcfi-lab-test-$$-learner" win name dir port _
	TMUX_SOCK=$sock
	tmux -L "$sock" new-session -d -s learner -x 200 -y 50 "cd '$KCFI_LAB_ROOT' && ./run.sh x86_64 --gdb; sleep 600"
	for _ in $(seq 1 600); do
		win=$(tmux -L "$sock" list-windows -a -F '#{window_id} #{window_name} #{window_panes}' |
			awk '$2 ~ /^kcfi-lab-x86_64-/ && $3 == 2 { print $1 " " $2 }')
		[ -n "$win" ] && break
		sleep 0.2
	done
	[ -n "$win" ] || fail "no console+gdb window appeared"
	name=${win#* }
	win=${win%% *}
	dir="$KCFI_LAB_HOME/run/$name"
	port=$(sed -n 's/^target remote 127\.0\.0\.1://p' "$dir/gdbinit")
	wait_pane "$win.1" '^\(gdb\)' 60
	tmux -L "$sock" send-keys -t "$win.1" continue Enter
	wait_pane "$win.0" 'Linux version' 120
	tmux -L "$sock" kill-session -t learner
	wait_gone "$dir" "$port"
}
