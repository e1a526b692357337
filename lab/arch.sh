#!/usr/bin/env bash
# The lab's per-arch, per-kernel and per-host knowledge: reads
# lab/arch/ARCH.conf, lab/kernel/VERSION.conf and the one file of
# lab/host/ that describes this machine, data files of KEY=VALUE lines.
# Nothing outside those files names an arch, a kernel version, a host
# release or an LLVM suffix. Sourced, never executed.
#
# Every file is read once, when this file is sourced, into LAB_CONF
# ("arch/NAME/KEY", "kernel/VERSION/KEY"): run.sh and the checkers ask
# for values many times, and rereading the files each time made every
# start of run.sh several times slower.

LAB_ARCH_DIR="$KCFI_LAB_ROOT/lab/arch"
LAB_KERNEL_DIR="$KCFI_LAB_ROOT/lab/kernel"
LAB_HOST_DIR="$KCFI_LAB_ROOT/lab/host"
# What says which host this is (tests point it elsewhere).
LAB_OS_RELEASE=${KCFI_LAB_OS_RELEASE:-/etc/os-release}

# The keys every arch file and every kernel file must set (possibly empty).
ARCH_KEYS=(aliases kbuild_arch image debian_arch qemu qemu_package qemu_machine
	qemu_cpu qemu_firmware console kvm kvm_cpu_flags kernel_args clang_target gdb_arch trap_mnemonic trap_text indirect_call
	cfi_handler check_registers oops_line untyped_target kcfi_since)
KERNEL_KEYS=(default source_package source_tarball branch default_arch base_allconfig base_fragments fragments
	rerandomizes norand_arg impl_lines off_arches off_arg cfi_option)
# A host file sets these, and for every kernel K: K.llvm, K.toolchain_suites,
# K.source_suites. An arch A other than the host's may have A.busybox_suites;
# a kernel K may have K.A.qemu_suites for an arch A.
HOST_KEYS=(name suite own_suites keyring packages learner_packages toolchain_packages test_packages)
HOST_KERNEL_KEYS=(llvm toolchain_suites source_suites)

declare -A LAB_CONF=()
LAB_ARCH_FILES=()
LAB_KERNEL=""

# conf_load FILE PREFIX: every KEY=VALUE line of FILE into
# LAB_CONF[PREFIX/KEY]. Comments and blank lines are skipped.
conf_load() {
	local line
	while IFS= read -r line || [ -n "$line" ]; do
		case "$line" in
		'' | '#'*) ;;
		*=*) LAB_CONF["$2/${line%%=*}"]=${line#*=} ;;
		esac
	done <"$1"
}

# conf_check PREFIX FILE KEY...: die unless FILE (loaded as PREFIX) sets
# every KEY.
conf_check() {
	local prefix=$1 file=$2 key
	shift 2
	for key in "$@"; do
		[ -n "${LAB_CONF["$prefix/$key"]+set}" ] ||
			die "${file#"$KCFI_LAB_ROOT/"} does not set $key"
	done
}

# conf_load_all: the arch files and the kernel files; LAB_KERNEL is the
# kernel file marked default=yes.
conf_load_all() {
	local f name
	for f in "$LAB_ARCH_DIR"/*.conf; do
		[ -f "$f" ] || continue
		name=${f##*/}
		name=${name%.conf}
		conf_load "$f" "arch/$name"
		LAB_ARCH_FILES+=("$name")
	done
	for f in "$LAB_KERNEL_DIR"/*.conf; do
		[ -f "$f" ] || continue
		name=${f##*/}
		name=${name%.conf}
		conf_load "$f" "kernel/$name"
		if [ "${LAB_CONF["kernel/$name/default"]:-}" = yes ]; then
			LAB_KERNEL=$name
		fi
	done
	[ -n "$LAB_KERNEL" ] || die "no file in lab/kernel/ sets default=yes"
	LAB_DEFAULT_KERNEL=$LAB_KERNEL
	host_load
	select_kernel "${KCFI_LAB_KERNEL:-$LAB_KERNEL}"
}

