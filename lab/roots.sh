#!/usr/bin/env bash
# Programs from other suites, in roots of their own in the lab's home: a
# kernel's toolchain, or its QEMU for an arch, when the host file names
# the suites they come from. apt fetches and verifies them (lab/suites.sh);
# here they are unpacked, made to find their own libraries, loader and
# data, and given wrappers the lab runs. Nothing is installed. Sourced
# by run.sh.

# fetch_toolchain: the lab kernel's toolchain, when this host takes it
# from other suites: its packages and every library the host lacks,
# unpacked under the lab's home (suite_root), with a wrapper for each
# command in LAB_TOOLCHAIN_BIN that finds those libraries and nothing of
# the host's changes.
fetch_toolchain() {
	local suites root entry
	suites=$(host_kernel_get toolchain_suites)
	[ -n "$suites" ] || return 0
	toolchain_ready && return 0
	root=${LAB_TOOLCHAIN_BIN%/bin}/root
	local -a pkgs=()
	for entry in $(toolchain_packages); do
		pkgs+=("${entry%%:*}")
	done
	rm -rf "$LAB_TOOLCHAIN_BIN"
	suite_root "$KCFI_LAB_HOME/apt-toolchain" "$root" "$suites" /var/lib/dpkg/status "${pkgs[@]}"
	root_wrappers "$root" "$LAB_TOOLCHAIN_BIN" "$root"/usr/bin/*"$KCFI_LAB_LLVM"
	toolchain_ready || die "the toolchain fetched from $suites does not run (see $root)"
}

# fetch_qemu ARCH: ARCH's QEMU for the lab kernel, when this host takes
# it from other suites (its own is wrong for this kernel): a root of its
# own in the lab's home (suite_root), the host's QEMU untouched, with a
# wrapper where qemu_binary looks.
fetch_qemu() {
	local arch=$1 suites home
	suites=$(qemu_suites "$arch")
	[ -n "$suites" ] || return 0
	qemu_ready "$arch" && return 0
	home=$(qemu_home "$arch")
	rm -rf "${home:?}/bin"
	suite_root "$KCFI_LAB_HOME/apt-qemu" "$home/root" "$suites" "" "$(arch_get "$arch" qemu_package)"
	qemu_wrapper "$home/root" "$home/root/usr/bin/$(arch_get "$arch" qemu)" >"$home/bin.tmp"
	mkdir -p "$home/bin"
	chmod +x "$home/bin.tmp"
	mv "$home/bin.tmp" "$home/bin/$(arch_get "$arch" qemu)"
	qemu_ready "$arch" || die "the QEMU fetched from $suites does not run (see $home/root)"
}

# qemu_wrapper ROOT CMD: a script that runs CMD, a QEMU unpacked into
# ROOT, with ROOT's data first: its firmware (the BIOS, the option ROMs)
# from ROOT's copy of each directory CMD itself names ("-L help").
# Otherwise a QEMU built with fixed paths would load the host's, of
# another QEMU's version, or none on a host without QEMU. (A QEMU built
# relocatable names directories next to its own binary: in ROOT.)
qemu_wrapper() {
	local root=$1 cmd=$2 dir real
	local -a data=()
	real=$(realpath -m -- "$root")
	while IFS= read -r dir; do
		dir=$(realpath -m -- "$dir")
		if [[ "$dir" == "$real/"* ]]; then
			[ ! -d "$dir" ] || data+=(-L "$dir")
		elif [ -d "$root$dir" ]; then
			data+=(-L "$root$dir")
		fi
	done < <(toolchain_wrapper "$root" "$cmd" | bash -s -- -L help 2>/dev/null)
	[ "${#data[@]}" -gt 0 ] || die "$cmd names no data directory in $root (-L help)"
	toolchain_wrapper "$root" "$cmd" "${data[@]}"
}

# qemu_ready ARCH: ARCH's QEMU for the lab kernel runs.
qemu_ready() {
	"$(qemu_binary "$1")" --version >/dev/null 2>&1
}

# suite_root DIR ROOT SUITES STATUS PACKAGE...: PACKAGE... from SUITES
# (through the private apt state DIR) unpacked into ROOT, which they
# replace, never installed. With STATUS (a dpkg status file), only what
# a machine with that status lacks. Without, or when they would replace
# a package STATUS has (a newer release than the host's, whose C library
# would replace the host's), a root of their own: every package they
# need, C library included, their programs made to run on that
# release's dynamic loader (root_patch).
suite_root() {
	local dir=$1 root=$2 suites=$3 status=$4 debarch deb
	shift 4
	local -a pkgs=("$@")
	debarch=$(host_debian_arch)
	info "fetching ${pkgs[*]} from $suites (private apt state in $dir)"
	# shellcheck disable=SC2086 # suites: one word each
	suite_state "$dir" "$debarch" $suites
	if [ -z "$status" ]; then
		status=$dir/status
		pkgs+=(patchelf)
	elif ! suite_closure "$dir" "$debarch" "$status" "${pkgs[@]}" >/dev/null 2>&1; then
		info "${pkgs[*]} need a newer C library than this host's: fetching a root of their own"
		status=$dir/status
		# The release's own patchelf, run on its loader, points the
		# root's programs at that loader.
		pkgs+=(patchelf)
	fi
	rm -rf "$root.tmp"
	mkdir -p "$root.tmp"
	suite_download "$dir" "$debarch" "$status" "${pkgs[@]}"
	for deb in "$dir/debs/"*.deb; do
		dpkg-deb -x "$deb" "$root.tmp"
	done
	root_patch "$root.tmp" "$root"
	rm -rf "$root" "$dir/debs"
	mv "$root.tmp" "$root"
}

# root_wrappers ROOT BIN CMD...: in BIN, a wrapper for each CMD (a
# program unpacked into ROOT) under its own name.
root_wrappers() {
	local root=$1 bin=$2 cmd
	shift 2
	mkdir -p "$bin"
	for cmd in "$@"; do
		[ -e "$cmd" ] || continue
		toolchain_wrapper "$root" "$cmd" >"$bin/${cmd##*/}"
		chmod +x "$bin/${cmd##*/}"
	done
}

