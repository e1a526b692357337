#!/usr/bin/env bash
# Classroom packs: the built kernels, initramfs images and gdb scripts in
# one checked archive, so that learners boot without building, and the
# kernel sources the exercises read and an external module build needs,
# so that they do every exercise without importing the kernel. Sourced
# by run.sh.

PACK_FORMAT="kcfi-lab-pack 2"
# PACK_MANIFEST, the installed pack's manifest, is per kernel: kernel_paths.

bundle_sha() {
	sha256sum <"$KCFI_LAB_BUNDLE" | cut -d' ' -f1
}

# pack_files ARCH: what a learner needs of ARCH's build, relative to
# KCFI_LAB_HOME (gdb's scripts are symlinks into the tree: tar -h follows):
# the kernel, its gdb scripts and modules, and what an external module
# build reads of the build tree (as Debian's linux-headers packages
# carry it: generated headers, host programs, Module.symvers).
pack_files() {
	local arch=$1 out rel image karch
	out=$(build_dir "$arch")
	image=$(kernel_image "$arch")
	karch=$(kbuild_arch "$arch")
	rel="build/$arch$LAB_SUFFIX"
	printf '%s\n' "$rel/vmlinux" "$rel/.config" "$rel/System.map" "$rel/vmlinux-gdb.py" \
		"$rel${image#"$out"}" "$rel/Module.symvers" \
		"initramfs/$arch$LAB_SUFFIX.cpio.gz"
	(
		cd "$KCFI_LAB_HOME" || exit
		find "$rel/scripts/gdb" -name '*.py'
		find "$rel" -name '*.ko'
		find "$rel/include" "$rel/arch/$karch/include" "$rel/scripts" -type f ! -name '*.cmd'
		find "$rel/tools/objtool" -maxdepth 1 -type f -name objtool 2>/dev/null || true
	) | LC_ALL=C sort -u
}

# pack_source_files ARCH...: the worktree files a pack carries, relative
# to KCFI_LAB_HOME: what an external module build reads of the source
# tree (as Debian's linux-headers packages carry it), the files the lab's
# commits touch, and the sources the exercises read
# (exercises/pack-sources).
pack_source_files() {
	local arch karch
	(
		cd "$LAB_WORKTREE" || exit
		find . -maxdepth 1 -name 'Makefile*'
		find include scripts \( -type f -o -type l -xtype f \)
		git diff --name-only --diff-filter=d "$LAB_DISTRO..HEAD"
		for arch in "$@"; do
			karch=$(kbuild_arch "$arch")
			find "arch/$karch" -maxdepth 1 -name 'Makefile*'
			find "arch/$karch" \( -name Kbuild.platforms -o -name Platform \
				-o -path '*/include/*' -o -path '*/scripts/*' \) \( -type f -o -type l -xtype f \)
			sed -e '/^#/d' -e '/^$/d' -e "s/@kbuild_arch@/$karch/g" "$KCFI_LAB_ROOT/exercises/pack-sources" |
				while read -r path; do find "$path" -type f; done
		done
	) | sed -e 's|^\./||' -e "s|^|worktree$LAB_SUFFIX/|" | LC_ALL=C sort -u
}

# write_manifest ARCHES DEBS
write_manifest() {
	local arches=$1 debs=$2
	echo "format: $PACK_FORMAT"
	echo "kernel: $LAB_KERNEL"
	echo "arches: $arches"
	echo "created: $(date -u +%FT%TZ)"
	echo "bundle-sha256: $(bundle_sha)"
	echo "host: $LAB_HOST"
	echo "distro: $DISTRO_PACKAGE $(distro_version)"
	echo "lab-repo: $(git -C "$KCFI_LAB_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	if [ -n "$debs" ]; then
		echo "debs: $(dpkg --print-architecture), $(find "$DEBS_DIR" -name '*.deb' | wc -l) packages for $(paste -sd' ' "$DEBS_DIR/learner-packages")"
	fi
	echo "kernel-branch:"
	git -C "$LAB_WORKTREE" log --format='  %h %s' "$LAB_DISTRO..HEAD"
}

