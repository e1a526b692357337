#!/usr/bin/env bash
# Classroom packs: pack, unpack into a fresh home, boot without building.

make_pack() {
	PACK="$TEST_TMP/pack x86.tar.gz"
	[ -f "$PACK" ] && return
	lab build x86_64
	lab pack x86_64 -o "$PACK"
}

test_pack_unpack_boots_without_building() {
	make_pack
	local home="$TEST_TMP/learner home" start
	start=$SECONDS
	KCFI_LAB_HOME="$home" lab unpack "$PACK"
	expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" --run 'lkdtm CFI_FORWARD_PROTO; echo ALIVE'
	echo "unpack to first oops: $((SECONDS - start)) s; pack: $(stat -c %s "$PACK") bytes"
	[[ "$OUT" == *"using the x86_64 kernel from the pack"* ]] || fail "did not boot from the pack: $OUT"
	[[ "$OUT" == *"CFI failure at lkdtm_indirect_call"* ]] || fail "no CFI failure: $OUT"
	[[ "$OUT" == *ALIVE* ]] || fail "guest did not survive"
	[ ! -e "$home/linux.git" ] || fail "the pack user got a kernel import"
	expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" status
	[[ "$OUT" == *"pack:           installed"* ]] || fail "status does not mention the pack: $OUT"
	[[ "$OUT" == *"cfi: add cfi=warn"* ]] || fail "status does not list the pack's kernel commits: $OUT"
	# The packed vmlinux is the built one: same type ids for gdb and objdump.
	cmp -s "$home/build/x86_64/vmlinux" "$(vmlinux_of x86_64)" || fail "packed vmlinux differs"
	[ -f "$home/build/x86_64/scripts/gdb/linux/utils.py" ] || fail "gdb's lx- scripts missing from the pack"
}

test_damaged_pack_is_refused() {
	make_pack
	local bad="$TEST_TMP/bad.tar.gz" stage="$TEST_TMP/stage"
	mkdir -p "$stage"
	tar -xzf "$PACK" -C "$stage"
	printf 'X' | dd of="$stage/initramfs/x86_64.cpio.gz" bs=1 seek=100 conv=notrunc 2>/dev/null
	tar -czf "$bad" -C "$stage" .
	expect_exit 1 env KCFI_LAB_HOME="$TEST_TMP/h-bad" "$KCFI_LAB_ROOT/run.sh" unpack "$bad"
	assert_eq "$OUT" "kcfi-lab: error: $bad is damaged: checksum mismatch in initramfs/x86_64.cpio.gz; copy it again"
	[ ! -e "$TEST_TMP/h-bad/build" ] || fail "a damaged pack was partly installed"
	head -c 4096 "$PACK" >"$bad"
	expect_exit 1 env KCFI_LAB_HOME="$TEST_TMP/h-bad" "$KCFI_LAB_ROOT/run.sh" unpack "$bad"
	[[ "$OUT" == "kcfi-lab: error: $bad is not a KCFI Lab pack"* ]] || fail "unexpected: $OUT"
}

test_pack_for_another_branch_is_refused() {
	make_pack
	local other="$TEST_TMP/other.bundle"
	cp "$KCFI_LAB_ROOT/kernel-branch.bundle" "$other"
	echo >>"$other"
	expect_exit 1 env KCFI_LAB_BUNDLE="$other" KCFI_LAB_HOME="$TEST_TMP/h-other" "$KCFI_LAB_ROOT/run.sh" unpack "$PACK"
	[[ "$OUT" == *"was built from another kernel branch"* ]] || fail "unexpected: $OUT"
}
