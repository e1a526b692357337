#!/usr/bin/env bash
# The documentation against the build: every listing that names its
# command ("$ COMMAND" first in a fenced block) runs again on the
# current build and must still read as it is shown, addresses included,
# and every console excerpt marked with the ./run.sh command it came
# from must still be in that command's console, line by line by shape
# (lab/doc-listings.py; --regen rewrites host listings when the branch
# changes).

# doc_files: the Markdown files whose listings are checked.
doc_files() {
	printf '%s\n' "$KCFI_LAB_ROOT"/docs/*.md "$KCFI_LAB_ROOT"/exercises/*/README.md
}

test_doc_listings_match_the_build() {
	local out=$TEST_TMP/doc-listings.txt checked least
	local -a files
	mapfile -t files < <(doc_files)
	# Guest consoles of the listings' ./run.sh commands: booted once,
	# reused by the docs mutants.
	export DOC_LISTINGS_CACHE="${DOC_LISTINGS_CACHE:-$TEST_TMP/doc-consoles}"
	# $KCFI is the tool built/tool/kcfi links to: the last one built in
	# this home, which may be another checkout's (or a mutant's). The
	# listings are this checkout's.
	build_tool || fail "the lab's tool does not build: $(tail -n 5 "$LAB_TOOL_LOG")"
	python3 "$KCFI_LAB_ROOT/lab/doc-listings.py" "${files[@]}" >"$out" 2>&1 ||
		fail "listings no longer match the build; lab/doc-listings.py --regen rewrites them: $(cat "$out")"
	# The checker must have found the listings: at least every "$ " line
	# that starts a line of kcfi.md, counted here by grep.
	checked=$(sed -n 's/^listings: \([0-9]*\) commands checked.*/\1/p' "$out")
	least=$(grep -c '^\$ ' "${files[@]}" | awk -F: '$1 ~ /\/kcfi\.md$/ { print $2 }')
	[ "${checked:-0}" -ge "${least:-1}" ] || fail "only ${checked:-0} listing commands checked, kcfi.md alone has $least: $(tail -n 3 "$out")"
}
