#!/usr/bin/env bash
# The lab's host tool (lab/kcfi): built into KCFI_LAB_HOME, out of the
# source tree, in a directory of its own for each checksum of its
# sources (two checkouts that share a home each keep theirs), and again
# only when its sources change. Sourced by run.sh, exercises/lib.sh and
# the tests, never executed.
# shellcheck disable=SC2034 # LAB_TOOL_BIN is for the sourcing scripts

LAB_TOOL_SRC="$KCFI_LAB_ROOT/lab/kcfi"

# tool_sources_sha: a checksum of the tool's sources (what make builds
# it from).
tool_sources_sha() {
	cat "$LAB_TOOL_SRC/Makefile" "$LAB_TOOL_SRC"/src/* | sha256sum | cut -d' ' -f1
}

LAB_TOOL_SHA=$(tool_sources_sha)
# LAB_TOOL_REL: the tool's directory relative to KCFI_LAB_HOME (a pack
# carries it there).
LAB_TOOL_REL="build/tool/${LAB_TOOL_SHA:0:16}"
LAB_TOOL_DIR="$KCFI_LAB_HOME/$LAB_TOOL_REL"
LAB_TOOL_BIN="$LAB_TOOL_DIR/kcfi"
LAB_TOOL_LOG="$LAB_TOOL_DIR/make.log"

# tool_can_build: this host has what building the tool takes (make, a C
# compiler, elfutils' headers).
tool_can_build() {
	have make && printf '#include <elfutils/libdw.h>\n' | "${CC:-cc}" -E -x c - >/dev/null 2>&1
}

# tool_is_current: the tool in LAB_TOOL_DIR was made from sources like
# these: by content, not by time or path. One built here (by any
# checkout) is used as it is (no make: this runs on every ./run.sh
# kcfi). One a pack brought (no source-dir record) runs only where the
# tool cannot be built from the checkout: a learner's machine without a
# C compiler.
tool_is_current() {
	[ -x "$LAB_TOOL_BIN" ] && [ -f "$LAB_TOOL_DIR/sources.sha256" ] || return 1
	[ "$(<"$LAB_TOOL_DIR/sources.sha256")" = "$LAB_TOOL_SHA" ] || return 1
	# Built here, by this checkout or another one with the same sources
	# (a pack cannot carry source-dir: pack-check.sh's layout).
	[ ! -f "$LAB_TOOL_DIR/source-dir" ] || return 0
	! tool_can_build || return 1
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
		# Objects made from another checkout, or a pack's tool, can be
		# newer than this one's sources, so make's timestamps cannot
		# tell: rebuild everything.
		[ "$(cat "$LAB_TOOL_DIR/source-dir" 2>/dev/null)" = "$LAB_TOOL_SRC" ] || force=(-B)
		# Sources edited since this directory was named: link again.
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
		tool_prune
	) 8>"$LAB_TOOL_DIR/.lock"
}

# tool_prune: the tools this checkout built from sources it no longer
# has. Another checkout's stay.
tool_prune() {
	local dir
	for dir in "$KCFI_LAB_HOME"/build/tool/*/; do
		dir=${dir%/}
		if [ "$dir" = "$LAB_TOOL_DIR" ] || [ -L "$dir" ]; then continue; fi
		[ "$(cat "$dir/source-dir" 2>/dev/null)" = "$LAB_TOOL_SRC" ] || continue
		rm -rf "$dir"
	done
}

# tool_llvm_args: LLVM_ARCH=SUFFIX, a line for each arch file: the
# suffix of this host's toolchain for the oldest kernel that has the arch,
# whose output make check takes for reference; and LLVM_LATEST=SUFFIX,
# the newest kernel's, whose clang make check asks for what came later
# (the FNV-1a hash, arity in the x86 preamble) when it has it.
tool_llvm_args() {
	local a k
	[ -n "$LAB_HOST" ] || return 0
	for a in "${LAB_ARCH_FILES[@]}"; do
		k=$(kernel_for_arch "$a") || continue
		printf 'LLVM_%s=%s\n' "$a" "${LAB_CONF["host/$k.llvm"]}"
	done
	for k in $(lab_kernels); do :; done
	printf 'LLVM_LATEST=%s\n' "${LAB_CONF["host/$k.llvm"]}"
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
# failure, make's output is in LAB_TOOL_LOG. build/tool/kcfi links to
# the last one built, for commands typed by hand (docs/kcfi.md's $KCFI).
build_tool() {
	tool_is_current || tool_make kcfi || return
	[ "$(readlink "$KCFI_LAB_HOME/build/tool/kcfi" 2>/dev/null)" = "${LAB_TOOL_REL#build/tool/}/kcfi" ] ||
		ln -sfn "${LAB_TOOL_REL#build/tool/}/kcfi" "$KCFI_LAB_HOME/build/tool/kcfi" 2>/dev/null || true
}
