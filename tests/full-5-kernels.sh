#!/usr/bin/env bash
# The lab's other kernels (lab/kernel/*.conf other than the default),
# built for every arch they have KCFI on by tests/full-1-kernels.sh: their
# guests go through the same boots and gdb walk as the default kernel's,
# judged the same way. Then what only some kernels do: the type ids re-randomized at
# boot, the padded preambles, the kernel's own line naming the CFI
# implementation.

test_kernels_worktree_holds_their_bundle_commits() {
	local k repo want got
	for k in $(other_kernels); do
		use_kernel "$k"
		repo="$TEST_TMP/bundle-$k.git"
		git init -q --bare "$repo"
		git --git-dir="$repo" fetch -q "$KCFI_LAB_BUNDLE" "refs/heads/$LAB_BRANCH:refs/heads/b"
		want=$(git --git-dir="$repo" log --format=%s "$(git --git-dir="$repo" rev-list --max-parents=0 b)..b")
		[ -n "$want" ] || fail "the bundle's $LAB_BRANCH has no commits"
		got=$(git -C "$LAB_WORKTREE" log --format=%s "$LAB_DISTRO..$LAB_BRANCH")
		assert_eq "$got" "$want" "Linux $k: lab commits in the worktree"
		# A string, not a pattern: a backport's version has a "+".
		assert_eq "$(git --git-dir="$LAB_GIT" log -1 --format=%B "$LAB_DISTRO" | sed -n 's/^Distro-Version: //p')" \
			"$(distro_version)" "Linux $k: the package version the import records"
	done
}

# The same boots as the default kernel's (tests/full-2-guest.sh), with
# ids the guest keeps as the compiler made them (guest_args).
kernel_strict() {
	strict_run "$1"
	local impl
	impl=$(kernel_impl_line "$1")
	[ -z "$impl" ] || assert_grep "$impl" "$CONSOLE" "Linux $LAB_KERNEL names its CFI implementation"
	assert_grep "Linux version $LAB_KERNEL\\.[0-9]+.*clang version ${KCFI_LAB_LLVM#-}\\." "$CONSOLE" \
		"Linux $LAB_KERNEL built by clang$KCFI_LAB_LLVM"
}

test_kernels_strict_lkdtm() { each_kernel_arch kernel_strict; }
test_kernels_permissive_lkdtm() { each_kernel_arch permissive_run; }
test_kernels_gdb_walk() { each_kernel_arch gdb_walk; }
# The learner's way, in tmux: break, trigger, step to the trap, close.
test_kernels_tmux_gdb_session() { each_kernel_arch tmux_session_walk; }

# report_types LOG: "EXPECTED TARGET" of the first CFI report in LOG.
report_types() {
	sed -nE 's/.*CFI failure at lkdtm_indirect_call\+.*expected type: 0x([0-9a-f]{8}); target type: 0x([0-9a-f]{8})\).*/\1 \2/p' "$1" |
		sed -n 1p
}

# Where the kernel re-randomizes the ids, two boots report two expected
# types, neither the compiler's, and the mismatch is caught all the same.
rerandomized_boots() {
	local arch=$1 i log exp tgt compiler_exp compiler_tgt
	local -a seen=()
	kernel_rerandomizes "$arch" || {
		echo "Linux $LAB_KERNEL keeps the compiler's ids on $arch"
		return 0
	}
	compiler_exp=$(preamble_type "$arch" lkdtm_increment_void)
	compiler_tgt=$(preamble_type "$arch" lkdtm_increment_int)
	for i in 1 2; do
		log="$TEST_TMP/rand-$arch$LAB_SUFFIX-$i.log"
		lab "$arch" --run 'lkdtm CFI_FORWARD_PROTO; echo ALIVE' >"$log" 2>&1 ||
			fail "boot $i failed: $(tail -n 3 "$log")"
		read -r exp tgt <<<"$(report_types "$log")"
		{ [ -n "$exp" ] && [ -n "$tgt" ]; } || fail "boot $i: no report with both types"
		echo "boot $i: expected 0x$exp, target 0x$tgt (compiler: 0x$compiler_exp, 0x$compiler_tgt)"
		[ "$exp" != "$compiler_exp" ] || fail "boot $i reports the compiler's expected type 0x$exp"
		[ "$tgt" != "$compiler_tgt" ] || fail "boot $i reports the compiler's target type 0x$tgt"
		[ "$exp" != "$tgt" ] || fail "boot $i: the two types are the same"
		assert_grep "^\[ *[0-9.]+\] $(arch_get "$arch" oops_line)" "$log" "boot $i: the mismatch still oopses"
		assert_grep '^ALIVE$' "$log" "boot $i: the guest survived"
		assert_no_grep 'Kernel command line:.*cfi=norand' "$log"
		seen+=("$exp")
	done
	[ "${seen[0]}" != "${seen[1]}" ] || fail "two boots reported the same expected type 0x${seen[0]}"
}

