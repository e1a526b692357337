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
		[ -n "$(qemu_suites "$arch")" ] || echo "$(arch_get "$arch" qemu_package):$(arch_get "$arch" qemu)"
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
# package may be installed while PATH hides it), a QEMU from other
# suites runs, and the kernel's source tarball is there (unless
# no-source).
check_tools() {
	local entry cmd arch
	for entry in $(lab_packages); do
		cmd=${entry#*:}
		[ -n "$cmd" ] && require_tool "$cmd" "${entry%%:*}"
	done
	for arch in $(lab_arches); do
		[ -z "$(qemu_suites "$arch")" ] || qemu_ready "$arch" || die "$(qemu_missing "$arch")"
	done
	[ "${1:-}" = no-source ] || [ -f "$DISTRO_TARBALL" ] ||
		die "$DISTRO_TARBALL not found; get it with: ./run.sh setup$LAB_KOPT"
}

# qemu_missing ARCH: the one line that says ARCH's QEMU for the lab
# kernel, which this host takes from other suites, is not in the lab's
# home yet.
qemu_missing() {
	echo "Linux $LAB_KERNEL's QEMU for $1 is not in $KCFI_LAB_HOME yet: ./run.sh setup$LAB_KOPT fetches $(arch_get "$1" qemu_package) from $(qemu_suites "$1") (verified by apt, into the lab's home)"
}

# require_qemu ARCH: ARCH's QEMU for the lab kernel is there, or a
# one-line error that says how to get it.
require_qemu() {
	if [ -z "$(qemu_suites "$1")" ]; then
		require_tool "$(qemu_binary "$1")" "$(arch_get "$1" qemu_package)"
	else
		qemu_ready "$1" || die "$(qemu_missing "$1")"
	fi
}

# ensure_packages [no-source]: the packages, the kernel's source package
# (unless no-source), its toolchain and its QEMU.
ensure_packages() {
	local arch
	local -a missing
	host_get suite >/dev/null
	mapfile -t missing < <(missing_packages)
	if [ "${#missing[@]}" -gt 0 ]; then
		install_packages "${missing[@]}"
	fi
	[ "${1:-}" = no-source ] || fetch_source
	fetch_toolchain
	for arch in $(lab_arches); do
		fetch_qemu "$arch"
	done
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
