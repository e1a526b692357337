#!/usr/bin/env bash
# The other kernels' builds, for every arch each has. A file of the side
# lane (tests/run.sh): it starts once the main lane has built the
# default kernel (tests/full-1-build.sh), and builds beside the main
# lane's guest tests, in the same home: a build holds only its own
# kernel's lock. A main-lane test that switches to another kernel
# (use_kernel) waits until this file is done.

# The other kernels (lab/kernel/), each on every arch it has.
build_kernel_arch() {
	# Niced: the main lane's guests, which have timeouts, come first;
	# this build takes the core they leave.
	nice -n 10 "$KCFI_LAB_ROOT/run.sh" build --kernel "$LAB_KERNEL" "$1"
	[ -f "$(kernel_image "$1")" ] || fail "no $1 kernel image for Linux $LAB_KERNEL"
	[ -f "$(initramfs_image "$1")" ] || fail "no $1 initramfs for Linux $LAB_KERNEL"
	[ -e "$(build_dir "$1")/vmlinux-gdb.py" ] || fail "no vmlinux-gdb.py for $1"
	config_has_every_requested_option "$1"
	# The kernel named by its version: the worktree is the package's.
	assert_grep "^VERSION = ${LAB_KERNEL%%.*}$" "$LAB_WORKTREE/Makefile" "the worktree's kernel version"
	assert_grep "^PATCHLEVEL = ${LAB_KERNEL#*.}$" "$LAB_WORKTREE/Makefile" "the worktree's patch level"
}

test_kernels_build_every_arch() { each_kernel_arch build_kernel_arch; }
