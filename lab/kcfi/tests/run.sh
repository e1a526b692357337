#!/usr/bin/env bash
# Test driver for `make check`.  Expected values come from clang and
# llvm-objdump, never from kcfi itself: for each arch, those of the LLVM
# whose version suffix (-16, -19, ...) is in LLVM_x86_64, LLVM_arm64 or
# LLVM_riscv64, which make check passes (KCFI on riscv64 needs clang 17
# or later).  Everything generated goes into $BUILD.  Prints "ok - ..." /
# "FAIL - ..." per test and, last, "N passed, N failed"; exits non-zero
# if anything failed.
set -Eeuo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
KCFI=$(realpath "${KCFI:-build/kcfi}")
KCFI_ASAN=${KCFI_ASAN:+$(realpath "$KCFI_ASAN")}
BUILD=${BUILD:-build/check}
TOOLS=$(realpath "${TOOLS:-build/tests}")
RANDOM_PROTOS=${RANDOM_PROTOS:-600}
BATCH=${BATCH:-250}
MUTANTS=${MUTANTS:-150}

for arch in x86_64 arm64 riscv64; do
	var=LLVM_$arch
	if [ -z "${!var+set}" ]; then
		echo "FAIL - $var is not set: run make check LLVM_x86_64=-NN LLVM_arm64=-NN LLVM_riscv64=-NN (./run.sh test passes them)"
		echo "0 passed, 1 failed"
		exit 1
	fi
done

# tool NAME ARCH: the LLVM tool NAME (clang, llvm-objdump, ld.lld, ...)
# of ARCH's reference toolchain (ARCH x86_64, arm64 or riscv64; aarch64
# is arm64): NAME with that arch's suffix.
# shellcheck disable=SC2154 # the LLVM_ARCH come from make check
tool() {
	case $2 in
	x86_64) echo "$1$LLVM_x86_64" ;;
	arm64 | aarch64) echo "$1$LLVM_arm64" ;;
	riscv64) echo "$1$LLVM_riscv64" ;;
	*)
		echo "tool: unknown arch $2" >&2
		return 1
		;;
	esac
}
# arch_of FILE: the arch of one of the files made here, by its name
# (x86-*, a64-*, rv-*, batchNN.TARGET.o, typed-TARGET.o, ...).
arch_of() {
	case ${1##*/} in
	rv-* | *riscv64*) echo riscv64 ;;
	a64-* | *aarch64*) echo arm64 ;;
	*) echo x86_64 ;;
	esac
}

mkdir -p "$(dirname "$BUILD")"
# Two runs at once would delete each other's files.
exec 9>"$BUILD.lock"
if command -v flock >/dev/null && ! flock -n 9; then
	echo "FAIL - another test run holds $BUILD.lock"
	echo "0 passed, 1 failed"
	exit 1
fi
rm -rf "$BUILD"
mkdir -p "$BUILD"
BUILD=$(realpath "$BUILD")
export ASAN_OPTIONS=exitcode=99:detect_leaks=0
export UBSAN_OPTIONS=exitcode=98:print_stacktrace=1

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok - $*"; }
fail() { failed=$((failed + 1)); echo "FAIL - $*"; }
finish() {
	trap - ERR
	echo "$passed passed, $failed failed"
	if [ "$failed" -eq 0 ]; then exit 0; else exit 1; fi
}
# A command failing outside a test still ends with the summary line.
trap '[ "$BASHPID" != "$$" ] || { fail "test script stopped at line $LINENO"; echo "$passed passed, $failed failed"; }' ERR

for arch in x86_64 arm64 riscv64; do
	for name in clang llvm-objdump llvm-objcopy llvm-nm ld.lld; do
		t=$(tool "$name" "$arch")
		if ! command -v "$t" >/dev/null; then
			fail "required tool $t ($arch's reference LLVM) not found on PATH (./run.sh setup installs the lab's toolchains)"
			finish
		fi
	done
done

# cc_for TARGET: the clang that compiles for TARGET (riscv64's KCFI check
# came with clang 17); ld_for TARGET: its linker.
cc_for() { tool clang "$1"; }
ld_for() { tool ld.lld "$1"; }

# objdump_ref FILE EXEC: tests/objdump-ref.awk's records for FILE, from
# the llvm-objdump of FILE's arch.  riscv64 files (rv-*, *.riscv64.o) go
# through llvm-objdump -M no-aliases, with the $d mapping symbols from its
# symbol table, since it disassembles data in code as instructions.
objdump_ref() {
	local f=$1 ex=$2 objdump
	objdump=$(tool llvm-objdump "$(arch_of "$f")")
	case ${f##*/} in
	rv-* | *.riscv64.o)
		# shellcheck disable=SC2016 # awk's $NF and the symbol $d
		"$objdump" -t "$f" | awk '$NF == "$d" { print $1, $(NF - 2) }' >"$BUILD/dmaps.txt"
		"$objdump" -d -z -M no-aliases "$f" |
			awk -v exec="$ex" -v dmaps="$BUILD/dmaps.txt" -f "$HERE/objdump-ref.awk"
		;;
	*) "$objdump" -d "$f" | awk -v exec="$ex" -f "$HERE/objdump-ref.awk" ;;
	esac
}

# ---------------------------------------------------------------------------
# 0. Unit tests (xxHash64 vectors, manglings, decoders, ELF header checks)
# ---------------------------------------------------------------------------
unit_out=$("$TOOLS/unit" || true)
while IFS= read -r line; do
	case $line in
	"ok - "*) pass "unit: ${line#ok - }" ;;
	"FAIL - "*) fail "unit: ${line#FAIL - }" ;;
	esac
done <<<"$unit_out"

# ---------------------------------------------------------------------------
# 1. kcfi hash agrees with the ids clang emits (x86_64's)
# ---------------------------------------------------------------------------
protos=$BUILD/protos.txt
grep -v -e '^#' -e '^$' "$HERE/edge-protos.txt" >"$protos"
nedge=$(wc -l <"$protos")
"$TOOLS/genprotos" "$RANDOM_PROTOS" 20240607 >>"$protos"
total=$(wc -l <"$protos")