test_kernels_rerandomize_type_ids_at_boot() { each_kernel_arch rerandomized_boots; }

# Where a boot argument turns the checks off, the kernel patches them out
# and the lab's line says so instead of naming a scheme: the mismatched
# call goes ahead, with no report and no oops.
cfi_off_boot() {
	local arch=$1 off log
	off=$(kernel_off_arg "$arch")
	if [ -z "$off" ]; then
		echo "Linux $LAB_KERNEL has no boot argument that turns CFI off on $arch"
		return 0
	fi
	log="$TEST_TMP/off-$arch$LAB_SUFFIX.log"
	lab "$arch" --append "$off" --run 'lkdtm CFI_FORWARD_PROTO; echo ALIVE' >"$log" 2>&1 ||
		fail "the $off boot failed: $(tail -n 3 "$log")"
	assert_grep "Command line:.* $off" "$log" "the boot argument reached the kernel"
	assert_grep '^\[ *[0-9.]+\] CFI: disabled at boot, indirect calls are not checked$' "$log" "the lab's line says CFI is off"
	assert_no_grep 'CFI: [A-Za-z]+ enabled, mode:' "$log"
	assert_no_grep 'CFI failure at' "$log"
	assert_grep 'lkdtm: FAIL: survived mismatched prototype function call' "$log" "the mismatched call went ahead"
	assert_grep '^ALIVE$' "$log" "the guest went on"
}

test_kernels_cfi_off_at_boot() { each_kernel_arch cfi_off_boot; }

# Each other kernel's commits replay onto a later point release of its
# import too: drift in files they touch (away from their hunks) and in
# one they do not, kept; the lab's changes there.
replay_onto_drift() {
	local k home
	for k in $(other_kernels); do
		use_kernel "$k"
		home="$TEST_TMP/drift-$k home"
		drift_home "$home"
		KCFI_LAB_HOME="$home" lab prepare --kernel "$k"
		assert_replayed "$home/worktree$LAB_SUFFIX" cfi_warn
		rm -rf "$home"
	done
}

test_kernels_replay_onto_a_later_import() {
	[ -n "$(other_kernels)" ] || skip "the lab has no kernel but $LAB_DEFAULT_KERNEL"
	replay_onto_drift
}

# Every preamble the lab's tool finds is as long as llvm-objdump says the
# __cfi_ symbol's instructions are, on every kernel and arch: the tool
# reads padded preambles (x86_64 with CALL_PADDING: 16 bytes) as well as
# the seeds' ones.
preamble_size_agrees() {
	local arch=$1 bytes dis n
	bytes=$(kcfi_fact_tool func --json "$(vmlinux_of "$arch")" lkdtm_increment_void | json_field functions.0.preamble_bytes)
	dis=$("llvm-objdump$KCFI_LAB_LLVM" -d --no-show-raw-insn \
		--disassemble-symbols=lkdtm_increment_void "$(vmlinux_of "$arch")")
	[ -n "$dis" ] || fail "no lkdtm_increment_void"
	n=$(symbol_addr "$arch" lkdtm_increment_void)
	[ -n "$n" ] || fail "no address for lkdtm_increment_void"
	local cfi
	cfi=$(symbol_addr "$arch" __cfi_lkdtm_increment_void)
	if [ -n "$cfi" ]; then
		assert_eq "$bytes" "$((0x$n - 0x$cfi))" "$arch: preamble bytes = entry - __cfi_ symbol"
	else
		echo "$arch: no __cfi_ symbol; the tool says $bytes bytes"
	fi
}

test_kernels_tool_reads_their_preambles() { each_kernel_arch preamble_size_agrees; }

# Where a kernel asks clang for arity (its .config has FINEIBT_BHI, and
# its Makefile then passes -fsanitize-kcfi-arity), the register each
# preamble loads the id into says how many arguments arrive in
# registers: the tool's arity is the register llvm-objdump shows, and
# for lkdtm_increment_int it is the parameter count of the prototype
# in the image's DWARF. Without it the tool reads no arity at all.
# The registers an x86 preamble's mov may load, by the arity each says.
ARITY_REGS="eax ecx edx ebx esp ebp esi edi"

