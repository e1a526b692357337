#!/usr/bin/env bash
# KCFI Lab: build a KCFI kernel, boot it in QEMU, take it apart with gdb.
# Thin entry point: parses the command line and dispatches to lab/.
set -euo pipefail

KCFI_LAB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lab/common.sh
. "$KCFI_LAB_ROOT/lab/common.sh"
# shellcheck source=lab/setup.sh
. "$KCFI_LAB_ROOT/lab/setup.sh"
# shellcheck source=lab/kernel-branch.sh
. "$KCFI_LAB_ROOT/lab/kernel-branch.sh"
# shellcheck source=lab/build.sh
. "$KCFI_LAB_ROOT/lab/build.sh"
# shellcheck source=lab/initramfs.sh
. "$KCFI_LAB_ROOT/lab/initramfs.sh"
# shellcheck source=lab/qemu.sh
. "$KCFI_LAB_ROOT/lab/qemu.sh"
# shellcheck source=lab/session.sh
. "$KCFI_LAB_ROOT/lab/session.sh"
# shellcheck source=lab/commands.sh
. "$KCFI_LAB_ROOT/lab/commands.sh"

print_usage() {
	cat <<'USAGE'
usage: ./run.sh [ARCH] [--gdb] [--strict|--permissive] [--no-tmux] [--run CMDS]
                [--timeout SECONDS] [--append KERNEL-ARGS] [--gdb-port PORT]
       ./run.sh setup | prepare | build [ARCH...] | test [--quick] | status | clean [--all] | bundle | --help

  ARCH            x86_64 (default; also x86, amd64) or arm64 (also aarch64)
  --gdb           QEMU halted at reset, gdb-multiarch attached beside the console (tmux)
  --strict        CFI failures oops (default)
  --permissive    CFI failures warn and continue (boots with cfi=warn)
  --no-tmux       the console on this terminal (Ctrl-a x quits QEMU)
  --run CMDS      boot, run CMDS in the guest shell, power off; console to stdout
  --timeout S     with --run: give up after S seconds (default 300)
  --append ARGS   extra kernel command line arguments
  --gdb-port P    the gdbstub's port on 127.0.0.1 (default: a free one)

  setup           install missing Debian packages, fetch arm64 busybox
  prepare         import the distro source, replay the kernel branch (no build)
  build           prepare, then build kernel and initramfs
  test            run the test suite (--quick: no kernel build)
  status          paths, package versions, branch head, what is built
  clean           remove builds and logs (--all: the whole KCFI_LAB_HOME)
  bundle          re-cut kernel-branch.bundle from the worktree's branch

State lives in ${KCFI_LAB_HOME:-${XDG_CACHE_HOME:-~/.cache}/kcfi-lab}.
USAGE
}

# prepare ARCH...: everything up to a bootable kernel and initramfs.
prepare() {
	local arch
	lock_home
	ensure_packages
	for arch in "$@"; do
		[ "$arch" = arm64 ] && fetch_busybox_arm64
	done
	prepare_tree
	for arch in "$@"; do
		build_kernel "$arch"
		build_initramfs "$arch"
	done
	unlock_home
}

boot() {
	local arch=$1 mode=$2
	# A taken port is refused before minutes of building, not after.
	if [ -n "${OPT_GDB:-}" ] && [ -n "${OPT_GDB_PORT:-}" ]; then
		gdb_port >/dev/null
	fi
	prepare "$arch"
	if [ -n "${OPT_RUN+set}" ]; then
		run_scripted "$arch" "$mode" "$OPT_RUN"
	elif [ -z "${OPT_NO_TMUX:-}" ] && is_tty; then
		run_session "$arch" "$mode"
	elif [ -n "${OPT_GDB:-}" ]; then
		die "--gdb needs a terminal for tmux; for scripts use --gdb with --run and attach gdb to the printed port"
	else
		run_inline "$arch" "$mode"
	fi
}

main() {
	local arch="" mode=strict sub=boot
	local -a args=()
	case "${1:-}" in
	setup | prepare | build | test | status | clean | bundle)
		sub=$1
		shift
		;;
	esac
	while [ $# -gt 0 ]; do
		case "$1" in
		-h | --help)
			print_usage
			return 0
			;;
		--gdb) OPT_GDB=1 ;;
		--strict) mode=strict ;;
		--permissive) mode=permissive ;;
		--no-tmux) OPT_NO_TMUX=1 ;;
		--run | --timeout | --append | --gdb-port)
			[ $# -ge 2 ] || usage_error "$1 needs a value"
			case "$1" in
			--run) OPT_RUN=$2 ;;
			--timeout) OPT_TIMEOUT=$2 ;;
			--append) OPT_APPEND=$2 ;;
			--gdb-port) OPT_GDB_PORT=$2 ;;
			esac
			shift
			;;
		--quick | --all) args+=("$1") ;;
		-*) usage_error "unknown option: $1" ;;
		*)
			if [ "$sub" = boot ] && [ -n "$arch" ]; then
				usage_error "unexpected argument: $1"
			fi
			local a
			a=$(normalize_arch "$1") || usage_error "unknown arch or command: $1 (arches: x86_64, arm64)"
			if [ "$sub" = boot ]; then arch=$a; else args+=("$a"); fi
			;;
		esac
		shift
	done
	case "${OPT_TIMEOUT:-1}" in '' | *[!0-9]*) usage_error "--timeout needs a number of seconds" ;; esac
	case "${OPT_GDB_PORT:-1}" in '' | *[!0-9]*) usage_error "--gdb-port needs a port number" ;; esac
	export OPT_GDB OPT_NO_TMUX OPT_TIMEOUT OPT_APPEND OPT_GDB_PORT
	case "$sub" in
	boot) boot "${arch:-x86_64}" "$mode" ;;
	setup) lock_home && cmd_setup ;;
	prepare)
		lock_home
		ensure_packages
		prepare_tree
		;;
	build) prepare "${args[@]:-x86_64}" ;;
	test) exec "$KCFI_LAB_ROOT/tests/run.sh" "${args[@]}" ;;
	status) cmd_status ;;
	clean) cmd_clean "${args[@]}" ;;
	bundle) cmd_bundle ;;
	esac
}

main "$@"