# One C file per batch: each prototype defines kcfi_fn_N, and every
# function's address is taken so clang emits its preamble.
split -l "$BATCH" -d -a 2 "$protos" "$BUILD/batch"
: >"$BUILD/clang-ids.txt"
compile_ok=1
for part in "$BUILD"/batch[0-9][0-9]; do
	base=${part##*/batch}
	first=$((10#$base * BATCH))
	awk -v first="$first" '
		{ n = first + NR - 1; line = $0; sub(/@/, "kcfi_fn_" n, line)
		  print line " {}"; names = names "\tkcfi_fn_" n ",\n" }
		END { print "void *kcfi_fn_table_" first "[] = {\n" names "};" }' \
		"$part" >"$part.c"
	for target in x86_64 aarch64 riscv64; do
		if ! "$(cc_for "$target")" --target="$target-linux-gnu" -O2 -g -fsanitize=kcfi -w \
			-include "$HERE/prelude.h" -c "$part.c" -o "$part.$target.o" \
			2>"$part.$target.err"; then
			compile_ok=0
			fail "$(cc_for "$target") rejected generated batch $part.c ($target): $(head -n 3 "$part.$target.err")"
		fi
	done
	if [ -f "$part.x86_64.o" ]; then
		"$(tool llvm-objdump x86_64)" -d "$part.x86_64.o" |
			awk -v exec=0 -f "$HERE/objdump-ref.awk" |
			awk '$1 == "F" && $4 ~ /^kcfi_fn_/ { sub(/^kcfi_fn_/, "", $4); print $4, $3 }' \
				>>"$BUILD/clang-ids.txt"
	fi
done

sed 's/@//' "$protos" >"$BUILD/protos-hash-input.txt"
if "$KCFI" hash - <"$BUILD/protos-hash-input.txt" >"$BUILD/kcfi-ids.raw" 2>"$BUILD/kcfi-hash.err"; then
	awk '{ print NR - 1, substr($1, 3) }' "$BUILD/kcfi-ids.raw" >"$BUILD/kcfi-ids.txt"
else
	fail "kcfi hash rejected generated prototypes: $(head -n 3 "$BUILD/kcfi-hash.err")"
	: >"$BUILD/kcfi-ids.txt"
fi
sort -n "$BUILD/clang-ids.txt" >"$BUILD/clang-ids.sorted"
compared=$(wc -l <"$BUILD/clang-ids.sorted")
mismatches=$(join -j 1 <(sort -k1,1 "$BUILD/clang-ids.sorted") <(sort -k1,1 "$BUILD/kcfi-ids.txt") |
	awk '$2 != $3' | sort -n)
joined=$(join -j 1 <(sort -k1,1 "$BUILD/clang-ids.sorted") <(sort -k1,1 "$BUILD/kcfi-ids.txt") | wc -l)
if [ "$compile_ok" = 1 ] && [ "$compared" -eq "$total" ] && [ "$joined" -eq "$total" ] &&
	[ -z "$mismatches" ]; then
	pass "hash: $total prototypes ($nedge edge cases, $((total - nedge)) random) match $(cc_for x86_64)'s ids, 0 mismatches"
else
	fail "hash: compared $joined of $total prototypes (clang emitted $compared ids); mismatches:"
	printf '%s\n' "$mismatches" | sed -n 1,10p | while read -r n want got; do
		echo "    $(sed -n "$((n + 1))p" "$BUILD/protos-hash-input.txt"): clang 0x$want, kcfi 0x$got"
	done
fi

# ---------------------------------------------------------------------------
# 1b. kcfi hash --hash fnv1a agrees with the ids clang$LLVM_LATEST emits
#     with LLVM 22's FNV-1a hash (the newest kernel's clang, when it has it)
# ---------------------------------------------------------------------------
latest=clang${LLVM_LATEST:-}
# Why the FNV-1a tests (here and 1d) cannot run, or empty.
fnv1a_skip=""
if [ -z "${LLVM_LATEST:-}" ] || ! command -v "$latest" >/dev/null; then
	fnv1a_skip="no LLVM_LATEST clang (./run.sh test passes the newest kernel's)"
elif ! "$latest" -Xclang -fsanitize-kcfi-hash=FNV-1a -fsanitize=kcfi -c -x c /dev/null -o /dev/null 2>/dev/null; then
	fnv1a_skip="$latest has no FNV-1a KCFI hash (LLVM 22 added it)"
fi
if [ -n "$fnv1a_skip" ]; then
	echo "skip - hash --hash fnv1a: $fnv1a_skip"
else
	: >"$BUILD/fnv1a-clang-ids.txt"
	for part in "$BUILD"/batch[0-9][0-9]; do
		if ! "$latest" --target=x86_64-linux-gnu -O2 -fsanitize=kcfi -Xclang -fsanitize-kcfi-hash=FNV-1a -w \
			-include "$HERE/prelude.h" -c "$part.c" -o "$part.fnv1a.o" 2>"$part.fnv1a.err"; then
			fail "$latest rejected $part.c with the FNV-1a hash: $(head -n 3 "$part.fnv1a.err")"
			continue
		fi
		"$(tool llvm-objdump x86_64)" -d "$part.fnv1a.o" | awk -v exec=0 -f "$HERE/objdump-ref.awk" |
			awk '$1 == "F" && $4 ~ /^kcfi_fn_/ { sub(/^kcfi_fn_/, "", $4); print $4, $3 }' \
				>>"$BUILD/fnv1a-clang-ids.txt"
	done
	"$KCFI" hash --hash fnv1a - <"$BUILD/protos-hash-input.txt" |
		awk '{ print NR - 1, substr($1, 3) }' | sort -k1,1 >"$BUILD/fnv1a-kcfi-ids.txt"
	joined=$(join -j 1 <(sort -k1,1 "$BUILD/fnv1a-clang-ids.txt") "$BUILD/fnv1a-kcfi-ids.txt")
	mismatches=$(awk '$2 != $3' <<<"$joined" | sort -n)
	# The same prototypes with both hashes: no id may agree by accident.
	same=$(join -j 1 <(sort -k1,1 "$BUILD/fnv1a-clang-ids.txt") <(sort -k1,1 "$BUILD/clang-ids.sorted") | awk '$2 == $3' | wc -l)
	if [ "$(wc -l <<<"$joined")" -eq "$total" ] && [ -z "$mismatches" ] && [ "$same" -eq 0 ]; then
		pass "hash --hash fnv1a: $total prototypes match $latest's FNV-1a ids, 0 mismatches, none equal to its xxHash64 id"
	else
		fail "hash --hash fnv1a: compared $(wc -l <<<"$joined") of $total, $same equal to the xxHash64 ids; mismatches:"
		printf '%s\n' "$mismatches" | sed -n 1,10p | while read -r n want got; do
			echo "    $(sed -n "$((n + 1))p" "$BUILD/protos-hash-input.txt"): clang 0x$want, kcfi 0x$got"
		done
	fi
fi

# ---------------------------------------------------------------------------
# 1c. kcfi scan reads the arity of -fsanitize-kcfi-arity (LLVM 21+) from
#     x86_64 preambles as clang$LLVM_LATEST emits them: llvm-objdump names
#     the register of each __cfi_ preamble's movl, and the x86 encoding
#     order of the 32-bit registers is the count
# ---------------------------------------------------------------------------
if [ -z "${LLVM_LATEST:-}" ] || ! command -v "$latest" >/dev/null; then
	echo "skip - scan arity: no LLVM_LATEST clang (./run.sh test passes the newest kernel's)"
elif ! "$latest" -fsanitize=kcfi -fsanitize-kcfi-arity -c -x c /dev/null -o /dev/null 2>/dev/null; then
	echo "skip - scan arity: $latest has no -fsanitize-kcfi-arity (LLVM 21 added it)"
else
	: >"$BUILD/arity-clang.txt"
	: >"$BUILD/arity-kcfi.txt"
	bad=""
	# The batches' functions are empty, and clang counts the argument
	# registers a function reads: functions that read 0 to 8 arguments
	# give every register its turn.
	for k in 0 1 2 3 4 5 6 7 8; do
		args="" sum="0"
		for ((i = 1; i <= k; i++)); do
			args="$args${args:+, }long a$i" sum="$sum + a$i"
		done
		echo "long kcfi_fn_reads$k(${args:-void}) { return $sum; }"
		echo "void *kcfi_fn_reads${k}_p = kcfi_fn_reads$k;"
	done >"$BUILD/batchreads.c"
	for part in "$BUILD"/batch[0-9][0-9] "$BUILD/batchreads"; do
		if ! "$latest" --target=x86_64-linux-gnu -O2 -g -fsanitize=kcfi -fsanitize-kcfi-arity -w \
			-include "$HERE/prelude.h" -c "$part.c" -o "$part.arity.o" 2>"$part.arity.err"; then
			bad="$bad; $latest rejected $part.c with -fsanitize-kcfi-arity: $(head -n 1 "$part.arity.err")"
			continue
		fi
		"$(tool llvm-objdump x86_64)" -d "$part.arity.o" | awk -v exec=0 -f "$HERE/objdump-ref.awk" |
			awk 'BEGIN { n = split("eax ecx edx ebx esp ebp esi edi", r, " "); for (i = 1; i <= n; i++) count[r[i]] = i - 1 }
				$1 == "R" && $4 ~ /^kcfi_fn_/ { print $4, ($3 in count) ? count[$3] : "?" }' >>"$BUILD/arity-clang.txt"
		"$KCFI" scan --json "$part.arity.o" | python3 -c '
import json, sys
d = json.load(sys.stdin)
if d["summary"].get("arity") is not True:
    print("summary-arity", d["summary"].get("arity"))
for f in d["functions"]:
    if f["name"].startswith("kcfi_fn_"):
        print(f["name"], f.get("arity"))' >>"$BUILD/arity-kcfi.txt"
	done
	# scan --types explains every arity that differs from the number of
	# C parameters, by the x86_64 calling convention.
	unexplained=0
	for part in "$BUILD"/batch[0-9][0-9] "$BUILD/batchreads"; do
		[ -f "$part.arity.o" ] || continue
		n=$("$KCFI" scan --types --json "$part.arity.o" |
			python3 -c 'import json, sys; print(json.load(sys.stdin)["summary"]["arity_against_prototype"]["unexplained"])')
		unexplained=$((unexplained + n))
	done
	[ "$unexplained" = 0 ] || bad="$bad; scan --types left $unexplained arities unexplained"
	# The same batch without the flag: an image without arity says so.
	no_arity=$("$KCFI" scan --json "$BUILD/batch00.x86_64.o" | python3 -c 'import json, sys; print(json.load(sys.stdin)["summary"].get("arity"))')
	[ "$no_arity" = False ] || bad="$bad; an object built without -fsanitize-kcfi-arity: summary arity $no_arity"
	diffs=$(diff <(sort "$BUILD/arity-clang.txt") <(sort "$BUILD/arity-kcfi.txt") | sed -n 1,10p || true)
	n=$(wc -l <"$BUILD/arity-clang.txt")
	kinds=$(awk '{ print $2 }' "$BUILD/arity-clang.txt" | sort -u | tr '\n' ' ')
	if [ -z "$bad" ] && [ -z "$diffs" ] && [ "$n" -eq "$((total + 9))" ] && [ "$kinds" = "0 1 2 3 4 5 6 7 " ]; then
		pass "scan arity: $n preambles of $latest -fsanitize-kcfi-arity, the register's count as llvm-objdump names it (arities seen: $kinds), every one that differs from the C parameters explained"
	else
		fail "scan arity: ${bad#; } $n of $((total + 9)) preambles compared, arities seen: $kinds; differences (< objdump, > kcfi): $diffs"
	fi
fi

# ---------------------------------------------------------------------------
# 1d. kcfi scan --types tells the hash of an image's ids from the ids: a
#     linked image from clang$LLVM_LATEST with its default hash and with
#     FNV-1a, each verified against the hash it names
# ---------------------------------------------------------------------------
if [ -n "$fnv1a_skip" ]; then
	echo "skip - scan --types hash: $fnv1a_skip"
elif command -v python3 >/dev/null; then
	cat >"$BUILD/hashes.c" <<-'C'
		struct hash_dev;
		int hash_add(int a, int b) { return a + b; }
		long hash_len(const char *s) { long n = 0; while (s[n]) n++; return n; }
		void hash_clear(int *p) { *p = 0; }
		int hash_open(struct hash_dev *d, unsigned int flags) { return d ? (int)flags : -1; }
		void *hash_at(void *p, unsigned long n) { return (char *)p + n; }
		void *hash_table[] = { hash_add, hash_len, hash_clear, hash_open, hash_at };
		void hash_entry(void) {}
	C
	bad="" seen=""
	for want in xxHash64 FNV-1a; do
		flags=()
		[ "$want" = xxHash64 ] || flags=(-Xclang "-fsanitize-kcfi-hash=$want")
		img=$BUILD/hashes-$want
		if ! "$latest" --target=x86_64-linux-gnu -O2 -g -fsanitize=kcfi "${flags[@]}" -ffreestanding \
			-c "$BUILD/hashes.c" -o "$img.o" 2>"$img.err" ||
			! "$(ld_for x86_64)" -e hash_entry "$img.o" -o "$img" 2>>"$img.err"; then
			bad="$bad; $want: $(head -n 2 "$img.err")"
			continue
		fi
		got=$("$KCFI" scan "$img" --types --json 2>"$img.err" | python3 -c '
import json, sys
t = json.load(sys.stdin)["summary"]["types"]
print(t["hash"], t["verified"], t["disagree"], ", ".join(f"{k} {v}" for k, v in t["hash_matches"].items()))') ||
			got="scan failed: $(head -n 1 "$img.err")"
		read -r name verified disagree matches <<<"$got"
		if [ "$name" != "$want" ] || ! [ "$verified" -gt 0 ] 2>/dev/null || [ "$disagree" != 0 ]; then
			bad="$bad; $want image: $got"
		fi
		line=$("$KCFI" scan "$img" --types | grep '^  hash of the ids: ' || true)
		[[ $line == "  hash of the ids:             $want ("* ]] || bad="$bad; $want image, text: '$line'"
		seen="$seen${seen:+; }$want: $verified verified, $disagree DISAGREE (preambles per hash: $matches)"
	done
	if [ -z "$bad" ]; then
		pass "scan --types names the hash of $latest's ids, default and FNV-1a: $seen"
	else
		fail "scan --types hash: ${bad#; }"
	fi
else
	echo "skip - scan --types hash: no python3"
fi

# --mangled hashes exactly the given name, with or without _ZTS.
if [ "$("$KCFI" hash --mangled FvPiE _ZTSFiPiE)" = "$(printf '0x7e0c52a5  _ZTSFvPiE\n0x3ad55aca  _ZTSFiPiE')" ]; then
	pass "hash --mangled, with and without _ZTS"
else
	fail "hash --mangled output"
fi
if out=$("$KCFI" hash -v 'void (struct foo *, struct foo *)') &&
	grep -qx '0x5baedfa3  _ZTSFvP3fooS0_E  void (struct foo \*, struct foo \*)' <<<"$out"; then
	pass "hash -v prints the mangled name"
else
	fail "hash -v output"
fi

# ---------------------------------------------------------------------------
# 2. kcfi scan agrees with llvm-objdump on every preamble and check site
# ---------------------------------------------------------------------------
objs=$BUILD/objs
mkdir -p "$objs"
build_obj() { # NAME TARGET CFLAGS...
	local name=$1 target=$2
	shift 2
	"$(cc_for "$target")" --target="$target-linux-gnu" -O2 -fsanitize=kcfi "$@" \
		-c "$HERE/sample.c" -o "$objs/$name.o"
}
build_obj x86-O2 x86_64
build_obj x86-O1-fs x86_64 -O1 -ffunction-sections
build_obj x86-pfe11 x86_64 -fpatchable-function-entry=11,11
build_obj x86-pfe16 x86_64 -fpatchable-function-entry=16,16 -ffunction-sections
build_obj a64-O2 aarch64
build_obj x86-O2-g x86_64 -g
build_obj a64-O1-fs aarch64 -O1 -ffunction-sections
build_obj a64-pfe2 aarch64 -fpatchable-function-entry=2
build_obj a64-pfe42 aarch64 -fpatchable-function-entry=4,2
build_rv_obj() { # NAME CFLAGS...
	local name=$1
	shift
	"$(cc_for riscv64)" --target=riscv64-linux-gnu -O2 -fsanitize=kcfi "$@" \
		-c "$HERE/sample.c" -o "$objs/$name.o"
}
# riscv64: with the C extension (rv64gc) and without (32-bit ebreak and
# calls; the target moves to t1, so the check loads into t3), with
# -fpatchable-function-entry prefixes of c.nops and of nops, and with the
# kernel's flags (arch/riscv/Makefile: no relaxation, 4 nops at the entry).
build_rv_obj rv-O2
build_rv_obj rv-O1-fs -O1 -ffunction-sections
build_rv_obj rv-norvc -march=rv64g
build_rv_obj rv-pfe42 -fpatchable-function-entry=4,2
build_rv_obj rv-norvc-pfe32 -march=rv64g -fpatchable-function-entry=3,2
build_rv_obj rv-kernel -march=rv64imac_zicsr_zifencei -mcmodel=medany -mno-relax -fno-pic \
	-mno-save-restore -fpatchable-function-entry=4
link() { # TARGET ARGS...
	local target=$1
	shift
	"$(ld_for "$target")" -e sample_entry --unresolved-symbols=ignore-all "$@"
}
link x86_64 "$objs/x86-O2.o" -o "$objs/x86-exec"
link aarch64 "$objs/a64-O1-fs.o" -o "$objs/a64-exec"
link x86_64 "$objs/x86-O2-g.o" -o "$objs/x86-g-exec"
# Big linked images from the prototype batches plus the sample.
link x86_64 "$objs/x86-O2.o" "$BUILD"/batch*.x86_64.o -o "$objs/x86-big-exec"
link aarch64 "$objs/a64-O2.o" "$BUILD"/batch*.aarch64.o -o "$objs/a64-big-exec"
link riscv64 "$objs/rv-O1-fs.o" -o "$objs/rv-exec"
link riscv64 "$objs/rv-kernel.o" --no-relax -o "$objs/rv-kernel-exec"
link riscv64 "$objs/rv-norvc.o" -o "$objs/rv-norvc-exec"
link riscv64 "$objs/rv-O2.o" "$BUILD"/batch*.riscv64.o -o "$objs/rv-big-exec"
# kcfi scan --types: the batches carry DWARF (-g), so every generated
# prototype is read back from it and hashes to clang's id; the sample's
# functions have none.
if command -v python3 >/dev/null; then
	for f in "$objs/x86-big-exec" "$objs/a64-big-exec" "$objs/rv-big-exec"; do
		if "$KCFI" scan "$f" --types --json >"$BUILD/types.json" 2>"$BUILD/types.err" &&
			out=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
fns = [f for f in d["functions"] if f["name"].startswith("kcfi_fn_")]
bad = [f["name"] + ": " + f["type_check"] + " " + str(f["prototype"]) for f in fns
       if not f["type_check"].startswith("verified")]
print(len(fns), d["summary"]["types"]["disagree"], *bad[:5])' "$BUILD/types.json") &&
			[ "$out" = "$total 0" ]; then
			pass "scan --types ${f##*/}: all $total generated prototypes read from DWARF hash to their preamble ids"
		else
			fail "scan --types ${f##*/}: $out $(head -c 300 "$BUILD/types.err")"
		fi
	done
fi
# The same from the relocatable batch objects: libdwfl applies the
# relocations of their DWARF, and each prototype is matched to its
# preamble by section and offset.
if command -v python3 >/dev/null; then
	for arch in x86_64 aarch64 riscv64; do
		n=0 bad=""
		for f in "$BUILD"/batch*."$arch".o; do
			if "$KCFI" scan "$f" --types --json >"$BUILD/types.json" 2>"$BUILD/types.err" &&
				out=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
fns = [f for f in d["functions"] if f["name"].startswith("kcfi_fn_")]
bad = [f["name"] + ": " + f["type_check"] for f in fns if not f["type_check"].startswith("verified")]
print(len(fns), d["summary"]["types"]["disagree"], *bad[:3])' "$BUILD/types.json"); then
				n=$((n + ${out%% *}))
				[ "${out#* }" = 0 ] || bad="$bad ${f##*/}: $out"
			else
				bad="$bad ${f##*/}: $(head -c 200 "$BUILD/types.err")"
			fi
		done
		if [ -z "$bad" ] && [ "$n" = "$total" ]; then
			pass "scan --types on the $arch batch objects (.o): all $total generated prototypes hash to their preamble ids"
		else
			fail "scan --types on the $arch batch objects: $n of $total read;$bad"
		fi
	done
fi
# kcfi func --types: the prototype it prints for a function hashes to
# the id it prints, in a linked image and in the object.
for f in "$objs/x86-g-exec" "$objs/x86-O2-g.o"; do
	if out=$("$KCFI" func "$f" dev_open vfs_open --types) &&
		[ "$(grep -c ' (verified)$' <<<"$out")" = 2 ] &&
		hashed=$(sed -E 's/^0x[0-9a-f]+  [a-z_]+  (.*) \(verified\)$/\1/' <<<"$out" | "$KCFI" hash -) &&
		[ "$(awk '{ print $1 }' <<<"$out")" = "$(awk '{ print $1 }' <<<"$hashed")" ]; then
		pass "func --types ${f##*/}: each prototype it prints hashes to the id it prints"
	else
		fail "func --types ${f##*/}: $out / ${hashed:-}"
	fi
done
# kcfi hash --image: the same prototypes, their typedef names (u32,
# irqreturn_t, ... from prelude.h) taken from the image's DWARF instead
# of the built-in table, hash to the same ids.
if "$KCFI" hash --image "$objs/x86-big-exec" - <"$BUILD/protos-hash-input.txt" >"$BUILD/image-ids.raw" 2>"$BUILD/image.err" &&
	cmp -s "$BUILD/image-ids.raw" "$BUILD/kcfi-ids.raw"; then
	pass "hash --image x86-big-exec: all $total prototypes, typedefs from DWARF, hash as without it"
else
	fail "hash --image: $(head -n 3 "$BUILD/image.err") $(diff "$BUILD/image-ids.raw" "$BUILD/kcfi-ids.raw" | sed -n 1,4p)"
fi
if ! "$KCFI" hash --image "$objs/x86-exec" 'void (int *)' >/dev/null 2>"$BUILD/image.err" &&
	grep -q "no DWARF" "$BUILD/image.err" && [ "$(wc -l <"$BUILD/image.err")" = 1 ]; then
	pass "hash --image on an image without DWARF: a one-line error"
else
	fail "hash --image without DWARF: $(cat "$BUILD/image.err")"
fi
# Types the generated prototypes do not spell: a qualified typedef'd
# array (clang qualifies its elements) and a definition without a
# prototype (its type has no parameters).
printf '%s\n' 'typedef int arr3_t[3];' 'void qarr(const arr3_t *p) { (void)p; }' \
	'int knr(a) int a; { return a; }' 'void *tbl[] = { qarr, knr };' 'void entry(void) {}' >"$BUILD/odd-types.c"
for target in x86_64 aarch64 riscv64; do
	if "$(cc_for "$target")" --target="$target-linux-gnu" -O2 -g -fsanitize=kcfi -ffreestanding -w \
		-c "$BUILD/odd-types.c" -o "$BUILD/odd-types.o" &&
		"$(ld_for "$target")" -e entry --unresolved-symbols=ignore-all "$BUILD/odd-types.o" -o "$BUILD/odd-types" &&
		out=$("$KCFI" scan "$BUILD/odd-types" --types) &&
		grep -q 'verified 3 of 3 ' <<<"$out"; then
		pass "scan --types $target: a const typedef'd array and a K&R definition hash to their ids"
	else
		fail "scan --types $target, odd types: $(grep -A3 'types from DWARF' <<<"$out")"
	fi
done
if ! "$KCFI" scan "$objs/x86-exec" --types >/dev/null 2>"$BUILD/types.err" &&
	grep -q "no DWARF" "$BUILD/types.err" && [ "$(wc -l <"$BUILD/types.err")" = 1 ]; then
	pass "scan --types on an image without DWARF: a one-line error"
else
	fail "scan --types without DWARF: $(cat "$BUILD/types.err")"
fi

# arm64 and riscv64 without mapping symbols: kcfi falls back to known ids.
# shellcheck disable=SC2016 # literal $d/$x symbol names
"$(tool llvm-objcopy arm64)" --wildcard --strip-symbol='$d*' --strip-symbol='$x*' \
	"$objs/a64-exec" "$objs/a64-exec-nomap"
# shellcheck disable=SC2016 # literal $d/$x symbol names
"$(tool llvm-objcopy riscv64)" --wildcard --strip-symbol='$d*' --strip-symbol='$x*' \
	"$objs/rv-exec" "$objs/rv-exec-nomap"

is_exec() { case $1 in *exec*) echo 1 ;; *) echo 0 ;; esac; }

compare_scan() { # FILE
	local f=$1 name=${1##*/} ex ref got nf ns
	ex=$(is_exec "$f")
	ref=$(objdump_ref "$f" "$ex" | { grep -E '^(F|S) ' || true; } | sort)
	got=$("$KCFI" scan "$f" | awk -f "$HERE/scan-text.awk" | sort)
	nf=$(grep -c '^F' <<<"$ref" || true)
	ns=$(grep -c '^S' <<<"$ref" || true)
	if [ "$nf" -gt 0 ] && [ "$ref" = "$got" ]; then
		pass "scan $name: $nf preambles and $ns check sites agree with llvm-objdump"
	else
		fail "scan $name: differs from llvm-objdump ($nf preambles, $ns sites in reference):"
		diff <(echo "$ref") <(echo "$got") | sed -n '1,10s/^/    /p' || true
	fi
}

for f in "$objs"/x86-* "$objs"/a64-exec "$objs"/a64-big-exec "$objs"/a64-O* "$objs"/a64-pfe* \
	"$objs"/rv-O* "$objs"/rv-norvc* "$objs"/rv-pfe* "$objs"/rv-kernel* "$objs"/rv-exec \
	"$objs"/rv-big-exec "$BUILD"/batch00.x86_64.o "$BUILD"/batch00.aarch64.o \
	"$BUILD"/batch00.riscv64.o; do
	compare_scan "$f"
done

# Without mapping symbols: exactly the preambles whose id a check site
# expects or a __kcfi_typeid_ symbol defines.
for f in "$objs/a64-exec" "$objs/rv-exec"; do
	ids=$({
		objdump_ref "$f" 1 | awk '$1 == "S" { print $3 }'
		"$(tool llvm-nm "$(arch_of "$f")")" "$f" | awk 'NF == 3 && $3 ~ /^__kcfi_typeid_/ { print substr($1, 9) }'
	} | sort -u)
	ref=$(objdump_ref "$f" 1 | grep -E '^(F|S) ' |
		awk -v ids="$ids" 'BEGIN { n = split(ids, v, "\n"); for (i = 1; i <= n; i++) ok[v[i]] = 1 }
			$1 == "S" || ok[$3]' | sort)
	got=$("$KCFI" scan "$f-nomap" | awk -f "$HERE/scan-text.awk" | sort)
	if [ -n "$ref" ] && [ "$ref" = "$got" ] && out=$("$KCFI" scan "$f-nomap") && grep -q 'no mapping symbols' <<<"$out"; then
		pass "scan ${f##*/}-nomap: known-id fallback finds exactly the $(grep -c '^F' <<<"$ref") reachable preambles"
	else
		fail "scan ${f##*/}-nomap: fallback differs:"
		diff <(echo "$ref") <(echo "$got") | sed -n '1,10s/^/    /p' || true
	fi
done

# x86_64 and riscv64: every check site is listed in .kcfi_traps, and
# nothing else is (in a riscv64 .o each entry is an ADD32/SUB32 pair);
# also when a linker script buries the table in .rodata between
# __start___kcfi_traps and __stop___kcfi_traps.
cat >"$BUILD/traps.lds" <<'EOF'
SECTIONS {
	.rodata : {
		*(.rodata .rodata.*)
		__start___kcfi_traps = .;
		KEEP(*(.kcfi_traps))
		__stop___kcfi_traps = .;
	}
}
EOF
link x86_64 "$objs/x86-O2.o" -T "$BUILD/traps.lds" -o "$objs/x86-lds-exec"
for f in "$objs"/x86-O2.o "$objs"/x86-pfe16.o "$objs"/x86-exec "$objs"/x86-lds-exec \
	"$objs"/rv-O2.o "$objs"/rv-O1-fs.o "$objs"/rv-kernel.o "$objs"/rv-exec "$objs"/rv-big-exec; do
	out=$("$KCFI" scan "$f")
	nsites=$(awk '/^check sites/ { print substr($3, 2) + 0 }' <<<"$out")
	if grep -q "\.kcfi_traps: *$nsites entries, $nsites sites listed, 0 entries without a site, 0 unresolved" <<<"$out" &&
		[ "$nsites" -gt 0 ]; then
		pass "scan ${f##*/}: all $nsites check sites are in .kcfi_traps"
	else
		fail "scan ${f##*/}: .kcfi_traps mismatch: $(grep kcfi_traps: <<<"$out")"
	fi
done

# __kcfi_typeid_ symbols: values from llvm-nm, and the ids kcfi hash gives.
h1=$("$KCFI" hash 'void (int *)' | cut -c3-10)
h2=$("$KCFI" hash 'int (struct file *, unsigned long)' | cut -c3-10)
for f in "$objs/x86-O2.o" "$objs/rv-O2.o"; do
	want=$("$(tool llvm-nm "$(arch_of "$f")")" "$f" | awk '/__kcfi_typeid_/ { print substr($1, 9), $3 }' | sort)
	got=$("$KCFI" scan "$f" | awk '/^__kcfi_typeid symbols/ { m = 1; next } /^$/ { m = 0 } m { print substr($1, 3), $2 }' | sort)
	if [ -n "$want" ] && [ "$want" = "$got" ] && grep -q "^$h1 __kcfi_typeid_ext_fn$" <<<"$got" &&
		grep -q "^$h2 __kcfi_typeid_ext_cb$" <<<"$got"; then
		pass "scan ${f##*/}: __kcfi_typeid_ symbols match llvm-nm and kcfi hash"
	else
		fail "scan ${f##*/}: __kcfi_typeid_ symbols: want [$want] got [$got] hash $h1 $h2"
	fi
done

# Address-taken functions without a preamble (relocatable files only).
for f in "$objs"/x86-O2.o "$objs"/x86-O1-fs.o "$objs"/a64-O2.o "$objs"/a64-pfe42.o \
	"$objs"/rv-O2.o "$objs"/rv-pfe42.o "$objs"/rv-kernel.o; do
	out=$("$KCFI" scan "$f")
	if grep -q 'address-taken without preamble: 1$' <<<"$out" && grep -q ' asm_untyped  (referenced from' <<<"$out"; then
		pass "scan ${f##*/}: reports asm_untyped as address-taken without preamble"
	else
		fail "scan ${f##*/}: address-taken detection: $(grep -A2 'address-taken' <<<"$out" | tr '\n' ' ')"
	fi
done

# Typed assembly (SYM_TYPED_FUNC_START): in its own .o the id is a
# relocation against an undefined __kcfi_typeid_; after `ld -r` with the C
# object that defines it (as in a .ko), kcfi resolves it.
want=$("$KCFI" hash 'void (long)' | cut -c1-10)
printf 'extern void asm_typed2(long);\nvoid (*const typed2_ref)(long) = asm_typed2;\n' >"$BUILD/ids.c"
for target in x86_64 aarch64 riscv64; do
	"$(cc_for "$target")" --target="$target-linux-gnu" -c "$HERE/typed-$target.s" -o "$objs/typed-$target.o"
	"$(cc_for "$target")" --target="$target-linux-gnu" -O2 -fsanitize=kcfi -c "$BUILD/ids.c" -o "$BUILD/ids-$target.o"
	"$(ld_for "$target")" -r "$objs/typed-$target.o" "$BUILD/ids-$target.o" -o "$objs/typed-ko-$target.o"
	if out=$("$KCFI" scan "$objs/typed-$target.o") &&
		grep -q '  ?  *asm_typed2  (id from __kcfi_typeid_asm_typed2, undefined here)$' <<<"$out" &&
		out=$("$KCFI" scan "$objs/typed-ko-$target.o") &&
		grep -q "  $want  asm_typed2  (id from __kcfi_typeid_asm_typed2)\$" <<<"$out"; then
		pass "scan $target typed asm: id via __kcfi_typeid_ relocation (undefined alone, $want after ld -r)"
	else
		fail "scan $target typed asm: $("$KCFI" scan "$objs/typed-ko-$target.o" | grep asm_typed2 | sed -n 1p)"
	fi
done

# --json is valid JSON and has the same counts.
json_tool=""
if command -v jq >/dev/null; then
	json_tool="jq ."
elif command -v python3 >/dev/null; then
	json_tool="python3 -m json.tool"
fi
for f in "$objs"/x86-O2.o "$objs"/a64-big-exec "$objs"/rv-O2.o "$objs"/rv-big-exec; do
	j=$("$KCFI" scan --json "$f")
	nf=$(grep -c '"evidence": ' <<<"$j" || true)
	ns=$(grep -c '"trap": ' <<<"$j" || true)
	tf=$("$KCFI" scan "$f" | awk -f "$HERE/scan-text.awk" | grep -c '^F' || true)
	ts=$("$KCFI" scan "$f" | awk -f "$HERE/scan-text.awk" | grep -c '^S' || true)
	if [ -n "$json_tool" ] && ! $json_tool <<<"$j" >/dev/null 2>&1; then
		fail "scan --json ${f##*/}: not valid JSON"
	elif [ "$nf" -eq "$tf" ] && [ "$ns" -eq "$ts" ]; then
		pass "scan --json ${f##*/}: ${json_tool:+valid JSON, }$nf functions, $ns sites"
	else
		fail "scan --json ${f##*/}: $nf/$ns entries vs text $tf/$ts"
	fi
done

# kcfi site: the functions listed are exactly those with the site's id.
for f in "$objs"/x86-O2.o "$objs"/a64-exec "$objs"/rv-O2.o "$objs"/rv-exec; do
	ex=$(is_exec "$f")
	ref=$(objdump_ref "$f" "$ex")
	bad=0
	nsites=0
	while read -r _ loc id _; do
		nsites=$((nsites + 1))
		if [ "$ex" = 1 ]; then where=0x$loc; else where=${loc%%:*}+0x${loc#*:}; fi
		want=$(awk -v id="$id" '$1 == "F" && $3 == id { print $4 }' <<<"$ref" | sort)
		out=$("$KCFI" site "$f" "$where") || { bad=1; echo "    site $where failed"; continue; }
		got=$(awk '/^  may call/ { m = 1; next } m && /^    / { print $2 }' <<<"$out" | sort)
		if ! grep -q "expected type id: 0x$id" <<<"$out" || [ "$want" != "$got" ]; then
			bad=1
			echo "    site $where: want [$want] got [$got]"
		fi
		# The SYMBOL+OFF form kcfi prints must lead back to the same site.
		symoff=$(sed -n 's/^check site: trap at [^ ]* (\(.*\))$/\1/p' <<<"$out")
		if [ -n "$symoff" ] && ! { symout=$("$KCFI" site "$f" "$symoff") && grep -q "expected type id: 0x$id" <<<"$symout"; }; then
			bad=1
			echo "    site $symoff: not found"
		fi
	done < <(grep '^S ' <<<"$ref")
	if [ "$bad" = 0 ] && [ "$nsites" -gt 0 ]; then
		pass "site ${f##*/}: $nsites sites list exactly the functions with their id"
	else
		fail "site ${f##*/}: wrong targets"
	fi
done

# kcfi func: the ids llvm-objdump shows in front of each function; none
# for a function without a preamble; an error for a name that is none.
for f in "$objs"/x86-O2.o "$objs"/a64-exec "$objs"/rv-O2.o "$objs"/rv-exec; do
	ex=$(is_exec "$f")
	want=$(objdump_ref "$f" "$ex" | awk '$1 == "F" { print "0x" $3, $4 }' | sort -u)
	mapfile -t fnames < <(awk '{ print $2 }' <<<"$want" | sort -u)
	got=$("$KCFI" func "$f" "${fnames[@]}" | awk '{ print $1, $2 }' | sort -u)
	if [ -n "$want" ] && [ "$want" = "$got" ]; then
		pass "func ${f##*/}: the ids of ${#fnames[@]} functions agree with llvm-objdump"
	else
		fail "func ${f##*/}: differs from llvm-objdump:"
		diff <(echo "$want") <(echo "$got") | sed -n '1,10s/^/    /p' || true
	fi
done
rc=0
"$KCFI" func "$objs/x86-O2.o" no_such_function >/dev/null 2>"$BUILD/err" || rc=$?
if [ "$("$KCFI" func "$objs/x86-O2.o" asm_untyped)" = "none        asm_untyped" ] && [ "$rc" = 1 ] &&
	[ "$(cat "$BUILD/err")" = "kcfi: func: no symbol named 'no_such_function' in the code of $objs/x86-O2.o" ]; then
	pass "func: none for a function without a preamble, exit 1 for no function"
else
	fail "func: asm_untyped or no_such_function (exit $rc): $("$KCFI" func "$objs/x86-O2.o" asm_untyped 2>&1) $(cat "$BUILD/err")"
fi

# kcfi site --json (valid JSON, the id of the text form, a check that
# ends with its trap), kcfi decode of each check's bytes with code around
# them (as gdb reads memory), and decode --preamble of the bytes before
# each entry: all against llvm-objdump, one Python an image.
if command -v python3 >/dev/null; then
	for f in "$objs"/x86-exec "$objs"/a64-exec "$objs"/rv-exec "$objs"/rv-kernel-exec; do
		case ${f##*/} in
		a64-*) arch=arm64 ;;
		rv-*) arch=riscv64 ;;
		*) arch=x86_64 ;;
		esac
		"$(tool llvm-objcopy "$arch")" -O binary --only-section=.text "$f" "$BUILD/text.bin"
		objdump_ref "$f" 1 >"$BUILD/ref.txt"
		python3 "$HERE/check-json.py" "$KCFI" "$f" "$arch" "$BUILD/text.bin" \
			<"$BUILD/ref.txt" >"$BUILD/check-json.out" 2>&1 || true
		results=0
		while IFS= read -r line; do
			case "$line" in
			"pass: "*) pass "${line#pass: }" && results=$((results + 1)) ;;
			"fail: "*) fail "${line#fail: }" && results=$((results + 1)) ;;
			*) echo "$line" ;;
			esac
		done <"$BUILD/check-json.out"
		[ "$results" = 3 ] || fail "check-json.py ${f##*/}: $results results of 3"
	done
