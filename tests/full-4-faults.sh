#!/usr/bin/env bash
# Faults: each leaves the lab usable afterwards.

worktree_head() {
	git -C "$LAB_WORKTREE" rev-parse HEAD
}

test_damaged_bundle_is_refused_and_worktree_kept() {
	local head bad="$TEST_TMP/damaged.bundle"
	head=$(worktree_head)
	head -c 1500 "$KCFI_LAB_ROOT/kernel-branch.bundle" >"$bad"
	expect_exit 1 env KCFI_LAB_BUNDLE="$bad" "$KCFI_LAB_ROOT/run.sh" build x86_64
	# One line, once a wait for the home's lock is said (the side lane
	# may be importing another kernel in this home).
	OUT=$(printf '%s\n' "$OUT" | grep -v '^kcfi-lab: waiting for another run.sh working in ' || true)
	[ "$(printf '%s\n' "$OUT" | grep -c .)" = 1 ] || fail "not one line: $OUT"
	[[ "$OUT" == "kcfi-lab: error: $bad is damaged: "* ]] || fail "unexpected: $OUT"
	echo "not a bundle" >"$bad"
	expect_exit 1 env KCFI_LAB_BUNDLE="$bad" "$KCFI_LAB_ROOT/run.sh" build x86_64
	[[ "$OUT" == "kcfi-lab: error: $bad is damaged: "* ]] || fail "unexpected: $OUT"
	assert_eq "$(worktree_head)" "$head" "worktree head after the refused bundle"
	expect_exit 0 lab build x86_64
	[[ "$OUT" == *"up to date"* ]] || fail "the lab rebuilt after a refused bundle: $OUT"
}