# cmd_pack OUTPUT DEBS ARCH...: DEBS not empty (--debs) adds the
# learner's Debian packages.
cmd_pack() {
	local output=$1 debs=$2 arch stage
	shift 2
	if [ ! -d "$LAB_GIT" ] || [ ! -e "$LAB_WORKTREE/Makefile" ]; then
		die "nothing to pack: build first (./run.sh build $*$LAB_KOPT)"
	fi
	for arch in "$@"; do
		kernel_is_built "$arch" || die "the $arch kernel is not built from the current tree; run: ./run.sh build $arch$LAB_KOPT"
		[ -f "$(initramfs_image "$arch")" ] || die "no $arch initramfs; run: ./run.sh build $arch$LAB_KOPT"
	done
	stage=$(mktemp -d)
	# The stage and a half-written pack go however pack ends. The paths
	# are read when the trap runs, never parsed as code.
	PACK_TRASH=("$stage" "$output.tmp" "$output.tmp.sig")
	trap 'rm -rf "${PACK_TRASH[@]}"' EXIT
	local -a files=()
	for arch in "$@"; do
		mapfile -t -O "${#files[@]}" files < <(pack_files "$arch")
	done
	mapfile -t -O "${#files[@]}" files < <(pack_source_files "$@")
	# The lab's tool, built: the exercises' checkers and the gdb commands
	# use it, and a learner's machine may have no C compiler.
	build_tool || die "building the kcfi host tool failed: $(tail -n 3 "$LAB_TOOL_LOG")"
	files+=("$LAB_TOOL_REL/kcfi" "$LAB_TOOL_REL/sources.sha256")
	if [ -n "$debs" ]; then
		debs_fetch "$@"
		mapfile -t -O "${#files[@]}" files < <(cd "$KCFI_LAB_HOME" && find debs -type f | LC_ALL=C sort)
	fi
	write_manifest "$*" "$debs" >"$stage/MANIFEST"
	(cd "$KCFI_LAB_HOME" && sha256sum "${files[@]}") >"$stage/SHA256SUMS"
	(cd "$stage" && sha256sum MANIFEST) >>"$stage/SHA256SUMS"
	info "packing $* into $output"
	tar -czh --hard-dereference -f "$output.tmp" -C "$stage" MANIFEST SHA256SUMS -C "$KCFI_LAB_HOME" "${files[@]}"
	pack_sign "$output.tmp"
	mv "$output.tmp.sig" "$output.sig"
	mv "$output.tmp" "$output"
	rm -rf "$stage"
	trap - EXIT
	info "wrote $output ($(du -h "$output" | cut -f1)) and its signature $output.sig"
	info "signed with the instructor's key $(key_fingerprint "$(pack_key).pub") ($(pack_key).pub)"
	info "learners: ./run.sh unpack ${output##*/} --key $(key_fingerprint "$(pack_key).pub")"
}

# cmd_unpack FILE KEY: verify FILE's signature by KEY (a public key file
# or a fingerprint), then what it holds, then install it into
# KCFI_LAB_HOME. FILE is copied once into a private directory of the
# home and only the copy is read from then on (the file named could be
# replaced after its check); nothing of the pack is read before the
# signature holds, and nothing is installed before every check passed.
cmd_unpack() {
	local file=$1 key=$2 tmp copy want have
	[ -f "$file" ] || die "no such pack: $file"
	[ -n "$key" ] || die "unpack needs the instructor's key: --key FILE.pub or --key SHA256:... (pack prints it)"
	[ -f "$file.sig" ] || die "$file is not signed: no $file.sig beside it; copy the pack's .sig file with it"
	tmp=$(mktemp -d "$KCFI_LAB_HOME/unpack.XXXXXX")
	UNPACK_TRASH=$tmp
	trap 'rm -rf "$UNPACK_TRASH"' EXIT
	copy="$tmp/pack.tar.gz"
	if ! cp -- "$file" "$copy" || ! cp -- "$file.sig" "$copy.sig"; then
		die "cannot copy $file into $KCFI_LAB_HOME"
	fi
	pack_verify "$copy" "$key" "$file"
	pack_check_members "$copy" "$file"
	mkdir "$tmp/tree"
	tar -xzf "$copy" -C "$tmp/tree" --no-same-owner --no-same-permissions 2>/dev/null ||
		die "$file is not a KCFI Lab pack (tar could not read it)"
	rm -f "$copy" "$copy.sig"
	tmp="$tmp/tree"
	grep -qx "format: $PACK_FORMAT" "$tmp/MANIFEST" 2>/dev/null || die "$file is not a KCFI Lab pack (no $PACK_FORMAT manifest)"
	# One pass over the files (a pack with --debs is 200 MB).
	local bad sums rc=0
	sums=$(cd "$tmp" && sha256sum -c --quiet SHA256SUMS 2>&1) || rc=$?
	if [ "$rc" != 0 ]; then
		bad=$(printf '%s\n' "$sums" | sed -n 's/: FAILED.*//p' | sed -n 1p)
		die "$file is damaged: checksum mismatch${bad:+ in $bad}, although its signature holds (it was damaged before it was signed): ask its maker for a new pack"
	fi
	# The pack's kernel: a pack made before there were two has none, and
	# is the default kernel's.
	use_kernel "$(sed -n 's/^kernel: //p' "$tmp/MANIFEST" | grep . || echo "$LAB_DEFAULT_KERNEL")"
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
		want=$(sed -n 's/^host: //p' "$tmp/MANIFEST")
		[ "$want" = "$LAB_HOST" ] ||
			die "$file carries packages for ${want:-another host}, this machine is $LAB_HOST; use a pack made on a $LAB_HOST machine"
	fi
	pack_check_home "$tmp"
	[ -z "$debs" ] || rm -rf "$DEBS_DIR"
	rm -f "$tmp/SHA256SUMS"
	mv -f "$tmp/MANIFEST" "$PACK_MANIFEST.new"
	# A home with the kernel's repository keeps its own worktree.
	if [ -d "$LAB_GIT" ]; then
		rm -rf "$tmp/worktree$LAB_SUFFIX"
	elif [ -d "$tmp/worktree$LAB_SUFFIX" ]; then
		rm -rf "$LAB_WORKTREE"
	fi
	# Hard links: the same file system, one process for thousands of
	# files; copies where the file system has no hard links. Entry by
	# entry, so that the home keeps its own mode.
	local -a entries
	mapfile -t entries < <(find "$tmp" -mindepth 1 -maxdepth 1)
	cp -al --remove-destination "${entries[@]}" "$KCFI_LAB_HOME/" 2>/dev/null ||
		cp -a --remove-destination "${entries[@]}" "$KCFI_LAB_HOME/" ||
		die "installing the pack into $KCFI_LAB_HOME failed; run unpack again"
	[ -d "$LAB_GIT" ] || [ ! -d "$tmp/worktree$LAB_SUFFIX" ] || pack_worktree_git
	mv -f "$PACK_MANIFEST.new" "$PACK_MANIFEST"
	info "installed the pack into $KCFI_LAB_HOME: Linux $LAB_KERNEL, $(sed -n 's/^arches: //p' "$PACK_MANIFEST")"
	local -a arches
	read -r -a arches <<<"$(sed -n 's/^arches: //p' "$PACK_MANIFEST")"
	[ -z "$debs" ] || debs_install "${arches[@]}"
	pack_toolchain_note "${arches[@]}"
}