fi

for f in "$objs/x86-O2.o" "$objs/rv-O2.o"; do
	if [ "$("$KCFI" site "$f" many | grep -c '^check site')" = 5 ]; then
		pass "site ${f##*/} SYMBOL lists all 5 check sites in many()"
	else
		fail "site ${f##*/} SYMBOL: expected 5 sites in many()"
	fi
done

# ---------------------------------------------------------------------------
# 3. explain round trips on bytes and brk immediates from compiled objects
# ---------------------------------------------------------------------------
records=$(for f in "$objs"/*; do objdump_ref "$f" 0; done)
bad=0
n=0
forms=""
while read -r _ id reg creg bytes; do
	n=$((n + 1))
	out=$("$KCFI" explain --arch x86_64 "$bytes") || { bad=1; echo "    explain '$bytes' failed"; continue; }
	if ! grep -q "^expected type id: 0x$id " <<<"$out" || ! grep -q "^target register: %$reg " <<<"$out"; then
		bad=1
		echo "    explain '$bytes': want id $id reg $reg"
	fi
	out=$("$KCFI" decode --arch x86_64 --json "$bytes") || { bad=1; echo "    decode '$bytes' failed"; continue; }
	if ! grep -q "\"check_register\": \"$creg\"" <<<"$out"; then
		bad=1
		echo "    decode '$bytes': want check_register $creg: $out"
	fi
	forms="$forms $reg/$creg"
done < <(grep '^XB ' <<<"$records" | sort -u)
# The objects hold the rarer forms too (sample.c's call_via_r12/_r10).
case "$forms" in *" r12/r10"*) ;; *) bad=1 && echo "    no check with its target in %r12" ;; esac
case "$forms" in *" r10/r11"*) ;; *) bad=1 && echo "    no check computing in %r11d" ;; esac
if [ "$bad" = 0 ] && [ "$n" -gt 0 ]; then
	pass "explain x86_64: $n check sequences (%r12 and %r11d forms among them) decode to objdump's id and registers"
else
	fail "explain x86_64 round trip"
fi
bad=0
n=0
while read -r _ brk reg treg _; do
	n=$((n + 1))
	for value in "0x$brk" "$(printf '0x%08x' $((0xf2000000 | 16#$brk)))"; do
		out=$("$KCFI" explain --arch arm64 "$value") || { bad=1; echo "    explain $value failed"; continue; }
		if ! grep -q "^target register: $reg " <<<"$out" || ! grep -q "^type register: $treg " <<<"$out"; then
			bad=1
			echo "    explain $value: want $reg $treg"
		fi
	done
done < <(grep '^AB ' <<<"$records" | sort -u)
if [ "$bad" = 0 ] && [ "$n" -gt 0 ]; then
	pass "explain arm64: $n brk immediates (and their ESRs) decode to objdump's registers"
else
	fail "explain arm64 round trip"
fi
# riscv64: explain and decode the bytes of each check with its call, in
# every form the objects hold: the six shapes of the expected id
# (sample.c's shape_*), t3 in place of t1 or t2, 32-bit ebreak and calls.
bad=0
n=0
forms=""
while read -r _ id reg lreg treg bytes; do
	n=$((n + 1))
	out=$("$KCFI" explain --arch riscv64 "$bytes") || { bad=1; echo "    explain '$bytes' failed"; continue; }
	if ! grep -q "^expected type id: 0x$id " <<<"$out" || ! grep -q "^target register: $reg " <<<"$out" ||
		! grep -q "^compared: $lreg (the callee's id) with $treg " <<<"$out"; then
		bad=1
		echo "    explain '$bytes': want id $id, target $reg, $lreg with $treg"
	fi
	out=$("$KCFI" decode --arch riscv64 --json "$bytes") || { bad=1; echo "    decode '$bytes' failed"; continue; }
	if ! grep -q "\"type_id\": \"0x$id\".*\"load_register\": \"$lreg\", \"type_register\": \"$treg\"" <<<"$out"; then
		bad=1
		echo "    decode '$bytes': want $id $lreg $treg: $out"
	fi
	forms="$forms $id/$lreg/$treg/$(wc -w <<<"$bytes")"
done < <(grep '^RB ' <<<"$records" | sort -u)
# An oops' Code: line, as riscv's dump_instr() prints one: 16-bit words,
# epc's in parentheses.  From a check that ends c.ebreak, then a 2-byte call.
read -r _ id _ _ _ bytes < <(grep '^RB ' <<<"$records" | grep -E ' 02 90 [0-9a-f]{2} [0-9a-f]{2}$' | sed -n 1p)
line=$(awk '{ n = NF / 2; s = "Code:"; for (i = 1; i <= n; i++) { w = $(2 * i) $(2 * i - 1); s = s " " (i == n - 1 ? "(" w ")" : w) } print s }' <<<"$bytes")
if out=$("$KCFI" explain --arch riscv64 "$line") && grep -q "^expected type id: 0x$id " <<<"$out" &&
	grep -q "^epc (the Code: line's halfword in parentheses) is this check's ebreak" <<<"$out"; then
	pass "explain riscv64 reads an oops Code: line of 16-bit words: $line"
else
	fail "explain riscv64 Code: line '$line': $out"
fi
for want in c0d9cff5/ b5834000/ fffee2cc/ 00018b87/ ffffc00a/ 00000472/ /t3/t2/ /t1/t3/ /t3/t2/24; do
	case "$forms" in *" "*"$want"*) ;; *) bad=1 && echo "    no check of the form $want" ;; esac
done
if [ "$bad" = 0 ] && [ "$n" -gt 0 ]; then
	pass "explain riscv64: $n check sequences (every id shape, t3, 32-bit forms among them) decode to objdump's id and registers"
else
	fail "explain riscv64 round trip"
fi
if out=$("$KCFI" explain --arch x86_64 'Code: 90 90 41 ba 5b ad f3 81 45 03 53 fc 74 02 <0f> 0b ff e0') &&
	grep -q '^expected type id: 0x7e0c52a5 ' <<<"$out"; then
	pass "explain x86_64 finds the check inside an oops Code: line"
else
	fail "explain x86_64 with leading bytes and <> marks"
fi
# x86_64 with FineIBT (6.16+): the kernel patches each check's je; ud2
# (74 02 0f 0b) into jne .+1; test $0xd6, %al (75 01 a8 d6) at boot, as
# gdb reads it from a live kernel.  Every compiled check, so patched, is
# the same check, trapping on the d6 (udb) one byte before its end.
bad=0
n=0
forms=""
while read -r _ id reg creg bytes; do
	case "$bytes" in *" 74 02 0f 0b") ;; *) continue ;; esac
	n=$((n + 1))
	patched="${bytes% 74 02 0f 0b} 75 01 a8 d6"
	len=$(wc -w <<<"$patched")
	out=$("$KCFI" decode --arch x86_64 --json "90 $patched cc") || { bad=1; echo "    decode '$patched' failed"; continue; }
	if ! grep -q "\"offset\": 1, \"length\": $len, \"trap_offset\": $((len)), \"trap_instruction\": \"udb\", \"type_id\": \"0x$id\", \"target_register\": \"$reg\".*\"check_register\": \"$creg\"" <<<"$out"; then
		bad=1
		echo "    decode '$patched': want udb at +$len, id $id, $reg/$creg: $out"
	fi
	out=$("$KCFI" explain --arch x86_64 "$patched") || { bad=1; echo "    explain '$patched' failed"; continue; }
	if ! grep -q "^expected type id: 0x$id " <<<"$out" || ! grep -q "^target register: %$reg " <<<"$out" ||
		! grep -q '^  75 01  .* jne .+1 .*; trap on a mismatch' <<<"$out" ||
		! grep -q '^  a8 d6  .* test [$]0xd6, %al .*; its d6 byte is udb: the trap' <<<"$out" ||
		grep -q 'ud2' <<<"$out"; then
		bad=1
		echo "    explain '$patched': want id $id reg $reg, jne and udb lines: $out"
	fi
	forms="$forms $reg/$creg"
done < <(grep '^XB ' <<<"$records" | sort -u)
case "$forms" in *" r12/r10"*) ;; *) bad=1 && echo "    no patched check with its target in %r12" ;; esac
case "$forms" in *" r10/r11"*) ;; *) bad=1 && echo "    no patched check computing in %r11d" ;; esac
if [ "$bad" = 0 ] && [ "$n" -gt 0 ]; then
	pass "decode/explain x86_64 FineIBT-patched: $n check sequences with jne .+1; test \$0xd6, %al (udb) in place of je; ud2 decode to objdump's id and registers, trap on the d6"
else
	fail "decode/explain x86_64 FineIBT-patched (udb) round trip"
fi
# The same three forms as bytes, from a live 7.3 kernel: %r11, %r12 (the
# addl's SIB byte: 15 bytes) and %r10 (computing in %r11d).
bad=""
for want in "41 ba 5b ad f3 81 45 03 53 f1 75 01 a8 d6|14|r11|r10" \
	"41 ba 5b ad f3 81 45 03 54 24 f1 75 01 a8 d6|15|r12|r10" \
	"41 bb 5b ad f3 81 45 03 5a f1 75 01 a8 d6|14|r10|r11"; do
	IFS='|' read -r bytes len reg creg <<<"$want"
	out=$("$KCFI" decode --arch x86_64 --json "$bytes") || { bad="$bad; decode '$bytes' failed"; continue; }
	[ "$out" = "{\"arch\": \"x86_64\", \"offset\": 0, \"length\": $len, \"trap_offset\": $((len - 1)), \"trap_instruction\": \"udb\", \"type_id\": \"0x7e0c52a5\", \"target_register\": \"$reg\", \"type_id_from\": -15, \"check_register\": \"$creg\"}" ] ||
		bad="$bad; decode '$bytes': $out"
	out=$("$KCFI" decode --arch x86_64 "$bytes") || { bad="$bad; decode '$bytes' (text) failed"; continue; }
	[ "$out" = "check at +0, $len bytes: expected type id 0x7e0c52a5, target in $reg (its id read from $reg-15), trap at +$((len - 1))" ] ||
		bad="$bad; decode '$bytes' (text): $out"
	out=$("$KCFI" explain --arch x86_64 "$bytes") || { bad="$bad; explain '$bytes' failed"; continue; }
	grep -q '^  a8 d6  .* test [$]0xd6, %al .*; its d6 byte is udb: the trap, regs->ip points here (the kernel looks up ip - 1 in .kcfi_traps)$' <<<"$out" &&
		grep -q "^expected type id: 0x7e0c52a5 " <<<"$out" && grep -q "^target register: %$reg " <<<"$out" ||
		bad="$bad; explain '$bytes': $out"
done
rc=0
"$KCFI" decode --arch x86_64 --json '41 ba 5b ad f3 81 45 03 53 f1 75 02 a8 d6' >/dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] || bad="$bad; jne .+2 decoded as a check (exit $rc)"
out=$("$KCFI" decode --arch x86_64 --json '41 ba 5b ad f3 81 45 03 53 fc 74 02 0f 0b')
grep -q '"trap_offset": 12, "trap_instruction": "ud2"' <<<"$out" || bad="$bad; je; ud2: $out"
if [ -z "$bad" ]; then
	pass "decode/explain x86_64: a live 7.3 kernel's udb checks (%r11, %r12 with SIB, %r10) at 14/15 bytes, trap offset on the d6; jne other than .+1 is no check"
else
	fail "decode/explain x86_64 udb bytes${bad}"
fi
# And as an image (a live FineIBT kernel's memory): x86-exec with those
# checks patched.  Their sites trap on the d6, and are still the ones
# .kcfi_traps lists (at ip - 1, where the ud2 was).
if command -v python3 >/dev/null; then
	patched=$(grep '^XB ' <<<"$records" | sort -u | python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
n = 0
for line in sys.stdin:
    b = bytes.fromhex("".join(line.split()[4:]))
    if b.endswith(b"\x74\x02\x0f\x0b") and b in d:
        n += d.count(b)
        d = d.replace(b, b[:-4] + b"\x75\x01\xa8\xd6")
open(sys.argv[2], "wb").write(d)
print(n)' "$objs/x86-exec" "$BUILD/x86-exec-udb")
	count='import json, sys; s = json.load(sys.stdin)["check_sites"]; print(len(s), sum(x["in_kcfi_traps"] is True for x in s))'
	want=$("$KCFI" scan --json "$objs/x86-exec" | python3 -c "$count")
	got=$("$KCFI" scan --json "$BUILD/x86-exec-udb" | python3 -c "$count")
	udb=$("$KCFI" site "$BUILD/x86-exec-udb" vfs_open | grep -c '^  trap: *udb, listed in .kcfi_traps$' || true)
	if [ "$patched" -gt 0 ] && [ "$got" = "$want" ] && [ "${want% *}" = "${want#* }" ] && [ "$udb" -gt 0 ]; then
		pass "scan/site x86-exec with $patched checks FineIBT-patched (udb): sites and .kcfi_traps still agree ($got), site says udb"
	else
		fail "scan x86-exec FineIBT-patched ($patched checks): sites/listed $got, want $want; site vfs_open udb lines: $udb"
	fi
fi

# ---------------------------------------------------------------------------
# 4. Malformed input: one-line error, exit 1, no crash (also under ASan)
# ---------------------------------------------------------------------------
bad=$BUILD/bad
mkdir -p "$bad"
good=$objs/x86-O2.o
size=$(wc -c <"$good")
: >"$bad/empty"
for n in 1 4 16 63 64 100 $((size / 2)) $((size - 1)); do
	head -c "$n" "$good" >"$bad/trunc-$n"
done
"$TOOLS/mutate" random "$bad/random-4k" 4096 7
"$TOOLS/mutate" random "$bad/random-64" 64 8
printf '\177ELF' >"$bad/magic-only"
printf 'hello, world\n' >"$bad/text"
# Objects of targets kcfi does not read, from x86_64's clang.
echo 'int ppc(int x) { return x + 1; }' | "$(cc_for x86_64)" --target=powerpc64le-linux-gnu -x c -c - -o "$bad/ppc64le.o"
"$(cc_for x86_64)" --target=i386-linux-gnu -c "$HERE/sample.c" -o "$bad/i386.o"
"$(cc_for x86_64)" --target=aarch64_be-linux-gnu -c "$HERE/sample.c" -o "$bad/aarch64_be.o"
mkdir -p "$bad/a-directory"

expect_error() { # EXIT CMD... : exit code EXIT, one stderr line "kcfi: ...", no crash
	local want=$1 rc=0 err
	shift
	"$@" >"$BUILD/out" 2>"$BUILD/err" || rc=$?
	err=$(cat "$BUILD/err")
	if [ "$rc" -ne "$want" ]; then
		echo "exit $rc (want $want): $err"
	elif [ "$want" = 1 ] && { [ "$(wc -l <"$BUILD/err")" -ne 1 ] || [[ $err != "kcfi: "* ]]; }; then
		echo "not a one-line error: $err"
	elif [ "$want" = 2 ] && [[ $err != "kcfi: "*usage:* ]]; then
		echo "no error and usage: $err"
	fi
}

for f in "$bad"/* "$bad/does-not-exist"; do
	for bin in "$KCFI" ${KCFI_ASAN:+"$KCFI_ASAN"}; do
		problem=$(expect_error 1 "$bin" scan "$f")
		if [ -z "$problem" ]; then
			pass "scan ${f##*/}$([ "$bin" = "$KCFI" ] || echo " (ASan)"): $(head -c 90 "$BUILD/err")"
		else
			fail "scan ${f##*/} (${bin##*/}): $problem"
		fi
	done
