#!/usr/bin/env bash
# Kernel configuration and build, one O= directory per arch. Sourced by run.sh.

# config_fragments ARCH: the in-tree fragments the bundle carries, in
# merge order (the kernel file's list, @kbuild_arch@ filled in).
config_fragments() {
	kernel_tree_paths "$1" fragments
}

# kernel_tree_paths ARCH KEY: the paths the lab kernel's file names in KEY,
# in the worktree, with ARCH's kbuild_arch for @kbuild_arch@.
kernel_tree_paths() {
	local f karch
	karch=$(kbuild_arch "$1")
	for f in $(kernel_get "$2"); do
		echo "$LAB_WORKTREE/${f//@kbuild_arch@/$karch}"
	done
}

# base_fragments ARCH: those of the kernel's base_fragments the tree has
# (as "make tinyconfig" merges them: not every arch has its own).
base_fragments() {
	local f
	while IFS= read -r f; do
		[ ! -f "$f" ] || echo "$f"
	done < <(kernel_tree_paths "$1" base_fragments)
}

kmake() {
	local arch=$1 why
	shift
	why=$(kbuild_home_error)
	[ -z "$why" ] || die "$why"
	ccache_setup
	make -C "$LAB_WORKTREE" O="$(build_dir "$arch")" ARCH="$(kbuild_arch "$arch")" \
		LLVM="$KCFI_LAB_LLVM" ${KMAKE_CC[@]+"${KMAKE_CC[@]}"} "$@"
}

# ccache_setup: KMAKE_CC is make's CC= through ccache, when it is
# installed, with its cache in the lab's home: a tree compiled before (a
# clean, a second checkout's home on the same paths, the test suite's
# fresh-machine lanes, which share it) compiles again in a fraction of
# the time. CCACHE_* settings of the caller's environment are left alone.
ccache_setup() {
	KMAKE_CC=()
	have ccache || return 0
	KMAKE_CC=("CC=ccache clang$KCFI_LAB_LLVM")
	export CCACHE_DIR=${CCACHE_DIR:-$KCFI_LAB_HOME/ccache}
	export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-10G}
	# The compiler by what it says it is (its version and Debian
	# revision), not by its file's time or place: the same package's
	# clang installed on a host or unpacked into a lab's home (another
	# release's toolchain, as on the fresh-machine lanes) is the same
	# compiler, and clang --version's last line, its directory, differs.
	# Depend mode: on a miss, no preprocessor run before the compile
	# (ccache reads the compiler's own -MMD list instead). A cold build
	# costs 1.14 times no cache at all, not 1.42 (bench/ccache-mode.sh,
	# docs/performance.md). The caller's choice, either way, stays.
	[ -n "${CCACHE_DEPEND+set}${CCACHE_NODEPEND+set}" ] || export CCACHE_DEPEND=1
	if [ -z "${CCACHE_COMPILERCHECK:-}" ]; then
		CCACHE_COMPILERCHECK="string:$("clang$KCFI_LAB_LLVM" --version | sed -n 1p)"
		export CCACHE_COMPILERCHECK
	fi
}

# requested_options FRAGMENT...: "CONFIG_X=VALUE" for every option set or
# unset in the fragments ("n" for "# CONFIG_X is not set"); last one wins.
requested_options() {
	sed -n -e 's/^\(CONFIG_[A-Za-z0-9_]*\)=\(.*\)$/\1=\2/p' \
		-e 's/^# \(CONFIG_[A-Za-z0-9_]*\) is not set$/\1=n/p' "$@" |
		awk -F= '{ v[$1] = substr($0, length($1) + 2); if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
			END { for (i = 1; i <= n; i++) print order[i] "=" v[order[i]] }'
}

