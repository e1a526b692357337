#!/usr/bin/env bash
# Shared helpers for run.sh and the lab/ pieces: messages, paths, the lock.
# Sourced, never executed.
# shellcheck disable=SC2034 # the variables are used by the other pieces

KCFI_LAB_ROOT=${KCFI_LAB_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
KCFI_LAB_HOME=${KCFI_LAB_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/kcfi-lab}
# Absolute: the lab and what it starts change directory.
case "$KCFI_LAB_HOME" in
/*) ;;
*) KCFI_LAB_HOME="$PWD/$KCFI_LAB_HOME" ;;
esac
KCFI_LAB_BUNDLE=${KCFI_LAB_BUNDLE:-$KCFI_LAB_ROOT/kernel-branch.bundle}
KCFI_LAB_JOBS=${KCFI_LAB_JOBS:-$(nproc)}

# Layout of the state directory. One git repository holds every
# kernel's import and branch; what is per kernel (worktree, builds,
# initramfs, logs) is set by kernel_paths.
LAB_GIT="$KCFI_LAB_HOME/linux.git"
LAB_STATE="$KCFI_LAB_HOME/state"
LAB_LOGS="$KCFI_LAB_HOME/logs"
LAB_BIN="$KCFI_LAB_HOME/bin"

info() {
	printf 'kcfi-lab: %s\n' "$*" >&2
}

# progress LABEL TEXT: where a long step is. On a terminal (and in
# tmux), one line on standard error that updates in place; otherwise
# (CI, a pipe) a plain "kcfi-lab: LABEL: TEXT" line at most every
# KCFI_LAB_PROGRESS_SECONDS (30) seconds. progress_end clears the line.
progress() {
	if [ -t 2 ]; then
		printf '\r\033[K[%s] %s' "$1" "$2" >&2
		return 0
	fi
	if [ -z "${PROGRESS_LAST:-}" ] || [ $((SECONDS - PROGRESS_LAST)) -ge "${KCFI_LAB_PROGRESS_SECONDS:-30}" ]; then
		PROGRESS_LAST=$SECONDS
		printf 'kcfi-lab: %s: %s\n' "$1" "$2" >&2
	fi
}

progress_end() {
	PROGRESS_LAST=""
	[ ! -t 2 ] || printf '\r\033[K' >&2
}

warn() {
	printf 'kcfi-lab: warning: %s\n' "$*" >&2
}

die() {
	printf 'kcfi-lab: error: %s\n' "$*" >&2
	exit 1
}

# usage_error MSG: bad command line; exit 2 after a one-line error and the usage.
usage_error() {
	printf 'kcfi-lab: error: %s\n' "$*" >&2
	print_usage | sed -n '1,3p' >&2
	echo "(./run.sh --help explains every option)" >&2
	exit 2
}

# build_dir ARCH: the lab kernel's build directory for ARCH.
build_dir() {
	echo "$KCFI_LAB_HOME/build/$1$LAB_SUFFIX"
}

# kernel_image ARCH: the image QEMU boots.
kernel_image() {
	echo "$(build_dir "$1")/$(arch_get "$1" image)"
}

initramfs_image() {
	echo "$KCFI_LAB_HOME/initramfs/$1$LAB_SUFFIX.cpio.gz"
}

# kbuild_home_error: why the kernel's build cannot work in KCFI_LAB_HOME,
# or nothing. Kbuild refuses source and output paths with spaces or colons.
kbuild_home_error() {
	case "$KCFI_LAB_HOME" in
	*[[:space:]:]*) echo "the kernel's build cannot use a path with spaces or colons (KCFI_LAB_HOME=$KCFI_LAB_HOME); set KCFI_LAB_HOME to another directory" ;;
	esac
}

have() {
	command -v "$1" >/dev/null 2>&1
}

# require_tool CMD PACKAGE: fail with the exact install hint when CMD is missing.
require_tool() {
	have "$1" && return 0
	die "$1 not found; install it with: ./run.sh setup$LAB_KOPT (or: sudo apt-get install $2)"
}

is_tty() {
	[ -t 0 ] && [ -t 1 ]
}

# The lab's home has two kinds of lock. The home's (.lock) covers what
# every kernel shares: packages, the kernel repository, busybox, packs.
# A kernel's (.lock.kernel, .lock.kernel-VERSION) covers its worktree,
# builds and initramfs images. A run.sh that builds one kernel holds only
# that kernel's lock while it compiles: another kernel's run.sh may
# prepare, build or boot beside it, as may a guest of the same kernel
# once its build is done. A kernel's lock is taken before the home's.

# lock_check_dir: the home is a directory the lab may write to.
lock_check_dir() {
	[ ! -e "$KCFI_LAB_HOME" ] || [ -d "$KCFI_LAB_HOME" ] ||
		die "KCFI_LAB_HOME ($KCFI_LAB_HOME) is not a directory; set it to a directory the lab may use"
	if ! mkdir -p "$KCFI_LAB_HOME" "$LAB_STATE" "$LAB_LOGS" 2>/dev/null || [ ! -w "$KCFI_LAB_HOME" ]; then
		die "cannot write to KCFI_LAB_HOME ($KCFI_LAB_HOME); set it to a directory the lab may use"
	fi
}

# lock_take VAR FILE WHAT [--wait]: lock FILE on a new descriptor, whose
# number goes to VAR, and write this process's pid to FILE.pid. Neither
# is opened through a link (a link to a file elsewhere would be written
# to). Another holder is an error naming WHAT; with --wait this run.sh
# says so and waits for it.
lock_take() {
	local var=$1 f=$2 what=$3 wait=${4:-} p fd
	lock_check_dir
	for p in "$f" "$f.pid"; do
		[ ! -L "$p" ] || die "$p is a symbolic link, not the lab's lock; remove it"
	done
	exec {fd}>>"$f"
	if ! flock -n "$fd"; then
		[ "$wait" = --wait ] ||
			die "another run.sh is working $what (pid $(cat "$f.pid" 2>/dev/null || echo '?')); wait for it to finish"
		info "waiting for another run.sh working $what (pid $(cat "$f.pid" 2>/dev/null || echo '?'))"
		flock "$fd"
	fi
	rm -f "$f.pid"
	# noclobber: a link put there since is not written through.
	(set -C && echo "$$" >"$f.pid") 2>/dev/null ||
		die "$f.pid appeared while the lab took its lock; remove it"
	printf -v "$var" '%s' "$fd"
}

# lock_home: one run.sh at a time may change what the kernels share. It
# is held for minutes at most (an import, a setup, a pack), never for a
# build: another run.sh waits for it, and says so. Dropped when the
# process exits, or by unlock_home.
LAB_HOME_FD=""
lock_home() {
	[ -n "$LAB_HOME_FD" ] || lock_take LAB_HOME_FD "$KCFI_LAB_HOME/.lock" "in $KCFI_LAB_HOME" --wait
}

unlock_home() {
	[ -n "$LAB_HOME_FD" ] || return 0
	rm -f "$KCFI_LAB_HOME/.lock.pid"
	exec {LAB_HOME_FD}>&-
	LAB_HOME_FD=""
}

# lock_kernel [KERNEL]: one run.sh at a time may change a kernel's
# worktree, builds and initramfs images (the lab kernel's by default).
# Taken before the home's lock, never after.
declare -gA LAB_KERNEL_FD=()
lock_kernel() {
	local k=${1:-$LAB_KERNEL}
	[ -z "${LAB_KERNEL_FD[$k]:-}" ] || return 0
	lock_take "LAB_KERNEL_FD[$k]" "$KCFI_LAB_HOME/.lock.kernel$(kernel_suffix "$k")" "on Linux $k in $KCFI_LAB_HOME"
}

unlock_kernel() {
	local k=$LAB_KERNEL fd
	fd=${LAB_KERNEL_FD[$k]:-}
	[ -n "$fd" ] || return 0
	rm -f "$KCFI_LAB_HOME/.lock.kernel$LAB_SUFFIX.pid"
	exec {fd}>&-
	unset "LAB_KERNEL_FD[$k]"
}

# lock_every_kernel: every kernel's lock, then the home's: for what
# changes them all (clean, unpack). Held until the process exits.
lock_every_kernel() {
	local k
	for k in $(lab_kernels); do
		lock_kernel "$k"
	done
	lock_home
}

# new_log NAME: print the path of a fresh log file for a step; the 100
# newest logs are kept.
new_log() {
	mkdir -p "$LAB_LOGS"
	find "$LAB_LOGS" -maxdepth 1 -name '*.log' -printf '%T@ %p\n' | sort -rn |
		tail -n +100 | cut -d' ' -f2- | xargs -r rm -f
	echo "$LAB_LOGS/$1$LAB_SUFFIX-$(date +%Y%m%d-%H%M%S).log"
}

# kernel_suffix KERNEL: what the names of KERNEL's state end with.
kernel_suffix() {
	[ "$1" = "$LAB_DEFAULT_KERNEL" ] || echo "-$1"
}

# kernel_paths: the names of the lab kernel's own state. The default
# kernel keeps the names the state directory had before there was a
# second one (worktree, build/ARCH, branch kcfi-lab on "distro"); every
# other kernel's carry the suffix -VERSION.
kernel_paths() {
	# LAB_KOPT: what a command the lab suggests needs to name the kernel.
	LAB_SUFFIX=$(kernel_suffix "$LAB_KERNEL")
	LAB_KOPT=""
	kernel_is_default || LAB_KOPT=" --kernel $LAB_KERNEL"
	LAB_WORKTREE="$KCFI_LAB_HOME/worktree$LAB_SUFFIX"
	LAB_DISTRO="distro$LAB_SUFFIX"
	LAB_BRANCH_STATE="$LAB_STATE/branch$LAB_SUFFIX"
	PACK_MANIFEST="$KCFI_LAB_HOME/pack$LAB_SUFFIX.manifest"
	kernel_set LAB_BRANCH branch
	kernel_set DISTRO_PACKAGE source_package
	kernel_set DISTRO_TARBALL source_tarball
	# A source package fetched from another suite is unpacked in the
	# lab's home, not installed.
	LAB_SOURCE_ROOT=""
	if [ -n "$LAB_HOST" ] && [ -n "${LAB_CONF["host/$LAB_KERNEL.source_suites"]}" ]; then
		LAB_SOURCE_ROOT="$KCFI_LAB_HOME/sources/$DISTRO_PACKAGE"
		DISTRO_TARBALL="$LAB_SOURCE_ROOT$DISTRO_TARBALL"
	fi
	DISTRO_TARBALL=${KCFI_LAB_TARBALL:-$DISTRO_TARBALL}
	LAB_TOOLCHAIN_BIN=""
	if [ -n "$LAB_LLVM_OVERRIDE" ]; then
		KCFI_LAB_LLVM=$LAB_LLVM_OVERRIDE
	elif [ -n "$LAB_HOST" ]; then
		KCFI_LAB_LLVM=${LAB_CONF["host/$LAB_KERNEL.llvm"]}
		LAB_TOOLCHAIN_BIN=$(toolchain_bin "$LAB_KERNEL")
		path_prepend "$LAB_TOOLCHAIN_BIN"
	else
		# An unknown host: commands that need the toolchain say so.
		KCFI_LAB_LLVM=""
	fi
}

# toolchain_bin VERSION: where kernel VERSION's toolchain is when this
# host fetches it from other suites into the lab's home (the commands,
# as wrappers that find their own libraries); nothing when the host's
# own packages are the toolchain.
toolchain_bin() {
	local suites
	suites=$(host_get "$1.toolchain_suites")
	[ -z "$suites" ] || echo "$KCFI_LAB_HOME/toolchain/llvm$(host_get "$1.llvm")/bin"
}

# path_prepend DIR: DIR first on PATH, once (DIR empty: nothing).
path_prepend() {
	[ -n "$1" ] || return 0
	case ":$PATH:" in
	*":$1:"*) ;;
	*) PATH="$1:$PATH" ;;
	esac
	export PATH
}

# exercise_kernels NAME: the kernels exercise NAME is about: its
# lab.conf's kernels:, or the default kernel.
exercise_kernels() {
	local k
	k=$(sed -n 's/^kernels: *//p' "$KCFI_LAB_ROOT/exercises/$1/lab.conf" 2>/dev/null | sed -n 1p)
	echo "${k:-$LAB_DEFAULT_KERNEL}"
}

# use_kernel VERSION: make VERSION the lab kernel of this process and of
# every program it starts.
use_kernel() {
	select_kernel "$1"
	export KCFI_LAB_KERNEL="$LAB_KERNEL"
	kernel_paths
}

LAB_LLVM_OVERRIDE=${KCFI_LAB_LLVM:-}
# shellcheck source=lab/arch.sh
. "$KCFI_LAB_ROOT/lab/arch.sh"
kernel_paths
