#!/usr/bin/env bash
# The kernel tree: import Debian's kernel source package as one commit, replay
# the lab's commits from kernel-branch.bundle onto it with git cherry-pick,
# and re-cut the bundle from the worktree (maintainer path). Sourced by run.sh.

LAB_IDENT=(-c "user.name=KCFI Lab" -c "user.email=kcfi-lab@localhost")

# lgit ARGS: git on the lab's repository, without the lock's descriptor:
# nothing git leaves behind may hold the lab's lock.
lgit() {
	git --git-dir="$LAB_GIT" "${LAB_IDENT[@]}" "$@" 9>&-
}

distro_version() {
	if [ -n "${KCFI_LAB_DISTRO_VERSION:-}" ]; then
		echo "$KCFI_LAB_DISTRO_VERSION"
		return
	fi
	# A source package this host fetched from another suite.
	if [ -n "$LAB_SOURCE_ROOT" ]; then
		cat "$LAB_SOURCE_ROOT/version" 2>/dev/null || echo unknown
		return
	fi
	dpkg-query -W -f='${Version}' "$DISTRO_PACKAGE" 2>/dev/null || echo unknown
}

distro_tag() {
	echo "distro/$(distro_version | tr ':~' '__')"
}

# import_distro: the tarball becomes one commit tagged distro/VERSION and
# the branch $LAB_DISTRO ("distro", or "distro-VERSION" for a kernel other
# than the default one): every file of its top directory, as "git add -A -f"
# of the extracted tree would have it (Debian's .gitignore ignores all).
import_distro() {
	local tag version
	tag=$(distro_tag)
	version=$(distro_version)
	[ -d "$LAB_GIT" ] || git init -q --bare "$LAB_GIT"
	# git gc --auto, after a commit or a cherry-pick, would go on in the
	# background for minutes, holding the lab's lock (fd 9) after run.sh
	# has exited. In the foreground it is part of the run that caused it.
	lgit config gc.autoDetach false
	if lgit rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
		lgit update-ref "refs/heads/$LAB_DISTRO" "refs/tags/$tag"
		return 0
	fi
	[ -f "$DISTRO_TARBALL" ] || die "$DISTRO_TARBALL not found; run: ./run.sh setup$LAB_KOPT"
	local date msg total start=$SECONDS
	# What an import of an older lab left when it was interrupted.
	rm -rf "$KCFI_LAB_HOME/import.tmp" "$KCFI_LAB_HOME/import.tmp.index"
	date="$(stat -c %Y "$DISTRO_TARBALL") +0000"
	total=$(xz --robot --list "$DISTRO_TARBALL" 2>/dev/null | awk '$1 == "totals" { print int($5 / 1048576) }') || total=""
	info "importing $DISTRO_PACKAGE $version into $LAB_GIT (${total:-?} MB)"
	msg=$(mktemp)
	printf 'Import Debian %s %s\n\nDistro-Version: %s\n' "$DISTRO_PACKAGE" "$version" "$version" >"$msg"
	# Decompressed once, hashed once, written as packs (no temporary
	# tree, no loose objects): the tar stream becomes the input of two
	# fast-imports at once (each hashes and compresses on one core),
	# then of one for the trees and the commit. Compression level 1 and
	# no deltas: the repository is the lab's cache, and zlib's effort
	# was most of the time.
	lgit update-ref -d refs/lab/import 2>/dev/null || true
	if ! xz -T0 -dc "$DISTRO_TARBALL" |
		python3 "$KCFI_LAB_ROOT/lab/tar-import.py" --streams 2 refs/lab/import "$msg" "$date" "KCFI Lab" "kcfi-lab@localhost" \
			-- git --git-dir="$LAB_GIT" -c pack.compression=1 -c core.compression=1 fast-import --quiet --depth=0 \
			2> >(import_progress "${total:-?}") 9>&-; then
		rm -f "$msg"
		progress_end
		die "importing $DISTRO_TARBALL failed; run the same command again"
	fi
	rm -f "$msg"
	progress_end
	local commit
	commit=$(lgit rev-parse refs/lab/import)
	lgit tag "$tag" "$commit"
	lgit update-ref "refs/heads/$LAB_DISTRO" "$commit"
	lgit update-ref -d refs/lab/import
	info "imported in $((SECONDS - start)) s"
}