# verify_config ARCH: every requested option is in the final .config, with
# the requested value. Kconfig silently drops options whose dependencies
# are unmet, so this is checked, never assumed.
verify_config() {
	local arch=$1 config
	config="$(build_dir "$arch")/.config"
	local -a frags bad=()
	mapfile -t frags < <(config_fragments "$arch")
	local line name want got
	while IFS= read -r line; do
		name=${line%%=*}
		want=${line#*=}
		got=$(sed -n "s/^$name=//p" "$config")
		[ -n "$got" ] || got=n
		[ "$got" = "$want" ] || bad+=("$name=$want (got $got)")
	done < <(requested_options "${frags[@]}")
	if [ "${#bad[@]}" -gt 0 ]; then
		rm -f "$(build_dir "$arch")/.kcfi-lab-config"
		die "$arch .config lacks requested options: ${bad[*]} (unmet dependencies?)"
	fi
}

config_stamp() {
	local -a frags
	mapfile -t frags < <(config_fragments "$1")
	cat "${frags[@]}" | sha256sum | cut -d' ' -f1
}

configure_kernel() {
	local arch=$1 out stamp log
	out=$(build_dir "$arch")
	stamp=$(config_stamp "$arch")
	if [ -f "$out/.config" ] && [ "$(cat "$out/.kcfi-lab-config" 2>/dev/null)" = "$stamp" ]; then
		return 0
	fi
	local -a frags base
	mapfile -t frags < <(config_fragments "$arch")
	mapfile -t base < <(base_fragments "$arch")
	local f allconfig
	allconfig=$(kernel_tree_paths "$arch" base_allconfig)
	for f in "$allconfig" "${frags[@]}"; do
		[ -f "$f" ] || die "config fragment missing from the kernel branch: $f"
	done
	mkdir -p "$out"
	log=$(new_log "config-$arch")
	info "configuring $arch: tinyconfig + ${frags[*]#"$LAB_WORKTREE/"} (log: $log)"
	# tinyconfig's own steps, with its olddefconfig and the fragments'
	# as one: two kconfig passes, not three, and the same .config.
	{
		KCONFIG_ALLCONFIG=$allconfig kmake "$arch" -j"$KCFI_LAB_JOBS" allnoconfig &&
			"$LAB_WORKTREE/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" \
				${base[@]+"${base[@]}"} "${frags[@]}" &&
			kmake "$arch" olddefconfig
	} >"$log" 2>&1 || die "configuring $arch failed (log: $log)"
	verify_config "$arch"
	echo "$stamp" >"$out/.kcfi-lab-config"
}

# source_stamp: what the build depends on besides the config: the branch
# head and any uncommitted edit in the worktree.
source_stamp() {
	{
		git -C "$LAB_WORKTREE" rev-parse "HEAD^{tree}"
		git -C "$LAB_WORKTREE" status --porcelain=v1 --untracked-files=no
		git -C "$LAB_WORKTREE" diff HEAD
	} | sha256sum | cut -d' ' -f1
}

build_stamp() {
	echo "$(source_stamp) $(config_stamp "$1") $KCFI_LAB_LLVM"
}

kernel_is_built() {
	local arch=$1
	[ -f "$(kernel_image "$arch")" ] &&
		[ "$(cat "$(build_dir "$arch")/.kcfi-lab-built" 2>/dev/null)" = "$(build_stamp "$arch")" ]
}

# build_objects LOG: how many objects kbuild has made so far (its quiet
# output: one "  CC  path" line, or AS, LD, AR..., per target).
build_objects() {
	grep -cE '^  (CC|AS|LD|AR|HOSTCC|HOSTLD|LDS|OBJCOPY|CPP|GEN)( |\[)' "$1" 2>/dev/null || true
}

# show_progress PID LOG LABEL RECORD: a progress line while make runs:
# objects made, and when RECORD holds "OBJECTS SECONDS" of this tree's
# last full build, the total and the time left.
show_progress() {
	local pid=$1 log=$2 label=$3 record=$4 start total="" took="" n text
	start=$SECONDS
	[ ! -f "$record" ] || read -r total took <"$record" || true
	while kill -0 "$pid" 2>/dev/null; do
		n=$(build_objects "$log")
		text="$n objects, $((SECONDS - start)) s"
		if [ -n "$total" ] && [ -n "$took" ] && [ "$total" -gt 0 ]; then
			text="$n of ~$total objects, $((SECONDS - start)) s"
			[ "$n" -ge "$total" ] || text+=", ~$((took - took * n / total)) s left"
		fi
		progress "$label" "$text"
		sleep 1
	done
	progress_end
	return 0
}

# record_build LOG SECONDS RECORD: a build that made at least as many
# objects as the recorded one is the new measure of a full build.
record_build() {
	local n old=0
	n=$(build_objects "$1")
	[ ! -f "$3" ] || read -r old _ <"$3" || true
	[ "$n" -lt "$((old * 9 / 10))" ] || printf '%s %s\n' "$n" "$2" >"$3"
}

build_kernel() {
	local arch=$1 log pid rc
	configure_kernel "$arch"
	if kernel_is_built "$arch"; then
		info "$arch kernel is up to date ($(kernel_image "$arch"))"
		return 0
	fi
	rm -f "$(build_dir "$arch")/.kcfi-lab-built"
	log=$(new_log "build-$arch")
	info "building $arch with clang$KCFI_LAB_LLVM, $KCFI_LAB_JOBS jobs (log: $log)"
	local start=$SECONDS
	kmake "$arch" -j"$KCFI_LAB_JOBS" all scripts_gdb >"$log" 2>&1 &
	pid=$!
	trap 'kill -INT "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
		info "build interrupted; run the same command again to resume"; exit 130' INT TERM
	show_progress "$pid" "$log" "build $arch" "$(build_dir "$arch")/.kcfi-lab-objects"
	rc=0
	wait "$pid" || rc=$?
	trap - INT TERM
	if [ "$rc" != 0 ]; then
		grep -m 5 -E 'error:|Error [0-9]' "$log" | sed 's/^/  /' >&2 || true
		die "$arch build failed (log: $log)"
	fi
	build_stamp "$arch" >"$(build_dir "$arch")/.kcfi-lab-built"
	record_build "$log" "$((SECONDS - start))" "$(build_dir "$arch")/.kcfi-lab-objects"
	info "$arch kernel built in $((SECONDS - start)) s: $(kernel_image "$arch")"
}
