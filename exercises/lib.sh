#!/usr/bin/env bash
# Shared code for the exercises' check and solution scripts, and for
# lab/exercises.sh. Sourced, never executed.
#
# Every expected answer is derived here from the learner's own build: the
# vmlinux (the lab kernel's llvm-objdump, llvm-nm, llvm-readelf), the
# kernel worktree, the kernel's clang itself, or the console of a booted
# guest. Nothing a
# learner is asked to find is written down in the repository.
# shellcheck disable=SC2034 # EX_ARCH, EX_ARGS, GUEST_LOG and MODULE_KO are for the sourcing scripts

EX_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KCFI_LAB_ROOT=${KCFI_LAB_ROOT:-$(cd "$EX_DIR/.." && pwd)}
# The lab's paths (lab/common.sh), its tool (lab/tool.sh) and the facts
# from the build the tests use too (lab/facts.sh: vmlinux_of,
# preamble_type, site_fact, ...), read with the tool: a checker's route
# to an answer, not the llvm-objdump route a solution takes.
# shellcheck source=lab/common.sh
. "$KCFI_LAB_ROOT/lab/common.sh"
# shellcheck source=lab/tool.sh
. "$KCFI_LAB_ROOT/lab/tool.sh"
# shellcheck source=lab/facts.sh
. "$KCFI_LAB_ROOT/lab/facts.sh"

# ex_tools: the tools of the lab kernel's toolchain (its file's llvm=),
# set again when an exercise picks its kernel.
ex_tools() {
	LLVM_OBJDUMP=llvm-objdump$KCFI_LAB_LLVM
	LLVM_NM=llvm-nm$KCFI_LAB_LLVM
	LLVM_READELF=llvm-readelf$KCFI_LAB_LLVM
	CLANG=clang$KCFI_LAB_LLVM
}
ex_tools
EX_CACHE=${KCFI_LAB_EX_CACHE:-$KCFI_LAB_HOME/exercises}

# --- Verdicts ---------------------------------------------------------------

correct() {
	printf 'correct: %s\n' "$*"
	exit 0
}

not_yet() {
	printf 'not yet: %s\n' "$*"
	exit 1
}

# ex_usage MSG: bad usage of check or solution; exit 2.
ex_usage() {
	printf '%s: %s\n' "$EX_NAME" "$*" >&2
	printf 'usage: %s\n' "$EX_USAGE" >&2
	exit 2
}

# cannot_check MSG: something the checker needs is missing; exit 2.
cannot_check() {
	printf 'cannot check: %s\n' "$*" >&2
	exit 2
}

# --- Command line -----------------------------------------------------------

# ex_init NAME USAGE ARCHES: the calling script's name, its usage line
# (after "./check [--arch ARCH]") and the arches it applies to.
ex_init() {
	EX_NAME=$1
	EX_USAGE="./check [--arch ARCH] [--kernel VERSION] $2"
	EX_ARCHES=$3
	ex_use_kernel
}

# ex_use_kernel: the exercise's kernel (lab.conf's kernels:, default the
# lab's default kernel): the lab kernel when it is one of them, else the
# first, so that a checker run by hand reads the right build.
ex_use_kernel() {
	EX_KERNELS=$(exercise_kernels "$EX_NAME")
	case " $EX_KERNELS " in
	*" $LAB_KERNEL "*) ;;
	*)
		use_kernel "${EX_KERNELS%% *}"
		ex_tools
		;;
	esac
}

# ex_pick_kernel VERSION: --kernel VERSION, when the exercise is about it.
ex_pick_kernel() {
	case " $EX_KERNELS " in
	*" $1 "*) ;;
	*) ex_usage "this exercise is for Linux ${EX_KERNELS// / and } only, not '$1'" ;;
	esac
	use_kernel "$1"
	ex_tools
}

# ex_parse_args ARGS...: --arch ARCH (default x86_64, or the only arch
# the exercise applies to) and --kernel VERSION (one of the exercise's
# kernels); the rest goes to EX_ARGS.
ex_parse_args() {
	EX_ARCH=""
	EX_ARGS=()
	while [ $# -gt 0 ]; do
		case "$1" in
		--arch)
			[ $# -ge 2 ] || ex_usage "--arch needs a value"
			EX_ARCH=$(normalize_arch "$2") || ex_usage "unknown arch: $2 (arches: $(arch_list))"
			shift
			;;
		--arch=*)
			EX_ARCH=$(normalize_arch "${1#--arch=}") || ex_usage "unknown arch: ${1#--arch=} (arches: $(arch_list))"
			;;
		--kernel)
			[ $# -ge 2 ] || ex_usage "--kernel needs a value"
			ex_pick_kernel "$2"
			shift
			;;
		--kernel=*) ex_pick_kernel "${1#--kernel=}" ;;
		-h | --help)
			printf 'usage: %s\n' "$EX_USAGE"
			exit 0
			;;
		--)
			shift
			EX_ARGS+=("$@")
			break
			;;
		*) EX_ARGS+=("$1") ;;
		esac
		shift
	done
	if [ -z "$EX_ARCH" ]; then
		# The lab kernel's default arch, when the exercise has it.
		EX_ARCH=$(kernel_get default_arch)
		case " $EX_ARCHES " in
		*" $EX_ARCH "*) ;;
		*) EX_ARCH=${EX_ARCHES%% *} ;;
		esac
	fi
	case " $EX_ARCHES " in
	*" $EX_ARCH "*) ;;
	*) ex_usage "this exercise is for ${EX_ARCHES// / and } only, not $EX_ARCH" ;;
	esac
}