# import_progress TOTAL: tar-import.py's "import: MB" lines as progress;
# anything else it says, as it is.
import_progress() {
	local line
	while IFS= read -r line; do
		case "$line" in
		"import: "*" MB")
			line=${line#import: }
			progress import "${line% MB} of $1 MB"
			;;
		*) printf '%s\n' "$line" >&2 ;;
		esac
	done
}

# verify_bundle: a clear one-line error for a missing or damaged bundle.
# "bundle verify" reads only the header; unbundling into an empty
# repository checks every object of the pack as well.
verify_bundle() {
	local out="" scratch
	[ -f "$KCFI_LAB_BUNDLE" ] || die "bundle not found: $KCFI_LAB_BUNDLE"
	scratch=$(mktemp -d)
	git init -q --bare "$scratch"
	if out=$(git --git-dir="$scratch" bundle list-heads "$KCFI_LAB_BUNDLE" "refs/heads/$LAB_BRANCH" 2>&1) &&
		[ -z "$out" ]; then
		rm -rf "$scratch"
		die "$KCFI_LAB_BUNDLE has no branch $LAB_BRANCH for Linux $LAB_KERNEL"
	fi
	out=$(git --git-dir="$scratch" bundle verify -q "$KCFI_LAB_BUNDLE" 2>&1) &&
		out=$(git --git-dir="$scratch" fetch -q "$KCFI_LAB_BUNDLE" \
			"refs/heads/$LAB_BRANCH:refs/heads/check" 2>&1) &&
		out=""
	rm -rf "$scratch"
	[ -z "$out" ] || die "$KCFI_LAB_BUNDLE is damaged: $(printf '%s\n' "$out" | grep -v '^$' | sed -n 1p)"
}

# bundle_state: "DISTRO-COMMIT BUNDLE-TIP" for the current inputs.
bundle_state() {
	echo "$(lgit rev-parse "$LAB_DISTRO") $(lgit rev-parse "refs/lab/bundle/$LAB_BRANCH")"
}

fetch_bundle() {
	lgit fetch -q --no-tags "$KCFI_LAB_BUNDLE" "+refs/heads/$LAB_BRANCH:refs/lab/bundle/$LAB_BRANCH" ||
		die "cannot fetch $LAB_BRANCH from $KCFI_LAB_BUNDLE"
}

remove_replay_tree() {
	local tmp="$KCFI_LAB_HOME/replay.tmp"
	if [ -e "$tmp" ]; then
		lgit worktree remove --force "$tmp" 2>/dev/null || rm -rf "$tmp"
	fi
	lgit worktree prune
}

# replay_commits: cherry-pick the bundle's commits onto $LAB_DISTRO in a
# sparse scratch worktree, so the real worktree stays untouched until all
# of them applied. Prints the new tip.
replay_commits() {
	local tip root tmp="$KCFI_LAB_HOME/replay.tmp"
	tip=$(lgit rev-parse "refs/lab/bundle/$LAB_BRANCH")
	root=$(lgit rev-list --max-parents=0 "$tip")
	remove_replay_tree
	lgit worktree add -q --no-checkout --detach "$tmp" "$LAB_DISTRO" >/dev/null
	local -a paths
	mapfile -t paths < <(lgit diff --name-only "$root" "$tip" | sed 's|^|/|')
	git -C "$tmp" sparse-checkout set --no-cone "${paths[@]}" >/dev/null
	git -C "$tmp" checkout -q --detach "$LAB_DISTRO"
	local c date subject
	for c in $(lgit rev-list --reverse "$root..$tip"); do
		date=$(lgit log -1 --format=%ad --date=raw "$c")
		subject=$(lgit log -1 --format=%s "$c")
		if ! GIT_COMMITTER_DATE="$date" git -C "$tmp" "${LAB_IDENT[@]}" \
			cherry-pick --allow-empty "$c" >"$tmp.log" 2>&1; then
			local why
			why=$(git -C "$tmp" diff --name-only --diff-filter=U | tr '\n' ' ')
			git -C "$tmp" cherry-pick --abort >/dev/null 2>&1 || true
			remove_replay_tree
			die "commit '$subject' (${c:0:12}) does not apply onto $DISTRO_PACKAGE $(distro_version): conflict in ${why:-$(tail -n 1 "$tmp.log")}; the previous worktree is unchanged"
		fi
	done
	git -C "$tmp" rev-parse HEAD
	remove_replay_tree
	rm -f "$tmp.log"
}

