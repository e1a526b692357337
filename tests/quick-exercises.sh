#!/usr/bin/env bash
# The exercises without a kernel: every exercise is complete, its checker
# refuses bad usage, its README says how long it takes and what it needs;
# the lab menu works without a terminal and keeps progress per user.

EXERCISES_WANTED="01-tour 02-preamble 03-typeid 04-x86-check 05-arm64-check 06-strict-oops 07-permissive 08-asm-functions 09-traps-modules 10-cost 11-then-and-now 12-riscv64-check 13-hashes-that-move 14-arity 15-two-compilers"

exercise_dirs() {
	local d
	for d in "$KCFI_LAB_ROOT"/exercises/[0-9][0-9]-*/; do
		echo "${d%/}"
	done
}

test_exercises_present_in_order() {
	local got
	got=$(exercise_dirs | xargs -n1 basename | tr '\n' ' ')
	assert_eq "${got% }" "$EXERCISES_WANTED" "exercise directories"
}

test_exercise_files_complete() {
	local d f
	while read -r d; do
		for f in README.md check hints.md solution.md solution lab.conf; do
			[ -s "$d/$f" ] || fail "$d/$f missing or empty"
		done
		[ -x "$d/check" ] || fail "$d/check is not executable"
		[ -x "$d/solution" ] || fail "$d/solution is not executable"
		for f in title arches time pane type; do
			grep -q "^$f: ." "$d/lab.conf" || fail "$d/lab.conf has no '$f:'"
		done
	done < <(exercise_dirs)
}

test_exercise_check_without_answers_exits_2() {
	local d
	while read -r d; do
		expect_exit 2 "$d/check"
		[[ "$OUT" == *"usage: ./check"* ]] || fail "$d/check: no usage line: $OUT"
		expect_exit 2 "$d/check" --arch sparc 1
	done < <(exercise_dirs)
}

test_exercise_readme_states_time_and_needs() {
	local d t
	while read -r d; do
		assert_grep '^\*\*Goal:\*\* ' "$d/README.md" "$d: a goal"
		assert_grep '^\*\*Needs:\*\* ' "$d/README.md" "$d: what it needs"
		t=$(sed -nE 's/^\*\*Time:\*\* ([0-9]+) min\.$/\1/p' "$d/README.md")
		[ -n "$t" ] || fail "$d/README.md: no '**Time:** N min.' line"
		if [ "$t" -lt 10 ] || [ "$t" -gt 25 ]; then
			fail "$d: $t min is outside 10-25"
		fi
		assert_eq "$(sed -n 's/^time: //p' "$d/lab.conf")" "$t" "$d: lab.conf time"
		assert_grep '/check' "$d/README.md" "$d: the README says how to check"
	done < <(exercise_dirs)
}

test_exercise_hash_fallback_matches_clang() {
	have "clang$KCFI_LAB_LLVM" || skip "clang$KCFI_LAB_LLVM not installed (./run.sh setup)"
	local proto got want
	for proto in 'void (int *)' 'long (struct file *, unsigned int, unsigned long)' 'int (const char *, ...)'; do
		# The Python xxHash64 of clang's own mangling, against clang's id.
		got=$(ex_lib hash_mangled "$(ex_lib clang_mangle "$proto")")
		want=$(ex_lib clang_typeid x86_64 "$proto")
		assert_eq "$got" "$want" "hash of $proto"
	done
}

# ex_lib FUNCTION ARGS...: one function of exercises/lib.sh.
ex_lib() {
	bash -c '. "$KCFI_LAB_ROOT/exercises/lib.sh"; "$@"' ex_lib "$@"
}

# lab_cmd ARGS...: cmd_lab with a private KCFI_LAB_HOME, no terminal.
lab_cmd() {
	KCFI_LAB_HOME="$TEST_TMP/lab-home" bash -c '. "$1/lab/common.sh"; . "$1/lab/exercises.sh"; shift; cmd_lab "$@"' \
		cmd_lab "$KCFI_LAB_ROOT" "$@" </dev/null
}

test_lab_menu_without_terminal() {
	expect_exit 0 lab_cmd
	[[ "$OUT" == *"run './run.sh lab' in a terminal"* ]] || fail "no instructions: $OUT"
	[[ "$OUT" == *"[ ] 01  "* ]] || fail "no exercise list: $OUT"
	expect_exit 0 lab_cmd arm64 list
	[[ "$OUT" == *"0 of $(exercise_dirs | wc -l) done"* ]] || fail "unexpected list: $OUT"
	expect_exit 1 lab_cmd show 99
	expect_exit 2 lab_cmd frobnicate
	expect_exit 0 lab_cmd hint 3
	[[ "$OUT" == *"Hints for 03"* ]] || fail "hint 3: $OUT"
	expect_exit 0 lab_cmd type 6
	[[ "$OUT" == *"lkdtm CFI_FORWARD_PROTO"* ]] || fail "type 6 without tmux: $OUT"
	expect_exit 0 lab_cmd open 4
	[[ "$OUT" == *"./run.sh x86_64 --gdb"* ]] || fail "open without a terminal: $OUT"
}