preamble_arity_agrees() {
	local arch=$1 json reg got want proto scan="$TEST_TMP/arity-scan-$1$LAB_SUFFIX.json"
	lab kcfi scan --json "$(vmlinux_of "$arch")" >"$scan"
	# An arch whose preambles have no register has no "arity" at all.
	got=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["summary"].get("arity", False))' "$scan")
	if ! grep -qx 'CONFIG_FINEIBT_BHI=y' "$(build_dir "$arch")/.config"; then
		assert_eq "$got" False "$arch: the tool reads an arity without FINEIBT_BHI"
		echo "Linux $LAB_KERNEL, $arch: no arity"
		return 0
	fi
	assert_eq "$got" True "$arch: the tool reads the arity FINEIBT_BHI asks for"
	json=$(lab kcfi func --json "$(vmlinux_of "$arch")" lkdtm_increment_int)
	got=$(json_field functions.0.arity <<<"$json")
	reg=$("llvm-objdump$KCFI_LAB_LLVM" -d --disassemble-symbols=__cfi_lkdtm_increment_int "$(vmlinux_of "$arch")" |
		sed -nE 's/.*movl[[:space:]]+[$]0x[0-9a-f]+, %(e[a-z]{2}).*/\1/p')
	want=$(awk -v r="$reg" '{ for (i = 1; i <= NF; i++) if ($i == r) print i - 1 }' <<<"$ARITY_REGS")
	[ -n "$want" ] || fail "$arch: no id register in __cfi_lkdtm_increment_int ('$reg')"
	assert_eq "$(json_field functions.0.preamble_register <<<"$json")" "$reg" "$arch: the tool's preamble register"
	assert_eq "$got" "$want" "$arch: the tool's arity, llvm-objdump's %$reg"
	proto=$(func_prototype "$arch" lkdtm_increment_int)
	[ -n "$proto" ] || fail "$arch: no prototype for lkdtm_increment_int in the DWARF"
	# Parameters: the commas in the parentheses, plus one.
	proto=${proto#*(}
	proto=${proto%)}
	local commas=${proto//[^,]/}
	assert_eq "$want" "$((${#commas} + 1))" "$arch: arity of lkdtm_increment_int ($proto)"
	echo "Linux $LAB_KERNEL, $arch: __cfi_lkdtm_increment_int loads its id into %$reg: arity $want"
	every_preamble_arity "$arch" "$scan"
}

# every_preamble_arity ARCH SCAN: the tool's arity of every preamble in
# the image (SCAN: its kcfi scan --json) is the number of the register
# llvm-objdump shows its mov loading, for every function both name (a
# name some static functions share is compared as the list of its
# registers).
every_preamble_arity() {
	local arch=$1 objdump="$TEST_TMP/arity-objdump-$1$LAB_SUFFIX" tool="$TEST_TMP/arity-tool-$1$LAB_SUFFIX" out
	"llvm-objdump$KCFI_LAB_LLVM" -d --no-show-raw-insn "$(vmlinux_of "$arch")" |
		awk '/^[0-9a-f]+ <__cfi_/ { n = substr($2, 8); sub(/>:$/, "", n); next }
			/^[0-9a-f]+ </ { n = "" }
			n != "" && /movl\t\$0x/ { if (match($0, /%e[a-z][a-z]/)) print n, substr($0, RSTART + 1, 3); n = "" }' >"$objdump"
	python3 -c 'import json, sys
for f in json.load(open(sys.argv[1]))["functions"]:
    print(f["name"], f["arity"])' "$2" >"$tool"
	out=$(python3 - "$objdump" "$tool" "$ARITY_REGS" <<-'PY'
		import collections, sys
		regs = sys.argv[3].split()
		seen = collections.defaultdict(list)
		for line in open(sys.argv[1]):
		    name, reg = line.split()
		    seen[name].append(regs.index(reg))
		tool = collections.defaultdict(list)
		for line in open(sys.argv[2]):
		    name, arity = line.split()
		    tool[name].append(int(arity) if arity != "None" else -1)
		bad = [n for n in tool if n in seen and sorted(tool[n]) != sorted(seen[n])]
		both = sum(len(tool[n]) for n in tool if n in seen)
		total = sum(len(v) for v in tool.values())
		print(both, total, len(bad), " ".join(bad[:5]))
	PY
	)
	local both total bad names
	read -r both total bad names <<<"$out"
	assert_eq "$bad" 0 "$arch: preambles whose arity is not llvm-objdump's register ($names)"
	[ "$((both * 1000))" -ge "$((total * 999))" ] || fail "$arch: llvm-objdump shows the register of $both of $total preambles"
	echo "Linux $LAB_KERNEL, $arch: the arity of $both of $total preambles is llvm-objdump's register"
}

test_kernels_preamble_register_is_the_arity() { each_kernel_arch preamble_arity_agrees; }

# start_build [FILE [DIR]]: a build that has work to do: a no-op make at
# least, and a compile when FILE (in the worktree) is touched; DIR goes
# first in its PATH.
start_build() {
	[ -z "${1:-}" ] || touch "$LAB_WORKTREE/$1"
	rm -f "$(build_dir x86_64)/.kcfi-lab-built"
	# Job control gives the build its own process group, as a terminal
	# would, and keeps SIGINT deliverable (without it, background jobs
	# ignore SIGINT).
	set -m
	env ${2:+PATH="$2:$PATH"} "$KCFI_LAB_ROOT/run.sh" build x86_64 >"$TEST_TMP/build1.log" 2>&1 &
	BUILD_PID=$!
	set +m
}

