#!/usr/bin/env bash
# KCFI Lab: build a KCFI kernel, boot it in QEMU, take it apart with gdb.
# Thin entry point: parses the command line and dispatches to lab/.
set -euo pipefail

KCFI_LAB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lab/common.sh
. "$KCFI_LAB_ROOT/lab/common.sh"
# shellcheck source=lab/setup.sh
. "$KCFI_LAB_ROOT/lab/setup.sh"
# shellcheck source=lab/suites.sh
. "$KCFI_LAB_ROOT/lab/suites.sh"
# shellcheck source=lab/roots.sh
. "$KCFI_LAB_ROOT/lab/roots.sh"
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
# shellcheck source=lab/tool.sh
. "$KCFI_LAB_ROOT/lab/tool.sh"
# shellcheck source=lab/commands.sh
. "$KCFI_LAB_ROOT/lab/commands.sh"
# shellcheck source=lab/sign.sh
. "$KCFI_LAB_ROOT/lab/sign.sh"
# shellcheck source=lab/pack-check.sh
. "$KCFI_LAB_ROOT/lab/pack-check.sh"
# shellcheck source=lab/pack.sh
. "$KCFI_LAB_ROOT/lab/pack.sh"
# shellcheck source=lab/debs.sh
. "$KCFI_LAB_ROOT/lab/debs.sh"
# shellcheck source=lab/exercises.sh
. "$KCFI_LAB_ROOT/lab/exercises.sh"