# The exercises' commands work from any KCFI_LAB_HOME: their texts spell
# the lab's state directory $KCFI_LAB_HOME, never a default path that
# would read another home's tree, and what the lab types or prints has
# this home's path in it.
# shellcheck disable=SC2016,SC2088 # the literal variable and paths are the point
test_exercise_commands_work_from_any_home() {
	local hits home="$TEST_TMP/a lab home" n
	hits=$(grep -rnE '~/\.cache/kcfi-lab|\$HOME/\.cache/kcfi-lab|\$\{XDG_CACHE_HOME' \
		"$KCFI_LAB_ROOT"/exercises --include='*.md' --include=lab.conf) || true
	[ -z "$hits" ] || fail "exercise texts spell a default home: $hits"
	n=$(grep -rlF '$KCFI_LAB_HOME' "$KCFI_LAB_ROOT"/exercises --include=README.md | grep -c .) || true
	[ "$n" -ge 8 ] || fail "only $n exercise READMEs use \$KCFI_LAB_HOME"
	expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" path
	assert_eq "$OUT" "$home" "./run.sh path"
	expect_exit 0 env KCFI_LAB_HOME="$home" bash -c '. "$1/lab/common.sh"; . "$1/lab/exercises.sh"; cmd_lab type 2' \
		_ "$KCFI_LAB_ROOT" </dev/null
	[[ "$OUT" == *"$(printf '%q' "$home")/build/x86_64/vmlinux"* ]] || fail "type 2 does not name this home: $OUT"
	[[ "$OUT" != *'$KCFI_LAB_HOME'* ]] || fail "type 2 left the variable in: $OUT"
	expect_exit 0 env KCFI_LAB_HOME="$home" bash -c '. "$1/lab/common.sh"; . "$1/lab/exercises.sh"; cmd_lab' \
		_ "$KCFI_LAB_ROOT" </dev/null
	[[ "$OUT" == *"export KCFI_LAB_HOME=$(printf '%q' "$home")"* ]] || fail "the menu does not say how to set the home: $OUT"
}

test_lab_type_follows_the_kernel() {
	# A suggested command is written once, for the default kernel; on
	# every kernel the exercise runs on, the lab types it with that
	# kernel's tools and build directory.
	local k want_tool want_vmlinux
	# shellcheck disable=SC2016 # the inner bash expands $1
	for k in $(exercise_kernels 02-preamble); do
		want_tool="llvm-objdump${LAB_CONF["host/$k.llvm"]} "
		want_vmlinux="$(KCFI_LAB_KERNEL=$k bash -c '. "$1/lab/common.sh"; build_dir x86_64' _ "$KCFI_LAB_ROOT")/vmlinux"
		expect_exit 0 env KCFI_LAB_KERNEL="$k" bash -c '. "$1/lab/common.sh"; . "$1/lab/exercises.sh"; cmd_lab type 2' \
			_ "$KCFI_LAB_ROOT" </dev/null
		[[ "$OUT" == *"$want_tool"* ]] || fail "type 2 on Linux $k does not use $want_tool: $OUT"
		[[ "$OUT" == *"$(printf '%q' "$want_vmlinux")"* ]] || fail "type 2 on Linux $k does not name $want_vmlinux: $OUT"
	done
}

test_lab_progress_is_kept_per_user() {
	have "clang$KCFI_LAB_LLVM" || skip "clang$KCFI_LAB_LLVM not installed (./run.sh setup)"
	local answer
	# Exercise 03 needs clang only, no kernel.
	answer=$(KCFI_LAB_HOME="$TEST_TMP/lab-home" "$KCFI_LAB_ROOT/exercises/03-typeid/solution")
	# shellcheck disable=SC2086 # the answer is two words
	expect_exit 1 lab_cmd check 3 _ZTSFvPiE ${answer#* }
	expect_exit 0 lab_cmd list
	[[ "$OUT" == *"[ ] 03"* ]] || fail "a wrong answer marked 03 done"
	# shellcheck disable=SC2086
	expect_exit 0 lab_cmd check 3 $answer
	[ -f "$TEST_TMP/lab-home/progress/$(id -un)/03-typeid" ] || fail "no progress mark for 03"
	expect_exit 0 lab_cmd list
	[[ "$OUT" == *"[x] 03"* ]] || fail "03 not marked: $OUT"
	[[ "$OUT" == *"1 of $(exercise_dirs | wc -l) done"* ]] || fail "count: $OUT"
	expect_exit 0 lab_cmd reset 3
	expect_exit 0 lab_cmd list
	[[ "$OUT" == *"[ ] 03"* ]] || fail "reset 3 kept the mark"
}
