#!/usr/bin/env bash
# Facts from the build that the tests and the exercises' checkers compare
# answers with. The lab's tool (lab/kcfi) is the one decoder of KCFI
# preambles and checks; llvm-nm gives addresses. Sourced by tests/lib.sh
# and exercises/lib.sh after lab/common.sh and lab/tool.sh, never
# executed. A fact that cannot be read is a non-zero return.

vmlinux_of() {
	echo "$(build_dir "$1")/vmlinux"
}

# symbol_addr ARCH SYMBOL: the symbol's address, hex without 0x.
symbol_addr() {
	# No early exit: awk must read all of llvm-nm's output, or llvm-nm dies
	# of SIGPIPE and pipefail fails the call.
	"llvm-nm$KCFI_LAB_LLVM" "$(vmlinux_of "$1")" | awk -v s="$2" '$3 == s && !found { print $1; found = 1 }'
}

# kcfi_fact_tool ARGS...: the lab's tool, built first when it must be.
kcfi_fact_tool() {
	if ! build_tool; then
		cat "$LAB_TOOL_LOG" >&2
		return 1
	fi
	"$LAB_TOOL_BIN" "$@"
}

# json_field PATH: from the JSON document on standard input, the value at
# PATH (keys and list indexes separated by dots: sites.0.type_id). Lists
# print one item a line.
json_field() {
	python3 -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
for x in (v if isinstance(v, list) else [v]):
    print(x)' "$1"
}

# preamble_type ARCH FUNC: FUNC's type id (8 hex digits) as the preamble
# in front of it holds it, or "none" when FUNC has no preamble.
preamble_type() {
	local line
	line=$(kcfi_fact_tool func "$(vmlinux_of "$1")" "$2") || return 1
	line=${line%%$'\n'*}
	case "$line" in
	0x*) line=${line%% *} && echo "${line#0x}" ;;
	none*) echo none ;;
	*) return 1 ;;
	esac
}

# reported_target_type ARCH SYMBOL: the target's type id as the lab
# kernel's CFI report shows it (8 hex digits): the id in SYMBOL's
# preamble; without one, "none" or the word in front of SYMBOL, as the
# arch file's untyped_target says.
reported_target_type() {
	local id
	id=$(preamble_type "$1" "$2") || return 1
	if [ "$id" = none ] && [ "$(arch_get "$1" untyped_target)" = word ]; then
		id=$(func_fact "$1" "$2" word_before) || return 1
		id=${id#0x}
	fi
	echo "$id"
}

# func_fact ARCH FUNC FIELD: a field of kcfi func --json for FUNC
# (preamble_bytes, id_offset, entry.address, ...).
func_fact() {
	kcfi_fact_tool func "$(vmlinux_of "$1")" "$2" --json | json_field "functions.0.$3"
}

# func_types_fact ARCH FUNC FIELD: a field of kcfi func --types --json for
# FUNC, which adds what the image's DWARF says (prototype, type_check,
# arity_against_prototype) to func_fact's; "None" where it has nothing.
func_types_fact() {
	kcfi_fact_tool func "$(vmlinux_of "$1")" "$2" --types --json 2>/dev/null |
		json_field "functions.0.$3" 2>/dev/null
}

# func_prototype ARCH FUNC: FUNC's prototype as the image's DWARF gives
# it (kcfi func --types), or nothing (an assembly function, no DWARF).
func_prototype() {
	func_types_fact "$1" "$2" prototype | grep -vx None || true
}

# site_fact ARCH FUNC FIELD: a field of the first check site in FUNC, as
# kcfi site --json prints it (type_id, length, function_offset,
# target_register, brk_immediate, check.address, ...).
site_fact() {
	kcfi_fact_tool site "$(vmlinux_of "$1")" "$2" --json | json_field "sites.0.$3"
}

# scan_fact ARCH FIELD: a field of kcfi scan --json of ARCH's vmlinux
# (summary.check_sites, summary.classes.0.functions, ...).
scan_fact() {
	kcfi_fact_tool scan "$(vmlinux_of "$1")" --json | json_field "$2"
}

# site_expected_type ARCH FUNC: the type id (8 hex digits) the first KCFI
# check in FUNC expects.
site_expected_type() {
	local id
	id=$(site_fact "$1" "$2" type_id) || return 1
	echo "${id#0x}"
}
