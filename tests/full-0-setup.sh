#!/usr/bin/env bash
# Setup first: the rest of the suite (shellcheck, clang, QEMU) needs it.

test_setup_installs_what_is_missing() {
	lab setup
	# Idempotent: a second run finds nothing to install.
	expect_exit 0 lab setup
	[[ "$OUT" != *installing* ]] || fail "second setup installed again: $OUT"
	[ -x "$(busybox_binary arm64)" ] || fail "no arm64 busybox"
	# ELF e_machine (bytes 18-19) is 0xb7 for AArch64.
	assert_eq "$(od -An -tx2 -j18 -N2 "$(busybox_binary arm64)" | tr -d ' ')" 00b7 "arm64 busybox's ELF machine"
	# The host's dpkg configuration is unchanged: no foreign arch added.
	! dpkg --print-foreign-architectures | has_match '^arm64$' || fail "arm64 was added to the host's dpkg"
}
