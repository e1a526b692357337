#!/usr/bin/env bash
# The lab's per-arch and per-kernel knowledge: reads lab/arch/ARCH.conf
# and lab/kernel/VERSION.conf, data files of KEY=VALUE lines. Nothing
# outside those files names an arch or a kernel version. Sourced, never
# executed.

LAB_ARCH_DIR="$KCFI_LAB_ROOT/lab/arch"
LAB_KERNEL_DIR="$KCFI_LAB_ROOT/lab/kernel"

# The keys every arch file and every kernel file must set (possibly empty).
ARCH_KEYS=(aliases kbuild_arch image debian_arch qemu qemu_package qemu_machine
	qemu_cpu console kvm clang_target gdb_arch trap_mnemonic trap_text kcfi_since)
KERNEL_KEYS=(default source_package source_tarball llvm branch default_arch fragments)

# conf_value FILE KEY: print KEY's value in FILE; fail when FILE does not
# set KEY. Comments and blank lines are skipped.
conf_value() {
	local file=$1 key=$2 line
	[ -f "$file" ] || return 1
	while IFS= read -r line || [ -n "$line" ]; do
		case "$line" in
		"$key="*)
			printf '%s\n' "${line#*=}"
			return 0
			;;
		esac
	done <"$file"
	return 1
}

# conf_check FILE KEY...: die unless FILE sets every KEY.
conf_check() {
	local file=$1 key
	shift
	for key in "$@"; do
		conf_value "$file" "$key" >/dev/null ||
			die "${file#"$KCFI_LAB_ROOT/"} does not set $key"
	done
}

# version_le A B: version A is B or older.
version_le() {
	[ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | sed -n 1p)" = "$1" ]
}

# lab_arches: every arch the lab has a file for whose KCFI the lab's
# kernel has (kcfi_since), the default one first.
lab_arches() {
	local f name first kernel since
	first=$(kernel_get default_arch)
	kernel=$(lab_kernel)
	echo "$first"
	for f in "$LAB_ARCH_DIR"/*.conf; do
		name=$(basename "$f" .conf)
		[ "$name" != "$first" ] || continue
		since=$(conf_value "$f" kcfi_since) || since=""
		if version_le "${since:-0}" "$kernel"; then
			echo "$name"
		fi
	done
	return 0
}

# arch_list: the arches as one line, for messages.
arch_list() {
	lab_arches | paste -sd' ' | sed 's/ /, /g'
}

# arch_get ARCH KEY: a value of ARCH's file (ARCH is canonical).
arch_get() {
	conf_value "$LAB_ARCH_DIR/$1.conf" "$2" || die "lab/arch/$1.conf does not set $2"
}

# normalize_arch NAME: the canonical arch for NAME (a file's name or one
# of its aliases), or fail. A file that lacks a key is an error here,
# before anything uses it.
normalize_arch() {
	local name alias
	for name in $(lab_arches); do
		alias=""
		if [ "$1" != "$name" ]; then
			for alias in $(conf_value "$LAB_ARCH_DIR/$name.conf" aliases); do
				[ "$1" = "$alias" ] && break
			done
			[ "$1" = "$alias" ] || continue
		fi
		conf_check "$LAB_ARCH_DIR/$name.conf" "${ARCH_KEYS[@]}"
		echo "$name"
		return 0
	done
	return 1
}

# arch_usage: one line per arch for --help: its name and aliases.
arch_usage() {
	local name aliases
	for name in $(lab_arches); do
		aliases=$(conf_value "$LAB_ARCH_DIR/$name.conf" aliases) || aliases=""
		printf '%s%s\n' "$name" "${aliases:+ (also ${aliases// /, })}"
	done | paste -sd';' | sed 's/;/; /g'
}

# host_debian_arch: dpkg's name for this machine's arch.
host_debian_arch() {
	dpkg --print-architecture 2>/dev/null || uname -m
}

# arch_is_host ARCH: ARCH is this machine's own arch.
arch_is_host() {
	[ "$(arch_get "$1" debian_arch)" = "$(host_debian_arch)" ]
}

# The kernel: the file marked default=yes.
lab_kernel() {
	local f
	for f in "$LAB_KERNEL_DIR"/*.conf; do
		if [ "$(conf_value "$f" default 2>/dev/null)" = yes ]; then
			basename "$f" .conf
			return 0
		fi
	done
	die "no file in lab/kernel/ sets default=yes"
}

# kernel_get KEY: a value of the lab kernel's file.
kernel_get() {
	local file
	file="$LAB_KERNEL_DIR/$(lab_kernel).conf"
	conf_check "$file" "${KERNEL_KEYS[@]}"
	conf_value "$file" "$1" || die "${file#"$KCFI_LAB_ROOT/"} does not set $1"
}

# Shorthands for the keys the machinery asks for most.
kbuild_arch() { arch_get "$1" kbuild_arch; }
qemu_binary() { arch_get "$1" qemu; }
