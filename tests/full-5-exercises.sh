#!/usr/bin/env bash
# The exercises against the built kernels: every solution passes its
# checker, a near miss fails it, the answers are nowhere in the exercise
# texts, the modules load in a guest, and the instructor run passes.
# Guest consoles, module builds and vmlinux statistics are cached in
# $TEST_TMP/exercises and shared by all tests here.

# ex_env: the exercises' cache in this run's TEST_TMP.
ex_env() {
	export KCFI_LAB_EX_CACHE="$TEST_TMP/exercises"
	mkdir -p "$KCFI_LAB_EX_CACHE"
}

ex_dir() {
	echo "$KCFI_LAB_ROOT/exercises/$1"
}

ex_arches() {
	sed -n 's/^arches: //p' "$(ex_dir "$1")/lab.conf"
}

# mutate WORD: a near miss of an answer word.
mutate() {
	local w=$1
	if [[ "$w" =~ ^0x[0-9a-f]+$ ]]; then
		printf '0x%x\n' $((w ^ 1))
	elif [[ "$w" =~ ^[0-9]+$ ]]; then
		echo $((w + 1))
	elif [[ "$w" =~ ^(.*\+0x)([0-9a-f]+)(.*)$ ]]; then
		printf '%s%x%s\n' "${BASH_REMATCH[1]}" $((0x${BASH_REMATCH[2]} + 2)) "${BASH_REMATCH[3]}"
	elif [[ "$w" =~ ^(.*:)([0-9]+)$ ]]; then
		echo "${BASH_REMATCH[1]}$((BASH_REMATCH[2] + 1))"
	else
		echo "${w}x"
	fi
}

# solution_answer NAME ARCH: the instructor solution's answer, kept per
# build by the lab's instructor mode (lab_solution), which the instructor
# test then runs from the same cache.
solution_answer() {
	bash -c '. "$KCFI_LAB_ROOT/lab/common.sh"; . "$KCFI_LAB_ROOT/lab/exercises.sh"; lab_solution "$@"' \
		solution_answer "$@"
}