# checkout_worktree COMMIT: point branch kcfi-lab and the worktree at COMMIT.
checkout_worktree() {
	local new=$1
	# A worktree without a recorded state never finished its first
	# checkout (Ctrl-C): start it again.
	if [ -e "$LAB_WORKTREE" ] && [ ! -f "$LAB_BRANCH_STATE" ]; then
		lgit worktree remove --force "$LAB_WORKTREE" 2>/dev/null || rm -rf "$LAB_WORKTREE"
		lgit worktree prune
	fi
	if [ -e "$LAB_WORKTREE/.git" ]; then
		lgit branch -f "$LAB_BRANCH-previous" "$LAB_BRANCH" 2>/dev/null || true
		git -C "$LAB_WORKTREE" checkout -q -B "$LAB_BRANCH" "$new" ||
			die "the worktree $LAB_WORKTREE has local changes that conflict with the new kernel branch; commit or stash them there"
	else
		rm -rf "$LAB_WORKTREE"
		lgit worktree prune
		info "checking out the kernel worktree into $LAB_WORKTREE"
		lgit worktree add -q --no-checkout -B "$LAB_BRANCH" "$LAB_WORKTREE" "$new" >/dev/null
		# checkout.workers=0: one checkout worker per core. --progress
		# even into a pipe: its counts become the lab's progress.
		git -C "$LAB_WORKTREE" -c checkout.workers=0 checkout -q -f --progress 2> >(checkout_progress) 9>&- ||
			die "checking out $LAB_WORKTREE failed; run the same command again"
		progress_end
	fi
}

# checkout_progress: git's "Updating files: P% (N/TOTAL)" as progress;
# anything else it says, as it is.
checkout_progress() {
	local line
	tr '\r' '\n' | while IFS= read -r line; do
		if [[ "$line" =~ ^"Updating files: "\ *[0-9]+%\ \(([0-9]+)/([0-9]+)\) ]]; then
			progress checkout "${BASH_REMATCH[1]} of ${BASH_REMATCH[2]} files"
		elif [ -n "$line" ]; then
			printf '%s\n' "$line" >&2
		fi
	done
}

# recover_worktree: undo what an interrupted run left behind.
recover_worktree() {
	remove_replay_tree 2>/dev/null || true
	if [ -d "$LAB_WORKTREE" ] && [ -n "$(git -C "$LAB_WORKTREE" rev-parse -q --verify CHERRY_PICK_HEAD 2>/dev/null)" ]; then
		git -C "$LAB_WORKTREE" cherry-pick --abort || true
	fi
}

# prepare_tree: the worktree holds the bundle's commits on the installed
# distro source. Does nothing when neither changed.
prepare_tree() {
	verify_bundle
	import_distro
	fetch_bundle
	recover_worktree
	local want have=""
	want=$(bundle_state)
	[ -f "$LAB_BRANCH_STATE" ] && have=$(cat "$LAB_BRANCH_STATE")
	if [ "$want" = "$have" ] && [ -e "$LAB_WORKTREE/Makefile" ]; then
		return 0
	fi
	info "replaying the lab's kernel commits onto $DISTRO_PACKAGE $(distro_version)"
	local new
	new=$(replay_commits)
	checkout_worktree "$new"
	echo "$want" >"$LAB_BRANCH_STATE"
	lgit log --oneline "$LAB_DISTRO..$LAB_BRANCH" | sed 's/^/  /' >&2
}