# host_release: ID-VERSION_ID of this machine's /etc/os-release
# (debian-12), or nothing.
host_release() {
	local id="" version=""
	[ -r "$LAB_OS_RELEASE" ] || return 0
	id=$(sed -n 's/^ID=//p' "$LAB_OS_RELEASE" | tr -d "\"'")
	version=$(sed -n 's/^VERSION_ID=//p' "$LAB_OS_RELEASE" | tr -d "\"'")
	[ -z "$id" ] || echo "$id${version:+-$version}"
}

# host_load: the host file of this machine into LAB_CONF["host/KEY"];
# LAB_HOST is its name, empty when lab/host/ has none for this machine
# (then host_get says so, when something needs to know).
host_load() {
	LAB_HOST=$(host_release)
	if [ -n "$LAB_HOST" ] && [ -f "$LAB_HOST_DIR/$LAB_HOST.conf" ]; then
		local file="$LAB_HOST_DIR/$LAB_HOST.conf" k key
		conf_load "$file" host
		conf_check host "$file" "${HOST_KEYS[@]}"
		for k in $(lab_kernels); do
			for key in "${HOST_KERNEL_KEYS[@]}"; do
				conf_check host "$file" "$k.$key"
			done
		done
	else
		LAB_HOST_SEEN=${LAB_HOST:-unknown}
		LAB_HOST=""
	fi
}

# host_list: the host files, as one line, for messages.
host_list() {
	local f
	for f in "$LAB_HOST_DIR"/*.conf; do
		[ -f "$f" ] || continue
		f=${f##*/}
		echo "${f%.conf}"
	done | paste -sd' ' | sed 's/ /, /g'
}

# host_unknown_error: the one line an unknown host gets.
host_unknown_error() {
	echo "this host ($LAB_HOST_SEEN, from $LAB_OS_RELEASE) has no file in lab/host/ (hosts: $(host_list)); a Debian-family host needs one: its apt suite, clang with -fsanitize=kcfi for each kernel (see lab/kernel/), QEMU, gdb-multiarch, tmux and a kernel build's tools (docs/troubleshooting.md)"
}

# host_get KEY: a value of this host's file (KEY may be VERSION.KEY or
# ARCH.KEY).
host_get() {
	[ -n "$LAB_HOST" ] || die "$(host_unknown_error)"
	[ -n "${LAB_CONF["host/$1"]+set}" ] || die "lab/host/$LAB_HOST.conf does not set $1"
	printf '%s\n' "${LAB_CONF["host/$1"]}"
}

# toolchain_packages: the lab kernel's toolchain on this host, by the
# host file's names, "PACKAGE:COMMAND" a line.
toolchain_packages() {
	host_get toolchain_packages | tr ' ' '\n' | sed '/^$/d' | sed "s/@llvm@/$KCFI_LAB_LLVM/g"
}

# host_arch_get ARCH KEY: this host's ARCH.KEY, empty when not set.
host_arch_get() {
	printf '%s\n' "${LAB_CONF["host/$1.$2"]:-}"
}

# host_kernel_get KEY: this host's KEY for the lab's kernel (llvm,
# toolchain_suites, source_suites).
host_kernel_get() {
	host_get "$LAB_KERNEL.$1"
}

# select_kernel VERSION: VERSION (a file in lab/kernel/) becomes the lab
# kernel; an unknown one is a one-line error.
select_kernel() {
	kernel_known "$1" || die "unknown kernel: $1 (kernels: $(kernel_list); see lab/kernel/)"
	conf_check "kernel/$1" "$LAB_KERNEL_DIR/$1.conf" "${KERNEL_KEYS[@]}"
	LAB_KERNEL=$1
}

# kernel_known VERSION: lab/kernel/ has a file for VERSION.
kernel_known() {
	[ -n "${LAB_CONF["kernel/$1/default"]+set}" ]
}

# kernel_list: the kernels as one line, for messages.
kernel_list() {
	lab_kernels | paste -sd' ' | sed 's/ /, /g'
}

# lab_kernels: every kernel the lab has a file for, oldest first.
lab_kernels() {
	local f name
	for f in "$LAB_KERNEL_DIR"/*.conf; do
		[ -f "$f" ] || continue
		name=${f##*/}
		echo "${name%.conf}"
	done | sort -t. -k1,1n -k2,2n -k3,3n
}

