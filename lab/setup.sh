#!/usr/bin/env bash
# Host setup: install the Debian packages the lab needs, and fetch the
# busybox-static of every other arch without installing it. Sourced by
# run.sh.

# lab_packages: the Debian packages, each with the command that proves it
# usable ("PACKAGE:COMMAND"): the lab kernel's source and toolchain and
# the QEMU of each arch it has KCFI on, from their files, then the rest.
# Asked when needed: --kernel may have changed the kernel since startup.
lab_packages() {
	local arch
	printf '%s\n' "$DISTRO_PACKAGE:" \
		"clang$KCFI_LAB_LLVM:clang$KCFI_LAB_LLVM" \
		"lld$KCFI_LAB_LLVM:ld.lld$KCFI_LAB_LLVM" \
		"llvm$KCFI_LAB_LLVM:llvm-objdump$KCFI_LAB_LLVM"
	for arch in $(lab_arches); do
		echo "$(arch_get "$arch" qemu_package):$(arch_get "$arch" qemu)"
	done
	printf '%s\n' gdb-multiarch:gdb-multiarch busybox-static: tmux:tmux make:make gcc:gcc \
		libc6-dev: bc:bc bison:bison flex:flex libelf-dev: libdw-dev: libssl-dev: \
		cpio:cpio xz-utils:xz git:git python3:python3 iproute2:ss procps:pgrep \
		less:less shellcheck:shellcheck
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
	local cmd="apt-get install -y --no-install-recommends ${pkgs[*]}"
	info "installing ${pkgs[*]}"
	if ! have apt-get; then
		die "apt-get not found: this lab needs Debian 12; install by hand: ${pkgs[*]}"
	fi
	if [ "$(id -u)" != 0 ] && ! have sudo; then
		die "missing packages and no sudo; run as root: apt-get update && $cmd"
	fi
	local log
	log=$(new_log apt)
	if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get update >"$log" 2>&1 ||
		! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends "${pkgs[@]}" >>"$log" 2>&1; then
		die "package installation failed (log: $log); try by hand: sudo apt-get update && sudo $cmd"
	fi
}

# check_tools: every command the lab runs is on PATH (a package may be
# installed while PATH hides it).
check_tools() {
	local entry cmd
	for entry in $(lab_packages); do
		cmd=${entry#*:}
		[ -n "$cmd" ] && require_tool "$cmd" "${entry%%:*}"
	done
	local tarball
	tarball=$(kernel_get source_tarball)
	[ -f "$tarball" ] ||
		die "$tarball not found; install it with: sudo apt-get install $(kernel_get source_package)"
}

ensure_packages() {
	local -a missing
	mapfile -t missing < <(missing_packages)
	if [ "${#missing[@]}" -gt 0 ]; then
		install_packages "${missing[@]}"
	fi
	check_tools
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

# fetch_busybox ARCH: for an arch other than the host's, download
# Debian's busybox-static .deb of that arch with a private apt state (the
# host's dpkg architectures and lists stay as they are) and unpack it
# without installing it. The arch file's debian_source, when set, is the
# only source (another Debian release's archive); apt checks its Release
# signature as for the host's own sources, with the keyring the line
# names.
fetch_busybox() {
	local arch=$1 debarch source
	arch_is_host "$arch" && return 0
	local dest="$KCFI_LAB_HOME/busybox/$arch"
	[ -x "$dest/bin/busybox" ] && return 0
	debarch=$(arch_get "$arch" debian_arch)
	source=$(arch_get "$arch" debian_source)
	local apt_dir="$KCFI_LAB_HOME/apt-$arch"
	local log
	log=$(new_log "apt-$arch")
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs"
	: >"$apt_dir/status"
	local -a opts=(
		-o "Dir::State=$apt_dir" -o "Dir::State::Lists=$apt_dir/lists"
		-o "Dir::State::status=$apt_dir/status" -o "Dir::Cache=$apt_dir/cache"
		-o "APT::Architecture=$debarch" -o "APT::Architectures::=$debarch"
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root
	)
	if [ -n "$source" ]; then
		case "$source" in
		*trusted=yes* | *allow-insecure*) die "lab/arch/$arch.conf: debian_source must not turn apt's signature check off" ;;
		esac
		mkdir -p "$apt_dir/sources.list.d"
		printf '%s\n' "$source" >"$apt_dir/sources.list"
		opts+=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d")
	fi
	info "fetching busybox-static for $arch (private apt state in $apt_dir)"
	if ! apt-get "${opts[@]}" update >"$log" 2>&1; then
		die "apt-get update for $arch failed (log: $log)"
	fi
	if ! (cd "$apt_dir/debs" && apt-get "${opts[@]}" download "busybox-static:$debarch") >>"$log" 2>&1; then
		die "could not download busybox-static:$debarch (log: $log)"
	fi
	local deb
	deb=$(find "$apt_dir/debs" -name "busybox-static_*_$debarch.deb" | sort | tail -n 1)
	[ -n "$deb" ] || die "busybox-static $debarch .deb missing after download (log: $log)"
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

cmd_setup() {
	local arch
	ensure_packages
	for arch in $(lab_arches); do
		fetch_busybox "$arch"
	done
	info "setup complete"
}
