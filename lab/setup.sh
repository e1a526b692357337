#!/usr/bin/env bash
# Host setup: install the Debian packages the lab needs, and fetch arm64's
# busybox-static without installing it. Sourced by run.sh.

# Debian packages, and the command that proves each is usable.
LAB_PACKAGES=(
	"linux-source-6.1:"
	"clang-16:clang-16"
	"lld-16:ld.lld-16"
	"llvm-16:llvm-objdump-16"
	"qemu-system-x86:qemu-system-x86_64"
	"qemu-system-arm:qemu-system-aarch64"
	"gdb-multiarch:gdb-multiarch"
	"busybox-static:"
	"tmux:tmux"
	"make:make"
	"gcc:gcc"
	"libc6-dev:"
	"bc:bc"
	"bison:bison"
	"flex:flex"
	"libelf-dev:"
	"libssl-dev:"
	"cpio:cpio"
	"xz-utils:xz"
	"git:git"
	"python3:python3"
	"iproute2:ss"
	"procps:pgrep"
	"less:less"
	"shellcheck:shellcheck"
)

package_installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

missing_packages() {
	local entry
	for entry in "${LAB_PACKAGES[@]}"; do
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
	for entry in "${LAB_PACKAGES[@]}"; do
		cmd=${entry#*:}
		[ -n "$cmd" ] && require_tool "$cmd" "${entry%%:*}"
	done
	[ -f /usr/src/linux-source-6.1.tar.xz ] ||
		die "/usr/src/linux-source-6.1.tar.xz not found; install it with: sudo apt-get install linux-source-6.1"
}

ensure_packages() {
	local -a missing
	mapfile -t missing < <(missing_packages)
	if [ "${#missing[@]}" -gt 0 ]; then
		install_packages "${missing[@]}"
	fi
	check_tools
}

# busybox_binary ARCH: the static busybox that goes into ARCH's initramfs.
busybox_binary() {
	case "$1" in
	x86_64) echo /bin/busybox ;;
	arm64) echo "$KCFI_LAB_HOME/busybox/arm64/bin/busybox" ;;
	esac
}

# fetch_busybox_arm64: download Debian's arm64 busybox-static .deb with a
# private apt state (the host's dpkg architectures and lists stay as they
# are) and unpack it without installing it.
fetch_busybox_arm64() {
	local dest="$KCFI_LAB_HOME/busybox/arm64"
	[ -x "$dest/bin/busybox" ] && return 0
	local apt_dir="$KCFI_LAB_HOME/apt-arm64"
	local log
	log=$(new_log apt-arm64)
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs"
	: >"$apt_dir/status"
	local -a opts=(
		-o "Dir::State=$apt_dir" -o "Dir::State::Lists=$apt_dir/lists"
		-o "Dir::State::status=$apt_dir/status" -o "Dir::Cache=$apt_dir/cache"
		-o APT::Architecture=arm64 -o APT::Architectures::=arm64
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root
	)
	info "fetching busybox-static for arm64 (private apt state in $apt_dir)"
	if ! apt-get "${opts[@]}" update >"$log" 2>&1; then
		die "apt-get update for arm64 failed (log: $log)"
	fi
	if ! (cd "$apt_dir/debs" && apt-get "${opts[@]}" download busybox-static:arm64) >>"$log" 2>&1; then
		die "could not download busybox-static:arm64 (log: $log)"
	fi
	local deb
	deb=$(find "$apt_dir/debs" -name 'busybox-static_*_arm64.deb' | sort | tail -n 1)
	[ -n "$deb" ] || die "busybox-static arm64 .deb missing after download (log: $log)"
	rm -rf "$dest.tmp"
	mkdir -p "$dest.tmp"
	dpkg-deb -x "$deb" "$dest.tmp"
	[ -x "$dest.tmp/bin/busybox" ] || die "$deb holds no bin/busybox"
	rm -rf "$dest"
	mv "$dest.tmp" "$dest"
}

cmd_setup() {
	ensure_packages
	fetch_busybox_arm64
	info "setup complete"
}
