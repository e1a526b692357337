#!/usr/bin/env bash
# Classroom packs: the built kernels, initramfs images and gdb scripts in
# one checked archive, so that learners boot without building. Sourced by
# run.sh.

PACK_FORMAT="kcfi-lab-pack 1"
PACK_MANIFEST="$KCFI_LAB_HOME/pack.manifest"

bundle_sha() {
	sha256sum <"$KCFI_LAB_BUNDLE" | cut -d' ' -f1
}

# pack_files ARCH: what a learner needs of ARCH's build, relative to
# KCFI_LAB_HOME (gdb's scripts are symlinks into the tree: tar -h follows).
pack_files() {
	local arch=$1 out rel image
	out=$(build_dir "$arch")
	image=$(kernel_image "$arch")
	rel="build/$arch"
	printf '%s\n' "$rel/vmlinux" "$rel/.config" "$rel/System.map" "$rel/vmlinux-gdb.py" \
		"$rel${image#"$out"}" \
		"initramfs/$arch.cpio.gz"
	(cd "$KCFI_LAB_HOME" && find "$rel/scripts/gdb" -name '*.py' && find "$rel" -name '*.ko') | sort
}

# write_manifest ARCHES DEBS
write_manifest() {
	local arches=$1 debs=$2
	echo "format: $PACK_FORMAT"
	echo "arches: $arches"
	echo "created: $(date -u +%FT%TZ)"
	echo "bundle-sha256: $(bundle_sha)"
	echo "distro: $DISTRO_PACKAGE $(distro_version)"
	echo "lab-repo: $(git -C "$KCFI_LAB_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	if [ -n "$debs" ]; then
		echo "debs: $(dpkg --print-architecture), $(find "$DEBS_DIR" -name '*.deb' | wc -l) packages for $(paste -sd' ' "$DEBS_DIR/learner-packages")"
	fi
	echo "kernel-branch:"
	git -C "$LAB_WORKTREE" log --format='  %h %s' distro..HEAD
}

# cmd_pack OUTPUT DEBS ARCH...: DEBS not empty (--debs) adds the
# learner's Debian packages.
cmd_pack() {
	local output=$1 debs=$2 arch stage
	shift 2
	[ -e "$LAB_WORKTREE/Makefile" ] || die "nothing to pack: build first (./run.sh build $*)"
	for arch in "$@"; do
		kernel_is_built "$arch" || die "the $arch kernel is not built from the current tree; run: ./run.sh build $arch"
		[ -f "$(initramfs_image "$arch")" ] || die "no $arch initramfs; run: ./run.sh build $arch"
	done
	stage=$(mktemp -d)
	# The stage and a half-written pack go however pack ends.
	# shellcheck disable=SC2064 # both are fixed now
	trap "rm -rf '$stage' '$output.tmp'" EXIT
	local -a files=()
	for arch in "$@"; do
		mapfile -t -O "${#files[@]}" files < <(pack_files "$arch")
	done
	if [ -n "$debs" ]; then
		debs_fetch "$@"
		mapfile -t -O "${#files[@]}" files < <(cd "$KCFI_LAB_HOME" && find debs -type f | LC_ALL=C sort)
	fi
	write_manifest "$*" "$debs" >"$stage/MANIFEST"
	(cd "$KCFI_LAB_HOME" && sha256sum "${files[@]}") >"$stage/SHA256SUMS"
	(cd "$stage" && sha256sum MANIFEST) >>"$stage/SHA256SUMS"
	info "packing $* into $output"
	tar -czhf "$output.tmp" -C "$stage" MANIFEST SHA256SUMS -C "$KCFI_LAB_HOME" "${files[@]}"
	mv "$output.tmp" "$output"
	rm -rf "$stage"
	trap - EXIT
	info "wrote $output ($(du -h "$output" | cut -f1))"
}

# cmd_unpack FILE: verify a pack and install it into KCFI_LAB_HOME.
cmd_unpack() {
	local file=$1 tmp want have
	[ -f "$file" ] || die "no such pack: $file"
	tmp=$(mktemp -d "$KCFI_LAB_HOME/unpack.XXXXXX")
	# shellcheck disable=SC2064 # tmp is fixed now
	trap "rm -rf '$tmp'" EXIT
	tar -xzf "$file" -C "$tmp" 2>/dev/null || die "$file is not a KCFI Lab pack (tar could not read it)"
	grep -qx "format: $PACK_FORMAT" "$tmp/MANIFEST" 2>/dev/null || die "$file is not a KCFI Lab pack (no $PACK_FORMAT manifest)"
	# One pass over the files (a pack with --debs is 200 MB).
	local bad sums rc=0
	sums=$(cd "$tmp" && sha256sum -c --quiet SHA256SUMS 2>&1) || rc=$?
	if [ "$rc" != 0 ]; then
		bad=$(printf '%s\n' "$sums" | sed -n 's/: FAILED.*//p' | sed -n 1p)
		die "$file is damaged: checksum mismatch${bad:+ in $bad}; copy it again"
	fi
	want=$(sed -n 's/^bundle-sha256: //p' "$tmp/MANIFEST")
	have=$(bundle_sha)
	[ "$want" = "$have" ] ||
		die "$file was built from another kernel branch (bundle ${want:0:12}, this repository has ${have:0:12}); use the pack made for this version of the lab"
	local debs host_arch
	debs=$(sed -n 's/^debs: //p' "$tmp/MANIFEST")
	if [ -n "$debs" ]; then
		host_arch=$(dpkg --print-architecture 2>/dev/null || echo unknown)
		[ "${debs%%,*}" = "$host_arch" ] ||
			die "$file carries packages for ${debs%%,*}, this machine is $host_arch; use a pack made on a $host_arch machine"
		rm -rf "$DEBS_DIR"
	fi
	local f
	while read -r _ f; do
		[ "$f" = MANIFEST ] && continue
		mkdir -p "$KCFI_LAB_HOME/$(dirname "$f")"
		mv -f "$tmp/$f" "$KCFI_LAB_HOME/$f"
	done <"$tmp/SHA256SUMS"
	mv -f "$tmp/MANIFEST" "$PACK_MANIFEST"
	info "installed the pack into $KCFI_LAB_HOME: $(sed -n 's/^arches: //p' "$PACK_MANIFEST")"
	[ -z "$debs" ] || debs_install
}

# from_pack ARCH: true when ARCH's kernel comes from an unpacked pack (no
# worktree to build from).
from_pack() {
	[ -f "$PACK_MANIFEST" ] && [ ! -e "$LAB_WORKTREE/Makefile" ] &&
		[ -f "$(kernel_image "$1")" ] && [ -f "$(initramfs_image "$1")" ]
}