# perturb HOME FILE SED-EXPR...: a new import of the lab kernel (its
# branch LAB_DISTRO, "distro" for the default kernel) in HOME's
# repository with FILE edited by sed, as a later point release would
# differ.
perturb() {
	local home=$1 git_dir="$1/linux.git" idx="$TEST_TMP/perturb.index" tag tree commit ref=$LAB_DISTRO
	shift
	tag=$(git --git-dir="$git_dir" describe --tags --match 'distro/*' --abbrev=0 "$ref" 2>/dev/null ||
		git --git-dir="$git_dir" tag --list 'distro/*' | sed -n 1p)
	rm -f "$idx"
	GIT_INDEX_FILE="$idx" git --git-dir="$git_dir" read-tree "$ref"
	while [ $# -gt 0 ]; do
		local blob
		blob=$(git --git-dir="$git_dir" show "$ref:$1" | sed "$2" | git --git-dir="$git_dir" hash-object -w --stdin)
		GIT_INDEX_FILE="$idx" git --git-dir="$git_dir" update-index --cacheinfo "100644,$blob,$1"
		shift 2
	done
	tree=$(GIT_INDEX_FILE="$idx" git --git-dir="$git_dir" write-tree)
	commit=$(echo "perturbed import" | git --git-dir="$git_dir" -c user.name=t -c user.email=t@t commit-tree "$tree" -p "$ref")
	git --git-dir="$git_dir" tag -f "$tag" "$commit" >/dev/null
	git --git-dir="$git_dir" update-ref "refs/heads/$ref" "$commit"
}

# drift_home HOME: in HOME, a clone of the lab's repository without the
# lab's branches, whose import of the lab kernel is a later point
# release: drift in files the lab touches (away from its hunks) and in
# one it does not.
drift_home() {
	mkdir -p "$1"
	git clone -q --bare --shared "$LAB_GIT" "$1/linux.git"
	git --git-dir="$1/linux.git" for-each-ref --format='%(refname)' refs/heads/kcfi-lab\* refs/lab |
		while read -r ref; do git --git-dir="$1/linux.git" update-ref -d "$ref"; done
	perturb "$1" \
		kernel/cfi.c '1a /* later drift */' \
		drivers/misc/lkdtm/cfi.c "\$a /* later drift */" \
		Makefile 's/^SUBLEVEL = .*/SUBLEVEL = 999/'
}

# assert_replayed WT LAB-WORD: WT holds the lab kernel's commits on the
# drifted import, the drift kept, LAB-WORD (a lab change) in
# kernel/cfi.c, nothing left uncommitted.
assert_replayed() {
	local wt=$1
	assert_eq "$(git -C "$wt" log --format=%s "$LAB_DISTRO..HEAD")" \
		"$(git -C "$LAB_WORKTREE" log --format=%s "$LAB_DISTRO..HEAD")" "Linux $LAB_KERNEL: replayed commits"
	grep -q 'later drift' "$wt/kernel/cfi.c" || fail "Linux $LAB_KERNEL: drift lost in kernel/cfi.c"
	grep -q "$2" "$wt/kernel/cfi.c" || fail "Linux $LAB_KERNEL: lab change ($2) missing in kernel/cfi.c"
	grep -q 'later drift' "$wt/drivers/misc/lkdtm/cfi.c" || fail "Linux $LAB_KERNEL: drift lost in lkdtm/cfi.c"
	grep -q '^SUBLEVEL = 999' "$wt/Makefile" || fail "Linux $LAB_KERNEL: drift lost in Makefile"
	[ -z "$(git -C "$wt" status --porcelain --untracked-files=no)" ] || fail "Linux $LAB_KERNEL: replayed worktree is dirty"
}

test_replay_onto_a_later_import() {
	local home="$TEST_TMP/drift home"
	drift_home "$home"
	# git gc --auto runs after the replay's commits; it must not go on in
	# the background holding the lab's lock once prepare has returned.
	git --git-dir="$home/linux.git" config gc.auto 1
	KCFI_LAB_HOME="$home" lab prepare 2>&1 | tee "$TEST_TMP/drift-prepare.out"
	# The new worktree's checkout shows its progress, as a log shows it.
	assert_grep '^kcfi-lab: checkout: [0-9]+ of [0-9]+ files$' "$TEST_TMP/drift-prepare.out" "the checkout's progress"
	local lock
	for lock in "$home/.lock" "$home/.lock.kernel"; do
		flock -n "$lock" true || fail "$lock is still held after prepare: $(fuser -v "$lock" 2>&1)"
	done
	local wt="$home/worktree"
	assert_replayed "$wt" cfi_permissive

	# A drift that conflicts: the replay stops, names the commit, keeps the worktree.
	local head
	head=$(git -C "$wt" rev-parse HEAD)
	perturb "$home" kernel/cfi.c 's/IS_ENABLED(CONFIG_CFI_PERMISSIVE)/cfi_drifted()/'
	expect_exit 1 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" prepare
	[[ "$OUT" == *"error: commit 'cfi: add cfi=warn to choose permissive mode at boot' ("*") does not apply onto linux-source-6.1 "*"conflict in kernel/cfi.c"* ]] ||
		fail "unexpected message: $OUT"
	assert_eq "$(git -C "$wt" rev-parse HEAD)" "$head" "worktree head after a failed replay"
	[ -z "$(git -C "$wt" status --porcelain --untracked-files=no)" ] || fail "failed replay left the worktree dirty"
	[ ! -e "$home/replay.tmp" ] || fail "scratch worktree left behind"
	git -C "$wt" worktree list | has_match replay && fail "scratch worktree still registered"
	return 0
}

test_hung_guest_times_out_with_last_lines() {
	local start=$SECONDS
	expect_exit 1 lab x86_64 --timeout 5 --append 'rdinit=/bin/busybox -- sleep 1000' --run true
	[ $((SECONDS - start)) -lt 120 ] || fail "the timeout took $((SECONDS - start))s"
	[[ "$OUT" == *"x86_64 guest did not power off within 5s (last console lines above); if it was still booting, raise --timeout"* ]] ||
		fail "unexpected: $OUT"
	[[ "$OUT" == *"  | "* ]] || fail "no console lines shown"
	! pgrep -f 'rdinit=/bin/busybox -- sleep 1000' >/dev/null || fail "QEMU left running"
}

# scripted_qemu MARKER: the QEMU processes whose command line has MARKER.
scripted_qemu() {
	pgrep -f -- "qemu-system-.*$1" || true
}

# scripted_run_ended_by SIGNAL TARGET: a --run whose guest sleeps, ended
# by SIGNAL sent to run.sh (TARGET pid) or to its whole process group
# (TARGET group), as kill and Ctrl-C do: QEMU must go with it.
scripted_run_ended_by() {
	local sig=$1 target=$2 marker="kcfi-lab-test-$$-$1-$2" pid _
	set -m
	"$KCFI_LAB_ROOT/run.sh" x86_64 --append "$marker" --run 'echo SLEEPING; sleep 600' >"$TEST_TMP/$marker.log" 2>&1 &
	pid=$!
	set +m
	for _ in $(seq 1 600); do
		grep -q '^SLEEPING' "$TEST_TMP/$marker.log" && break
		sleep 0.2
	done
	grep -q '^SLEEPING' "$TEST_TMP/$marker.log" || fail "the guest never ran the command: $(tail -n 5 "$TEST_TMP/$marker.log")"
	[ -n "$(scripted_qemu "$marker")" ] || fail "no QEMU with $marker"
	if [ "$target" = group ]; then kill "-$sig" -- "-$pid"; else kill "-$sig" "$pid"; fi
	wait "$pid" 2>/dev/null || true
	for _ in $(seq 1 50); do
		[ -n "$(scripted_qemu "$marker")" ] || return 0
		sleep 0.2
	done
	fail "QEMU still runs after SIG$sig to run.sh's $target: $(scripted_qemu "$marker")"
}

test_ctrl_c_or_kill_of_a_scripted_run_ends_qemu() {
	scripted_run_ended_by INT group
	scripted_run_ended_by TERM pid
	scripted_run_ended_by HUP group
}