done

# Corrupted copies of real objects: exit 0 or 1 with a one-line error, and
# no sanitizer report when the scanner runs over them in-process.
for src in x86-O2.o a64-O2.o x86-O2-g.o x86-exec x86-g-exec rv-O2.o rv-exec; do
	mkdir -p "$bad/mut-$src"
	"$TOOLS/mutate" elf "$objs/$src" "$bad/mut-$src" "$MUTANTS" 99
	crashes=0
	errors=0
	# With DWARF, their corrupted copies go through libdw (and, for the
	# object, libdwfl's relocation) too.
	types=()
	case "$src" in x86-g-exec | x86-O2-g.o) types=(--types) ;; esac
	for m in "$bad/mut-$src"/*; do
		rc=0
		"$KCFI" scan "$m" "${types[@]}" >/dev/null 2>"$BUILD/err" || rc=$?
		if [ "$rc" -gt 1 ] || { [ "$rc" = 1 ] && [ "$(wc -l <"$BUILD/err")" -ne 1 ]; }; then
			crashes=$((crashes + 1))
			echo "    $m: exit $rc: $(head -n 3 "$BUILD/err")"
		fi
		[ "$rc" = 0 ] || errors=$((errors + 1))
	done
	if [ "$crashes" = 0 ]; then
		pass "scan: $MUTANTS corrupted copies of $src: no crash ($errors rejected with one line)"
	else
		fail "scan: $crashes crashes on corrupted copies of $src"
	fi
done
if out=$("$TOOLS/replay-elf" "$bad"/* "$bad"/mut-*/* "$objs"/* 2>&1); then
	pass "ASan/UBSan: scanner and reports over all bad and good images: $(tail -n 1 <<<"$out")"
else
	fail "ASan/UBSan replay: $(grep -m 3 -E 'ERROR|runtime error' <<<"$out")"
fi
if out=$("$TOOLS/replay-bytes" "$HERE"/../fuzz/corpus-bytes/* "$HERE"/../fuzz/corpus-proto/* "$objs"/* 2>&1); then
	pass "ASan/UBSan: the byte parser and check decoders over seeds and objects: $(tail -n 1 <<<"$out")"
else
	fail "ASan/UBSan replay (bytes): $(grep -m 3 -E 'ERROR|runtime error|abort' <<<"$out")"
fi

# Bad prototypes and garbage lines: one error per line, no crash.
problem=$(expect_error 1 "$KCFI" hash 'void (int')
if [ -z "$problem" ] && grep -qx "kcfi: hash: cannot parse 'void (int': expected ')' but found end of input" "$BUILD/err"; then
	pass "hash: unparsable prototype -> one-line error, exit 1"
else
	fail "hash: unparsable prototype: $problem $(cat "$BUILD/err")"
fi
"$TOOLS/mutate" random "$BUILD/garbage" 20000 11
{
	tr -c '[:print:]\n' ' ' <"$BUILD/garbage" | fold -w 60
	# Prototypes with characters dropped.
	awk 'NR % 3 == 0 { print substr($0, 1, NR % length($0)) substr($0, NR % length($0) + 2) }' "$protos"
} >"$BUILD/bad-protos.txt"
for bin in "$KCFI" ${KCFI_ASAN:+"$KCFI_ASAN"}; do
	rc=0
	"$bin" hash - <"$BUILD/bad-protos.txt" >"$BUILD/out" 2>"$BUILD/err" || rc=$?
	nlines=$(grep -cv '^[[:space:]]*\(#.*\)\?$' "$BUILD/bad-protos.txt" || true)
	nout=$(($(wc -l <"$BUILD/out") + $(grep -c "^kcfi: hash: cannot parse '" "$BUILD/err" || true)))
	if [ "$rc" -le 1 ] && [ "$nout" -eq "$nlines" ]; then
		pass "hash ${bin##*/}: $nlines garbage/mangled lines, one result or error each, no crash"
	else
		fail "hash ${bin##*/}: exit $rc, $nout results for $nlines lines: $(grep -v 'cannot parse' "$BUILD/err" | sed -n 1,3p)"
	fi
