#!/usr/bin/env bash
# Test helpers, sourced by tests/run.sh and the test files.
# A test is a function named test_*; it passes when it returns 0, is
# skipped when it returns 77 (after "skip REASON"), and fails otherwise.

fail() {
	printf 'FAIL: %s\n' "$*" >&2
	return 1
}

skip() {
	printf 'SKIP: %s\n' "$*" >&2
	return 77
}

# assert_grep PATTERN FILE [WHAT]: FILE has a line matching the ERE.
assert_grep() {
	grep -Eq -- "$1" "$2" || fail "${3:-expected /$1/} not found in $2"
}

assert_no_grep() {
	! grep -Eq -- "$1" "$2" || fail "${3:-unexpected /$1/} found in $2: $(grep -Em1 -- "$1" "$2")"
}

assert_eq() {
	[ "$1" = "$2" ] || fail "${3:-values differ}: got '$1', want '$2'"
}

# has_match ERE: standard input has a line matching ERE. Unlike grep -q
# it reads to the end, so the writer never dies of SIGPIPE (under
# pipefail that fails the pipeline although the line was there).
has_match() {
	HAS_MATCH_RE=$1 awk '$0 ~ ENVIRON["HAS_MATCH_RE"] { found = 1 } END { exit !found }'
}

# expect_exit CODE CMD...: run CMD, require exit status CODE; output in $OUT.
expect_exit() {
	local want=$1 got=0
	shift
	OUT=$("$@" 2>&1) || got=$?
	[ "$got" = "$want" ] || fail "'$*' exited $got, want $want; output: $(printf '%s' "$OUT" | tail -n 5)"
}

lab() {
	"$KCFI_LAB_ROOT/run.sh" "$@"
}

# --- Facts derived from the build, never typed in -------------------------

# shellcheck source=lab/common.sh
. "$KCFI_LAB_ROOT/lab/common.sh"
# shellcheck source=lab/setup.sh
. "$KCFI_LAB_ROOT/lab/setup.sh"
# shellcheck source=lab/tool.sh
. "$KCFI_LAB_ROOT/lab/tool.sh"

vmlinux_of() {
	echo "$(build_dir "$1")/vmlinux"
}

# symbol_addr ARCH SYMBOL: the symbol's address, hex without 0x.
symbol_addr() {
	# No early exit: awk must read all of llvm-nm's output, or llvm-nm dies
	# of SIGPIPE and pipefail fails the call.
	llvm-nm-16 "$(vmlinux_of "$1")" | awk -v s="$2" '$3 == s && !found { print $1; found = 1 }'
}

# word_before ARCH ADDR-HEX: the 32-bit word at ADDR-4 as llvm-objdump -d
# shows it: a ".word" of data, or an instruction's encoding.
word_before() {
	local start stop line
	start=$(printf '0x%x' $((0x$2 - 4)))
	stop=$(printf '0x%x' $((0x$2)))
	line=$(llvm-objdump-16 -d --start-address="$start" --stop-address="$stop" "$(vmlinux_of "$1")" 2>/dev/null |
		grep -E "^ *${start#0x}:" | tail -n 1)
	# "ADDR: a5 52 0c 7e  .word 0x7e0c52a5" or "ADDR: d503201f  nop"
	line=${line#*: }
	if [[ "$line" =~ ^([0-9a-f]{2})\ ([0-9a-f]{2})\ ([0-9a-f]{2})\ ([0-9a-f]{2}) ]]; then
		echo "${BASH_REMATCH[4]}${BASH_REMATCH[3]}${BASH_REMATCH[2]}${BASH_REMATCH[1]}"
	elif [[ "$line" =~ ^([0-9a-f]{8}) ]]; then
		echo "${BASH_REMATCH[1]}"
	else
		return 1
	fi
}

# preamble_type ARCH FUNC: the kCFI type id of FUNC as llvm-objdump shows
# it (x86_64: the movl in __cfi_FUNC; arm64: the word in front of FUNC),
# or "none" when x86 has no __cfi_ preamble for it.
preamble_type() {
	local arch=$1 func=$2 id addr
	if [ "$arch" = x86_64 ]; then
		id=$(llvm-objdump-16 -d --disassemble-symbols="__cfi_$func" "$(vmlinux_of "$arch")" 2>/dev/null |
			sed -nE 's/.*movl[[:space:]]+[$]0x([0-9a-f]+), %eax.*/\1/p' | sed -n 1p)
		[ -n "$id" ] || id=none
		printf '%s\n' "$id"
	else
		addr=$(symbol_addr "$arch" "$func")
		[ -n "$addr" ] || return 1
		word_before "$arch" "$addr"
	fi
}

# site_expected_type ARCH FUNC: the type id the first kCFI check in FUNC
# expects, decoded from llvm-objdump's disassembly of FUNC.
site_expected_type() {
	local arch=$1 func=$2 dis
	dis=$(llvm-objdump-16 -d --disassemble-symbols="$func" "$(vmlinux_of "$arch")" 2>/dev/null)
	if [ "$arch" = x86_64 ]; then
		local neg
		neg=$(printf '%s\n' "$dis" | sed -nE 's/.*movl[[:space:]]+[$]0x([0-9a-f]+), %r1[01]d.*/\1/p' | sed -n 1p)
		[ -n "$neg" ] || return 1
		printf '%08x\n' $(((-0x$neg) & 0xffffffff))
	else
		local lo hi
		lo=$(printf '%s\n' "$dis" | sed -nE 's/.*movk[[:space:]]+w17, #0x([0-9a-f]+)$/\1/p' | sed -n 1p)
		hi=$(printf '%s\n' "$dis" | sed -nE 's/.*movk[[:space:]]+w17, #0x([0-9a-f]+), lsl #16.*/\1/p' | sed -n 1p)
		[ -n "$lo" ] && [ -n "$hi" ] || return 1
		printf '%08x\n' $(((0x$hi << 16) | 0x$lo))
	fi
}
