#!/usr/bin/env bash
# Finds arch and kernel knowledge outside lab/arch/ and lab/kernel/:
# every line of FILE... (comments aside) that names an arch or one of
# its aliases, or a kernel's version, source package or LLVM suffix, as
# the data files spell them. Exercise names (04-x86-check) are names,
# not knowledge, and are left out.
#
#   tests/check-arch-free.sh FILE...
#
# Prints FILE:LINE: TEXT for each, and exits 1 when it found one.
set -euo pipefail
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "$0")/.." && pwd)

# The words, from the data files themselves.
words() {
	local f
	for f in "$ROOT"/lab/arch/*.conf; do
		basename "$f" .conf
		sed -n 's/^aliases=//p' "$f" | tr ' ' '\n'
	done
	for f in "$ROOT"/lab/kernel/*.conf; do
		basename "$f" .conf
		sed -n -e 's/^source_package=//p' -e 's/^llvm=//p' "$f"
	done
}

main() {
	local list
	list=$(words | sed '/^$/d' | sort -u)
	[ -n "$list" ] || {
		echo "check-arch-free: no arch or kernel files found" >&2
		exit 2
	}
	awk -v list="$list" '
		BEGIN {
			n = split(list, w, "\n")
			for (i = 1; i <= n; i++) {
				re = w[i]
				gsub(/[.]/, "[.]", re)
				# A word: not inside a longer name or number; a
				# suffix (-16) where it ends a name (clang-16).
				if (re ~ /^-/)
					pat[i] = "[A-Za-z]" re "($|[^A-Za-z0-9_.])"
				else
					pat[i] = "(^|[^A-Za-z0-9_.-])" re "($|[^A-Za-z0-9_])"
			}
		}
		FNR == 1 { file = FILENAME }
		{
			line = $0
			sub(/^[ \t]*#.*/, "", line)
			sub(/[ \t]#[^"'\'']*$/, "", line)
			gsub(/[0-9][0-9]-[a-z0-9-]+/, "", line)
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