# root_loader ROOT: the dynamic loader ROOT holds (a root with a C
# library of its own), or nothing.
root_loader() {
	local f
	for f in "$1"/usr/lib/*-linux-gnu*/ld-linux*.so.*; do
		[ ! -e "$f" ] || {
			echo "$f"
			return 0
		}
	done
}

# root_libs ROOT: ROOT's library directories, separated by ":".
root_libs() {
	local d libs=""
	for d in "$1"/usr/lib/*-linux-gnu* "$1"/lib/*-linux-gnu* "$1"/usr/lib/llvm*/lib; do
		[ -d "$d" ] && libs="$libs${libs:+:}$d"
	done
	echo "$libs"
}

# root_patch DIR ROOT: an absolute link in DIR (to be moved to ROOT)
# whose target DIR holds points into ROOT (a program's data, linked
# from one package into another's directory, is the root's own, not the
# host's). When DIR holds a C library of its own, make every program in it start on ROOT's
# loader, and every program and library look for its libraries in
# ROOT first. A program run through the loader (ld.so PROGRAM) would see
# the loader as its own executable: a clang that re-runs itself for a
# second job (compile and link) would run the loader instead. The
# search path is an RPATH, which the loader also applies to the
# libraries a library loads, and never an environment variable, which
# the host's own programs (a linker a clang runs) would inherit.
root_patch() {
	local dir=$1 root=$2 loader libs f target
	while IFS= read -r -d '' f; do
		target=$(readlink "$f")
		[ -e "$dir$target" ] || [ -L "$dir$target" ] || continue
		ln -sfn "$root$target" "$f"
	done < <(find "$dir" -type l -lname '/*' -print0)
	loader=$(root_loader "$dir")
	[ -n "$loader" ] || return 0
	libs=$(root_libs "$dir")
	local -a patchelf=("$loader" --library-path "$libs" "$dir/usr/bin/patchelf")
	libs=${libs//"$dir"/"$root"}
	while IFS= read -r -d '' f; do
		# Programs only: the C library has an interpreter too (it runs),
		# and it is what patchelf itself runs on.
		if [[ "$f" == */bin/* ]] && "${patchelf[@]}" --print-interpreter "$f" >/dev/null 2>&1; then
			"${patchelf[@]}" --set-interpreter "${loader/"$dir"/"$root"}" "$f" ||
				die "could not point $f at the loader of $root"
		elif [ -z "$("${patchelf[@]}" --print-rpath "$f" 2>/dev/null)" ]; then
			continue
		fi
		"${patchelf[@]}" --force-rpath --set-rpath "$libs" "$f" ||
			die "could not point $f at the libraries of $root"
	done < <(find "$dir/usr/lib" "$dir/usr/bin" -type f \( -name '*.so*' -o -path '*/bin/*' \) \
		! -path '*/gconv/*' ! -name patchelf -print0)
}

# toolchain_wrapper ROOT CMD [ARG...]: a script that runs CMD (a command
# unpacked into ROOT) with ROOT's libraries, and ARG... before its own
# arguments: a command patched to start on ROOT's loader runs as it is;
# otherwise the library path puts ROOT's libraries first.
toolchain_wrapper() {
	local root=$1 cmd=$2 args=""
	shift 2
	[ "$#" = 0 ] || args="$(printf '%q ' "$@")"
	echo '#!/bin/bash'
	if [ -n "$(root_loader "$root")" ]; then
		printf 'exec %q %s"$@"\n' "$cmd" "$args"
	else
		# shellcheck disable=SC2016 # the wrapper's own expansions
		printf 'LD_LIBRARY_PATH=%q${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %q %s"$@"\n' "$(root_libs "$root")" "$cmd" "$args"
	fi
}

# toolchain_ready: every command of the lab kernel's toolchain runs, and
# its clang compiles and links a program in one call (two jobs: the
# second runs the compiler's own executable again, as the kernel's
# host programs do).
toolchain_ready() {
	local entry cmd
	for entry in $(toolchain_packages); do
		cmd=${entry#*:}
		[ -x "$LAB_TOOLCHAIN_BIN/$cmd" ] && "$LAB_TOOLCHAIN_BIN/$cmd" --version >/dev/null 2>&1 || return 1
	done
	local out
	out=$(mktemp -d "${TMPDIR:-/tmp}/kcfi-lab-cc.XXXXXX")
	printf 'int main(void) { return 0; }\n' >"$out/t.c"
	if "$LAB_TOOLCHAIN_BIN/clang$KCFI_LAB_LLVM" -o "$out/t" "$out/t.c" >/dev/null 2>&1 && "$out/t"; then
		rm -rf "$out"
		return 0
	fi
	rm -rf "$out"
	return 1
}
