#!/usr/bin/env bash
# Times the lab's everyday paths, for docs/performance.md.
#
#   bench/timings.sh [--cold] [ARCH...]
#
# Without --cold: no-op rerun to the guest, one-file rebuild, boot to the
# prompt and pack/unpack, on the current KCFI_LAB_HOME. With --cold also a
# fresh setup (import, replay, first build) in a scratch KCFI_LAB_HOME.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lab/common.sh
. "$ROOT/lab/common.sh"

# timed LABEL CMD...: run CMD, print "LABEL: N.N s".
timed() {
	local label=$1 start end
	shift
	start=$(date +%s.%N)
	"$@" >/dev/null 2>&1 || {
		echo "$label: FAILED"
		return 1
	}
	end=$(date +%s.%N)
	printf '%-40s %6.1f s\n' "$label:" "$(echo "$end - $start" | bc)"
}

# boot_to_prompt ARCH: seconds from QEMU start to the guest's banner, from
# the kernel's own timestamps (the line before the banner).
boot_seconds() {
	local log
	log=$(find "$LAB_LOGS" -name "run-$1-*.log" -printf '%T@ %p\n' | sort -n | tail -n 1 | cut -d' ' -f2-)
	sed -nE 's/^\[ *([0-9]+\.[0-9]+)\] Run \/init as init process.*/\1/p' "$log" | head -n 1
}

one_file_rebuild() {
	local arch=$1 file="$LAB_WORKTREE/drivers/misc/lkdtm/cfi.c"
	touch "$file"
	rm -f "$(build_dir "$arch")/.kcfi-lab-built"
	"$ROOT/run.sh" build "$arch"
}

# cold_first_run ARCH: a new user's first command in an empty home, each
# of its kcfi-lab lines with the seconds since the start, then the
# compile, the rest, and the rest as a ratio of the compile (ccache is
# per home: the compile is cold too).
cold_first_run() {
	local arch=$1 scratch start compile total
	scratch=$(mktemp -d)
	start=$(date +%s.%N)
	KCFI_LAB_HOME="$scratch" "$ROOT/run.sh" "$arch" --run 'lkdtm CFI_FORWARD_PROTO' 2>&1 |
		while IFS= read -r line; do
			printf '%7.1f %s\n' "$(echo "$(date +%s.%N) - $start" | bc)" "$line"
		done >"$scratch.log" || true
	grep -E ' kcfi-lab: |CFI failure at' "$scratch.log" | sed 's/^/  /'
	compile=$(sed -n "s/.*kcfi-lab: $arch kernel built in \([0-9]*\) s.*/\1/p" "$scratch.log")
	total=$(grep -m1 'CFI failure at' "$scratch.log" | awk '{ print $1 }')
	if [ -n "$compile" ] && [ -n "$total" ]; then
		printf '%-40s %6s s\n' "$arch first run: compile" "$compile"
		printf '%-40s %6.1f s\n' "$arch first run: to the first oops" "$total"
		printf '%-40s %6.2f\n' "$arch first run: the rest / the compile" "$(echo "($total - $compile) / $compile" | bc -l)"
	else
		echo "$arch first run: FAILED (log: $scratch.log)"
	fi
	rm -rf "$scratch"
}

# import_floor: what an import cannot go below: decompressing the
# tarball once, and hashing its files once.
import_floor() {
	local tmp
	tmp=$(mktemp -d)
	# shellcheck disable=SC2016 # expanded by that sh
	timed "floor: xz -dc of the tarball" sh -c 'xz -dc "$1" >/dev/null' _ "$DISTRO_TARBALL"
	tar -C "$tmp" -xf "$DISTRO_TARBALL"
	# shellcheck disable=SC2016 # expanded by that sh
	timed "floor: git hash-object of every file" sh -c 'cd "$1" && find . -type f -print0 | xargs -0 git hash-object >/dev/null' _ "$tmp"
	rm -rf "$tmp"
}

cold=""
if [ "${1:-}" = --cold ]; then
	cold=1
	shift
fi
[ $# -gt 0 ] || set -- x86_64 arm64

echo "machine: $(nproc) cores, $(uname -m), $(qemu-system-x86_64 --version | head -n 1)"
echo "kvm: $([ -w /dev/kvm ] && echo "/dev/kvm present (run.sh probes it)" || echo "no /dev/kvm: TCG only")"
if [ -n "$cold" ]; then
	import_floor
	scratch=$(mktemp -d)
	# shellcheck disable=SC2016 # expanded by that bash
	timed "import (lab/tar-import.py, fast-import)" env KCFI_LAB_HOME="$scratch" bash -c \
		'. "$1/lab/common.sh"; . "$1/lab/kernel-branch.sh"; lock_home; import_distro' _ "$ROOT"
	rm -rf "$scratch"
fi
for arch in "$@"; do
	if [ -n "$cold" ]; then
		cold_first_run "$arch"
	fi
	timed "$arch no-op build check" "$ROOT/run.sh" build "$arch"
	timed "$arch no-op rerun: boot, run, power off" "$ROOT/run.sh" "$arch" --run true
	printf '%-40s %6s s (kernel timestamp of Run /init)\n' "$arch boot to init:" "$(boot_seconds "$arch")"
	timed "$arch lkdtm CFI_FORWARD_PROTO run" "$ROOT/run.sh" "$arch" --run 'lkdtm CFI_FORWARD_PROTO'
	timed "$arch one-file rebuild (lkdtm/cfi.c)" one_file_rebuild "$arch"
done
pack="$(mktemp -d)/pack.tar.gz"
timed "pack $*" "$ROOT/run.sh" pack "$@" -o "$pack"
echo "pack size: $(du -h "$pack" | cut -f1) ($*)"
learner=$(mktemp -d)
key="$KCFI_LAB_HOME/keys/instructor.pub"
unpack_and_oops() {
	KCFI_LAB_HOME="$learner" "$ROOT/run.sh" unpack "$pack" --key "$key" &&
		KCFI_LAB_HOME="$learner" "$ROOT/run.sh" "$1" --run 'lkdtm CFI_FORWARD_PROTO'
}
timed "unpack to first oops ($1)" unpack_and_oops "$1"
rm -rf "$learner" "$(dirname "$pack")"
