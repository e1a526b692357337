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

# mutant_list: the mutants of tests/mutants.txt, one a line, the fields
# separated by tabs (a fault may hold "|"; the file's separator is " | ").
mutant_list() {
	awk -F ' [|] ' -v OFS='\t' '!/^#/ && NF == 4 { $1 = $1; print }' "$KCFI_LAB_ROOT/tests/mutants.txt"
}

# guest_args ARCH: the options every test boot of ARCH on the lab kernel
# gets, one word a line: where the kernel re-randomizes the type ids at
# boot, the argument that keeps the compiler's, so that what the guest
# reports can be compared with the vmlinux.
guest_args() {
	local norand
	norand=$(kernel_get norand_arg)
	if [ -n "$norand" ] && kernel_rerandomizes "$1"; then
		printf '%s\n' --append "$norand"
	fi
}

# --- Facts derived from the build, never typed in -------------------------

# shellcheck source=lab/common.sh
. "$KCFI_LAB_ROOT/lab/common.sh"
# shellcheck source=lab/setup.sh
. "$KCFI_LAB_ROOT/lab/setup.sh"
# shellcheck source=lab/suites.sh
. "$KCFI_LAB_ROOT/lab/suites.sh"
# shellcheck source=lab/roots.sh
. "$KCFI_LAB_ROOT/lab/roots.sh"
# shellcheck source=lab/kernel-branch.sh
. "$KCFI_LAB_ROOT/lab/kernel-branch.sh"
# shellcheck source=lab/build.sh
. "$KCFI_LAB_ROOT/lab/build.sh"
# shellcheck source=lab/tool.sh
. "$KCFI_LAB_ROOT/lab/tool.sh"
# shellcheck source=lab/facts.sh
. "$KCFI_LAB_ROOT/lab/facts.sh"

# use_kernel KERNEL: the lab's, and in the main lane of a full run, for
# a kernel but the default one, only once the side lane has built it.
eval "lab_$(declare -f use_kernel)"
use_kernel() {
	[ "$1" = "$LAB_DEFAULT_KERNEL" ] || wait_for_other_kernels
	lab_use_kernel "$1"
}

# wait_for_other_kernels: in the main lane, until the side lane has run
# tests/full-1-kernels.sh (or has ended). Elsewhere (the side lane
# itself, a quick run, a test run on its own) at once.
wait_for_other_kernels() {
	[ -z "${SIDE_LANE:-}" ] && [ -n "${SIDE_PID:-}" ] && [ -n "${SIDE_DONE:-}" ] || return 0
	until grep -q '/full-1-kernels\.sh$' "$SIDE_DONE" 2>/dev/null; do
		kill -0 "$SIDE_PID" 2>/dev/null || return 0
		sleep 2
	done
}

# other_kernels: every kernel of lab/kernel/ but the default one.
other_kernels() {
	local k
	for k in $(lab_kernels); do
		[ "$k" = "$LAB_DEFAULT_KERNEL" ] || echo "$k"
	done
}

# each_kernel_arch FUNCTION: FUNCTION ARCH for every other kernel and
# every arch it has, with that kernel made the lab's kernel (the tests
# run in a subshell of their own, so the choice ends with the test).
each_kernel_arch() {
	local k arch n=0
	for k in $(other_kernels); do
		use_kernel "$k"
		for arch in $(lab_arches); do
			echo "--- Linux $k, $arch"
			"$1" "$arch"
			n=$((n + 1))
		done
	done
	[ "$n" -gt 0 ] || skip "the lab has no kernel but $LAB_DEFAULT_KERNEL"
}
