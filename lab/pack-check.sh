#!/usr/bin/env bash
# What a pack may hold and where it may write, checked before unpack
# writes anything into the lab's home: regular files and directories in
# the pack layout, each file listed in the pack's checksums, no more than
# the home's file system has room for; and no directory of the home on
# the way that is a symbolic link. Sourced by run.sh.

# PACK_LAYOUT: the paths a pack may hold (an extended regular expression
# over the member's name, "./" taken off): its manifest and checksums, a
# build directory per arch (and kernel), initramfs images, the kernel's
# worktree and the Debian packages. PACK_TOOL_LAYOUT: what it may hold
# under build/tool: the host tool of one checksum of its sources.
PACK_LAYOUT='^(MANIFEST|SHA256SUMS|build(/[a-z0-9_]+(-[0-9.]+)?(/.*)?)?|initramfs(/[a-z0-9_]+(-[0-9.]+)?\.cpio\.gz)?|worktree(-[0-9.]+)?(/.*)?|debs(/.*)?)/?$'
PACK_TOOL_LAYOUT='^build/tool(/[0-9a-f]{16}(/(kcfi|sources\.sha256))?)?/?$'

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

# pack_check_members FILE: FILE's members are regular files and
# directories of the pack layout, every file listed in SHA256SUMS, and
# they fit into the home. Reads the (signed) archive; writes nothing.
# One pass of each check over all names: a pack holds 80,000 files.
pack_check_members() {
	local file=$1 list names bad total avail
	list=$(pack_members "$file") || die "$file is not a KCFI Lab pack (tar could not read it)"
	[ -n "$list" ] || die "$file is not a KCFI Lab pack (tar could not read it)"
	bad=$(printf '%s\n' "$list" | awk '$1 != "-" && $1 != "d" { sub(/^[^ ]+ [^ ]+ /, ""); print }' | sed -n 1p)
	[ -z "$bad" ] || die "$file holds $bad, which is not a regular file or a directory: refusing the pack"
	names=$(printf '%s\n' "$list" | cut -d' ' -f3- | sed -e 's|^\./||' -e '/^$/d')
	bad=$(pack_first_bad "$names" "an absolute path" '^/')
	[ -n "$bad" ] || bad=$(pack_first_bad "$names" "a '..' or '.' in its path" '(^|/)\.\.?(/|$)')
	[ -n "$bad" ] || bad=$(pack_first_bad "$names" "characters a pack does not use" '^[A-Za-z0-9._,+@=~/-]*$' -v)
	[ -n "$bad" ] || bad=$(pack_first_bad "$(printf '%s\n' "$names" | grep -Ev '^build/tool(/|$)')" \
		"not in a pack's layout" "$PACK_LAYOUT" -v)
	[ -n "$bad" ] || bad=$(pack_first_bad "$(printf '%s\n' "$names" | grep -E '^build/tool(/|$)')" \
		"not in a pack's layout" "$PACK_TOOL_LAYOUT" -v)
	[ -z "$bad" ] || die "$file holds ${bad%%$'\t'*} (${bad#*$'\t'}): refusing the pack"
	local sums sums_member=""
	if printf '%s\n' "$list" | awk '$1 == "-" { print $3 }' | exact_line SHA256SUMS; then
		sums_member=SHA256SUMS
	elif printf '%s\n' "$list" | awk '$1 == "-" { print $3 }' | exact_line ./SHA256SUMS; then
		sums_member=./SHA256SUMS
	fi
	[ -n "$sums_member" ] || die "$file is not a KCFI Lab pack (no SHA256SUMS)"
	sums=$(tar -xzOf "$file" --occurrence=1 "$sums_member" 2>/dev/null) || die "$file is not a KCFI Lab pack (no SHA256SUMS)"
	bad=$(comm -23 <(printf '%s\n' "$list" | awk '$1 == "-"' | cut -d' ' -f3- | sed 's|^\./||' | grep -vx SHA256SUMS | LC_ALL=C sort) \
		<(printf '%s\n' "$sums" | sed -n 's/^[0-9a-f]\{64\}  //p' | LC_ALL=C sort) | sed -n 1p)
	[ -z "$bad" ] || die "$file holds $bad, which its SHA256SUMS does not list: refusing the pack"
	# The unpacked copy, then the home's hard links (or copies).
	total=$(printf '%s\n' "$list" | awk '{ n += $2 } END { printf "%d\n", n }')
	avail=$(df -P -B1 "$KCFI_LAB_HOME" | awk 'NR == 2 { print $4 }')
	[ "$total" -lt "${avail:-0}" ] ||
		die "$file unpacks to $(((total + 1048575) / 1048576)) MiB, $KCFI_LAB_HOME has $((${avail:-0} / 1048576)) MiB free: make room first"
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