# ex_need_args N: at least N answers, else usage (exit 2).
ex_need_args() {
	[ "${#EX_ARGS[@]}" -ge "$1" ] || ex_usage "expected $1 answer(s), got ${#EX_ARGS[@]}"
}

# ex_need_vmlinux ARCH: the built kernel, or exit 2 with the command to build it.
# ex_need_worktree: the kernel source tree is here (the whole tree, or
# the part a pack carries). Without it, say so in one line.
ex_need_worktree() {
	[ -e "$LAB_WORKTREE/Makefile" ] ||
		cannot_check "no kernel source tree in $LAB_WORKTREE; import it with ./run.sh prepare$LAB_KOPT, or unpack a pack made by this version of the lab"
}

ex_need_vmlinux() {
	[ -f "$(vmlinux_of "$1")" ] || cannot_check "no $1 kernel in $(build_dir "$1"); build it first: ./run.sh build $1$LAB_KOPT"
	# The facts come from the lab's tool.
	build_tool || cannot_check "the lab's tool (lab/kcfi) does not build or run here; see $LAB_TOOL_LOG"
}

# --- Answers ----------------------------------------------------------------

# norm_hex VALUE: 8 lowercase hex digits for 0x7E0C52A5, 7e0c52a5 or a
# decimal number; fails for anything else.
norm_hex() {
	local v=${1,,}
	case "$v" in
	0x*) v=${v#0x} ;;
	*[!0-9]*) ;;
	'') return 1 ;;
	*) v=$(printf '%x' "$v") ;;
	esac
	[[ "$v" =~ ^[0-9a-f]{1,8}$ ]] || return 1
	printf '%08x\n' "$((0x$v))"
}

# norm_int VALUE: a decimal or 0x number, printed in decimal.
norm_int() {
	case "$1" in
	0x* | 0X*) [[ "$1" =~ ^0[xX][0-9a-fA-F]+$ ]] || return 1 ;;
	*) [[ "$1" =~ ^[0-9]+$ ]] || return 1 ;;
	esac
	echo "$(($1))"
}

# --- Facts from the build ---------------------------------------------------

# disasm ARCH FUNC: llvm-objdump's disassembly of one function.
disasm() {
	"$LLVM_OBJDUMP" -d --no-show-raw-insn --disassemble-symbols="$2" "$(vmlinux_of "$1")" 2>/dev/null
}

# disasm_raw ARCH FUNC: the same, with the instruction bytes.
disasm_raw() {
	"$LLVM_OBJDUMP" -d --disassemble-symbols="$2" "$(vmlinux_of "$1")" 2>/dev/null
}

# nm_listing ARCH: the path of llvm-nm -S's listing of ARCH's vmlinux,
# made once per build in EX_CACHE (a checker looks up several symbols;
# llvm-nm takes a quarter second each time on the arm64 image).
nm_listing() {
	local vmlinux listing
	vmlinux=$(vmlinux_of "$1")
	listing="$EX_CACHE/nm-$1-$(stat -c %Y "$vmlinux").txt"
	if [ ! -s "$listing" ]; then
		mkdir -p "$EX_CACHE"
		# Listings of earlier builds, and temporary files of runs that
		# were stopped; never the current listing, which another
		# checker may be reading.
		find "$EX_CACHE" -maxdepth 1 \( -name "nm-$1-*.txt" ! -name "${listing##*/}" -o \
			-name "nm-$1-*.txt.*" -mmin +10 \) -delete 2>/dev/null || true
		if ! "$LLVM_NM" -S "$vmlinux" >"$listing.$$"; then
			rm -f "$listing.$$"
			return 1
		fi
		mv "$listing.$$" "$listing"
	fi
	echo "$listing"
}

# symbol_addr ARCH SYMBOL: the symbol's address, 16 hex digits (replaces
# lab/facts.sh's, from the cached listing).
symbol_addr() {
	awk -v s="$2" '$4 == s && !found { print $1; found = 1 }' "$(nm_listing "$1")"
}