# normalize_any_arch NAME: the arch file NAME (a file's name or alias)
# names, whichever kernel has it; or fail.
normalize_any_arch() {
	local name alias
	for name in "${LAB_ARCH_FILES[@]}"; do
		[ "$1" != "$name" ] || { echo "$name" && return 0; }
		for alias in ${LAB_CONF["arch/$name/aliases"]:-}; do
			[ "$1" != "$alias" ] || { echo "$name" && return 0; }
		done
	done
	return 1
}

# kernel_for_arch NAME: the oldest kernel that has KCFI on arch NAME (a
# file's name or alias), or fail.
kernel_for_arch() {
	local k found
	found=$(normalize_any_arch "$1") || return 1
	for k in $(lab_kernels); do
		if version_le "${LAB_CONF["arch/$found/kcfi_since"]:-0}" "$k"; then
			echo "$k"
			return 0
		fi
	done
	return 1
}

# version_le A B: dotted version A is B or older (6.1 < 6.6 < 6.12).
version_le() {
	local -a va vb
	local i
	IFS=. read -r -a va <<<"$1"
	IFS=. read -r -a vb <<<"$2"
	for i in 0 1 2; do
		[ "$((10#${va[i]:-0}))" = "$((10#${vb[i]:-0}))" ] && continue
		[ "$((10#${va[i]:-0}))" -lt "$((10#${vb[i]:-0}))" ]
		return
	done
	return 0
}

# lab_kernel: the version of the lab's kernel.
lab_kernel() {
	echo "$LAB_KERNEL"
}

# kernel_rerandomizes ARCH: the lab's kernel replaces every type id with a
# random one at boot on ARCH (its file's rerandomizes).
kernel_rerandomizes() {
	local a
	for a in ${LAB_CONF["kernel/$LAB_KERNEL/rerandomizes"]}; do
		[ "$a" != "$1" ] || return 0
	done
	return 1
}

# kernel_off_arg ARCH: the boot argument that turns the lab kernel's
# checks off on ARCH (its file's off_arg, for the arches of off_arches);
# empty if none.
kernel_off_arg() {
	local a
	for a in ${LAB_CONF["kernel/$LAB_KERNEL/off_arches"]}; do
		[ "$a" != "$1" ] || printf '%s\n' "${LAB_CONF["kernel/$LAB_KERNEL/off_arg"]}"
	done
	return 0
}

# kernel_impl_line ARCH: the line (an ERE) the lab's kernel prints at boot
# on ARCH to name the CFI implementation it patched in; empty if none.
kernel_impl_line() {
	local entry
	local -a entries
	IFS=';' read -r -a entries <<<"${LAB_CONF["kernel/$LAB_KERNEL/impl_lines"]}"
	for entry in ${entries[@]+"${entries[@]}"}; do
		[ "${entry%%:*}" != "$1" ] || printf '%s\n' "${entry#*:}"
	done
	return 0
}

# kernel_is_default: the lab's kernel is the one used when none is named.
kernel_is_default() {
	[ "$LAB_KERNEL" = "$LAB_DEFAULT_KERNEL" ]
}

# kernel_set VAR KEY / arch_set VAR ARCH KEY: VAR becomes the value,
# without a subshell (for what is read each time a script starts).
kernel_set() {
	conf_set "$1" "kernel/$LAB_KERNEL" "$2" "lab/kernel/$LAB_KERNEL.conf"
}

arch_set() {
	if [ -n "${LAB_CONF["kernel/$LAB_KERNEL/$2.$3"]+set}" ]; then
		printf -v "$1" '%s' "${LAB_CONF["kernel/$LAB_KERNEL/$2.$3"]}"
		return 0
	fi
	conf_set "$1" "arch/$2" "$3" "lab/arch/$2.conf"
}

# conf_set VAR PREFIX KEY FILE: VAR becomes LAB_CONF[PREFIX/KEY].
conf_set() {
	[ -n "${LAB_CONF["$2/$3"]+set}" ] || die "$4 does not set $3"
	printf -v "$1" '%s' "${LAB_CONF["$2/$3"]}"
}

# kernel_get KEY: a value of the lab kernel's file.
kernel_get() {
	[ -n "${LAB_CONF["kernel/$LAB_KERNEL/$1"]+set}" ] || die "lab/kernel/$LAB_KERNEL.conf does not set $1"
	printf '%s\n' "${LAB_CONF["kernel/$LAB_KERNEL/$1"]}"
}

