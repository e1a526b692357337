#!/usr/bin/env bash
# Host setup: install the Debian packages the lab needs, and fetch the
# busybox-static of every other arch without installing it. Sourced by
# run.sh.

# lab_packages: the Debian packages the host installs, each with the
# command that proves it usable ("PACKAGE:COMMAND"): the lab kernel's
# source and toolchain (unless this host fetches them from another
# suite) and the QEMU of each arch it has KCFI on, then the host file's
# packages. Asked when needed: --kernel may have changed the kernel
# since startup.
lab_packages() {
	local arch
	[ -n "$(host_kernel_get source_suites)" ] || echo "$DISTRO_PACKAGE:"
	[ -n "$(host_kernel_get toolchain_suites)" ] || toolchain_packages
	for arch in $(lab_arches); do
		echo "$(arch_get "$arch" qemu_package):$(arch_get "$arch" qemu)"
	done
	host_get packages | tr ' ' '\n' | sed '/^$/d'
}

package_installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

missing_packages() {
	local entry
	for entry in $(lab_packages); do
		package_installed "${entry%%:*}" || echo "${entry%%:*}"
	done
}

# as_root CMD...: run CMD as root, through sudo when needed.
as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif have sudo; then
		sudo "$@"
	else
		return 127
	fi
}

install_packages() {
	local -a pkgs=("$@")
	local cmd="apt-get install -y --no-install-recommends ${pkgs[*]}" name
	info "installing ${pkgs[*]}"
	if ! have apt-get; then
		die "apt-get not found: the lab installs Debian's packages with apt (docs/troubleshooting.md says what a host needs)"
	fi
	if [ "$(id -u)" != 0 ] && ! have sudo; then
		die "missing packages and no sudo; run as root: apt-get update && $cmd"
	fi
	local log
	log=$(new_log apt)
	if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get update >"$log" 2>&1; then
		die "apt-get update failed (log: $log); try by hand: sudo apt-get update && sudo $cmd"
	fi
	# Exact names only: apt reads a name it does not know as a pattern and
	# would install another package without a word.
	for name in "${pkgs[@]}"; do
		apt-cache pkgnames "$name" 2>/dev/null | exact_line "$name" ||
			die "the host's apt sources have no package named $name (lab/host/$LAB_HOST.conf names it); nothing was installed"
	done
	if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "${pkgs[@]}" >>"$log" 2>&1; then
		die "package installation failed (log: $log); try by hand: sudo apt-get update && sudo $cmd"
	fi
	for name in "${pkgs[@]}"; do
		package_installed "$name" || die "apt did not install $name (log: $log)"
	done
}

