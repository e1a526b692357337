#!/usr/bin/env bash
# Mutation testing: each fault of tests/mutants.txt is injected at a
# boundary the tests observe (the guest console, the vmlinux, gdb, the
# documents, one file of the lab itself), and
# the tests named with it must fail on an assertion. A mutant that
# survives means those tests can no longer see what they claim to check.

# wrap_tool DIR NAME SED-EXPR: a NAME in DIR that runs the real one with
# its standard output through sed -E SED-EXPR. exec keeps the pid, so a
# timeout or a kill reaches the real program.
wrap_tool() {
	local dir=$1 name=$2 expr=$3 real
	real=$(command -v "$name") || fail "$name not found"
	{
		echo '#!/usr/bin/env bash'
		printf 'exec %q "$@" > >(exec sed -u -E %q)\n' "$real" "$expr"
	} >"$dir/$name"
	chmod +x "$dir/$name"
}

# vaddr_offset VMLINUX ADDR-HEX: the file offset of a virtual address,
# from the section headers.
vaddr_offset() {
	local a=$((0x$2)) line name type addr off size
	while read -r line; do
		[[ "$line" == *"] "* ]] || continue
		read -r name type addr off size _ <<<"${line#*] }"
		[ "$type" = PROGBITS ] || continue
		if [ "$a" -ge $((0x$addr)) ] && [ "$a" -lt $((0x$addr + 0x$size)) ]; then
			echo $((a - 0x$addr + 0x$off))
			return 0
		fi
	done < <("llvm-readelf$KCFI_LAB_LLVM" -S --wide "$1")
	return 0
}

# patch_type_id ARCH FUNC OUT: OUT becomes a copy of ARCH's vmlinux in
# which the 32-bit type id in front of FUNC is changed.
patch_type_id() {
	local arch=$1 func=$2 out=$3 addr off word new
	addr=$(symbol_addr "$arch" "$func")
	[ -n "$addr" ] || fail "no $func in the $arch vmlinux"
	addr=$(printf '%x' $((0x$addr - 4)))
	off=$(vaddr_offset "$(vmlinux_of "$arch")" "$addr")
	[ -n "$off" ] || fail "no section holds $addr in the $arch vmlinux"
	mkdir -p "$(dirname "$out")"
	cp "$(vmlinux_of "$arch")" "$out"
	word=$(od -An -tx4 -j "$off" -N4 "$out" | tr -d ' ')
	assert_eq "$word" "$(preamble_type "$arch" "$func")" "the word in front of $func is its type id"
	# Flip one bit in each byte: another id, nothing else changes.
	new=$(printf '%08x' $((0x$word ^ 0x01010101)))
	# shellcheck disable=SC2059 # the format is the bytes, little-endian
	printf "\\x${new:6:2}\\x${new:4:2}\\x${new:2:2}\\x${new:0:2}" |
		dd of="$out" bs=1 seek="$off" conv=notrunc status=none
	assert_eq "$(od -An -tx4 -j "$off" -N4 "$out" | tr -d ' ')" "$new" "the patched id"
}