done

for args in "--arch arm64 zz" "--arch arm64 0x800" "--arch arm64 0x96000045" \
	"--arch arm64 0x123456789" "--arch x86_64 41 ba 5b" "--arch x86_64 q1" \
	"--arch x86_64 90 90 90"; do
	# shellcheck disable=SC2086 # split the argument list on purpose
	problem=$(expect_error 1 "$KCFI" explain $args)
	if [ -z "$problem" ]; then pass "explain $args -> $(cat "$BUILD/err")"; else fail "explain $args: $problem"; fi
done
problem=$(expect_error 1 "$KCFI" site "$objs/x86-O2.o" 0x3)
if [ -z "$problem" ]; then pass "site: no check site at an address -> exit 1"; else fail "site 0x3: $problem"; fi

# ---------------------------------------------------------------------------
# 5. Command-line errors: exit 2 with usage; --help: exit 0
# ---------------------------------------------------------------------------
usage_cases=(
	""
	"bogus"
	"--bogus"
	"scan"
	"scan --bogus $good"
	"scan $good $good"
	"hash"
	"hash --bogus"
	"site $good"
	"site --bogus $good x"
	"explain 0x8222"
	"explain --arch"
	"explain --arch mips 0x1"
	"explain --arch arm64"
	"func $good"
	"func --bogus $good x"
	"decode 41 ba"
	"decode --arch"
	"decode --arch mips 41"
	"decode --arch x86_64"
	"decode --arch x86_64 --preamble"
)
for args in "${usage_cases[@]}"; do
	# shellcheck disable=SC2086 # split the argument list on purpose
	problem=$(expect_error 2 "$KCFI" $args)
	if [ -z "$problem" ]; then pass "usage error: kcfi $args -> exit 2"; else fail "kcfi $args: $problem"; fi