# stop_build: Ctrl-C to the build start_build started, if it still runs,
# and the build done again, so that the tests after find the kernel built.
stop_build() {
	[ -n "${BUILD_PID:-}" ] || return 0
	kill -INT -- "-$BUILD_PID" 2>/dev/null || true
	wait "$BUILD_PID" 2>/dev/null || true
	"$KCFI_LAB_ROOT/run.sh" build x86_64 >/dev/null 2>&1 || true
}

# slow_compiler DIR FILE: in DIR, a clang$KCFI_LAB_LLVM that, compiling
# FILE, says so (DIR/compiling) and takes a minute, or until a signal
# ends it; any other file it compiles as the real one does.
slow_compiler() {
	local cc="clang$KCFI_LAB_LLVM"
	mkdir -p "$1"
	cat >"$1/$cc" <<EOF
#!/bin/sh
case "\$*" in
*$2*) touch "$1/compiling" && sleep 60 ;;
esac
exec $(command -v "$cc") "\$@"
EOF
	chmod +x "$1/$cc"
}

test_lock_then_ctrl_c_during_a_build() {
	# While a build compiles, a second run.sh for the same kernel is refused
	# (another kernel's guest boots beside it);
	# then Ctrl-C stops the build, and the same command resumes it.
	# kallsyms is a host tool kbuild compiles first, in its prepare
	# stage, and the rerun does not need a relink of vmlinux. Its
	# compile is made slow, and the Ctrl-C waits for it to begin: it
	# lands in a real compile however loaded the machine is.
	local slow="$TEST_TMP/slow-cc" _
	slow_compiler "$slow" scripts/kallsyms.c
	start_build scripts/kallsyms.c "$slow"
	# A failed assertion must not leave the build holding the lock.
	trap stop_build EXIT
	for _ in $(seq 1 600); do
		[ ! -e "$slow/compiling" ] || break
		kill -0 "$BUILD_PID" 2>/dev/null || break
		sleep 0.2
	done
	[ -e "$slow/compiling" ] || fail "the build did not compile scripts/kallsyms.c: $(tail -n 5 "$TEST_TMP/build1.log")"
	expect_exit 1 lab build x86_64
	[[ "$OUT" == "kcfi-lab: error: another run.sh is working on Linux $LAB_KERNEL in $KCFI_LAB_HOME (pid "*"); wait for it to finish" ]] ||
		fail "unexpected: $OUT"
	another_kernel_boots_beside_the_build
	kill -INT -- "-$BUILD_PID"
	local rc=0
	wait "$BUILD_PID" || rc=$?
	BUILD_PID=""
	assert_eq "$rc" 130 "exit status after Ctrl-C"
	assert_grep 'build interrupted; run the same command again to resume' "$TEST_TMP/build1.log"
	[ -z "$(git -C "$LAB_WORKTREE" status --porcelain --untracked-files=no)" ] || fail "worktree changed"
	expect_exit 0 lab build x86_64
	[[ "$OUT" == *"x86_64 kernel built in"* ]] || fail "no build after the interruption: $OUT"
	expect_exit 0 lab x86_64 --run 'echo BOOTED-AFTER-CTRL-C'
	[[ "$OUT" == *BOOTED-AFTER-CTRL-C* ]] || fail "the rebuilt kernel does not boot"
}

# another_kernel_boots_beside_the_build: while BUILD_PID compiles the
# lab kernel, a run.sh of another kernel in the same home prepares and
# boots its guest (it waits for no build of another kernel), and the
# build is still going when the guest is done.
another_kernel_boots_beside_the_build() {
	local k
	k=$(other_kernels | sed -n 1p)
	[ -n "$k" ] || return 0
	(
		use_kernel "$k"
		# Bounded: a run.sh that waited for the build would wait for
		# the slow compile's minute, and fail here.
		expect_exit 0 timeout 45 "$KCFI_LAB_ROOT/run.sh" --kernel "$k" x86_64 --run 'echo BESIDE-THE-BUILD'
		[[ "$OUT" == *BESIDE-THE-BUILD* ]] || fail "Linux $k did not boot beside the build: $OUT"
		[[ "$OUT" != *"waiting for another run.sh"* ]] || fail "Linux $k waited for the build: $OUT"
	)
	kill -0 "$BUILD_PID" 2>/dev/null || fail "the build was over before Linux $k's guest was: $(tail -n 3 "$TEST_TMP/build1.log")"
}
