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
# shellcheck source=lab/pack.sh
. "$KCFI_LAB_ROOT/lab/pack.sh"
# shellcheck source=lab/debs.sh
. "$KCFI_LAB_ROOT/lab/debs.sh"
# shellcheck source=lab/exercises.sh
. "$KCFI_LAB_ROOT/lab/exercises.sh"

print_usage() {
	cat <<'USAGE'
usage: ./run.sh [ARCH] [--gdb] [--strict|--permissive] [--no-tmux] [--run CMDS]
                [--timeout SECONDS] [--append KERNEL-ARGS] [--gdb-port PORT] [--file PATH]
       ./run.sh setup | prepare | build [ARCH...] | test [--quick] | status | clean [--all] | bundle
       ./run.sh lab [ARCH] [--instructor] | pack [ARCH...] [-o FILE] [--debs] | unpack FILE
       ./run.sh kcfi hash|scan|site|explain ARGS... | --help

  ARCH            x86_64 (default; also x86, amd64) or arm64 (also aarch64)
  --gdb           QEMU halted at reset, gdb-multiarch attached beside the console (tmux)
  --strict        CFI failures oops (default)
  --permissive    CFI failures warn and continue (boots with cfi=warn)
  --no-tmux       the console on this terminal (Ctrl-a x quits QEMU)
  --run CMDS      boot, run CMDS in the guest shell, power off; console to stdout
  --timeout S     with --run: give up after S seconds (default 300)
  --append ARGS   extra kernel command line arguments
  --gdb-port P    the gdbstub's port on 127.0.0.1 (default: a free one)
  --file PATH     copy PATH into the guest's /root (repeatable)

  setup           install missing Debian packages, fetch arm64 busybox
  prepare         import the distro source, replay the kernel branch (no build)
  build           prepare, then build kernel and initramfs
  test            run the test suite (--quick: no kernel build; --only REGEX)
  status          paths, package versions, branch head, what is built
  clean           remove builds and logs (--all: the whole KCFI_LAB_HOME)
  bundle          re-cut kernel-branch.bundle from the worktree's branch
  lab             the interactive lab: exercises, hints, checks (--instructor: solutions)
  pack            one archive with the built kernels for a classroom (default: both arches;
                  --debs: also the Debian packages a learner runs, for an offline install)
  unpack FILE     install a pack: boot without building (and install its packages)
  kcfi            the host tool: type ids, preambles, check sites (builds it first)

State lives in ${KCFI_LAB_HOME:-${XDG_CACHE_HOME:-~/.cache}/kcfi-lab}.
USAGE
}

# prepare ARCH...: everything up to a bootable kernel and initramfs.
prepare() {
	local arch
	if from_pack "$1"; then
		require_tool "$(qemu_binary "$1")" "qemu-system-$([ "$1" = arm64 ] && echo arm || echo x86)"
		info "using the $1 kernel from the pack ($(sed -n 's/^created: //p' "$PACK_MANIFEST"))"
		return 0
	fi
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
	test)
		shift
		exec "$KCFI_LAB_ROOT/tests/run.sh" "$@"
		;;
	kcfi)
		shift
		exec "$(kcfi_tool)" "$@"
		;;
	lab)
		shift
		cmd_lab "$@"
		return
		;;
	setup | prepare | build | status | clean | bundle | pack | unpack)
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
		--run | --timeout | --append | --gdb-port | --file)
			[ $# -ge 2 ] || usage_error "$1 needs a value"
			case "$1" in
			--file)
				[ -f "$2" ] || usage_error "--file: no such file: $2"
				OPT_FILES+="${OPT_FILES:+$'\n'}$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
				;;
			--run) OPT_RUN=$2 ;;
			--timeout) OPT_TIMEOUT=$2 ;;
			--append) OPT_APPEND=$2 ;;
			--gdb-port) OPT_GDB_PORT=$2 ;;
			esac
			shift
			;;
		--quick | --all) args+=("$1") ;;
		--debs)
			[ "$sub" = pack ] || usage_error "--debs is an option of pack"
			OPT_DEBS=1
			;;
		-o)
			[ $# -ge 2 ] || usage_error "-o needs a file name"
			OPT_OUTPUT=$2
			shift
			;;
		-*) usage_error "unknown option: $1" ;;
		*)
			if [ "$sub" = unpack ] && [ -z "${OPT_PACK:-}" ]; then
				OPT_PACK=$1
				shift
				continue
			fi
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
	export OPT_GDB OPT_NO_TMUX OPT_TIMEOUT OPT_APPEND OPT_GDB_PORT OPT_FILES
	case "$sub" in
	boot) boot "${arch:-x86_64}" "$mode" ;;
	setup) lock_home && cmd_setup ;;
	prepare)
		lock_home
		ensure_packages
		prepare_tree
		;;
	build) prepare "${args[@]:-x86_64}" ;;
	status) cmd_status ;;
	clean) cmd_clean "${args[@]}" ;;
	bundle) cmd_bundle ;;
	pack)
		[ "${#args[@]}" -gt 0 ] || args=(x86_64 arm64)
		lock_home
		cmd_pack "${OPT_OUTPUT:-$KCFI_LAB_HOME/kcfi-lab-pack.tar.gz}" "${args[@]}"
		;;
	unpack)
		[ -n "${OPT_PACK:-}" ] || usage_error "unpack needs a pack file"
		lock_home
		cmd_unpack "$OPT_PACK"
		;;
	esac
}

main "$@"
