#!/usr/bin/env bash
# The run.sh subcommands that are not a boot: status, clean, bundle.
# Sourced by run.sh.

package_version() {
	dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "not installed"
}

# cmd_status: the home, then every kernel's state (the --kernel one
# alone when one was named).
cmd_status() {
	local k
	echo "KCFI_LAB_HOME:  $KCFI_LAB_HOME"
	echo "repository:     $KCFI_LAB_ROOT"
	echo "bundle:         $KCFI_LAB_BUNDLE"
	for k in $(lab_kernels); do
		[ -z "${KCFI_LAB_KERNEL:-}" ] || [ "$k" = "$KCFI_LAB_KERNEL" ] || continue
		(
			use_kernel "$k"
			echo
			echo "Linux $k$(kernel_is_default && echo " (the default)" || echo " (--kernel $k)")"
			kernel_status
		)
	done
}

# clang_version: the lab kernel's clang package version, or where the
# toolchain the host file names lives.
clang_version() {
	if [ -n "$LAB_TOOLCHAIN_BIN" ]; then
		echo "in ${LAB_TOOLCHAIN_BIN%/bin}"
	else
		package_version "clang$KCFI_LAB_LLVM"
	fi
}

# qemu_version ARCH: the version of ARCH's QEMU for the lab kernel: the
# host's package's, or, for one from other suites, where it lives.
qemu_version() {
	if [ -z "$(qemu_suites "$1")" ]; then
		package_version "$(arch_get "$1" qemu_package)"
	elif qemu_ready "$1"; then
		echo "$("$(qemu_binary "$1")" --version | sed -n '1s/^QEMU emulator version \([^ ]*\).*/\1/p') in $(qemu_home "$1")"
	else
		echo "not fetched"
	fi
}

# kernel_status: the lab kernel's packages, import, worktree, pack and builds.
kernel_status() {
	local arch src qemu
	src=$(kernel_get source_package)
	qemu=$(qemu_version "$(kernel_get default_arch)")
	local version
	if [ -n "$LAB_SOURCE_ROOT" ]; then
		version="$(distro_version) (in the lab's home)"
	else
		version=$(package_version "$src")
	fi
	echo "packages:       $src $version, clang$KCFI_LAB_LLVM $(clang_version), qemu $qemu"
	if [ -d "$LAB_GIT" ] && git --git-dir="$LAB_GIT" rev-parse -q --verify "$LAB_DISTRO" >/dev/null 2>&1; then
		echo "distro import:  $(git --git-dir="$LAB_GIT" log -1 --format='%h %s' "$LAB_DISTRO")"
	elif pack_home; then
		echo "distro import:  none (the pack carries the kernels and the sources the exercises read)"
	else
		echo "distro import:  none (run ./run.sh setup$LAB_KOPT, then ./run.sh build$LAB_KOPT)"
	fi
	if [ -e "$LAB_WORKTREE/Makefile" ]; then
		echo "worktree:       $LAB_WORKTREE"
		echo "branch head:    $(git -C "$LAB_WORKTREE" log -1 --format='%h %s' 2>/dev/null) ($(git -C "$LAB_WORKTREE" rev-list --count "$LAB_DISTRO..HEAD" 2>/dev/null) lab commits)"
	else
		echo "worktree:       none"
	fi
	if [ -f "$PACK_MANIFEST" ]; then
		echo "pack:           installed $(sed -n 's/^created: //p' "$PACK_MANIFEST"), bundle $(sed -n 's/^bundle-sha256: //p' "$PACK_MANIFEST" | cut -c1-12)"
		sed -n 's/^  /                /p' "$PACK_MANIFEST"
		if pack_home; then
			echo "                (no kernel repository: ./run.sh boots the kernels from the pack)"
		fi
		local debs
		debs=$(sed -n 's/^debs: //p' "$PACK_MANIFEST")
		[ -z "$debs" ] || echo "                Debian packages: $debs ($DEBS_DIR)"
	fi
	for arch in $(lab_arches); do
		if [ -f "$(kernel_image "$arch")" ]; then
			echo "$arch:$(printf '%*s' $((15 - ${#arch})) '')built $(date -r "$(kernel_image "$arch")" '+%F %T') $(kernel_image "$arch")"
		else
			echo "$arch:$(printf '%*s' $((15 - ${#arch})) '')not built"
		fi
	done
}

# cmd_clean ALL: builds, initramfs images and logs; everything when ALL
# is not empty (--all).
cmd_clean() {
	lock_every_kernel
	if [ -n "${1:-}" ]; then
		info "removing $KCFI_LAB_HOME"
		# Everything but the locks first, while they are held; then the locks.
		find "$KCFI_LAB_HOME" -mindepth 1 -maxdepth 1 ! -name '.lock*' -exec rm -rf {} +
		rm -f "$KCFI_LAB_HOME"/.lock*
		unlock_home
		rmdir "$KCFI_LAB_HOME" 2>/dev/null || true
		return
	fi
	info "removing build outputs, initramfs images and logs (kept: the kernel git repo and worktree; --all removes everything)"
	rm -rf "$KCFI_LAB_HOME/build" "$KCFI_LAB_HOME/initramfs" "$LAB_LOGS" "$KCFI_LAB_HOME/run"
}

cmd_bundle() {
	lock_kernel
	lock_home
	[ -d "$LAB_GIT" ] || die "no kernel repository in $KCFI_LAB_HOME; run ./run.sh build$LAB_KOPT first"
	recut_bundle
}

# kcfi_tool: the path of the host tool, built when missing or stale.
kcfi_tool() {
	if ! build_tool; then
		cat "$LAB_TOOL_LOG" >&2
		die "building the kcfi host tool failed (see the lines above; make -C lab/kcfi)"
	fi
	echo "$LAB_TOOL_BIN"
}