# exercise_round NAME: on each arch it applies to and is built for, the
# solution passes; replacing any one answer word by a near miss fails.
exercise_round() {
	local name=$1 arch answer i n ran=0 kernel
	local -a words wrong
	ex_env
	for kernel in $(exercise_kernels "$name"); do
		use_kernel "$kernel"
		for arch in $(ex_arches "$name"); do
			[ -f "$(vmlinux_of "$arch")" ] || continue
			ran=1
			answer=$(solution_answer "$name" "$arch") || fail "$name: solution failed on $arch"
			read -r -a words <<<"$answer"
			[ "${#words[@]}" -gt 0 ] || fail "$name: empty solution on $arch"
			expect_exit 0 "$(ex_dir "$name")/check" --arch "$arch" "${words[@]}"
			[[ "$OUT" == "correct: "* ]] || fail "$name $arch: $OUT"
			echo "$name $arch: $answer -> $OUT"
			n=${#words[@]}
			for ((i = 0; i < n; i++)); do
				wrong=("${words[@]}")
				wrong[i]=$(mutate "${words[i]}")
				expect_exit 1 "$(ex_dir "$name")/check" --arch "$arch" "${wrong[@]}"
				[[ "$OUT" == *"not yet: "* ]] || fail "$name $arch: no 'not yet' for ${wrong[*]}: $OUT"
			done
			# Too few answers is bad usage.
			expect_exit 2 "$(ex_dir "$name")/check" --arch "$arch"
		done
	done
	[ "$ran" = 1 ] || skip "no kernel built for $name ($(ex_arches "$name"))"
}

test_ex01_tour() { exercise_round 01-tour; }
test_ex02_preamble() { exercise_round 02-preamble; }
test_ex03_typeid() { exercise_round 03-typeid; }
test_ex04_x86_check() { exercise_round 04-x86-check; }
test_ex05_arm64_check() { exercise_round 05-arm64-check; }
test_ex06_strict_oops() { exercise_round 06-strict-oops; }
test_ex07_permissive() { exercise_round 07-permissive; }
test_ex08_asm_functions() { exercise_round 08-asm-functions; }
test_ex09_traps_modules() { exercise_round 09-traps-modules; }
test_ex10_cost() { exercise_round 10-cost; }
test_ex11_then_and_now() { exercise_round 11-then-and-now; }
test_ex12_riscv64_check() { exercise_round 12-riscv64-check; }
test_ex13_hashes_that_move() { exercise_round 13-hashes-that-move; }
test_ex14_arity() {
	exercise_round 14-arity
	# Beyond near misses: a function whose count is its C parameters,
	# and a real reason that is not this function's.
	local -a words
	read -r -a words <<<"$(solution_answer 14-arity x86_64)"
	expect_exit 1 "$(ex_dir 14-arity)/check" --arch x86_64 "${words[0]}" __warn "${words[2]}"
	[[ "$OUT" == *"find one where the two differ"* ]] || fail "14: __warn taken for a difference: $OUT"
	local other=stack
	[ "${words[2]}" != stack ] || other=unused
	expect_exit 1 "$(ex_dir 14-arity)/check" --arch x86_64 "${words[0]}" "${words[1]}" "$other"
	[[ "$OUT" == *"but not for '$other'"* ]] || fail "14: '$other' taken for ${words[1]}: $OUT"
}

test_ex15_two_compilers() {
	exercise_round 15-two-compilers
	# Each report with its two sides swapped: the hint names the mistake.
	local -a w
	read -r -a w <<<"$(solution_answer 15-two-compilers x86_64)"
	expect_exit 1 "$(ex_dir 15-two-compilers)/check" --arch x86_64 "${w[1]}" "${w[0]}" "${w[2]}" "${w[3]}"
	[[ "$OUT" == *"answer 1"*"other side of that report"* ]] || fail "15: swapped first report: $OUT"
	expect_exit 1 "$(ex_dir 15-two-compilers)/check" --arch x86_64 "${w[0]}" "${w[1]}" "${w[3]}" "${w[2]}"
	[[ "$OUT" == *"answer 3"*"other side of that report"* ]] || fail "15: swapped second report: $OUT"
}

test_ex13_answer_is_never_kept() {
	# Its answer is what one boot showed, and its checker wants it in a
	# boot log the lab keeps (only the newest 100): each instructor run
	# boots again, so two answers hold two re-randomized ids.
	ex_env
	local kernel a b ran=0
	for kernel in $(exercise_kernels 13-hashes-that-move); do
		use_kernel "$kernel"
		[ -f "$(vmlinux_of x86_64)" ] || continue
		ran=1
		a=$(solution_answer 13-hashes-that-move x86_64) || fail "13: solution failed"
		b=$(solution_answer 13-hashes-that-move x86_64) || fail "13: solution failed"
		echo "Linux $kernel: $a, then $b"
		[ "${a%% *}" != "${b%% *}" ] || fail "Linux $kernel: the same id in memory twice (0x${a%% *}): a kept answer, or a boot that did not re-randomize"
	done
	[ "$ran" = 1 ] || skip "no x86_64 kernel for exercise 13"
}

test_ex10_agrees_with_kcfi_scan() {
	# The lab's C tool reads the image its own way (ELF symbols and
	# instruction bytes): its count of check sites and its largest class
	# of preambles with one id must match exercise 10's answer.
	ex_env
	local arch answer scan sites class ran=0
	for arch in x86_64 arm64; do
		[ -f "$(vmlinux_of "$arch")" ] || continue
		ran=1
		answer=$(solution_answer 10-cost "$arch") || fail "10-cost: solution failed on $arch"
		scan=$("$KCFI_LAB_ROOT/run.sh" kcfi scan "$(vmlinux_of "$arch")")
		sites=$(printf '%s\n' "$scan" | sed -n 's/^check sites (\([0-9]*\)):$/\1/p')
		[ -n "$sites" ] || fail "no check-site count in kcfi scan's output"
		assert_eq "$(cut -d' ' -f1 <<<"$answer")" "$sites" "$arch check sites: exercise 10 and kcfi scan"
		[ "$arch" = x86_64 ] || continue
		class=$(printf '%s\n' "$scan" |
			awk '/^functions with a KCFI preamble/ { p = 1; next } /^$/ { p = 0 } p && $2 ~ /^0x[0-9a-f]+$/ { print $2 }' |
			sort | uniq -c | sort -rn | awk '!done { print $1; done = 1 }')
		[ -n "$class" ] || fail "no preamble table in kcfi scan's output"
		assert_eq "$(cut -d' ' -f4 <<<"$answer")" "$class" "x86_64 largest class: exercise 10 and kcfi scan"
		echo "$arch: $answer; kcfi scan: $sites sites, largest class ${class:-n/a}"
	done
	[ "$ran" = 1 ] || skip "no kernel built"
}

# findings ANSWER: the parts of an answer that are findings: ids, offsets,
# FILE:LINE, counts of 3 digits or more, and a multi-word answer's text
# after its first word. Names of functions alone are not: the texts must
# name the candidates.
findings() {
	local w
	for w in $1; do
		[[ "$w" =~ ^0x[0-9a-f]{3,}$|\+0x|^[^\ ]+:[0-9]+$|^[0-9]{3,}$ ]] && echo "$w"
	done
	case "${1#* }" in *" "*" "*) echo "${1#* }" ;; esac
	return 0
}