# pack_toolchain_note ARCH...: a pack carries no toolchain and no QEMU.
# Where the kernel's toolchain, or the QEMU of one of ARCH..., comes into
# the lab's home rather than from the host's packages, say how to get it
# when it is not there: the exercises build modules and read the images
# with the toolchain, and a boot needs QEMU.
pack_toolchain_note() {
	local suites arch
	for arch in "$@"; do
		[ -z "$(qemu_suites "$arch")" ] || qemu_ready "$arch" || info "$(qemu_missing "$arch")"
	done
	suites=$(host_kernel_get toolchain_suites)
	[ -n "$suites" ] || return 0
	toolchain_ready && return 0
	info "Linux $LAB_KERNEL's toolchain (clang$KCFI_LAB_LLVM) is not in $KCFI_LAB_HOME yet; the exercises need it: ./run.sh setup$LAB_KOPT fetches it from $suites (verified by apt, into the lab's home)"
}

# pack_worktree_git: the lab's kernel commits in a pack's worktree, from
# the repository's bundle (whose checksum unpack compared with the pack's):
# the kernel's branch on its sparse root, named $LAB_DISTRO. The pack's files stay
# as they are; git tracks only the files the commits touch.
pack_worktree_git() {
	local wt="$LAB_WORKTREE" root
	rm -rf "$wt/.git"
	git init -q "$wt"
	git -C "$wt" fetch -q --no-tags "$KCFI_LAB_BUNDLE" "refs/heads/$LAB_BRANCH:refs/heads/$LAB_BRANCH" ||
		die "cannot read $LAB_BRANCH from $KCFI_LAB_BUNDLE"
	git -C "$wt" symbolic-ref HEAD "refs/heads/$LAB_BRANCH"
	root=$(git -C "$wt" rev-list --max-parents=0 "$LAB_BRANCH")
	git -C "$wt" branch -f "$LAB_DISTRO" "$root"
	git -C "$wt" reset -q
	printf '%s\n' '# A pack carries part of the kernel tree; git tracks what the lab changed.' '*' \
		>>"$wt/.git/info/exclude"
}

# pack_home: the kernels and sources here come from a pack; there is no
# kernel repository to build in.
pack_home() {
	[ -f "$PACK_MANIFEST" ] && [ ! -d "$LAB_GIT" ]
}

# from_pack ARCH: true when ARCH's kernel comes from an unpacked pack.
from_pack() {
	pack_home && [ -f "$(kernel_image "$1")" ] && [ -f "$(initramfs_image "$1")" ]
}
