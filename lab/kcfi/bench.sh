#!/usr/bin/env bash
# usage: bench.sh VMLINUX
# Times one run of `kcfi scan VMLINUX` against one run of the usual
# alternative, `llvm-objdump -d VMLINUX | grep -c ...` counting the
# preamble symbols and check sites, and prints both times and the ratio.
# KCFI (default: build/kcfi next to this script, as make builds it) may be
# overridden.  The llvm-objdump is OBJDUMP, or the lab kernel's:
# llvm-objdump$KCFI_LAB_LLVM (the LLVM suffix, -16, -19, ..., that the
# lab's ./run.sh exports to what it starts).
set -euo pipefail

if [ $# -ne 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
	echo "usage: ${0##*/} VMLINUX" >&2
	exit 2
fi
image=$1
here=$(cd "$(dirname "$0")" && pwd)
kcfi=${KCFI:-$here/build/kcfi}
if [ -n "${OBJDUMP:-}" ]; then
	objdump=$OBJDUMP
elif [ -n "${KCFI_LAB_LLVM+set}" ]; then
	objdump=llvm-objdump$KCFI_LAB_LLVM
else
	echo "${0##*/}: set OBJDUMP=llvm-objdump-NN or KCFI_LAB_LLVM=-NN, the LLVM suffix (the lab's ./run.sh exports it)" >&2
	exit 1
fi
[ -r "$image" ] || { echo "${0##*/}: cannot read $image" >&2; exit 1; }
[ -x "$kcfi" ] || { echo "${0##*/}: $kcfi not built (run make)" >&2; exit 1; }
command -v "$objdump" >/dev/null || { echo "${0##*/}: $objdump not found" >&2; exit 1; }

now() { date +%s.%N; }

t0=$(now)
"$kcfi" scan "$image" >/dev/null
t1=$(now)
# With types from DWARF, when the image has it (one run, kept if it worked).
t3=$(now)
types=""
if "$kcfi" scan "$image" --types >/dev/null 2>&1; then
	types=$(awk -v a="$t3" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')
fi
t1b=$(now)
# __cfi_ labels (x86_64 preambles), mov $-id,%r10d/%r11d (x86_64 checks),
# KCFI brk immediates 0x8000-0x83ff (arm64 checks).
# shellcheck disable=SC2016 # a regex, not an expansion
matches=$("$objdump" -d "$image" |
	grep -c -E '<__cfi_[^>]*>:$|movl	\$0x[0-9a-f]+, %r1[01]d|brk	#0x8[0-3][0-9a-f][0-9a-f]$' || true)
t2=$(now)

awk -v a="$t0" -v b="$t1" -v b2="$t1b" -v c="$t2" -v m="$matches" -v img="$image" \
	-v ty="$types" -v size="$(wc -c <"$image")" 'BEGIN {
	k = b - a; o = c - b2
	printf "image:                     %s (%.1f MB)\n", img, size / 1e6
	printf "kcfi scan:                 %.3f s\n", k
	if (ty != "")
		printf "kcfi scan --types:         %s s\n", ty
	printf "llvm-objdump -d | grep -c: %.3f s (%d matching lines)\n", o, m
	printf "ratio:                     %.1fx\n", (k > 0 ? o / k : 0)
	if (ty != "")
		printf "ratio with --types:        %.1fx\n", (ty > 0 ? o / ty : 0)
}'