test_ex_answers_not_in_exercise_texts() {
	# What a learner is asked to find must come from the build, never
	# from the texts: no finding appears in README, hints or solution.md.
	local d name arch f answer kernel
	ex_env
	for d in "$KCFI_LAB_ROOT"/exercises/[0-9][0-9]-*/; do
		name=$(basename "$d")
		for kernel in $(exercise_kernels "$name"); do
			use_kernel "$kernel"
			for arch in $(ex_arches "$name"); do
				[ -f "$(vmlinux_of "$arch")" ] || continue
				answer=$(solution_answer "$name" "$arch") || fail "$name: solution failed on $arch"
				while IFS= read -r f; do
					! grep -qiF -- "$f" "$d/README.md" "$d/hints.md" "$d/solution.md" ||
						fail "$name ($arch): '$f' is written in $(grep -liF -- "$f" "$d/README.md" "$d/hints.md" "$d/solution.md" | tr '\n' ' ')"
				done < <(findings "$answer")
			done
		done
	done
}

# ex_lib FUNCTION ARGS...: one function of exercises/lib.sh.
ex_lib() {
	bash -c '. "$KCFI_LAB_ROOT/exercises/lib.sh"; "$@"' ex_lib "$@"
}

test_ex_modules_run_in_the_guest() {
	# The modules of exercises 09 and 10, built against the lab kernel,
	# loaded in one x86_64 boot, on each kernel the exercises run on.
	ex_env
	local traps bench log cfi kernel ran=0
	for kernel in $(exercise_kernels 09-traps-modules); do
		use_kernel "$kernel"
		[ -f "$(vmlinux_of x86_64)" ] || continue
		ran=1
		traps=$(ex_lib build_module x86_64 "$KCFI_LAB_ROOT/exercises/09-traps-modules/module")
		bench=$(ex_lib build_module x86_64 "$KCFI_LAB_ROOT/exercises/10-cost/module")
		log=$(ex_lib guest_log x86_64 strict 'insmod /root/kcfi_lab_bench.ko loops=2000000; insmod /root/kcfi_lab_traps.ko warn=1; echo ALIVE' "$traps" "$bench")
		cat "$log"
		assert_grep 'kcfi_lab_bench: per call: checked [0-9]+\.[0-9]+ ns, unchecked [0-9]+\.[0-9]+ ns \(emulated CPU timings under TCG\)' "$log" "benchmark line (Linux $kernel)"
		cfi=$("$KCFI_LAB_ROOT/exercises/09-traps-modules/solution" | cut -d' ' -f1)
		assert_grep "CFI failure at ${cfi//+/\\+}/0x[0-9a-f]+ \[kcfi_lab_traps\] \(target: traps_increment_long" "$log" "the module's CFI failure at the __kcfi_traps entry (Linux $kernel)"
		assert_grep 'WARNING: .*traps_warn\+0x[0-9a-f]+/0x[0-9a-f]+ \[kcfi_lab_traps\]' "$log" "the module's WARN (Linux $kernel)"
		assert_grep "^\[ *[0-9.]+\] $(arch_get x86_64 oops_line)" "$log" "strict mode oopses (Linux $kernel)"
		assert_grep '^ALIVE$' "$log"
	done
	[ "$ran" = 1 ] || skip "no x86_64 kernel"
}

# instructor ROOT LOG: cmd_lab --instructor from the repository at ROOT.
instructor() {
	KCFI_LAB_ROOT=$1 bash -c '. "$KCFI_LAB_ROOT/lab/common.sh"; . "$KCFI_LAB_ROOT/lab/exercises.sh"; cmd_lab --instructor' \
		>"$2" 2>&1 </dev/null
}

