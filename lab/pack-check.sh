#!/usr/bin/env bash
# What a pack may hold and where it may write, checked before unpack
# installs anything into the lab's home: regular files of the pack
# layout of its kernel and arches, each once and each listed in the
# pack's checksums, no more than the home's file system has room for;
# and no directory of the home on the way that is a symbolic link.
# Sourced by run.sh.

# pack_layout SUFFIX ARCH...: the paths a pack of one kernel (its state
# suffix SUFFIX: "" or "-VERSION") and ARCH... may hold, as an extended
# regular expression over the member's name: its manifest and checksums,
# the arches' build directories and initramfs images, the kernel's
# worktree, the Debian packages, and the host tool of one checksum of
# its sources. Files only: a pack has no directory members.
pack_layout() {
	local suffix=${1//./\\.} arches
	shift
	arches=$(printf '%s\n' "$@" | paste -sd'|')
	printf '%s\n' "^(MANIFEST|SHA256SUMS|build/($arches)$suffix/.+|initramfs/($arches)$suffix\\.cpio\\.gz|worktree$suffix/.+|debs/(learner-packages|closure|repo/[A-Za-z0-9._-]+/(pool|dists)/.+)|build/tool/[0-9a-f]{16}/(kcfi|sources\\.sha256))\$"
}

# pack_members FILE: "TYPE SIZE NAME" for each member of the tar.gz FILE,
# TYPE tar's first mode letter ("-" a file, "d" a directory, "l" a link,
# "h" a hard link...). tar escapes control characters in names.
pack_members() {
	tar -tvzf "$1" --numeric-owner --quoting-style=escape 2>/dev/null |
		awk '{ type = substr($1, 1, 1); size = $3; sub(/^[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, ""); print type, size, $0 }'
}

# pack_first_bad NAMES WHY ERE [-v]: the first of NAMES (one a line,
# "./" taken off) that matches ERE (with -v: that does not), and WHY.
pack_first_bad() {
	local bad
	bad=$(printf '%s\n' "$1" | sed '/^$/d' | { grep -E ${4:+"$4"} -- "$3" || true; } | sed -n 1p)
	[ -n "$bad" ] || return 0
	printf '%s\t%s\n' "$bad" "$2"
}

# pack_manifest_layout FILE NAME: the layout (pack_layout) of the pack
# FILE's manifest: its kernel and arches, each one the lab knows.
pack_manifest_layout() {
	local file=$1 name=$2 manifest kernel arch suffix=""
	local -a arches=()
	manifest=$(tar -xzOf "$file" --occurrence=1 MANIFEST 2>/dev/null) || die "$name is not a KCFI Lab pack (no MANIFEST)"
	kernel=$(printf '%s\n' "$manifest" | sed -n 's/^kernel: //p' | sed -n 1p)
	lab_kernels | exact_line "$kernel" || die "$name is for a kernel this lab does not have: ${kernel:-none}"
	[ "$kernel" = "$LAB_DEFAULT_KERNEL" ] || suffix="-$kernel"
	for arch in $(printf '%s\n' "$manifest" | sed -n 's/^arches: //p' | sed -n 1p); do
		[ "$(normalize_arch "$arch" 2>/dev/null)" = "$arch" ] || die "$name names an arch this lab does not have: $arch"
		arches+=("$arch")
	done
	[ "${#arches[@]}" -gt 0 ] || die "$name names no arch"
	pack_layout "$suffix" "${arches[@]}"
}

# pack_check_members FILE NAME: the pack FILE (NAME in messages) holds
# regular files only, each once, of its manifest's layout, with plain
# names, and exactly the files its SHA256SUMS lists; they fit into the
# home. Reads the (signed) archive; writes nothing. One pass of each
# check over all names: a pack holds 80,000 files.
pack_check_members() {
	local file=$1 name=$2 list names bad total avail layout
	list=$(pack_members "$file") || die "$name is not a KCFI Lab pack (tar could not read it)"
	[ -n "$list" ] || die "$name is not a KCFI Lab pack (tar could not read it)"
	bad=$(printf '%s\n' "$list" | awk '$1 != "-" { sub(/^[^ ]+ [^ ]+ /, ""); print }' | sed -n 1p)
	[ -z "$bad" ] || die "$name holds $bad, which is not a regular file: refusing the pack"
	names=$(printf '%s\n' "$list" | cut -d' ' -f3- | sed -e 's|^\./||')
	bad=$(printf '%s\n' "$names" | LC_ALL=C sort | uniq -d | sed -n 1p)
	[ -z "$bad" ] || die "$name holds $bad twice: refusing the pack"
	bad=$(pack_first_bad "$names" "an absolute path" '^/')
	[ -n "$bad" ] || bad=$(pack_first_bad "$names" "a '..' or '.' in its path" '(^|/)\.\.?(/|$)')
	[ -n "$bad" ] || bad=$(pack_first_bad "$names" "characters a pack does not use" '^[A-Za-z0-9._,+@=~/-]+$' -v)
	[ -n "$bad" ] || bad=$(pack_first_bad "$names" "a git directory" '(^|/)\.git(/|$)')
	[ -z "$bad" ] || die "$name holds ${bad%%$'\t'*} (${bad#*$'\t'}): refusing the pack"
	layout=$(pack_manifest_layout "$file" "$name")
	bad=$(pack_first_bad "$names" "not in the layout of its manifest's kernel and arches" "$layout" -v)
	[ -z "$bad" ] || die "$name holds ${bad%%$'\t'*} (${bad#*$'\t'}): refusing the pack"
	local sums
	printf '%s\n' "$names" | exact_line SHA256SUMS || die "$name is not a KCFI Lab pack (no SHA256SUMS)"
	sums=$(tar -xzOf "$file" --occurrence=1 SHA256SUMS 2>/dev/null) || die "$name is not a KCFI Lab pack (no SHA256SUMS)"
	bad=$(printf '%s\n' "$sums" | { grep -Ev '^[0-9a-f]{64}  [^ ]' || true; } | sed -n 1p)
	[ -z "$bad" ] || die "$name's SHA256SUMS holds a line that is not a checksum and a name: $bad"
	# The same names both ways: no file unchecked, no check of a file
	# that is not the pack's.
	bad=$(LC_ALL=C comm -3 <(printf '%s\n' "$names" | grep -vx SHA256SUMS | LC_ALL=C sort) \
		<(printf '%s\n' "$sums" | cut -c67- | LC_ALL=C sort) | sed -n 1p)
	case "$bad" in
	"") ;;
	$'\t'*) die "$name's SHA256SUMS lists ${bad#$'\t'}, which the pack does not hold: refusing the pack" ;;
	*) die "$name holds $bad, which its SHA256SUMS does not list: refusing the pack" ;;
	esac
	# The unpacked copy, then the home's hard links (or copies).
	total=$(printf '%s\n' "$list" | awk '{ n += $2 } END { printf "%d\n", n }')
	avail=$(df -P -B1 "$KCFI_LAB_HOME" | awk 'NR == 2 { print $4 }')
	[ "$total" -lt "${avail:-0}" ] ||
		die "$name unpacks to $(((total + 1048575) / 1048576)) MiB, $KCFI_LAB_HOME has $((${avail:-0} / 1048576)) MiB free: make room first"
}

# pack_check_home DIR: none of the paths the unpacked pack in DIR will
# write in the home is reached through a symbolic link (a link to a
# directory elsewhere would take the pack's files there). A file of the
# home that is a link is replaced, never written through.
pack_check_home() {
	local dir rel
	while read -r dir; do
		rel=${dir#"$1"}
		[ ! -L "$KCFI_LAB_HOME$rel" ] ||
			die "$KCFI_LAB_HOME$rel is a symbolic link: unpack writes no pack file through it; remove it first"
	done < <(find "$1" -mindepth 1 -type d)
	local f
	for f in "$PACK_MANIFEST" "$PACK_MANIFEST.new"; do
		[ ! -L "$f" ] || die "$f is a symbolic link: unpack writes no pack file through it; remove it first"
	done
}
