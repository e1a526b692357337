#!/usr/bin/env bash
# The interactive lab: ./run.sh lab [ARCH] [--instructor] [COMMAND ARGS...].
# A small menu over exercises/NN-name/, with progress kept per user in
# $KCFI_LAB_HOME/progress/USER/. Sourced by run.sh (after lab/common.sh).

LAB_EXERCISES="$KCFI_LAB_ROOT/exercises"

lab_user() {
	id -un 2>/dev/null || echo "${USER:-user}"
}

lab_progress_dir() {
	echo "$KCFI_LAB_HOME/progress/$(lab_user)"
}

# lab_all: the exercise directories' names, in order.
lab_all() {
	local d
	for d in "$LAB_EXERCISES"/[0-9][0-9]-*/; do
		[ -f "$d/check" ] && basename "$d"
	done
	return 0
}

# lab_conf NAME KEY: a value from exercises/NAME/lab.conf ("key: value").
lab_conf() {
	sed -n "s/^$2: *//p" "$LAB_EXERCISES/$1/lab.conf" 2>/dev/null | sed -n 1p
}

# lab_find WORD: the exercise that WORD names: 4, 04, 04-x86-check, x86-check.
lab_find() {
	local want=$1 name
	[ -n "$want" ] || return 1
	case "$want" in
	[0-9]) want=0$want ;;
	esac
	while read -r name; do
		case "$name" in
		"$want" | "$want"-* | [0-9][0-9]-"$want") echo "$name" && return 0 ;;
		esac
	done < <(lab_all)
	return 1
}

# lab_need NAME-OR-NUMBER: the exercise's name, or a message and failure.
lab_need() {
	local name
	if ! name=$(lab_find "${1:-}"); then
		echo "no exercise '${1:-}'; 'list' shows them" >&2
		return 1
	fi
	echo "$name"
}

# lab_arch_for NAME: LAB_ARCH when the exercise applies to it, else its first arch.
lab_arch_for() {
	local arches
	arches=$(lab_conf "$1" arches)
	case " $arches " in
	*" $LAB_ARCH "*) echo "$LAB_ARCH" ;;
	*) echo "${arches%% *}" ;;
	esac
}

# lab_use_kernel_for NAME: the lab's kernel stays when the exercise
# applies to it; else the exercise's first kernel becomes it, and the
# lab says so.
lab_use_kernel_for() {
	local kernels
	kernels=$(exercise_kernels "$1")
	case " $kernels " in
	*" $LAB_KERNEL "*) ;;
	*)
		echo "($1 is about Linux ${kernels// / and }: using Linux ${kernels%% *})" >&2
		use_kernel "${kernels%% *}"
		;;
	esac
}

lab_is_done() {
	[ -f "$(lab_progress_dir)/$1" ]
}

lab_list() {
	local name mark n=0 done=0
	while read -r name; do
		n=$((n + 1))
		mark=" "
		if lab_is_done "$name"; then
			mark=x
			done=$((done + 1))
		fi
		printf '  [%s] %s  %-58s %3s min  %s  (Linux %s)\n' "$mark" "${name%%-*}" "$(lab_conf "$name" title)" \
			"$(lab_conf "$name" time)" "$(lab_conf "$name" arches)" "$(exercise_kernels "$name" | sed 's/ /, /g')"
	done < <(lab_all)
	printf '  %d of %d done (progress: %s)\n' "$done" "$n" "$(lab_progress_dir)"
}

# lab_page FILE: less on a terminal, cat otherwise.
lab_page() {
	if is_tty && have less; then
		less -R "$1"
	else
		cat "$1"
	fi
}

lab_show() {
	local name
	name=$(lab_need "${1:-}") || return 1
	lab_page "$LAB_EXERCISES/$name/README.md"
}

lab_next() {
	local name
	while read -r name; do
		if ! lab_is_done "$name"; then
			echo "next: $name ($(lab_conf "$name" title))"
			lab_show "$name"
			return 0
		fi
	done < <(lab_all)
	echo "every exercise is done; 'reset' starts over"
}

lab_hint() {
	local name
	name=$(lab_need "${1:-}") || return 1
	cat "$LAB_EXERCISES/$name/hints.md"
}