done
for args in "--help" "help" "hash --help" "scan --help" "site -h" "explain --help" "func --help" "decode -h"; do
	# shellcheck disable=SC2086 # split the argument list on purpose
	if out=$("$KCFI" $args) && grep -q '^usage: kcfi' <<<"$out"; then
		pass "kcfi $args prints usage, exit 0"
	else
		fail "kcfi $args"
	fi
done

# ---------------------------------------------------------------------------
# 6. The lab's gdb commands (gdb-scripts/kcfi.py) over the linked images,
#    without a guest: gdb reads the code from the file, a stand-in for
#    ./run.sh runs this kcfi, and kcfi-explain gets its registers from a
#    stub.  The arch files are the lab's (lab/arch/*.conf), with a
#    stand-in for an arch the checkout has none for.
# ---------------------------------------------------------------------------
gdb_script=$(realpath "$HERE/../../../gdb-scripts/kcfi.py" 2>/dev/null || true)
if ! command -v gdb-multiarch >/dev/null || [ ! -f "$gdb_script" ]; then
	echo "# skipped: the gdb commands (no gdb-multiarch or no gdb-scripts/kcfi.py)"
else
	root=$BUILD/gdbroot
	mkdir -p "$root/gdb-scripts" "$root/lab/arch" "$root/lab/kernel"
	cp "$gdb_script" "$root/gdb-scripts/"
	cp "${gdb_script%/gdb-scripts/kcfi.py}"/lab/arch/*.conf "$root/lab/arch/"
	[ -f "$root/lab/arch/riscv64.conf" ] ||
		printf '%s\n' gdb_arch=riscv:rv64 'check_registers=@load:target type,@type:expected type' \
			untyped_target=word cfi_handler=handle_cfi_failure >"$root/lab/arch/riscv64.conf"
	echo default=yes >"$root/lab/kernel/test.conf"
	# shellcheck disable=SC2016 # the stand-in's own $1 and $@
	printf '#!/bin/sh\n[ "$1" = kcfi ] || exit 2\nshift\nexec "%s" "$@"\n' "$KCFI" >"$root/run.sh"
	chmod +x "$root/run.sh"
	for f in "$objs"/x86-exec "$objs"/a64-exec "$objs"/rv-exec "$objs"/rv-kernel-exec "$objs"/rv-norvc-exec; do
		name=${f##*/}
		ref=$(objdump_ref "$f" 1)
		dev=$(awk '$1 == "F" && $4 == "dev_open" { print $3 }' <<<"$ref")
		bad=""
		for fn in vfs_release sort2 call_via_t1; do
			range=$("$(tool llvm-nm "$(arch_of "$f")")" -S "$f" | awk -v fn="$fn" '$4 == fn { print $1, $2 }')
			[ -n "$range" ] || continue
			read -r lo size <<<"$range"
			# The site in FN: objdump's trap, id and target register.
			read -r _ trap id reg < <(awk -v lo=$((16#$lo)) -v hi=$((16#$lo + 16#$size)) \
				'$1 == "S" { a = 0; n = split($2, d, ""); for (i = 1; i <= n; i++) a = a * 16 + index("0123456789abcdef", d[i]) - 1
				  if (a >= lo && a < hi) print }' <<<"$ref")
			[ -n "${trap:-}" ] || { bad="$bad; no site in $fn"; continue; }
			cat >"$BUILD/gdb-fake.py" <<-PY
				import __main__ as k
				import gdb
				regs = {"pc": 0x$trap, "$reg": k.address_of("dev_open")}
				k.reg = lambda name: regs.get(name, 0)
				gdb.execute("kcfi-explain")
				site = k.find_site(0x$trap - 32, 40)
				print("REGS", " ".join(r for r, _ in k.check_registers(site)),
				      " ".join(site["registers"].get(x, "-") for x in ("check", "load", "type")))
			PY
			out=$(cd "$BUILD" && timeout 120 gdb-multiarch -batch -nx -iex 'set auto-load no' \
				-ex "file $f" -ex "source $root/gdb-scripts/kcfi.py" -ex "kcfi-site $fn" \
				-ex "kcfi-preamble dev_open" -x "$BUILD/gdb-fake.py" 2>&1) || true
			grep -Eq "^check at 0x[0-9a-f]+ \\($fn( \\+ [0-9]+)?\\): expected type 0x$id, target in $reg, trap at 0x$trap\$" <<<"$out" ||
				bad="$bad; kcfi-site $fn"
			grep -Eq "^dev_open at 0x[0-9a-f]+: type id 0x$dev " <<<"$out" || bad="$bad; kcfi-preamble dev_open"
			grep -q "^expected type 0x$id; target $reg = 0x[0-9a-f]* (dev_open)\$" <<<"$out" &&
				grep -q "^the target's own type: 0x$dev\$" <<<"$out" || bad="$bad; kcfi-explain at $fn"
			# What kcfi-step-to-trap prints: the registers the check compared,
			# as the arch file names them, which for @ROLE is the tool's.
			regs=$(sed -n 's/^REGS //p' <<<"$out")
			case "$name:$regs" in
			x86-*:"r1"[01]" r1"[01]" - -" | a64-*:"w16 w17 - - -") ;;
			rv-*)
				read -r r1 r2 _ load type <<<"$regs"
				[ "$r1 $r2" = "$load $type" ] && [ "$load" != "$reg" ] ||
					bad="$bad; $fn compares $load with $type, the arch file names $r1 and $r2"
				;;
			*) bad="$bad; $fn: registers $regs" ;;
			esac
			[ -z "$bad" ] || { echo "$out" | sed -n '1,40s/^/    /p'; break; }
		done
		if [ -z "$bad" ]; then
			pass "gdb $name: kcfi-site, kcfi-preamble and kcfi-explain agree with llvm-objdump"
		else
			fail "gdb $name: ${bad#; }"
		fi
	done
fi

# ---------------------------------------------------------------------------
# 7. bench.sh runs (on the biggest image we have)
# ---------------------------------------------------------------------------
if out=$(KCFI="$KCFI" OBJDUMP="$(tool llvm-objdump x86_64)" bash "$HERE/../bench.sh" "$objs/x86-big-exec" 2>&1) && grep -q '^ratio' <<<"$out"; then
	pass "bench.sh on x86-big-exec: $(grep '^ratio' <<<"$out" | tr -s ' ')"
else
	fail "bench.sh: $out"
fi

finish
