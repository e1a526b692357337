#!/usr/bin/env bash
# The lab's host tool (lab/kcfi): built once into KCFI_LAB_HOME, out of
# the source tree, and again only when its sources change. Sourced by
# run.sh, exercises/lib.sh and the tests, never executed.
# shellcheck disable=SC2034 # LAB_TOOL_BIN is for the sourcing scripts

LAB_TOOL_SRC="$KCFI_LAB_ROOT/lab/kcfi"
LAB_TOOL_DIR="$KCFI_LAB_HOME/build/tool"
LAB_TOOL_BIN="$LAB_TOOL_DIR/kcfi"
LAB_TOOL_LOG="$LAB_TOOL_DIR/make.log"

# tool_sources_sha: a checksum of the tool's sources (what make builds
# it from).
tool_sources_sha() {
	cat "$LAB_TOOL_SRC/Makefile" "$LAB_TOOL_SRC"/src/* | sha256sum | cut -d' ' -f1
}

# tool_is_current: the built tool was made from sources like these. By
# content, not by time or path: a pack carries the tool to learners who
# may have no C compiler. No make: this runs on every ./run.sh kcfi.
tool_is_current() {
	local built
	[ -x "$LAB_TOOL_BIN" ] && [ -f "$LAB_TOOL_DIR/sources.sha256" ] || return 1
	built=$(<"$LAB_TOOL_DIR/sources.sha256")
	[ "$built" = "$(tool_sources_sha)" ] || return 1
	# A pack's tool made on another kind of machine does not run here.
	"$LAB_TOOL_BIN" --help >/dev/null 2>&1
}

# tool_make TARGET...: lab/kcfi's make TARGET, built in LAB_TOOL_DIR, one
# make at a time per home. Its output goes to LAB_TOOL_LOG; returns make's status.
tool_make() {
	mkdir -p "$LAB_TOOL_DIR"
	(
		flock 8
		local -a force=()
		local sha
		# The sources as make reads them: an edit during the build makes
		# the next call build again.
		sha=$(tool_sources_sha)
		# Objects made from another checkout can be newer than this one's
		# sources, so make's timestamps cannot tell: rebuild everything.
		[ "$(cat "$LAB_TOOL_DIR/source-dir" 2>/dev/null)" = "$LAB_TOOL_SRC" ] || force=(-B)
		# A tool from other sources (a pack's) may be newer than the
		# objects here: link it again.
		[ "$(cat "$LAB_TOOL_DIR/sources.sha256" 2>/dev/null)" = "$sha" ] || rm -f "$LAB_TOOL_BIN"
		# make cannot take paths with spaces: relative ones, through a link.
		cd "$LAB_TOOL_DIR/.." || exit
		ln -sfn "$LAB_TOOL_SRC" "$LAB_TOOL_DIR/lab-kcfi"
		local -a llvm_args=()
		tool_toolchains
		mapfile -t llvm_args < <(tool_llvm_args)
		make -s -j"$KCFI_LAB_JOBS" -f "${LAB_TOOL_DIR##*/}/lab-kcfi/Makefile" S="${LAB_TOOL_DIR##*/}/lab-kcfi" \
			O="${LAB_TOOL_DIR##*/}" "${force[@]}" "${llvm_args[@]}" "$@" >"$LAB_TOOL_LOG" 2>&1 || exit
		printf '%s\n' "$LAB_TOOL_SRC" >"$LAB_TOOL_DIR/source-dir"
		printf '%s\n' "$sha" >"$LAB_TOOL_DIR/sources.sha256"
	) 8>"$LAB_TOOL_DIR/.lock"
}

# tool_llvm_args: LLVM_ARCH=SUFFIX, a line for each arch file: the
# suffix of this host's toolchain for the oldest kernel that has the arch,
# whose output make check takes for reference.
tool_llvm_args() {
	local a k
	[ -n "$LAB_HOST" ] || return 0
	for a in "${LAB_ARCH_FILES[@]}"; do
		k=$(kernel_for_arch "$a") || continue
		printf 'LLVM_%s=%s\n' "$a" "${LAB_CONF["host/$k.llvm"]}"
	done
}

# tool_toolchains: every kernel's toolchain that lives in the lab's home
# on PATH, for make check.
tool_toolchains() {
	local k
	[ -n "$LAB_HOST" ] || return 0
	for k in $(lab_kernels); do
		path_prepend "$(toolchain_bin "$k")"
	done
}

# build_tool: make sure LAB_TOOL_BIN is built from these sources; on
# failure, make's output is in LAB_TOOL_LOG.
build_tool() {
	tool_is_current || tool_make kcfi
}