# lab_check N ANSWER...: run the checker; a pass marks the exercise done.
lab_check() {
	local name arch rc=0
	name=$(lab_need "${1:-}") || return 1
	shift
	if [ $# = 0 ]; then
		"$LAB_EXERCISES/$name/check" --help
		return 2
	fi
	lab_use_kernel_for "$name"
	arch=$(lab_arch_for "$name")
	"$LAB_EXERCISES/$name/check" --arch "$arch" "$@" || rc=$?
	if [ "$rc" = 0 ]; then
		mkdir -p "$(lab_progress_dir)"
		echo "done $arch $(date '+%F %T')" >"$(lab_progress_dir)/$name"
	fi
	return "$rc"
}

lab_reset() {
	local name
	if [ -z "${1:-}" ]; then
		rm -rf "$(lab_progress_dir)"
		echo "progress cleared"
		return 0
	fi
	name=$(lab_need "$1") || return 1
	rm -f "$(lab_progress_dir)/$name"
	echo "$name: not done"
}

# lab_manual_open NAME ARCH: what open does, as commands to type.
lab_manual_open() {
	cat <<-EOF
		Without tmux (or without a terminal), open the exercise by hand:
		  less $LAB_EXERCISES/$1/README.md
		  ./run.sh $2$LAB_KOPT --gdb        # needs tmux; or: ./run.sh $2$LAB_KOPT --no-tmux
	EOF
}

# lab_open N: ./run.sh ARCH --gdb in a tmux window, with a guide pane
# below showing the exercise's README in less.
lab_open() {
	local name arch before win readme session tmux_env panes
	name=$(lab_need "${1:-}") || return 1
	lab_use_kernel_for "$name"
	arch=$(lab_arch_for "$name")
	readme="$LAB_EXERCISES/$name/README.md"
	if ! have tmux || ! is_tty; then
		lab_manual_open "$name" "$arch"
		return 0
	fi
	tmux_env=${TMUX:-}
	if [ -z "$tmux_env" ]; then
		# A session for the lab; run.sh opens its window in it.
		session="kcfi-lab-$(lab_user)"
		tmux has-session -t "=$session" 2>/dev/null ||
			tmux new-session -d -s "$session" -x 200 -y 50 -n guide "less -R '$readme'"
		tmux_env=$(tmux display-message -p -t "=$session" '#{socket_path},#{pid},#{session_id}')
		tmux_env=${tmux_env/\$/}
	fi
	before=$(TMUX=$tmux_env tmux list-windows -F '#{window_id}')
	TMUX=$tmux_env "$KCFI_LAB_ROOT/run.sh" "$arch" --kernel "$LAB_KERNEL" --gdb || return 1
	win=$(TMUX=$tmux_env tmux list-windows -F '#{window_id} #{window_name}' |
		awk -v before="$before" -v a="$arch" 'index(before, $1) == 0 && $2 ~ "^kcfi-lab-" a "-" { print $1 }' | tail -n 1)
	if [ -z "$win" ]; then
		echo "the lab window did not appear; open it by hand:" >&2
		lab_manual_open "$name" "$arch" >&2
		return 1
	fi
	# The panes by id: indexes change when the guide pane is added.
	panes=$(TMUX=$tmux_env tmux list-panes -t "$win" -F '#{pane_id}' | tr '\n' ' ')
	TMUX=$tmux_env tmux split-window -v -l 15 -t "${panes%% *}" "less -R '$readme'"
	mkdir -p "$(lab_progress_dir)"
	echo "$win $name $panes" >"$(lab_progress_dir)/.open"
	echo "$name: console (left), gdb (right), guide (below) in tmux window $win"
	echo "'type $name' types its suggested command into its pane"
	if [ -z "${TMUX:-}" ]; then
		tmux kill-window -t "=$session:guide" 2>/dev/null || true
		tmux attach-session -t "=$session"
	fi
}

# lab_type_for_kernel CMD: a lab.conf's suggested command, written for
# the default kernel, with the lab kernel's tools ($KCFI_LAB_LLVM becomes
# this host's suffix for it; a toolchain in the lab's home is named by
# its path), build directories, worktree and branches.
lab_type_for_kernel() {
	local cmd=$1 default_branch arch tools=""
	# shellcheck disable=SC2016 # the literal text $KCFI_LAB_LLVM
	cmd=${cmd//'$KCFI_LAB_LLVM'/$KCFI_LAB_LLVM}
	if [ -n "$LAB_TOOLCHAIN_BIN" ]; then
		# shellcheck disable=SC2016 # the literal text $KCFI_LAB_HOME
		tools='$KCFI_LAB_HOME'${LAB_TOOLCHAIN_BIN#"$KCFI_LAB_HOME"}/
		cmd=$(printf '%s\n' "$cmd" | sed -E "s#(^|[ |(])((llvm-[a-z]+|clang|ld\.lld)${KCFI_LAB_LLVM}( |\$))#\\1${tools//#/\\#}\\2#g")
	fi
	kernel_is_default && { echo "$cmd" && return 0; }
	default_branch=${LAB_CONF["kernel/$LAB_DEFAULT_KERNEL/branch"]}
	cmd=${cmd//"distro..$default_branch"/"$LAB_DISTRO..$LAB_BRANCH"}
	for arch in "${LAB_ARCH_FILES[@]}"; do
		cmd=${cmd//"/build/$arch/"/"/build/$arch$LAB_SUFFIX/"}
		cmd=${cmd//"/modules/$arch/"/"/modules/$arch$LAB_SUFFIX/"}
	done
	cmd=${cmd//"/worktree "/"/worktree$LAB_SUFFIX "}
	echo "${cmd//"/worktree/"/"/worktree$LAB_SUFFIX/"}"
}

# lab_type N: type the exercise's suggested command into its pane of the
# window that open made (no Enter: read it, then press Enter there).
lab_type() {
	local name pane cmd win="" open_name="" console="" gdb="" target=""
	name=$(lab_need "${1:-}") || return 1
	lab_use_kernel_for "$name"
	pane=$(lab_conf "$name" pane)
	cmd=$(lab_conf "$name" type)
	# The lab's paths as they are here: a command typed or copied works
	# in any shell, whatever KCFI_LAB_HOME is.
	cmd=$(lab_type_for_kernel "$cmd")
	# shellcheck disable=SC2016 # the literal text $KCFI_LAB_HOME
	cmd=${cmd//'$KCFI_LAB_HOME'/$(printf '%q' "$KCFI_LAB_HOME")}
	if [ -f "$(lab_progress_dir)/.open" ]; then
		read -r win open_name console gdb <"$(lab_progress_dir)/.open"
	fi
	case "$pane" in
	console) target=$console ;;
	gdb) target=$gdb ;;
	esac
	if [ -z "$target" ] || ! have tmux || ! tmux list-panes -t "$target" >/dev/null 2>&1; then
		echo "type this${pane:+ in the $pane}:"
		echo "  $cmd"
		return 0
	fi
	[ "$open_name" = "$name" ] || echo "(the open window is for $open_name)"
	tmux send-keys -t "$target" -l "$cmd"
	echo "typed into the $pane pane: $cmd (press Enter there to run it)"
}

lab_help() {
	cat <<-EOF
		usage: ./run.sh lab [ARCH] [--instructor] [COMMAND ARGS...]
		commands:
		  list               the exercises, [x] when done
		  show N             the exercise's README
		  next               the first exercise not done yet
		  hint N             hints for exercise N
		  check N ANSWER...  check your answer; a pass marks N done
		  reset [N]          forget N's progress (or all of it)
		  open N             tmux: ./run.sh ARCH --gdb and the README
		  type N             type N's suggested command into its pane
		  quit
		N is a number (4), or a name (04-x86-check). Arch: $LAB_ARCH.
	EOF
}

# lab_dispatch COMMAND ARGS...: one command; its exit status.
lab_dispatch() {
	local cmd=${1:-}
	[ $# = 0 ] || shift
	case "$cmd" in
	'') return 0 ;;
	list | ls) lab_list ;;
	show) lab_show "$@" ;;
	next) lab_next ;;
	hint | hints) lab_hint "$@" ;;
	check) lab_check "$@" ;;
	reset) lab_reset "$@" ;;
	open) lab_open "$@" ;;
	type) lab_type "$@" ;;
	help | '?' | -h | --help) lab_help ;;
	*)
		echo "unknown command: $cmd" >&2
		lab_help >&2
		return 2
		;;
	esac
}

