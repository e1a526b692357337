#!/usr/bin/env bash
# Finds arch, kernel and host knowledge outside lab/arch/, lab/kernel/
# and lab/host/: every line of FILE... (comments aside) that names an
# arch or one of its aliases, a kernel's version or source package, a
# host (its file's name or a Debian suite a host file names), an LLVM
# suffix, or a mirror, as the data files spell them. Exercise names
# (04-x86-check) are names, not knowledge, and are left out.
#
#   tests/check-arch-free.sh [--host-only] FILE...
#
# --host-only looks for hosts, LLVM suffixes and mirrors alone: for the
# exercises, the C tool's build and tests, whose subject is an arch or a
# kernel. Prints FILE:LINE: TEXT for each, and exits 1 when it found one.
set -euo pipefail
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "$0")/.." && pwd)

# arch_kernel_words: the arches, their aliases, the kernels and their
# source packages.
arch_kernel_words() {
	local f
	for f in "$ROOT"/lab/arch/*.conf; do
		basename "$f" .conf
		sed -n 's/^aliases=//p' "$f" | tr ' ' '\n'
	done
	for f in "$ROOT"/lab/kernel/*.conf; do
		basename "$f" .conf
		sed -n 's/^source_package=//p' "$f"
	done
}

# host_words: the hosts (debian-12), every suite a host file names
# (bookworm, bookworm-security) and every LLVM suffix (-16).
host_words() {
	local f
	for f in "$ROOT"/lab/host/*.conf; do
		basename "$f" .conf
		sed -n -e 's/^suite=//p' -e 's/^[^=]*_suites=//p' -e 's/^[^=]*[.]llvm=//p' "$f" | tr ' ' '\n'
	done
}

# exercise_names: the exercises' directory names, which may hold an arch.
exercise_names() {
	local d
	for d in "$ROOT"/exercises/[0-9][0-9]-*/; do
		d=${d%/}
		echo "${d##*/}"
	done
}

main() {
	local list host_only=""
	if [ "${1:-}" = --host-only ]; then
		host_only=1
		shift
	fi
	list=$( (
		[ -n "$host_only" ] || arch_kernel_words
		host_words
	) | sed '/^$/d' | sort -u)
	[ -n "$list" ] || {
		echo "check-arch-free: no arch, kernel or host files found" >&2
		exit 2
	}
	awk -v list="$list" -v exercises="$(exercise_names)" '
		BEGIN {
			n = split(list, w, "\n")
			for (i = 1; i <= n; i++) {
				re = w[i]
				gsub(/[.]/, "[.]", re)
				# A word: not inside a longer name or number, though
				# it may end one (qemu-system-NAME); a suffix (-16)
				# where it ends a name (clang-16).
				if (re ~ /^-/)
					pat[i] = "[A-Za-z]" re "($|[^A-Za-z0-9_.])"
				else
					pat[i] = "(^|[^A-Za-z0-9_.])" re "($|[^A-Za-z0-9_])"
			}
			m = split(exercises, ex, "\n")
		}
		FNR == 1 { file = FILENAME }
		{
			line = $0
			sub(/^[ \t]*#.*/, "", line)
			sub(/[ \t]#[^"'\'']*$/, "", line)
			for (i = 1; i <= m; i++)
				if (ex[i] != "")
					while ((p = index(line, ex[i])) > 0)
						line = substr(line, 1, p - 1) substr(line, p + length(ex[i]))
			# A mirror: an archive named by its address.
			if (line ~ /[a-z]+:\/\/[A-Za-z0-9.-]+\.[A-Za-z]+\/[^ ]*(debian|ubuntu)/) {
				printf "%s:%d: names a mirror: %s\n", file, FNR, $0
				found = 1
				next
			}
			for (i = 1; i <= n; i++)
				if (line ~ pat[i]) {
					printf "%s:%d: names %s: %s\n", file, FNR, w[i], $0
					found = 1
					break
				}
		}
		END { exit found }
	' "$@"
}

main "$@"