# arch_in_kernel NAME: the lab's kernel has KCFI on arch NAME (its
# file's kcfi_since).
arch_in_kernel() {
	version_le "${LAB_CONF["arch/$1/kcfi_since"]:-0}" "$LAB_KERNEL"
}

# lab_arches: every arch the lab has a file for whose KCFI the lab's
# kernel has, the default one first.
lab_arches() {
	local name first
	first=$(kernel_get default_arch)
	echo "$first"
	for name in "${LAB_ARCH_FILES[@]}"; do
		[ "$name" != "$first" ] || continue
		if arch_in_kernel "$name"; then
			echo "$name"
		fi
	done
	return 0
}

# all_arch_list: every arch file's arch, whichever kernel has it, as one
# line, for messages.
all_arch_list() {
	printf '%s\n' "${LAB_ARCH_FILES[@]}" | paste -sd' ' | sed 's/ /, /g'
}

# arch_list: the arches as one line, for messages.
arch_list() {
	lab_arches | paste -sd' ' | sed 's/ /, /g'
}

# arch_get ARCH KEY: a value of ARCH's file (ARCH is canonical), or the
# lab kernel's, when its file sets ARCH.KEY: what an arch's kernel code
# calls a thing can change from one kernel to the next.
arch_get() {
	if [ -n "${LAB_CONF["kernel/$LAB_KERNEL/$1.$2"]+set}" ]; then
		printf '%s\n' "${LAB_CONF["kernel/$LAB_KERNEL/$1.$2"]}"
		return 0
	fi
	[ -n "${LAB_CONF["arch/$1/$2"]+set}" ] || die "lab/arch/$1.conf does not set $2"
	printf '%s\n' "${LAB_CONF["arch/$1/$2"]}"
}

# normalize_arch NAME: the canonical arch for NAME (a file's name or one
# of its aliases) when the lab's kernel has it, or fail. A file that lacks a key is an error here,
# before anything uses it.
normalize_arch() {
	local name
	name=$(normalize_any_arch "$1") || return 1
	arch_in_kernel "$name" || return 1
	conf_check "arch/$name" "$LAB_ARCH_DIR/$name.conf" "${ARCH_KEYS[@]}"
	echo "$name"
}

# arch_usage: the arches and their aliases, for --help; an arch the lab's
# kernel lacks with the kernel that has it.
arch_usage() {
	local name aliases k
	for name in "${LAB_ARCH_FILES[@]}"; do
		aliases=${LAB_CONF["arch/$name/aliases"]:-}
		k=""
		arch_in_kernel "$name" || k=$(kernel_for_arch "$name") || continue
		printf '%s%s%s\n' "$name" "${aliases:+ (also ${aliases// /, })}" "${k:+ (Linux $k)}"
	done | paste -sd';' | sed 's/;/; /g'
}

# arch_is_host ARCH: ARCH is this machine's own arch (dpkg's name for
# it, asked once per process).
arch_is_host() {
	if [ -z "${LAB_HOST_ARCH:-}" ]; then
		LAB_HOST_ARCH=$(dpkg --print-architecture 2>/dev/null || uname -m)
	fi
	[ "$(arch_get "$1" debian_arch)" = "$LAB_HOST_ARCH" ]
}

# Shorthands for the keys the machinery asks for most.
kbuild_arch() { arch_get "$1" kbuild_arch; }
qemu_binary() {
	if [ -n "$(qemu_suites "$1")" ]; then
		echo "$(qemu_home "$1")/bin/$(arch_get "$1" qemu)"
	else
		arch_get "$1" qemu
	fi
}

# qemu_suites ARCH: the suites this host takes the lab kernel's QEMU for
# ARCH from (K.ARCH.qemu_suites: its own QEMU is wrong for that kernel),
# or nothing (the host's own package).
qemu_suites() {
	[ -n "$LAB_HOST" ] || return 0
	printf '%s
' "${LAB_CONF["host/$LAB_KERNEL.$1.qemu_suites"]:-}"
}

# qemu_home ARCH: where a QEMU from other suites is in the lab's home
# (its root and, in bin/, its wrapper), named by its path, never put on
# PATH: another kernel of the same process may use the host's.
qemu_home() {
	echo "$KCFI_LAB_HOME/qemu/$LAB_KERNEL-$1"
}

conf_load_all