# symbol_size ARCH SYMBOL: the symbol's size, as 0x hex.
symbol_size() {
	local size
	size=$(awk -v s="$2" '!done && $4 == s { print $2; done = 1 }' "$(nm_listing "$1")")
	[ -n "$size" ] || return 1
	printf '0x%x\n' "$((0x$size))"
}

# typeid_symbol ARCH NAME: the value of __kcfi_typeid_NAME, 8 hex digits.
typeid_symbol() {
	local v
	v=$(awk -v s="__kcfi_typeid_$2" '!done && $4 == s { print $1; done = 1 }' "$(nm_listing "$1")")
	[ -n "$v" ] || return 1
	printf '%08x\n' "$((0x$v))"
}

# clang_target ARCH: the --target for clang (lab/arch/ARCH.conf).
clang_target() {
	arch_get "$1" clang_target
}

# clang_typeid ARCH PROTOTYPE: the type id clang -fsanitize=kcfi gives
# a function of type PROTOTYPE, e.g. 'void (int *)': a tiny C file takes
# the address of such a function, and clang emits __kcfi_typeid_f.
clang_typeid() {
	local arch=$1 proto=$2 tmp decl v
	tmp=$(mktemp -d)
	# 'void (int *)' -> 'void f(int *)'
	decl=$(printf '%s\n' "$proto" | sed -E 's/^([^(]*[^ (])[ ]*\(/\1 f(/')
	printf 'struct file;\nextern %s;\nvoid *p = (void *)f;\n' "$decl" >"$tmp/t.c"
	if ! "$CLANG" --target="$(clang_target "$arch")" -fsanitize=kcfi -c -o "$tmp/t.o" "$tmp/t.c" 2>"$tmp/err"; then
		cat "$tmp/err" >&2
		rm -rf "$tmp"
		return 1
	fi
	v=$("$LLVM_NM" "$tmp/t.o" | awk '$3 == "__kcfi_typeid_f" { print $1 }')
	rm -rf "$tmp"
	[ -n "$v" ] || return 1
	printf '%08x\n' "$((0x$v))"
}

