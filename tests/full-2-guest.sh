#!/usr/bin/env bash
# Booted guests: every lkdtm CFI test in one boot per arch and mode, the
# outcome judged from the console against ids read out of the vmlinux.
# The kernel's own lkdtm selftest then runs the same tests in the same
# boot as a second opinion.

CFI_TESTS="CFI_FORWARD_PROTO CFI_FORWARD_RETURN CFI_FORWARD_ARG CFI_FORWARD_MIDDLE CFI_FORWARD_R12 CFI_FORWARD_R10 CFI_ASM_TYPED CFI_ASM_UNTYPED CFI_NOCFI CFI_ADDR_EQUALITY"

# console_log ARCH MODE: where guest_console keeps that boot's console.
console_log() {
	echo "$TEST_TMP/console-$1$LAB_SUFFIX-$2.log"
}

# guest_console ARCH MODE: boot once per arch and mode (cached) and set
# CONSOLE to the console log. Asserts, so never inside $(...).
guest_console() {
	local arch=$1 mode=$2 log
	local -a extra
	log=$(console_log "$arch" "$mode")
	if [ ! -s "$log" ]; then
		mapfile -t extra < <(guest_args "$arch")
		lab "$arch" "--$mode" ${extra[@]+"${extra[@]}"} --timeout 600 \
			--run "lkdtm $CFI_TESTS; lkdtm-selftest $CFI_TESTS; echo ALIVE" >"$log.tmp" 2>"$log.err" ||
			fail "scripted $arch $mode boot failed: $(tail -n 3 "$log.err")"
		mv "$log.tmp" "$log"
	fi
	CONSOLE=$log
}

# section LOG TEST: the console lines of one lkdtm test.
section() {
	awk -v t="lkdtm: triggering $2" '
		index($0, t) { on = 1; next }
		on && (/lkdtm: triggering / || /^lkdtm-selftest: / || /^ALIVE/) { exit }
		on' "$1"
}

# The mismatching tests: TEST CALLER TARGET EXPECTED-FROM.
mismatches() {
	cat <<-TABLE
		CFI_FORWARD_PROTO lkdtm_indirect_call lkdtm_increment_int lkdtm_increment_void
		CFI_FORWARD_RETURN lkdtm_indirect_call_int lkdtm_increment_uint lkdtm_increment_int
		CFI_FORWARD_ARG lkdtm_indirect_call lkdtm_increment_unsigned lkdtm_increment_void
		CFI_FORWARD_MIDDLE lkdtm_indirect_call lkdtm_asm_landing_middle lkdtm_increment_void
		CFI_ASM_UNTYPED lkdtm_indirect_call lkdtm_asm_increment_untyped lkdtm_increment_void
		CFI_FORWARD_R12 lkdtm_indirect_call_r12 lkdtm_increment_int lkdtm_increment_void
		CFI_FORWARD_R10 lkdtm_indirect_call_r10 lkdtm_increment_int lkdtm_increment_void
	TABLE
}

# arch_mismatches ARCH: set MISMATCHES to a file with the rows of
# mismatches whose caller ARCH's image has. The others test another
# arch's check forms: their console lines must say XFAIL, and they are
# listed in $TEST_TMP/ARCH-xfail. Asserts, so never inside $(...).
arch_mismatches() {
	local arch=$1 test caller target from sec
	MISMATCHES=$TEST_TMP/$arch$LAB_SUFFIX-mismatches
	: >"$MISMATCHES"
	: >"$TEST_TMP/$arch$LAB_SUFFIX-xfail"
	while read -r test caller target from; do
		if [ -n "$(symbol_addr "$arch" "$caller")" ]; then
			echo "$test $caller $target $from" >>"$MISMATCHES"
			continue
		fi
		sec=$(section_file "$arch" "$test")
		section "$CONSOLE" "$test" >"$sec"
		assert_grep "lkdtm: XFAIL: " "$sec" "$arch: $test has no $caller, so lkdtm says XFAIL"
		echo "$test" >>"$TEST_TMP/$arch$LAB_SUFFIX-xfail"
	done < <(mismatches)
}

# section_file ARCH TEST: where check_failure_line leaves TEST's lines.
section_file() {
	echo "$TEST_TMP/$1$LAB_SUFFIX-$2.txt"
}

