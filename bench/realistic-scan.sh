#!/usr/bin/env bash
# Builds a defconfig-sized KCFI kernel (the branch's kcfi-lab-realistic
# fragment on top of defconfig) in KCFI_LAB_HOME/build/ARCH-realistic,
# then times `kcfi scan` on its vmlinux against the llvm-objdump pipeline.
#
#   bench/realistic-scan.sh [x86_64|arm64]
#
# With DWARF (for kcfi scan --types). The first build takes about 17
# minutes on 2 cores without it; later runs reuse it.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lab/common.sh
. "$ROOT/lab/common.sh"
# shellcheck source=lab/tool.sh
. "$ROOT/lab/tool.sh"

arch=$(normalize_arch "${1:-x86_64}") || die "unknown arch: $1"
karch=$(kbuild_arch "$arch")
out="$KCFI_LAB_HOME/build/$arch-realistic"
frag="$LAB_WORKTREE/kernel/configs/kcfi-lab-realistic.config"
[ -f "$frag" ] || die "$frag not found; run ./run.sh prepare first"

rmake() {
	make -C "$LAB_WORKTREE" O="$out" ARCH="$karch" LLVM="$KCFI_LAB_LLVM" "$@"
}

lock_home
mkdir -p "$out"
log=$(new_log "realistic-$arch")
# DWARF, for kcfi scan --types (a bench's need, not the branch's).
dwarf="$out/bench-dwarf.config"
if [ ! -f "$out/.config" ]; then
	mkdir -p "$out"
	printf '%s\n' '# CONFIG_DEBUG_INFO_NONE is not set' 'CONFIG_DEBUG_INFO_DWARF5=y' >"$dwarf"
	{
		rmake defconfig &&
			"$LAB_WORKTREE/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "$frag" "$dwarf" &&
			rmake olddefconfig
	} >"$log" 2>&1 || die "configuring failed (log: $log)"
fi
grep -qx 'CONFIG_CFI_CLANG=y' "$out/.config" || die "CONFIG_CFI_CLANG is not set in $out/.config"
grep -qx 'CONFIG_DEBUG_INFO_DWARF5=y' "$out/.config" || die "CONFIG_DEBUG_INFO_DWARF5 is not set in $out/.config"
info "building a defconfig-sized $arch vmlinux in $out (log: $log)"
start=$SECONDS
rmake -j"$KCFI_LAB_JOBS" vmlinux >>"$log" 2>&1 || die "build failed (log: $log)"
info "built in $((SECONDS - start)) s"
unlock_home
build_tool || die "building the kcfi host tool failed: $(tail -n 5 "$LAB_TOOL_LOG")"
KCFI="$LAB_TOOL_BIN" OBJDUMP="llvm-objdump$KCFI_LAB_LLVM" "$ROOT/lab/kcfi/bench.sh" "$out/vmlinux"
"$LAB_TOOL_BIN" scan "$out/vmlinux" | grep -iE '^(type ids|functions with|check sites|summary)|preamble|sites' | head -n 8
