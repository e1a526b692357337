#!/usr/bin/env bash
# The lab's tool against the built images: every function with a KCFI
# preamble is named by its prototype from the image's DWARF, and the hash
# of that prototype is the preamble's id (kcfi scan --types).

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