# clang_mangle PROTOTYPE: the mangled type name kCFI hashes, from clang's
# own C++ mangling: g<void (int *)> mangles to _Z1gIFvPiEEvv, and
# "_ZTS" + the template argument, FvPiE, is the name.
clang_mangle() {
	local tmp sym
	tmp=$(mktemp -d)
	printf 'struct file;\ntemplate <class T> void g() {}\ntemplate void g<%s>();\n' "$1" >"$tmp/m.cc"
	if ! "$CLANG" -x c++ -c -o "$tmp/m.o" "$tmp/m.cc" 2>"$tmp/err"; then
		cat "$tmp/err" >&2
		rm -rf "$tmp"
		return 1
	fi
	sym=$("$LLVM_NM" "$tmp/m.o" | awk '$3 ~ /^_Z1gI/ { print $3 }')
	rm -rf "$tmp"
	sym=${sym#_Z1gI}
	[ -n "$sym" ] || return 1
	echo "_ZTS${sym%Evv}"
}

# hash_mangled NAME: the low 32 bits of xxHash64(NAME), 8 hex digits.
hash_mangled() {
	python3 "$EX_DIR/lib/xxh64.py" "$1" | awk '{ print substr($1, 3) }'
}

# kcfi_tool_if_built: the lab's host tool when it builds, else nothing
# (unlike lab/commands.sh's kcfi_tool, which stops with an error).
kcfi_tool_if_built() {
	[ -f "$LAB_TOOL_SRC/Makefile" ] && build_tool && echo "$LAB_TOOL_BIN"
}

# enclosing_function FILE LINE: the C function whose body holds LINE (the
# last line before it that starts a definition at column 0).
enclosing_function() {
	head -n "$2" "$1" | grep -E '^[a-z].*[a-z_0-9]+\(' | tail -n 1 | sed -E 's/\(.*//; s/.*[ *]//'
}

# source_of_string DIR STRING: "FILE:LINE" of the first C string literal
# "STRING" under DIR.
source_of_string() {
	grep -rnHF --include='*.c' "\"$2\"" "$1" | sed -n 1p | cut -d: -f1,2
}

# --- Booted guests ----------------------------------------------------------

# boot_guest ARCH MODE CMDS [FILE...]: make sure there is the console of
# a scripted boot that ran CMDS, cached per kernel build, mode, commands
# and files, and set GUEST_LOG to its path. The cache lives in
# KCFI_LAB_EX_CACHE (default $KCFI_LAB_HOME/exercises). Stops with
# cannot_check when the boot fails, so call it plainly, never inside
# $(...): there its verdict would end only the subshell. EX_APPEND, when
# set, is passed with --append (kernel arguments).
boot_guest() {
	local arch=$1 mode=$2 cmds=$3 key log f
	shift 3
	local -a args=("$arch" "--$mode" --timeout 600)
	[ -z "${EX_APPEND:-}" ] || args+=(--append "$EX_APPEND")
	key=$({
		echo "$arch $mode $cmds${EX_APPEND:+ --append $EX_APPEND}"
		stat -c %Y "$(kernel_image "$arch")" "$(initramfs_image "$arch")" 2>/dev/null
		for f in "$@"; do sha256sum <"$f"; done
	} | sha256sum | cut -c1-16)
	log="$EX_CACHE/consoles/$arch-$mode-$key.log"
	if [ ! -s "$log" ]; then
		mkdir -p "$EX_CACHE/consoles"
		for f in "$@"; do args+=(--file "$f"); done
		printf 'booting the %s guest (%s) to run: %s\n' "$arch" "$mode" "$cmds" >&2
		local tries=0
		# Another run.sh may hold the lab's lock for a while (a build, a
		# boot being prepared): wait for it, up to 10 minutes.
		until "$KCFI_LAB_ROOT/run.sh" "${args[@]}" --run "$cmds" >"$log.tmp" 2>"$log.err"; do
			tries=$((tries + 1))
			if ! grep -q 'another run.sh is working' "$log.err" || [ "$tries" -ge 120 ]; then
				cannot_check "the $arch guest boot failed: $(tail -n 3 "$log.err")"
			fi
			[ "$tries" != 1 ] || printf 'waiting for another run.sh to finish ...\n' >&2
			sleep 5
		done
		mv "$log.tmp" "$log"
	fi
	GUEST_LOG=$log
}

# guest_log ARCH MODE CMDS [FILE...]: boot_guest, then print GUEST_LOG.
# Only for a caller that runs it as a process of its own (the tests'
# ex_lib, where cannot_check ends that process with exit 2); a script
# that sources this file calls boot_guest and reads GUEST_LOG.
guest_log() {
	boot_guest "$@" || return
	echo "$GUEST_LOG"
}

# The boot the strict and permissive exercises share.
EX_LKDTM_RUN='lkdtm CFI_FORWARD_PROTO; echo ALIVE'

# --- Modules ----------------------------------------------------------------

# make_module ARCH SRC-DIR: build the out-of-tree module in SRC-DIR
# against the lab kernel, in a copy under $EX_CACHE/modules (never in the
# repository), and set MODULE_KO to the .ko's path. Rebuilds only when
# the sources change. Stops with cannot_check when it cannot build, so
# call it plainly, never inside $(...).
make_module() {
	local arch=$1 src=$2 name out stamp ko
	name=$(basename "$(dirname "$src")")
	out="$EX_CACHE/modules/$arch$LAB_SUFFIX/$name"
	[ -f "$(build_dir "$arch")/Module.symvers" ] ||
		cannot_check "no $arch kernel build in $(build_dir "$arch"); build it first: ./run.sh build $arch$LAB_KOPT"
	ex_need_worktree
	local why
	why=$(kbuild_home_error)
	[ -z "$why" ] || cannot_check "$why"
	stamp=$({ cat "$src"/*; stat -c %Y "$(vmlinux_of "$arch")"; } | sha256sum | cut -c1-16)
	# No $out yet (find fails): no .ko, build it.
	ko=$(find "$out" -maxdepth 1 -name '*.ko' 2>/dev/null | sed -n 1p) || true
	if [ -z "$ko" ] || [ "$(cat "$out/.stamp" 2>/dev/null)" != "$stamp" ]; then
		rm -rf "$out"
		mkdir -p "$out"
		cp "$src"/* "$out/"
		printf 'building %s for %s in %s\n' "$name" "$arch" "$out" >&2
		make -s -C "$LAB_WORKTREE" O="$(build_dir "$arch")" ARCH="$(kbuild_arch "$arch")" \
			LLVM="$KCFI_LAB_LLVM" M="$out" modules >"$out/build.log" 2>&1 ||
			cannot_check "module build failed, see $out/build.log: $(tail -n 3 "$out/build.log")"
		echo "$stamp" >"$out/.stamp"
		ko=$(find "$out" -maxdepth 1 -name '*.ko' | sed -n 1p)
	fi
	[ -n "$ko" ] || cannot_check "no .ko in $out"
	MODULE_KO=$ko
}

# build_module ARCH SRC-DIR: make_module, then print MODULE_KO. Only for
# a caller that runs it as a process of its own (the tests' ex_lib); a
# script that sources this file calls make_module and reads MODULE_KO.
build_module() {
	make_module "$@" || return
	echo "$MODULE_KO"
}