# check_failure_line ARCH LOG TEST CALLER TARGET EXPECTED-FROM: the report
# names caller and target, and both type ids match llvm-objdump's; TEST's
# console lines are left in section_file. Asserts, so never inside $(...).
check_failure_line() {
	local arch=$1 log=$2 test=$3 caller=$4 target=$5 from=$6 exp tt tail sec
	exp=$(preamble_type "$arch" "$from")
	case "$exp" in "" | none) fail "no preamble type for $from in $arch vmlinux" ;; esac
	assert_eq "$(site_expected_type "$arch" "$caller")" "$exp" "$arch: $caller's check expects $from's type"
	tt=$(reported_target_type "$arch" "$target") || fail "no $target in $arch vmlinux"
	if [ "$tt" = none ]; then tail="target has no kCFI preamble"; else tail="target type: 0x$tt"; fi
	sec=$(section_file "$arch" "$test")
	section "$log" "$test" >"$sec"
	assert_grep "CFI failure at $caller\+0x[0-9a-f]+/0x[0-9a-f]+ \(target: $target\+0x0/0x[0-9a-f]+; expected type: 0x$exp; $tail\)" "$sec" \
		"$arch $test: report line with expected 0x$exp and '$tail'"
}

# selftest_agrees LOG ARCH: tools/testing/selftests/lkdtm/run.sh passed every
# test. It expects only "call trace:" of a mismatch, so it passes in both
# modes: it is a second opinion on the lkdtm side, not on the mode.
selftest_agrees() {
	local test verdict
	for test in $CFI_TESTS; do
		verdict="ok \(exit 0\)"
		if grep -qx "$test" "$TEST_TMP/$2$LAB_SUFFIX-xfail"; then
			verdict="skip \(exit 4\)"
		fi
		assert_grep "^lkdtm-selftest: $test: $verdict$" "$1" "the kernel's selftest: $test $verdict"
	done
	assert_grep "^CFI_FORWARD_PROTO: saw 'call trace:': ok$" "$1" "the selftest's own verdict line"
}

strict_run() {
	local arch=$1 log sec test caller target from
	guest_console "$arch" strict
	log=$CONSOLE
	assert_grep '] CFI: kCFI enabled, mode: strict$' "$log" "boot line with the mode"
	assert_grep "KCFI Lab guest: $arch, .*kCFI mode: strict" "$log" "banner with arch and mode"
	arch_mismatches "$arch"
	while read -r test caller target from; do
		check_failure_line "$arch" "$log" "$test" "$caller" "$target" "$from"
		sec=$(section_file "$arch" "$test")
		assert_grep "^\[ *[0-9.]+\] $(arch_get "$arch" oops_line)" "$sec" "$test: the $arch oops line"
		assert_grep "lkdtm: $test: the writing process was killed by signal" "$sec" "$test: the writer died"
		assert_no_grep 'FAIL: survived' "$sec"
	done <"$MISMATCHES"
	for test in CFI_ASM_TYPED CFI_NOCFI CFI_ADDR_EQUALITY; do
		section "$log" "$test" >"$(section_file "$arch" "$test")"
		assert_grep 'lkdtm: ok: ' "$(section_file "$arch" "$test")" "$test passes"
		assert_no_grep 'CFI failure|FAIL' "$(section_file "$arch" "$test")"
	done
	selftest_agrees "$log" "$arch"
	# The oopses leave nothing behind: no task dies with interrupts
	# masked, and no CPU warns afterwards (arm64's did, from context
	# tracking, until the lab's arm64 commit).
	assert_no_grep 'exited with irqs disabled|WARNING:' "$log"
	assert_grep '^ALIVE$' "$log" "the guest survived every oops"
}

permissive_run() {
	local arch=$1 log sec test caller target from
	guest_console "$arch" permissive
	log=$CONSOLE
	assert_grep '] CFI: kCFI enabled, mode: permissive$' "$log" "boot line with the mode"
	assert_grep "KCFI Lab guest: $arch, .*kCFI mode: permissive" "$log" "banner with the mode"
	assert_grep 'Kernel command line:.* cfi=warn' "$log" "cfi=warn on the command line"
	arch_mismatches "$arch"
	while read -r test caller target from; do
		check_failure_line "$arch" "$log" "$test" "$caller" "$target" "$from"
		sec=$(section_file "$arch" "$test")
		assert_grep '^\[ *[0-9.]+\] WARNING: ' "$sec" "$test: a WARNING, not an oops"
		assert_grep 'lkdtm: FAIL: survived ' "$sec" "$test: the call went ahead"
		assert_grep "lkdtm: $test: returned" "$sec" "$test: the writer lived"
	done <"$MISMATCHES"
	assert_no_grep 'invalid opcode|Oops' "$log"
	# A CFI warning taints W, never P (proprietary module).
	assert_grep 'Tainted: G +W ' "$log" "W taint after the first warning"
	assert_no_grep 'Tainted: P' "$log"
	for test in CFI_ASM_TYPED CFI_NOCFI CFI_ADDR_EQUALITY; do
		section "$log" "$test" >"$(section_file "$arch" "$test")"
		assert_grep 'lkdtm: ok: ' "$(section_file "$arch" "$test")" "$test passes"
	done
	selftest_agrees "$log" "$arch"
	assert_grep '^ALIVE$' "$log"
}