# run_mutant NAME BOUNDARY FAULT TEST: run TEST with the mutant in place;
# VERDICT becomes "killed", "survived", "not tried: WHY" (TEST skips on
# this host, for the reason it gives: it proves nothing here, nor does
# the unmutated TEST) or "broken: WHY" (the mutant stopped the test
# before any assertion: that proves nothing).
run_mutant() {
	local name=$1 boundary=$2 fault=$3 test=$4 dir="$TEST_TMP/mutant-$1" rc=0
	local work="$dir/$test" arch
	mkdir -p "$dir/bin" "$work"
	case "$boundary" in
	console)
		wrap_tool "$dir/bin" qemu-system-x86_64 "$fault"
		wrap_tool "$dir/bin" qemu-system-aarch64 "$fault"
		;;
	gdb) wrap_tool "$dir/bin" gdb-multiarch "$fault" ;;
	vmlinux)
		# The consoles of the real boots: only the build facts change.
		cp "$TEST_TMP"/console-*.log "$work/" 2>/dev/null || true
		for arch in x86_64 arm64; do
			[ -e "$dir/$arch/vmlinux" ] || patch_type_id "$arch" "$fault" "$dir/$arch/vmlinux"
		done
		;;
	docs)
		local md
		while read -r md; do
			mkdir -p "$dir/root/$(dirname "${md#"$KCFI_LAB_ROOT"/}")"
			sed -E "$fault" "$md" >"$dir/root/${md#"$KCFI_LAB_ROOT"/}"
		done < <(doc_files)
		;;
	source)
		# FAULT is FILE:SED-EXPR: a copy of the repository in which one
		# file of the lab is changed; the test runs from that copy.
		local file=${fault%%:*}
		mkdir -p "$dir/root"
		cp -r "$KCFI_LAB_ROOT"/. "$dir/root/"
		rm -rf "$dir/root/.git"
		sed -E "${fault#*:}" "$KCFI_LAB_ROOT/$file" >"$dir/root/$file"
		! cmp -s "$KCFI_LAB_ROOT/$file" "$dir/root/$file" || fail "mutant $name changes nothing in $file"
		;;
	*) fail "mutant $name: unknown boundary $boundary" ;;
	esac
	# shellcheck disable=SC2030,SC2031,SC2317 # the mutant lives in this subshell
	(
		set -euo pipefail
		shopt -s inherit_errexit
		# The listings test's guest consoles are the real run's.
		export DOC_LISTINGS_CACHE="$TEST_TMP/doc-consoles"
		# And the pack with Debian packages is the real run's: its
		# making (two minutes) is not what the mutants change.
		export DEBS_PACK_CACHE="$TEST_TMP"
		export PATH="$dir/bin:$PATH" TEST_TMP="$work"
		if [ "$boundary" = vmlinux ]; then
			vmlinux_of() { echo "$dir/$1/vmlinux"; }
		fi
		if [ "$boundary" = source ]; then
			export KCFI_LAB_ROOT="$dir/root"
		fi
		if [ "$boundary" = docs ]; then
			doc_files() { printf '%s\n' "$dir"/root/docs/*.md "$dir"/root/exercises/*/README.md; }
		fi
		"$test"
	) >"$work.log" 2>&1 </dev/null &
	# Waited for, not run on the left of "||", where errexit is off and a
	# failed assertion would not stop the test.
	wait "$!" || rc=$?
	# A mutant's tool, built in this home, is now the one build/tool/kcfi
	# links to: link this checkout's again, for the tests that follow.
	[ "$boundary" != source ] || build_tool >/dev/null 2>&1 || true
	if [ "$rc" = 0 ]; then
		VERDICT=survived
	elif [ "$rc" = 77 ] && grep -q '^SKIP: ' "$work.log" && ! grep -q '^FAIL: ' "$work.log"; then
		VERDICT="not tried: $(sed -n 's/^SKIP: //p' "$work.log" | sed -n '$p')"
	elif grep -qE 'boot failed|guest run failed|gdb failed' "$work.log" || ! grep -q '^FAIL: ' "$work.log"; then
		VERDICT="broken: $(grep -m1 -E '^FAIL: |error' "$work.log" || tail -n 1 "$work.log")"
	else
		VERDICT=killed
	fi
}

test_mutations_are_killed() {
	local name boundary fault tests test total=0 killed=0 untried=0 start
	# shellcheck disable=SC2031 # run_mutant changes TEST_TMP in a subshell only
	local report="$TEST_TMP/mutations.txt"
	: >"$report.tmp"
	while IFS=$'\t' read -r name boundary fault tests; do
		total=$((total + 1))
		local all=killed
		for test in $tests; do
			declare -F "$test" >/dev/null || fail "mutant $name names no test $test"
			start=$SECONDS
			run_mutant "$name" "$boundary" "$fault" "$test"
			# The seconds too: where the mutation test's time goes.
			echo "mutant $name: $test: $VERDICT ($((SECONDS - start)) s)"
			if [[ "$VERDICT" == "not tried: "* ]]; then
				[ "$all" != killed ] || all=untried
				echo "mutant $name: $test $VERDICT" >>"$report.tmp"
			elif [ "$VERDICT" != killed ]; then
				all=no
				echo "mutant $name ($boundary: $fault): $test $VERDICT" >>"$report.tmp"
			fi
		done
		case "$all" in
		killed) killed=$((killed + 1)) ;;
		untried) untried=$((untried + 1)) ;;
		esac
	done < <(mutant_list)
	[ "$total" -gt 0 ] || fail "no mutants in tests/mutants.txt"
	# A line that is not four fields would be skipped without a word.
	# shellcheck disable=SC2031 # run_mutant changes KCFI_LAB_ROOT in a subshell only
	assert_eq "$(grep -cvE '^(#|$)' "$KCFI_LAB_ROOT/tests/mutants.txt")" "$total" "mutants read from tests/mutants.txt"
	{
		printf 'mutations: %s killed of %s' "$killed" "$((total - untried))"
		[ "$untried" = 0 ] || printf ', %s not tried on this host' "$untried"
		echo
		sed 's/^/  /' "$report.tmp"
	} >"$report"
	cat "$report"
	# A host where most tests skip proves next to nothing: most mutants
	# are tried, and every one tried is killed.
	[ "$((untried * 4))" -le "$total" ] || fail "$untried of $total mutants not tried on this host"
	assert_eq "$killed" "$((total - untried))" "mutants killed"
}