# lab_home_line: how a learner's own shell gets the lab's paths, which
# the exercises' commands spell $KCFI_LAB_HOME.
lab_home_line() {
	echo "The commands in the exercises use \$KCFI_LAB_HOME; in your shell:"
	echo "  export KCFI_LAB_HOME=$(printf '%q' "$KCFI_LAB_HOME")"
}

# lab_menu: read commands until quit or end of input.
lab_menu() {
	local line
	local -a words
	echo "KCFI Lab exercises ($LAB_ARCH). 'help' lists the commands."
	lab_home_line
	lab_list
	while IFS= read -r -e -p "kcfi-lab> " line; do
		read -r -a words <<<"$line"
		case "${words[0]:-}" in
		quit | exit | q) return 0 ;;
		esac
		lab_dispatch "${words[@]}" || true
	done
	echo
}

lab_no_tty() {
	cat <<-EOF
		KCFI Lab exercises: run './run.sh lab' in a terminal for the menu.
		Without a terminal, read exercises/NN-name/README.md and run the
		checkers directly: exercises/NN-name/check [--arch ARCH] ANSWER...
	EOF
	lab_help
	echo
	lab_home_line
	lab_list
}

# lab_solution NAME ARCH: the instructor solution's answer for ARCH. It
# is kept per build and per version of the exercise's files (solution,
# module sources) and of the shell code solutions source, in the
# exercises' cache: the second instructor run of a build, and the test
# suite's, only check. A failed solution's answer is not kept, nor one
# of an exercise whose lab.conf says "cache: no".
lab_solution() {
	local name=$1 arch=$2 cache key
	if [ "$(lab_conf "$name" cache)" = no ]; then
		# An answer that holds what one boot showed, which its checker
		# looks for in the boot logs the lab keeps (the newest 100
		# only): a kept answer could outlive its log.
		"$LAB_EXERCISES/$name/solution" --arch "$arch"
		return
	fi
	key=$({
		cd "$LAB_EXERCISES/$name" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 cat
		cat "$LAB_EXERCISES/lib.sh" "$KCFI_LAB_ROOT"/lab/{common,tool,facts,arch}.sh \
			"$KCFI_LAB_ROOT"/lab/arch/*.conf "$KCFI_LAB_ROOT"/lab/kernel/*.conf "$KCFI_LAB_ROOT"/lab/kcfi/src/*
	} | sha256sum | cut -c1-16)
	cache="${KCFI_LAB_EX_CACHE:-$KCFI_LAB_HOME/exercises}/answers/$name-$arch$LAB_SUFFIX-$(stat -c %Y "$(build_dir "$arch")/vmlinux")-$key"
	if [ ! -s "$cache" ]; then
		mkdir -p "${cache%/*}"
		"$LAB_EXERCISES/$name/solution" --arch "$arch" >"$cache.$$" || {
			rm -f "$cache.$$"
			return 1
		}
		mv "$cache.$$" "$cache"
	fi
	cat "$cache"
}

# lab_instructor: every solution through its checker, on each arch the
# exercise applies to. Non-zero when one fails.
lab_instructor() {
	local name arch kernel failed=0 tmp
	tmp=$(mktemp)
	while read -r name; do
		for kernel in $(exercise_kernels "$name"); do
			use_kernel "$kernel"
			for arch in $(lab_conf "$name" arches); do
				lab_instructor_one "$name" "$arch" "$tmp" || failed=$((failed + 1))
			done
		done
		printf '     %-20s solution: %s\n' "" "exercises/$name/solution.md"
	done < <(lab_all)
	rm -f "$tmp"
	[ "$failed" = 0 ] || echo "$failed checker run(s) failed" >&2
	[ "$failed" = 0 ]
}

# lab_instructor_one NAME ARCH TMP: one solution through its checker on
# the lab's kernel; non-zero when it fails.
lab_instructor_one() {
	local name=$1 arch=$2 tmp=$3 answer out rc=0 where
	where="$arch${LAB_SUFFIX:+ $LAB_KERNEL}"
	if [ ! -f "$(build_dir "$arch")/vmlinux" ]; then
		printf 'SKIP %-20s %-7s no %s kernel built\n' "$name" "$where" "$where"
		return 0
	fi
	# An exercise that compares the lab kernel with the default one
	# (lab.conf's "compares: default") needs both built: a pack carries one.
	if [ "$(lab_conf "$name" compares)" = default ] &&
		! (use_kernel "$LAB_DEFAULT_KERNEL" && [ -f "$(build_dir "$arch")/vmlinux" ]); then
		printf 'SKIP %-20s %-7s no %s Linux %s kernel built to compare with\n' "$name" "$where" "$arch" "$LAB_DEFAULT_KERNEL"
		return 0
	fi
	answer=$(lab_solution "$name" "$arch" 2>"$tmp") || rc=$?
	if [ "$rc" != 0 ]; then
		answer="$answer $(cat "$tmp")"
		out="solution failed: $answer"
	else
		# The answers are words; check gets them split, as a learner types them.
		# shellcheck disable=SC2086
		out=$("$LAB_EXERCISES/$name/check" --arch "$arch" $answer 2>&1) || rc=$?
	fi
	if [ "$rc" = 0 ]; then
		printf 'PASS %-20s %-7s %s\n' "$name" "$where" "$answer"
		return 0
	fi
	printf 'FAIL %-20s %-7s %s\n' "$name" "$where" "$answer"
	printf '%s\n' "$out" | sed 's/^/     | /'
	return 1
}

# cmd_lab [ARCH] [--instructor] [COMMAND ARGS...]
cmd_lab() {
	local instructor="" a
	local -a rest=()
	LAB_ARCH=$(kernel_get default_arch)
	while [ $# -gt 0 ]; do
		case "$1" in
		--instructor) instructor=1 ;;
		*)
			if [ "${#rest[@]}" = 0 ] && a=$(normalize_arch "$1"); then
				LAB_ARCH=$a
			else
				rest+=("$@")
				break
			fi
			;;
		esac
		shift
	done
	[ -d "$LAB_EXERCISES" ] || die "no exercises in $LAB_EXERCISES"
	if [ -n "$instructor" ]; then
		lab_instructor
		return
	fi
	if [ "${#rest[@]}" -gt 0 ]; then
		lab_dispatch "${rest[@]}"
		return
	fi
	if ! [ -t 0 ]; then
		lab_no_tty
		return 0
	fi
	lab_menu
}