test_x86_64_strict_lkdtm() { strict_run x86_64; }
test_x86_64_permissive_lkdtm() { permissive_run x86_64; }
test_arm64_strict_lkdtm() { strict_run arm64; }
test_arm64_permissive_lkdtm() { permissive_run arm64; }

# CFI_FORWARD_R12 and CFI_FORWARD_R10 exist for the x86_64 check's other
# forms: the image must hold them, read by the lab's tool and, as a second
# route, by llvm-objdump, or their reports above would prove nothing new.
test_x86_64_lkdtm_reaches_every_check_form() {
	local short dis=$TEST_TMP/x86_64-check-forms.txt
	short=$(site_fact x86_64 lkdtm_indirect_call length) || fail "no check site in lkdtm_indirect_call"
	assert_eq "$(site_fact x86_64 lkdtm_indirect_call_r12 target_register)" r12 "CFI_FORWARD_R12's check reads the target's type through %r12"
	assert_eq "$(site_fact x86_64 lkdtm_indirect_call_r12 length)" "$((short + 1))" "the %r12 check is one byte longer: a SIB byte"
	assert_eq "$(site_fact x86_64 lkdtm_indirect_call_r10 target_register)" r10 "CFI_FORWARD_R10's target is in %r10"
	"llvm-objdump$KCFI_LAB_LLVM" -d --no-show-raw-insn \
		--disassemble-symbols=lkdtm_indirect_call_r12,lkdtm_indirect_call_r10 \
		"$(vmlinux_of x86_64)" >"$dis"
	assert_grep 'addl[[:space:]]+-0x4\(%r12\), %r10d' "$dis" "objdump: the %r12 form"
	assert_grep 'addl[[:space:]]+-0x4\(%r10\), %r11d' "$dis" "objdump: the %r11d form"
}

test_arm64_code_line_matches_the_image() {
	# The oops's Code: line holds the words around the brk; they must be
	# the bytes of lkdtm_indirect_call in the vmlinux.
	local log code brk dis
	guest_console arm64 strict
	log=$CONSOLE
	code=$(section "$log" CFI_FORWARD_PROTO | sed -n 's/.*Code: \(.*\)$/\1/p' | sed -n 1p)
	[ -n "$code" ] || fail "no Code: line"
	# The faulting instruction is the word in parentheses.
	brk=$(printf '%s\n' "$code" | sed -nE 's/.*\(([0-9a-f]{8})\).*/\1/p')
	[ -n "$brk" ] || fail "no faulting word in the Code: line: $code"
	[ $((0x$brk & 0xffe0001f)) = $((0xd4200000)) ] || fail "faulting word $brk is not a brk"
	dis=$("llvm-objdump$KCFI_LAB_LLVM" -d --disassemble-symbols=lkdtm_indirect_call "$(vmlinux_of arm64)")
	grep -q "$brk" <<<"$dis" || fail "brk word $brk not in lkdtm_indirect_call"
	# brk immediate: 0x8000 | type register (w17) << 5 | target register.
	local imm=$(((0x$brk >> 5) & 0xffff))
	assert_eq "$(((imm >> 5) & 31))" 17 "type register in the brk immediate"
	assert_eq "$((imm & 0x8000))" $((0x8000)) "kCFI marker bit"
}

test_lkdtm_helper_lists_tests_and_rejects_unknown() {
	local out="$TEST_TMP/helper.log"
	lab x86_64 --run 'lkdtm; lkdtm NO_SUCH_TEST; echo "rc=$?"; lkdtm-selftest NO_SUCH_TEST; echo "selftest rc=$?"' >"$out" 2>/dev/null
	assert_grep '^CFI_FORWARD_PROTO' "$out" "test list"
	assert_grep '^CFI_ADDR_EQUALITY' "$out" "new tests in the list"
	assert_grep 'lkdtm: no such test: NO_SUCH_TEST' "$out"
	assert_grep '^rc=1$' "$out"
	assert_grep 'lkdtm-selftest: no such test in tests.txt: NO_SUCH_TEST' "$out"
	assert_grep '^selftest rc=1$' "$out"
}

