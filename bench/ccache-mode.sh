#!/usr/bin/env bash
# What ccache costs a cold build, in its default mode and in its depend
# mode (no preprocessor run on a miss), side by side with no cache at
# all (CCACHE_DISABLE), for docs/performance.md.
#
#   bench/ccache-mode.sh [--kernel K] [ARCH [DIR [ROUNDS]]]
#
# Compiles DIR (a kbuild directory, default kernel/) of ARCH's kernel,
# with its .config, in a scratch build directory (the lab's build is
# not touched) ROUNDS times (default 3) in each mode (none, default,
# depend), alternating, each
# time from an empty cache of its own, then once more from the cache the
# last round filled (the hits a second checkout or a lane gets). Prints
# each time, the medians and their ratio.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
kernel_opt=()
if [ "${1:-}" = --kernel ]; then
	kernel_opt=(--kernel "$2")
	shift 2
fi
# shellcheck source=lab/common.sh
. "$ROOT/lab/common.sh"
[ "${#kernel_opt[@]}" = 0 ] || use_kernel "${kernel_opt[1]}"
# shellcheck source=lab/build.sh
. "$ROOT/lab/build.sh"

ARCH=${1:-$(kernel_get default_arch)}
DIR=${2:-kernel}
ROUNDS=${3:-3}
OUT=$(build_dir "$ARCH")
[ -f "$(kernel_image "$ARCH")" ] || die "no $ARCH kernel built: ./run.sh build ${kernel_opt[*]} $ARCH"
[ -d "$LAB_WORKTREE/$DIR" ] || die "$LAB_WORKTREE/$DIR: no such kbuild directory"
have ccache || die "ccache is not installed"
SCRATCH=$(mktemp -d)
cleanup() { rm -rf "$SCRATCH"; }
trap cleanup EXIT
# The scratch build directory: the kernel's .config, prepared once.
build_dir() { echo "$SCRATCH/build"; }
mkdir -p "$SCRATCH/build"
cp "$OUT/.config" "$SCRATCH/build/.config"
if ! { kmake "$ARCH" olddefconfig && kmake "$ARCH" -j"$KCFI_LAB_JOBS" prepare; } >"$SCRATCH/prepare.log" 2>&1 </dev/null; then
	die "preparing $SCRATCH/build failed: $(tail -n 5 "$SCRATCH/prepare.log")"
fi
OUT=$SCRATCH/build

# compile MODE CACHE: DIR's objects again, through ccache in MODE
# (default or depend) with CACHE; prints the seconds and the cache's
# hits and misses.
compile() {
	local mode=$1 cache=$2 start end stats
	# ccache takes any value of a boolean variable as true, and refuses
	# "false": the default mode is the variable unset.
	unset CCACHE_DEPEND CCACHE_DISABLE
	case "$mode" in
	none) export CCACHE_DISABLE=1 ;;
	depend) export CCACHE_DEPEND=1 ;;
	esac
	[ ! -d "$OUT/$DIR" ] || find "$OUT/$DIR" -name '*.o' -delete
	start=$(date +%s.%N)
	CCACHE_DIR=$cache kmake "$ARCH" -j"$KCFI_LAB_JOBS" "$DIR/" >"$SCRATCH/make.log" 2>&1 </dev/null ||
		die "make $DIR/ failed: $(grep -v "^make" "$SCRATCH/make.log" | tail -n 8)"
	end=$(date +%s.%N)
	stats=$(CCACHE_DIR=$cache ccache --print-stats)
	printf '%.1f %s %s\n' "$(echo "$end - $start" | bc)" \
		"$(awk '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 } END { print h + 0 }' <<<"$stats")" \
		"$(awk '$1 == "cache_miss" { print $2 }' <<<"$stats")"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -A times=()
for round in $(seq 1 "$ROUNDS"); do
	for mode in none default depend; do
		rm -rf "$SCRATCH/cache-$mode"
		read -r secs hits misses < <(compile "$mode" "$SCRATCH/cache-$mode")
		printf 'round %s %-8s cold: %6.1f s (%s misses, %s hits)\n' "$round" "$mode" "$secs" "$misses" "$hits"
		times[$mode]+="$secs "
	done
done
for mode in default depend; do
	read -r secs hits misses < <(compile "$mode" "$SCRATCH/cache-$mode")
	printf '%-16s warm: %6.1f s (%s hits in all)\n' "$mode" "$secs" "$hits"
done
n=$(tr ' ' '\n' <<<"${times[none]}" | sed '/^$/d' | median)
d=$(tr ' ' '\n' <<<"${times[default]}" | sed '/^$/d' | median)
p=$(tr ' ' '\n' <<<"${times[depend]}" | sed '/^$/d' | median)
printf 'median cold: no cache %s s, default %s s, depend %s s\n' "$n" "$d" "$p"
printf 'ratios: default/none %.2f, depend/none %.2f, depend/default %.2f\n' \
	"$(echo "$d / $n" | bc -l)" "$(echo "$p / $n" | bc -l)" "$(echo "$p / $d" | bc -l)"
