#!/usr/bin/env bash
# Maintainer check of the kernel branch: every commit on top of the distro
# import passes scripts/checkpatch.pl --strict without errors and builds
# for every arch in lab/arch/ (incrementally, in the lab's O= directories).
#
#   lab/check-branch.sh
#
# The worktree goes back to the branch head afterwards, even on Ctrl-C.
set -euo pipefail

KCFI_LAB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lab/common.sh
. "$KCFI_LAB_ROOT/lab/common.sh"
# shellcheck source=lab/build.sh
. "$KCFI_LAB_ROOT/lab/build.sh"

restore() {
	git -C "$LAB_WORKTREE" checkout -q "$LAB_BRANCH"
}

check_commit() {
	local c=$1 arch log errors
	git -C "$LAB_WORKTREE" checkout -q --detach "$c"
	errors=$(git -C "$LAB_WORKTREE" format-patch -1 --stdout "$c" |
		(cd "$LAB_WORKTREE" && ./scripts/checkpatch.pl --strict - 2>/dev/null) |
		sed -n 's/^total: \([0-9]*\) errors.*/\1/p') || true # checkpatch exits 1 on warnings
	[ "${errors:-1}" = 0 ] || die "$(git -C "$LAB_WORKTREE" log -1 --format='%h %s' "$c"): checkpatch errors"
	for arch in $(lab_arches); do
		log=$(new_log "check-$arch")
		kmake "$arch" -j"$KCFI_LAB_JOBS" all >"$log" 2>&1 ||
			die "$(git -C "$LAB_WORKTREE" log -1 --format='%h %s' "$c") does not build for $arch (log: $log)"
	done
	echo "ok  $(git -C "$LAB_WORKTREE" log -1 --format='%h %s' "$c")"
}

main() {
	[ -z "$(git -C "$LAB_WORKTREE" status --porcelain --untracked-files=no)" ] ||
		die "the worktree has uncommitted changes; commit or stash them first"
	lock_kernel
	trap restore EXIT
	local c
	for c in $(git -C "$LAB_WORKTREE" rev-list --reverse "$LAB_DISTRO..$LAB_BRANCH"); do
		check_commit "$c"
	done
}

main "$@"