print_usage() {
	cat <<USAGE
usage: ./run.sh [ARCH] [--kernel VERSION] [--gdb] [--strict|--permissive] [--no-tmux] [--run CMDS]
                [--timeout SECONDS] [--append KERNEL-ARGS] [--gdb-port PORT] [--file PATH]
       ./run.sh setup [--tests] | prepare | build [ARCH...] | test [--quick] | status | clean [--all] | bundle
       ./run.sh lab [ARCH] [--instructor] | pack [ARCH...] [-o FILE] [--debs]
       ./run.sh unpack FILE --key KEY
       ./run.sh kcfi hash|scan|site|func|decode|explain ARGS... | path | --help

  ARCH            $(arch_usage); default $(kernel_get default_arch)
  --kernel V      the kernel: $(kernel_list); default $LAB_DEFAULT_KERNEL (the seeds' kernel).
                  Every subcommand but test and kcfi takes it; state is kept per kernel
  --gdb           QEMU halted at reset, gdb-multiarch attached beside the console (tmux)
  --strict        CFI failures oops (default)
  --permissive    CFI failures warn and continue (boots with cfi=warn)
  --no-tmux       the console on this terminal (Ctrl-a x quits QEMU)
  --run CMDS      boot, run CMDS in the guest shell, power off; console to stdout
  --timeout S     with --run: give up after S seconds (default 300)
  --append ARGS   extra kernel command line arguments
  --gdb-port P    the gdbstub's port on 127.0.0.1 (default: a free one)
  --file PATH     copy PATH into the guest's /root (repeatable)

  setup           install missing Debian packages, fetch the other arches' busybox
                  (--tests: and what the test suite needs)
  prepare         import the distro source, replay the kernel branch (no build)
  build           prepare, then build kernel and initramfs
  test            run the test suite (--quick: no kernel build; --only REGEX)
  status          paths, package versions, branch head, what is built
  clean           remove builds and logs (--all: the whole KCFI_LAB_HOME)
  bundle          re-cut kernel-branch.bundle from the worktree's branch
  lab             the interactive lab: exercises, hints, checks (--instructor: solutions)
  pack            one archive with the built kernels for a classroom (default: both arches;
                  --debs: also the Debian packages a learner runs, for an offline install)
                  (signed with the instructor's key, made on first use: FILE.sig)
  unpack FILE     install a pack: boot without building (and install its packages);
                  --key: the instructor's public key file or its fingerprint (SHA256:...)
  kcfi            the host tool: type ids, preambles, check sites (builds it first)
  path            print KCFI_LAB_HOME (export KCFI_LAB_HOME=\$(./run.sh path))

State lives in \${KCFI_LAB_HOME:-\${XDG_CACHE_HOME:-~/.cache}/kcfi-lab}.
USAGE
}

# prepare ARCH...: everything up to a bootable kernel and initramfs.
prepare() {
	local arch
	if from_pack "$1"; then
		require_qemu "$1"
		info "using the $1 kernel from the pack ($(sed -n 's/^created: //p' "$PACK_MANIFEST"))"
		return 0
	fi
	# What the kernels share under the home's lock; the build under this
	# kernel's alone, so that another kernel's run.sh goes on beside it.
	lock_kernel
	lock_home
	ensure_packages
	for arch in "$@"; do
		fetch_busybox "$arch"
	done
	prepare_tree
	unlock_home
	for arch in "$@"; do
		build_kernel "$arch"
		build_initramfs "$arch"
	done
	unlock_kernel
}

# boot ARCH MODE GDB NO_TMUX RUN_SET CMDS TIMEOUT APPEND PORT [FILE...]:
# the options of a boot, each passed as it was parsed (GDB, NO_TMUX and
# RUN_SET are 1 or empty; PORT is --gdb-port's value or empty).
boot() {
	local arch=$1 mode=$2 gdb=$3 no_tmux=$4 run_set=$5 cmds=$6 timeout=$7 append=$8 want_port=$9 port=""
	shift 9
	# A taken port is refused before minutes of building, not after.
	if [ -n "$gdb" ] && [ -n "$want_port" ]; then
		gdb_port "$want_port" >/dev/null
	fi
	if [ -n "$gdb" ] && [ -z "$run_set" ] && { [ -n "$no_tmux" ] || ! is_tty; }; then
		die "--gdb needs a terminal for tmux; for scripts use --gdb with --run and attach gdb to the printed port"
	fi
	prepare "$arch"
	[ -z "$gdb" ] || port=$(gdb_port "$want_port")
	if [ -n "$run_set" ]; then
		run_scripted "$arch" "$mode" "$cmds" "$timeout" "$port" "$append" "$@"
	elif [ -z "$no_tmux" ] && is_tty; then
		run_session "$arch" "$mode" "$port" "$append" "$@"
	else
		run_inline "$arch" "$mode" "$append" "$@"
	fi
}

# option_of OPTION SUB ALLOWED...: refuse OPTION unless SUB is one of
# ALLOWED ("boot" is ./run.sh [ARCH]).
option_of() {
	local opt=$1 sub=$2 ok
	shift 2
	for ok in "$@"; do
		[ "$sub" = "$ok" ] && return 0
	done
	usage_error "$opt is an option of ${*/#boot/a boot (./run.sh [ARCH])}, not of ${sub/#boot/a boot}"
}

# arch_kernel NAME KERNEL: NAME is no arch of the lab's kernel. With no
# --kernel (KERNEL empty), switch to the oldest kernel that has KCFI on
# NAME and say so; else a one-line error.
arch_kernel() {
	local k
	k=$(kernel_for_arch "$1") ||
		usage_error "unknown arch or command: $1 (arches: $(all_arch_list); see lab/arch/)"
	[ -z "$2" ] ||
		usage_error "Linux $2 has no kCFI on $1 (upstream since $(arch_get "$(normalize_any_arch "$1")" kcfi_since); the lab has it in Linux $k): use --kernel $k, or leave --kernel out"
	[ "$k" = "$LAB_KERNEL" ] || info "$(normalize_any_arch "$1"): using Linux $k (Linux $LAB_KERNEL has no kCFI on it)"
	use_kernel "$k"
}

# main ARGS...: parse the command line into main's own variables (no
# caller's environment can set them) and pass them to the subcommand.
main() {
	local arch="" mode=strict sub=boot
	local gdb="" no_tmux="" run_set="" cmds="" timeout="" append="" port=""
	local all="" debs="" output="" pack="" key="" a tool kernel="" tests=""
	local -a args=() files=()
	case "${1:-}" in
	test)
		shift
		exec "$KCFI_LAB_ROOT/tests/run.sh" "$@"
		;;
	kcfi)
		shift
		tool=$(kcfi_tool)
		exec "$tool" "$@"
		;;
	esac
	# --kernel VERSION, wherever it stands, before anything reads the
	# kernel's files.
	while [ $# -gt 0 ]; do
		case "$1" in
		--kernel)
			[ $# -ge 2 ] || usage_error "--kernel needs a version (kernels: $(kernel_list))"
			kernel_known "$2" ||
				usage_error "unknown kernel: $2 (kernels: $(kernel_list); see lab/kernel/)"
			kernel=$2
			use_kernel "$kernel"
			shift 2
			;;
		*)
			args+=("$1")
			shift
			;;
		esac
	done
	set -- ${args[@]+"${args[@]}"}
	args=()
	case "${1:-}" in
	lab)
		shift
		cmd_lab "$@"
		return
		;;
	path)
		shift
		case "${1:-}" in -h | --help)
			print_usage
			return 0
			;;
		esac
		[ $# = 0 ] || usage_error "path takes no arguments"
		printf '%s\n' "$KCFI_LAB_HOME"
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
		--gdb | --strict | --permissive | --no-tmux)
			option_of "$1" "$sub" boot
			case "$1" in
			--gdb) gdb=1 ;;
			--no-tmux) no_tmux=1 ;;
			*) mode=${1#--} ;;
			esac
			;;
		--run | --timeout | --append | --gdb-port | --file)
			option_of "$1" "$sub" boot
			[ $# -ge 2 ] || usage_error "$1 needs a value"
			case "$1" in
			--file)
				[ -f "$2" ] || usage_error "--file: no such file: $2"
				files+=("$(cd "$(dirname "$2")" && pwd)/$(basename "$2")")
				;;
			--run)
				run_set=1
				cmds=$2
				;;
			--timeout) timeout=${2:-x} ;;
			--append) append=$2 ;;
			--gdb-port) port=${2:-x} ;;
			esac
			shift
			;;
		--all)
			option_of "$1" "$sub" clean
			all=1
			;;
		--tests)
			option_of "$1" "$sub" setup
			tests=1
			;;
		--debs)
			option_of "$1" "$sub" pack
			debs=1
			;;
		--key)
			option_of "$1" "$sub" unpack
			[ $# -ge 2 ] || usage_error "--key needs the instructor's public key file or fingerprint"
			key=$2
			shift
			;;
		-o)
			option_of "$1" "$sub" pack
			[ $# -ge 2 ] || usage_error "-o needs a file name"
			output=$2
			shift
			;;
		-*) usage_error "unknown option: $1" ;;
		*)
			if [ "$sub" = unpack ] && [ -z "$pack" ]; then
				pack=$1
			else
				case "$sub" in
				boot) [ -z "$arch" ] || usage_error "unexpected argument: $1" ;;
				build | pack) ;;
				*) usage_error "unexpected argument: $1 ($sub takes no arch)" ;;
				esac
				if ! a=$(normalize_arch "$1"); then
					arch_kernel "$1" "$kernel"
					a=$(normalize_arch "$1")
				fi
				if [ "$sub" = boot ]; then arch=$a; else args+=("$a"); fi
			fi
			;;
		esac
		shift
	done
	case "$timeout" in *[!0-9]*) usage_error "--timeout needs a number of seconds" ;; esac
	case "$port" in *[!0-9]*) usage_error "--gdb-port needs a port number" ;; esac
	if [ -n "$port" ] && { [ "${#port}" -gt 5 ] || [ "$((10#$port))" -lt 1 ] || [ "$((10#$port))" -gt 65535 ]; }; then
		usage_error "--gdb-port takes a port from 1 to 65535, not $port"
	fi
	# A newline would end the kernel's command line and start QEMU options.
	case "$append" in *[[:cntrl:]]*) usage_error "--append must not hold control characters (newlines, tabs)" ;; esac
	[ -z "$timeout" ] || [ -n "$run_set" ] || usage_error "--timeout goes with --run (a scripted boot)"
	[ -z "$port" ] || [ -n "$gdb" ] || usage_error "--gdb-port goes with --gdb"
	case "$sub" in
	boot)
		boot "${arch:-$(kernel_get default_arch)}" "$mode" "$gdb" "$no_tmux" "$run_set" "$cmds" \
			"${timeout:-300}" "$append" "$port" "${files[@]}"
		;;
	setup) lock_kernel && lock_home && cmd_setup "$tests" ;;
	prepare)
		lock_kernel
		lock_home
		ensure_packages
		prepare_tree
		;;
	build)
		[ "${#args[@]}" -gt 0 ] || args=("$(kernel_get default_arch)")
		prepare "${args[@]}"
		;;
	status) cmd_status ;;
	clean) cmd_clean "$all" ;;
	bundle) cmd_bundle ;;
	pack)
		[ "${#args[@]}" -gt 0 ] || mapfile -t args < <(lab_arches)
		lock_kernel
		lock_home
		cmd_pack "${output:-$KCFI_LAB_HOME/kcfi-lab-pack$LAB_SUFFIX.tar.gz}" "$debs" "${args[@]}"
		;;
	unpack)
		[ -n "$pack" ] || usage_error "unpack needs a pack file"
		lock_every_kernel
		cmd_unpack "$pack" "$key"
		;;
	esac
}

main "$@"
