#!/usr/bin/env bash
# The lab's tool against the built images: every function with a KCFI
# preamble is named by its prototype from the image's DWARF, and the hash
# of that prototype is the preamble's id (kcfi scan --types); the
# prototype a learner sees in gdb, typedef names and all, hashes to the
# same id with kcfi hash --image.

types_verify() {
	local arch=$1 functions verified disagree missing json=$TEST_TMP/types-$1.json name file
	kcfi_fact_tool scan "$(vmlinux_of "$arch")" --types --json >"$json" ||
		fail "kcfi scan --types failed on the $arch vmlinux"
	functions=$(json_field summary.types.functions <"$json")
	verified=$(json_field summary.types.verified <"$json")
	disagree=$(json_field summary.types.disagree <"$json")
	missing=$(json_field summary.types.not_in_dwarf <"$json")
	assert_eq "$functions" "$(json_field summary.functions <"$json")" "$arch: every function with a preamble is looked up"
	assert_eq "$disagree" 0 "$arch: no prototype from DWARF hashes to another id than its preamble's"
	[ $((verified * 1000)) -ge $((functions * 999)) ] ||
		fail "$arch: verified $verified of $functions, under 99.9 %"
	assert_eq "$((verified + missing))" "$functions" "$arch: every function is verified or has no DWARF"
	# The ones without DWARF must be assembly: a second route, the line
	# table's file name for the function's entry, by llvm-symbolizer.
	python3 -c '
import json, sys
for f in json.load(open(sys.argv[1]))["functions"]:
    if f.get("type_check") == "not in DWARF":
        print(f["name"], f["entry"]["address"])' "$json" >"$TEST_TMP/types-$arch-asm.txt"
	while read -r name addr; do
		file=$("llvm-symbolizer$KCFI_LAB_LLVM" --obj="$(vmlinux_of "$arch")" "$addr" | sed -n 2p)
		[[ "$file" == *.S:* ]] || fail "$arch: $name has a preamble and no DWARF, but is not from a .S file: $file"
	done <"$TEST_TMP/types-$arch-asm.txt"
	# lkdtm's functions carry the prototypes its source gives them.
	assert_eq "$(python3 -c '
import json, sys
print([f["prototype"] for f in json.load(open(sys.argv[1]))["functions"] if f["name"] == "lkdtm_increment_int"][0])' "$json")" \
		"int (int *)" "$arch: lkdtm_increment_int's prototype"
}

# kcfi site --types names what lkdtm_indirect_call's check expects by
# the pointer type in lkdtm's source, void (*)(int *).
types_site() {
	assert_eq "$(kcfi_fact_tool site "$(vmlinux_of "$1")" lkdtm_indirect_call --types --json |
		json_field sites.0.expected_prototype)" "void (int *)" "$1: the type lkdtm_indirect_call's check expects"
}

test_x86_64_types_from_dwarf_verify_every_preamble() { types_verify x86_64; types_site x86_64; }
test_arm64_types_from_dwarf_verify_every_preamble() { types_verify arm64; types_site arm64; }

# gdb_prototypes ARCH OUT: "NAME<TAB>PROTOTYPE" as gdb prints the type of
# every function with a preamble (kcfi scan --json), found by its entry
# address; "-" where gdb has no function there (assembly).
gdb_prototypes() {
	local arch=$1 out=$2
	kcfi_fact_tool scan "$(vmlinux_of "$arch")" --json | python3 -c '
import json, sys
for f in json.load(sys.stdin)["functions"]:
    print(f["entry"]["address"], f["type_id"], f["name"])' >"$TEST_TMP/types-$arch-funcs.txt"
	cat >"$TEST_TMP/types-protos.py" <<-PY
		import gdb
		with open("$TEST_TMP/types-$arch-funcs.txt") as f, open("$out", "w") as out:
		    for line in f:
		        addr, tid, name = line.split()
		        b = gdb.block_for_pc(int(addr, 16))
		        # The block of the function itself, not of one inlined at its entry.
		        while b is not None and (b.function is None or b.function.name != name):
		            b = b.superblock
		        out.write("%s\t%s\t%s\n" % (name, tid, str(b.function.type) if b else "-"))
	PY
	timeout 300 "gdb-multiarch" -q -batch -nx -iex 'set auto-load python-scripts off' \
		-ex "file $(vmlinux_of "$arch")" -x "$TEST_TMP/types-protos.py" </dev/null >"$TEST_TMP/types-gdb.log" 2>&1 ||
		fail "gdb failed: $(tail -n 3 "$TEST_TMP/types-gdb.log")"
}

