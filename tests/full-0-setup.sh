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

# An arch whose busybox comes from another release's archive: apt checks
# that archive's signature. With a keyring that lacks its key, the fetch
# fails; with a line that turns the check off, it is refused unasked.
test_foreign_archive_signature_is_checked() {
	local arch="" a src home="$TEST_TMP/sig-home" root="$TEST_TMP/sig-root" empty="$TEST_TMP/empty.gpg"
	for a in "${LAB_ARCH_FILES[@]}"; do
		[ -z "$(arch_get "$a" debian_source)" ] || arch=$a
	done
	[ -n "$arch" ] || skip "no arch file names a debian_source"
	src=$(arch_get "$arch" debian_source)
	mkdir -p "$root"
	cp -r "$KCFI_LAB_ROOT/lab" "$KCFI_LAB_ROOT/run.sh" "$root/"
	: >"$empty"
	# shellcheck disable=SC2317 # called through expect_exit
	fetch() {
		KCFI_LAB_ROOT="$root" KCFI_LAB_HOME="$home" KCFI_LAB_KERNEL="$(kernel_for_arch "$arch")" \
			bash -c 'set -euo pipefail; . "$1/lab/common.sh"; . "$1/lab/setup.sh"; fetch_busybox "$2"' _ "$root" "$arch"
	}
	sed -i "s|^debian_source=.*|debian_source=$(sed -E "s|signed-by=[^] ]+|signed-by=$empty|" <<<"$src")|" "$root/lab/arch/$arch.conf"
	expect_exit 1 fetch
	[[ "$OUT" == *"apt-get update for $arch failed"* ]] || fail "an archive signed by an unknown key was used: $OUT"
	[ ! -e "$home/busybox/$arch/bin/busybox" ] || fail "busybox installed without a signature check"
	sed -i "s|^debian_source=.*|debian_source=$(sed -E 's|signed-by=[^] ]+|trusted=yes|' <<<"$src")|" "$root/lab/arch/$arch.conf"
	expect_exit 1 fetch
	[[ "$OUT" == *"must not turn apt's signature check off"* ]] || fail "trusted=yes was accepted: $OUT"
}