test_nocfi_caller_makes_an_unchecked_indirect_call() {
	# CFI_NOCFI only shows something if the compiler kept the call
	# indirect and left the check out; lkdtm_indirect_call keeps both.
	local arch dis call trap
	for arch in x86_64 arm64; do
		call=$(arch_get "$arch" indirect_call)
		trap="[[:space:]]$(arch_get "$arch" trap_mnemonic)([[:space:]]|\$)"
		dis=$("llvm-objdump$KCFI_LAB_LLVM" -d --disassemble-symbols=lkdtm_indirect_call_nocfi "$(vmlinux_of "$arch")")
		grep -Eq "$call" <<<"$dis" || fail "$arch: lkdtm_indirect_call_nocfi makes no indirect call"
		! grep -Eq "$trap" <<<"$dis" || fail "$arch: lkdtm_indirect_call_nocfi has a kCFI check"
		dis=$("llvm-objdump$KCFI_LAB_LLVM" -d --disassemble-symbols=lkdtm_indirect_call "$(vmlinux_of "$arch")")
		grep -Eq "$call" <<<"$dis" || fail "$arch: lkdtm_indirect_call makes no indirect call"
		grep -Eq "$trap" <<<"$dis" || fail "$arch: lkdtm_indirect_call has no kCFI check"
	done
}

# A host whose own QEMU is wrong for a kernel takes that kernel's QEMU
# for an arch from other suites (Debian 13 takes Linux 7.3's x86_64 QEMU
# from its backports: its own runs past the byte 7.3's checks trap on).
# Here, a copy of this host's file takes the default kernel's QEMU for
# its default arch from this host's own suites by that route: setup
# fetches it into a root of its own in the lab's home, verified by apt,
# the host's apt and dpkg untouched; it looks for its firmware in that
# root first, not in the host's QEMU; the lab boots with it and says so,
# and the guest shows the seed's ids.
test_qemu_from_other_suites_boots_the_lab_kernel() {
	local root="$TEST_TMP/qemu-suites" arch conf before after qhome wrapper first want_expected want_target
	[ -n "$LAB_HOST" ] || skip "no host file for this machine"
	arch=$(kernel_get default_arch)
	[ -z "$(qemu_suites "$arch")" ] || skip "this host takes Linux $LAB_KERNEL's $arch QEMU from other suites already (every boot does this)"
	want_expected=$(preamble_type "$arch" lkdtm_increment_void)
	want_target=$(preamble_type "$arch" lkdtm_increment_int)
	[[ "$want_expected$want_target" =~ ^[0-9a-f]{16}$ ]] || fail "no ids from this machine's $arch build"
	mkdir -p "$root"
	cp -r "$KCFI_LAB_ROOT/lab" "$KCFI_LAB_ROOT/run.sh" "$KCFI_LAB_ROOT/kernel-branch.bundle" \
		"$KCFI_LAB_ROOT/initramfs" "$root/"
	conf="$root/lab/host/$LAB_HOST.conf"
	echo "$LAB_KERNEL.$arch.qemu_suites=$(host_get own_suites)" >>"$conf"
	qhome="$KCFI_LAB_HOME/qemu/$LAB_KERNEL-$arch"
	wrapper="$qhome/bin/$(arch_get "$arch" qemu)"
	rm -rf "$qhome"
	before=$(host_apt_state)
	expect_exit 0 "$root/run.sh" setup
	after=$(host_apt_state)
	assert_eq "$after" "$before" "the host's apt sources and dpkg status"
	[[ "$OUT" == *"fetching $(arch_get "$arch" qemu_package) from $(host_get own_suites)"* ]] ||
		fail "QEMU did not come from the suites: $OUT"
	[ -x "$wrapper" ] || fail "no $wrapper after setup"
	# QEMU says where it looks for its firmware: its own root first.
	first=$("$wrapper" -L help | sed -n 1p)
	[[ "$first" == "$qhome/root/"* ]] || fail "the fetched QEMU looks for its firmware in $first first, not in its root"
	expect_exit 0 "$root/run.sh" status
	[[ "$OUT" == *", qemu "*" in $qhome"* ]] || fail "status does not name the fetched QEMU: $OUT"
	expect_exit 0 "$root/run.sh" "$arch" --run 'lkdtm CFI_FORWARD_PROTO; echo QEMU-SUITES-ALIVE'
	printf '%s\n' "$OUT" >"$TEST_TMP/qemu-suites.log"
	assert_grep "^kcfi-lab: QEMU: $wrapper " "$TEST_TMP/qemu-suites.log" "the lab saying it boots the fetched QEMU"
	assert_grep "CFI failure at lkdtm_indirect_call.*expected type: 0x$want_expected; target type: 0x$want_target" \
		"$TEST_TMP/qemu-suites.log" "the seed's ids under the fetched QEMU"
	assert_grep '^QEMU-SUITES-ALIVE' "$TEST_TMP/qemu-suites.log" "the guest surviving"
	rm -rf "$qhome"
}