test_ex_instructor_mode_passes() {
	ex_env
	local out="$TEST_TMP/instructor.log" rc=0 want=0 name arch kernel
	instructor "$KCFI_LAB_ROOT" "$out" || rc=$?
	cat "$out"
	assert_eq "$rc" 0 "instructor run exit status"
	for name in $(cd "$KCFI_LAB_ROOT/exercises" && ls -d [0-9][0-9]-*); do
		for kernel in $(exercise_kernels "$name"); do
			use_kernel "$kernel"
			for arch in $(ex_arches "$name"); do
				[ -f "$(vmlinux_of "$arch")" ] || continue
				want=$((want + 1))
				assert_grep "^PASS $name +$arch${LAB_SUFFIX:+ $LAB_KERNEL} " "$out" "$name on $arch (Linux $LAB_KERNEL) passes"
			done
		done
	done
	assert_eq "$(grep -c '^PASS ' "$out")" "$want" "PASS lines"
	assert_no_grep '^FAIL ' "$out"
}

test_ex_instructor_mode_fails_on_a_wrong_solution() {
	# A copy of the repository's exercises whose one solution lies.
	ex_env
	local copy="$TEST_TMP/broken-root" rc=0
	mkdir -p "$copy"
	cp -r "$KCFI_LAB_ROOT/exercises" "$KCFI_LAB_ROOT/lab" "$KCFI_LAB_ROOT/tests" "$copy/"
	find "$copy/exercises" -mindepth 1 -maxdepth 1 -name '[0-9]*' ! -name '01-tour' -exec rm -rf {} +
	printf '#!/usr/bin/env bash\necho "1 not the subject"\n' >"$copy/exercises/01-tour/solution"
	instructor "$copy" "$TEST_TMP/broken.log" || rc=$?
	cat "$TEST_TMP/broken.log"
	[ "$rc" != 0 ] || fail "instructor mode passed a wrong solution"
	assert_grep '^FAIL 01-tour ' "$TEST_TMP/broken.log"
}

test_ex_lab_open_and_type_in_tmux() {
	# The lab's open/type flow as a learner would use it, inside tmux:
	# console, gdb and the guide in one window; type fills the gdb pane.
	have tmux || skip "tmux not installed"
	[ -f "$(vmlinux_of x86_64)" ] || skip "no x86_64 kernel"
	local sock="kcfi-lab-test-$$-ex" open_file
	open_file="$KCFI_LAB_HOME/progress/$(id -un)/.open"
	[ ! -e "$open_file" ] || skip "a lab window is open for this user ($open_file)"
	EX_SOCK=$sock EX_OPEN=$open_file
	trap 'tmux -L "$EX_SOCK" kill-server 2>/dev/null || true; rm -f "$EX_OPEN"' EXIT
	tmux -L "$sock" new-session -d -s learner -x 200 -y 50 \
		"cd '$KCFI_LAB_ROOT' && bash -c '. lab/common.sh; . lab/exercises.sh; cmd_lab open 4 && cmd_lab type 4'; sleep 600"
	local _ win console gdb name
	for _ in $(seq 1 300); do
		[ -s "$open_file" ] && break
		sleep 0.5
	done
	[ -s "$open_file" ] || fail "open 4 recorded no window"
	read -r win name console gdb <"$open_file"
	assert_eq "$name" 04-x86-check "the open exercise"
	assert_eq "$(tmux -L "$sock" list-panes -t "$win" | wc -l)" 3 "console, gdb and guide panes"
	for _ in $(seq 1 100); do
		tmux -L "$sock" capture-pane -p -J -t "$gdb" | has_match 'hbreak lkdtm_indirect_call' && break
		sleep 0.2
	done
	tmux -L "$sock" capture-pane -p -J -t "$gdb" | has_match 'hbreak lkdtm_indirect_call' ||
		fail "type 4 did not reach the gdb pane"
	tmux -L "$sock" capture-pane -p -J -S -100 -t learner:0 | has_match 'typed into the gdb pane' ||
		fail "no confirmation from type"
	local guide
	guide=$(tmux -L "$sock" list-panes -t "$win" -F '#{pane_id}' | grep -vxF -e "$console" -e "$gdb")
	tmux -L "$sock" capture-pane -p -J -t "$guide" | has_match 'The x86_64 check' ||
		fail "the guide pane does not show the README"
	tmux -L "$sock" kill-server
	sleep 1
	! pgrep -f "$KCFI_LAB_HOME/run/kcfi-lab-x86_64-" >/dev/null || fail "QEMU or gdb left running"
}