# Every prototype gdb prints is accepted by kcfi hash --image and hashes
# to the function's preamble id: at least 99.9 % accepted, none disagrees.
types_hash_image() {
	local arch=$1 protos verdict
	protos=$TEST_TMP/types-$arch-gdb.txt
	gdb_prototypes "$arch" "$protos"
	cut -f3 "$protos" | grep -vx -- - | sort -u >"$TEST_TMP/types-$arch-unique.txt" || true
	kcfi_fact_tool hash --image "$(vmlinux_of "$arch")" - <"$TEST_TMP/types-$arch-unique.txt" \
		>"$TEST_TMP/types-$arch-hashed.txt" 2>"$TEST_TMP/types-$arch-hash.err" || true
	verdict=$(python3 -c '
import sys
ids = {}
for line in open(sys.argv[2]):
    tid, proto = line.rstrip("\n").split("  ", 1)
    ids[proto] = tid
n = accepted = 0
bad = []
for line in open(sys.argv[1]):
    name, tid, proto = line.rstrip("\n").split("\t")
    if proto == "-":
        continue
    n += 1
    if proto in ids:
        accepted += 1
        if ids[proto] != tid:
            bad.append("%s: %s hashes to %s, preamble %s" % (name, proto, ids[proto], tid))
print(n, accepted, len(bad), *bad[:3], sep="; ")' "$protos" "$TEST_TMP/types-$arch-hashed.txt")
	local n accepted disagree
	IFS='; ' read -r n accepted disagree _ <<<"$verdict"
	[ "${n:-0}" -gt 1000 ] || fail "$arch: gdb printed only ${n:-0} prototypes: $verdict"
	assert_eq "$disagree" 0 "$arch: prototypes from gdb that hash to another id than the preamble's ($verdict)"
	[ $((accepted * 1000)) -ge $((n * 999)) ] ||
		fail "$arch: kcfi hash --image accepted $accepted of $n prototypes from gdb: $(head -n 3 "$TEST_TMP/types-$arch-hash.err")"
}

test_x86_64_gdb_prototypes_hash_to_their_preambles() { types_hash_image x86_64; }
test_arm64_gdb_prototypes_hash_to_their_preambles() { types_hash_image arm64; }

# types_objects: kcfi scan --types on relocatable files, through
# libdwfl: lkdtm's objects in each built tree (every kernel, every arch)
# and exercise 09's module built against each x86_64 kernel. Each
# function is verified or is assembly; lkdtm_increment_int's prototype
# is its source's.
types_objects() {
	local kernel arch f n=0 proto
	for kernel in $(lab_kernels); do
		use_kernel "$kernel"
		for arch in $(all_arch_list); do
			[ -f "$(vmlinux_of "$arch")" ] || continue
			for f in "$(build_dir "$arch")"/drivers/misc/lkdtm/*.o; do
				[[ "$f" != *.mod.o ]] || continue
				types_object_verified "$f" "$arch (Linux $kernel)" "$LAB_WORKTREE/drivers/misc/lkdtm/$(basename "$f" .o).S"
				n=$((n + 1))
			done
			proto=$(kcfi_fact_tool scan "$(build_dir "$arch")/drivers/misc/lkdtm/cfi.o" --types --json |
				python3 -c '
import json, sys
print([f["prototype"] for f in json.load(sys.stdin)["functions"] if f["name"] == "lkdtm_increment_int"][0])')
			assert_eq "$proto" "int (int *)" "$arch (Linux $kernel): lkdtm_increment_int's prototype in cfi.o"
		done
		[ -f "$(vmlinux_of x86_64)" ] || continue
		KCFI_LAB_EX_CACHE="$TEST_TMP/exercises" ex_lib_module x86_64 "$KCFI_LAB_ROOT/exercises/09-traps-modules/module"
		types_object_verified "$MODULE_KO" "exercise 09's module (Linux $kernel)" ""
		n=$((n + 1))
	done
	[ "$n" -gt 0 ] || skip "no kernel built"
	echo "$n relocatable files verified"
}

# ex_lib_module ARCH DIR: build exercise DIR's module; MODULE_KO is its path.
ex_lib_module() {
	MODULE_KO=$(bash -c '. "$KCFI_LAB_ROOT/exercises/lib.sh"; build_module "$@"' ex_lib "$@") ||
		fail "building $2 for $1 failed"
}

# types_object_verified FILE WHAT ASM: every function of FILE with a
# preamble is verified or has no DWARF, and then FILE was built from the
# assembly source ASM; none disagrees.
types_object_verified() {
	local f=$1 json=$TEST_TMP/types-obj.json functions verified missing
	kcfi_fact_tool scan "$f" --types --json >"$json" || fail "kcfi scan --types failed on $f"
	functions=$(json_field summary.types.functions <"$json")
	verified=$(json_field summary.types.verified <"$json")
	missing=$(json_field summary.types.not_in_dwarf <"$json")
	assert_eq "$(json_field summary.types.disagree <"$json")" 0 "$2: ${f##*/}: prototypes that disagree with their preamble"
	assert_eq "$((verified + missing))" "$functions" "$2: ${f##*/}: every function verified or assembly"
	# The ones without DWARF: an object built from assembly (FILE.S).
	[ "$missing" = 0 ] || [ -f "$3" ] || fail "$2: ${f##*/}: $missing functions without DWARF, and no assembly source $3"
}

test_types_from_dwarf_in_objects_and_modules() { types_objects; }
