#!/usr/bin/env bash
# The default kernel's builds, one per arch; later files reuse them.
# The other kernels build in the side lane (tests/full-1-kernels.sh),
# which starts after this file, beside the default kernel's guest
# tests: a guest keeps one core busy, a build the other.

test_build_both_arches() {
	lab build x86_64 arm64
	local arch
	for arch in x86_64 arm64; do
		[ -f "$(kernel_image "$arch")" ] || fail "no $arch kernel image"
		[ -f "$(initramfs_image "$arch")" ] || fail "no $arch initramfs"
		[ -e "$(build_dir "$arch")/vmlinux-gdb.py" ] || fail "no vmlinux-gdb.py for $arch"
	done
}

test_worktree_holds_the_bundle_commits() {
	local repo="$TEST_TMP/bundle.git" want got
	git init -q --bare "$repo"
	git --git-dir="$repo" fetch -q "$KCFI_LAB_ROOT/kernel-branch.bundle" "refs/heads/kcfi-lab:refs/heads/b"
	want=$(git --git-dir="$repo" log --format=%s "$(git --git-dir="$repo" rev-list --max-parents=0 b)..b")
	got=$(git -C "$LAB_WORKTREE" log --format=%s distro..kcfi-lab)
	assert_eq "$got" "$want" "lab commits in the worktree"
	assert_eq "$(git -C "$LAB_WORKTREE" rev-parse --abbrev-ref HEAD)" kcfi-lab "worktree branch"
	git --git-dir="$LAB_GIT" log -1 --format=%B distro | has_match "^Distro-Version: $(dpkg-query -W -f='${Version}' linux-source-6.1)$" ||
		fail "the import does not record the package version"
}

test_config_has_every_requested_option() {
	local arch
	for arch in x86_64 arm64; do
		config_has_every_requested_option "$arch"
	done
}

# config_has_every_requested_option ARCH: the lab kernel's .config for ARCH
# has what its fragments ask for (Kconfig drops what it cannot have
# without a word), and what the lab relies on. Asserts.
config_has_every_requested_option() {
	local arch=$1 frag opt cfi
	cfi=$(kernel_get cfi_option)
	for frag in $(config_fragments "$arch"); do
		while IFS= read -r opt; do
			grep -qx "$opt" "$(build_dir "$arch")/.config" || fail "$arch: $opt missing from .config"
		done < <(grep -E '^CONFIG_' "$frag")
		while IFS= read -r opt; do
			! grep -q "^$opt=" "$(build_dir "$arch")/.config" || fail "$arch: $opt is set but was asked unset"
		done < <(sed -nE 's/^# (CONFIG_[A-Z0-9_]+) is not set$/\1/p' "$frag")
	done
	# The options the lab depends on, whatever the fragments say: the
	# kernel's own name for kCFI's among them.
	for opt in "$cfi" LKDTM KALLSYMS_ALL DEBUG_INFO_DWARF5 GDB_SCRIPTS MODULES BLK_DEV_INITRD DEBUG_FS; do
		grep -qx "CONFIG_$opt=y" "$(build_dir "$arch")/.config" || fail "$arch: CONFIG_$opt is not y"
	done
	! grep -qx 'CONFIG_RANDOMIZE_BASE=y' "$(build_dir "$arch")/.config" || fail "$arch: KASLR is on"
}

test_rerun_without_changes_does_not_rebuild() {
	local before after
	before=$(stat -c %Y "$(vmlinux_of x86_64)")
	expect_exit 0 lab build x86_64
	[[ "$OUT" == *"x86_64 kernel is up to date"* ]] || fail "no 'up to date': $OUT"
	after=$(stat -c %Y "$(vmlinux_of x86_64)")
	assert_eq "$after" "$before" "vmlinux mtime"
}

test_initramfs_is_reproducible() {
	local img sum
	img=$(initramfs_image x86_64)
	sum=$(sha256sum <"$img")
	rm -f "$img" "$img.stamp"
	lab build x86_64
	assert_eq "$(sha256sum <"$img")" "$sum" "initramfs checksum after a rebuild"
}

# tree_listing_of_tar TARBALL: "MODE SIZE PATH" of each file of the
# tarball as tar lists it (its top directory off): 644 or 755 as git
# keeps modes, a link's size the length of its target.
tree_listing_of_tar() {
	tar -tvf "$1" --quoting-style=literal | awk '
		{ type = substr($1, 1, 1); perm = $1; size = $3
		  sub(/^[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, "")
		  sub(/^[^\/]*\//, "") }
		$0 == "" || type == "d" { next }
		type == "l" { n = index($0, " -> "); print "120000", length(substr($0, n + 4)), substr($0, 1, n - 1); next }
		type == "-" { print (perm ~ /x/ ? "100755" : "100644"), size, $0 }' | LC_ALL=C sort
}

# The import, run again into a repository of its own, is the tarball:
# every path, mode and size as tar itself lists them, and the very
# commit the suite's home holds for the same package version.
test_import_is_the_tarball() {
	local home="$TEST_TMP/import home" commit
	[ -f "$DISTRO_TARBALL" ] || skip "no $DISTRO_TARBALL (./run.sh setup)"
	# shellcheck disable=SC2016 # expanded by that bash
	KCFI_LAB_PROGRESS_SECONDS=1 KCFI_LAB_HOME="$home" bash -c '. "$1/lab/common.sh"; . "$1/lab/kernel-branch.sh"; lock_home; import_distro' \
		_ "$KCFI_LAB_ROOT" >"$TEST_TMP/import.out" 2>&1 || fail "the import failed: $(tail -n 3 "$TEST_TMP/import.out")"
	cat "$TEST_TMP/import.out"
	# Progress, as a log shows it: plain lines, MB growing to the total.
	local mb
	mb=$(sed -n 's/^kcfi-lab: import: \([0-9]*\) of [0-9]* MB$/\1/p' "$TEST_TMP/import.out" | paste -sd' ')
	[ "$(wc -w <<<"$mb")" -ge 2 ] || fail "fewer than two progress lines: $(cat "$TEST_TMP/import.out")"
	[ "$(tr ' ' '\n' <<<"$mb" | sort -n | paste -sd' ')" = "$mb" ] || fail "progress does not grow: $mb"
	commit=$(git --git-dir="$home/linux.git" rev-parse "refs/tags/$(distro_tag)")
	assert_eq "$(git --git-dir="$home/linux.git" ls-tree -r -l "$commit" |
		awk -F '\t' '{ split($1, f, " "); print f[1], f[4], $2 }' | LC_ALL=C sort | sha256sum)" \
		"$(tree_listing_of_tar "$DISTRO_TARBALL" | sha256sum)" "the imported tree against tar's listing"
	assert_eq "$commit" "$(git --git-dir="$LAB_GIT" rev-parse "refs/tags/$(distro_tag)")" "the commit of the suite's own import"
	assert_eq "$(git --git-dir="$home/linux.git" count-objects -v | sed -n 's/^count: //p')" 0 "loose objects after the import"
}