# check_tools [no-source]: every command the lab runs is on PATH (a
# package may be installed while PATH hides it), and the kernel's source
# tarball is there (unless no-source).
check_tools() {
	local entry cmd
	for entry in $(lab_packages); do
		cmd=${entry#*:}
		[ -n "$cmd" ] && require_tool "$cmd" "${entry%%:*}"
	done
	[ "${1:-}" = no-source ] || [ -f "$DISTRO_TARBALL" ] ||
		die "$DISTRO_TARBALL not found; get it with: ./run.sh setup$LAB_KOPT"
}

# ensure_packages [no-source]: the packages, the kernel's source package
# (unless no-source) and its toolchain.
ensure_packages() {
	local -a missing
	host_get suite >/dev/null
	mapfile -t missing < <(missing_packages)
	if [ "${#missing[@]}" -gt 0 ]; then
		install_packages "${missing[@]}"
	fi
	[ "${1:-}" = no-source ] || fetch_source
	fetch_toolchain
	check_tools "${1:-}"
}

# fetch_source: the lab kernel's source package, when this host takes it
# from other suites: unpacked into LAB_SOURCE_ROOT (its version in
# LAB_SOURCE_ROOT/version), not installed.
fetch_source() {
	local suites deb
	suites=$(host_kernel_get source_suites)
	[ -n "$suites" ] || return 0
	[ -f "$DISTRO_TARBALL" ] && [ -s "$LAB_SOURCE_ROOT/version" ] && return 0
	info "fetching $DISTRO_PACKAGE from $suites (private apt state in $KCFI_LAB_HOME/apt-source)"
	# shellcheck disable=SC2086 # suites: one word each
	suite_state "$KCFI_LAB_HOME/apt-source" "$(host_debian_arch)" $suites
	suite_download "$KCFI_LAB_HOME/apt-source" "$(host_debian_arch)" "" "$DISTRO_PACKAGE"
	deb=$(compgen -G "$KCFI_LAB_HOME/apt-source/debs/${DISTRO_PACKAGE}_*.deb" | sed -n 1p)
	rm -rf "$LAB_SOURCE_ROOT.tmp"
	mkdir -p "$LAB_SOURCE_ROOT.tmp"
	dpkg-deb -x "$deb" "$LAB_SOURCE_ROOT.tmp"
	dpkg-deb -f "$deb" Version >"$LAB_SOURCE_ROOT.tmp/version"
	[ -f "$LAB_SOURCE_ROOT.tmp${DISTRO_TARBALL#"$LAB_SOURCE_ROOT"}" ] ||
		die "$deb holds no ${DISTRO_TARBALL#"$LAB_SOURCE_ROOT"}"
	rm -rf "$LAB_SOURCE_ROOT" "$KCFI_LAB_HOME/apt-source/debs"
	mv "$LAB_SOURCE_ROOT.tmp" "$LAB_SOURCE_ROOT"
}

# fetch_toolchain: the lab kernel's toolchain, when this host takes it
# from other suites: its packages and every library the host lacks,
# unpacked under the lab's home, with a wrapper for each command in
# LAB_TOOLCHAIN_BIN that finds those libraries and nothing of the host's
# changes. A toolchain from a newer release than the host's (one whose
# packages would replace the host's C library) comes with every package
# it needs, C library included, and its programs are made to run on
# that release's dynamic loader (toolchain_root_patch).
fetch_toolchain() {
	local suites root deb cmd status dir="$KCFI_LAB_HOME/apt-toolchain" debarch
	suites=$(host_kernel_get toolchain_suites)
	[ -n "$suites" ] || return 0
	root=${LAB_TOOLCHAIN_BIN%/bin}/root
	toolchain_ready && return 0
	local -a pkgs=()
	for entry in $(toolchain_packages); do
		pkgs+=("${entry%%:*}")
	done
	debarch=$(host_debian_arch)
	info "fetching ${pkgs[*]} from $suites (private apt state in $dir)"
	# shellcheck disable=SC2086 # suites: one word each
	suite_state "$dir" "$debarch" $suites
	status=/var/lib/dpkg/status
	if ! suite_closure "$dir" "$debarch" "$status" "${pkgs[@]}" >/dev/null 2>&1; then
		info "${pkgs[*]} need a newer C library than this host's: fetching a root of their own"
		status=$dir/status
		# The release's own patchelf, run on its loader, points the
		# root's programs at that loader.
		pkgs+=(patchelf)
	fi
	rm -rf "$root.tmp" "$LAB_TOOLCHAIN_BIN"
	mkdir -p "$root.tmp" "$LAB_TOOLCHAIN_BIN"
	suite_download "$dir" "$debarch" "$status" "${pkgs[@]}"
	for deb in "$dir/debs/"*.deb; do
		dpkg-deb -x "$deb" "$root.tmp"
	done
	toolchain_root_patch "$root.tmp" "$root"
	rm -rf "$root" "$dir/debs"
	mv "$root.tmp" "$root"
	for cmd in "$root"/usr/bin/*"$KCFI_LAB_LLVM"; do
		[ -e "$cmd" ] || continue
		toolchain_wrapper "$root" "$cmd" >"$LAB_TOOLCHAIN_BIN/${cmd##*/}"
		chmod +x "$LAB_TOOLCHAIN_BIN/${cmd##*/}"
	done
	toolchain_ready || die "the toolchain fetched from $suites does not run (see $root)"
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

# toolchain_root_patch DIR ROOT: when DIR (to be moved to ROOT) holds a
# C library of its own, make every program in it start on ROOT's
# loader, and every program and library look for its libraries in
# ROOT first. A program run through the loader (ld.so PROGRAM) would see
# the loader as its own executable: a clang that re-runs itself for a
# second job (compile and link) would run the loader instead. The
# search path is an RPATH, which the loader also applies to the
# libraries a library loads, and never an environment variable, which
# the host's own programs (a linker a clang runs) would inherit.
toolchain_root_patch() {
	local dir=$1 root=$2 loader libs f
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

# toolchain_wrapper ROOT CMD: a script that runs CMD (a command unpacked
# into ROOT) with ROOT's libraries: a command patched to start on
# ROOT's loader runs as it is; otherwise the library path puts ROOT's
# libraries first.
toolchain_wrapper() {
	local root=$1 cmd=$2
	echo '#!/bin/bash'
	if [ -n "$(root_loader "$root")" ]; then
		printf 'exec %q "$@"\n' "$cmd"
	else
		# shellcheck disable=SC2016 # the wrapper's own expansions
		printf 'LD_LIBRARY_PATH=%q${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %q "$@"\n' "$(root_libs "$root")" "$cmd"
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

# host_debian_arch: dpkg's name for this machine's arch.
host_debian_arch() {
	dpkg --print-architecture
}

# busybox_binary ARCH: the static busybox that goes into ARCH's initramfs:
# the host's own (package busybox-static) for the host's arch, else one
# fetched by fetch_busybox.
busybox_binary() {
	if arch_is_host "$1"; then
		echo /bin/busybox
	else
		echo "$KCFI_LAB_HOME/busybox/$1/bin/busybox"
	fi
}

# fetch_busybox ARCH: for an arch other than the host's, Debian's
# busybox-static .deb of that arch, from the host's own suite or the
# suites the host file names for ARCH (busybox_suites), with a private apt
# state (the host's dpkg architectures and lists stay as they are),
# unpacked without installing it.
fetch_busybox() {
	local arch=$1 debarch suites deb
	arch_is_host "$arch" && return 0
	local dest="$KCFI_LAB_HOME/busybox/$arch"
	[ -x "$dest/bin/busybox" ] && return 0
	debarch=$(arch_get "$arch" debian_arch)
	suites=$(host_arch_get "$arch" busybox_suites)
	[ -n "$suites" ] || suites=$(host_get suite)
	local apt_dir="$KCFI_LAB_HOME/apt-$arch"
	info "fetching busybox-static for $arch from $suites (private apt state in $apt_dir)"
	# shellcheck disable=SC2086 # suites: one word each
	suite_state "$apt_dir" "$debarch" $suites
	suite_download "$apt_dir" "$debarch" "" busybox-static
	deb=$(compgen -G "$apt_dir/debs/busybox-static_*.deb" | sed -n 1p)
	rm -rf "$dest.tmp"
	mkdir -p "$dest.tmp"
	dpkg-deb -x "$deb" "$dest.tmp"
	# Merged-/usr releases (Debian 13) ship it as usr/bin/busybox.
	if [ ! -x "$dest.tmp/bin/busybox" ] && [ -x "$dest.tmp/usr/bin/busybox" ]; then
		mkdir -p "$dest.tmp/bin"
		mv "$dest.tmp/usr/bin/busybox" "$dest.tmp/bin/busybox"
	fi
	[ -x "$dest.tmp/bin/busybox" ] || die "$deb holds no bin/busybox or usr/bin/busybox"
	rm -rf "$dest"
	mv "$dest.tmp" "$dest"
}

# cmd_setup [TESTS]: what the lab kernel needs; with TESTS, also what
# the test suite needs beyond it (the host file's test_packages).
cmd_setup() {
	local arch entry
	local -a extra=()
	if [ -n "${1:-}" ]; then
		for entry in $(host_get test_packages); do
			package_installed "${entry%%:*}" || extra+=("${entry%%:*}")
		done
		[ "${#extra[@]}" = 0 ] || install_packages "${extra[@]}"
	fi
	if pack_home; then
		# The pack carries the sources the exercises read; a build in
		# this home fetches the whole source first.
		ensure_packages no-source
	else
		ensure_packages
	fi
	for arch in $(lab_arches); do
		fetch_busybox "$arch"
	done
	info "setup complete"
}