# recut_bundle: rewrite the worktree branch's commits onto a sparse root
# (only the files the lab touches, as in the distro import) and write them
# to kernel-branch.bundle, beside the other kernels' branches. The bundle then needs no prerequisite, and git's
# 3-way merge replays it onto later point releases of the same kernel.
recut_bundle() {
	local base head version
	head=$(lgit rev-parse "$LAB_BRANCH")
	base=$(lgit merge-base "$LAB_DISTRO" "$head")
	version=$(distro_version)
	if [ -n "$(lgit rev-list --merges "$base..$head")" ]; then
		die "the $LAB_BRANCH branch has merge commits; rebase it onto distro first"
	fi
	local -a paths
	mapfile -t paths < <(lgit diff --name-only "$base" "$head")
	[ "${#paths[@]}" -gt 0 ] || die "the $LAB_BRANCH branch has no commits on top of distro"
	local idx="$KCFI_LAB_HOME/recut.index"
	sparse_tree() {
		rm -f "$idx"
		GIT_INDEX_FILE="$idx" lgit read-tree --empty
		lgit ls-tree -r "$1" -- "${paths[@]}" | GIT_INDEX_FILE="$idx" lgit update-index --index-info
		GIT_INDEX_FILE="$idx" lgit write-tree
	}
	local date parent c tree
	date=$(lgit log -1 --format=%ad --date=raw "$base")
	parent=$(printf 'kcfi-lab: sparse base from %s %s\n\nOnly the files the lab commits touch, as in the distro import.\n\nDistro-Version: %s\n' "$DISTRO_PACKAGE" "$version" "$version" |
		GIT_AUTHOR_DATE="$date" GIT_COMMITTER_DATE="$date" lgit commit-tree "$(sparse_tree "$base")")
	for c in $(lgit rev-list --reverse "$base..$head"); do
		tree=$(sparse_tree "$c")
		parent=$(lgit cat-file commit "$c" | sed '1,/^$/d' |
			GIT_AUTHOR_NAME="$(lgit log -1 --format=%an "$c")" \
			GIT_AUTHOR_EMAIL="$(lgit log -1 --format=%ae "$c")" \
			GIT_AUTHOR_DATE="$(lgit log -1 --format=%ad --date=raw "$c")" \
			GIT_COMMITTER_NAME="$(lgit log -1 --format=%cn "$c")" \
			GIT_COMMITTER_EMAIL="$(lgit log -1 --format=%ce "$c")" \
			GIT_COMMITTER_DATE="$(lgit log -1 --format=%cd --date=raw "$c")" \
			lgit commit-tree "$tree" -p "$parent")
	done
	rm -f "$idx"
	local scratch
	scratch=$(mktemp -d)
	git init -q --bare "$scratch"
	lgit update-ref refs/lab/recut "$parent"
	# The bundle carries a branch for every kernel: the other kernels'
	# branches go into the new bundle as they were.
	if [ -f "$KCFI_LAB_BUNDLE" ]; then
		git --git-dir="$scratch" fetch -q "$KCFI_LAB_BUNDLE" "refs/heads/*:refs/heads/*"
	fi
	git --git-dir="$scratch" fetch -q --force "$LAB_GIT" "refs/lab/recut:refs/heads/$LAB_BRANCH"
	git --git-dir="$scratch" bundle create -q "$KCFI_LAB_BUNDLE.tmp" --branches
	mv "$KCFI_LAB_BUNDLE.tmp" "$KCFI_LAB_BUNDLE"
	rm -rf "$scratch"
	# The replayed branch now matches the new bundle: no replay needed.
	fetch_bundle
	bundle_state >"$LAB_BRANCH_STATE"
	info "wrote $KCFI_LAB_BUNDLE ($(stat -c %s "$KCFI_LAB_BUNDLE") bytes, $(lgit rev-list --count "$base..$head") commits)"
}
