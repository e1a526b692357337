#!/usr/bin/env bash
# Static checks: shell lint and syntax, the bundle, the host tool.

shell_files() {
	local f first
	while IFS= read -r f; do
		case "$f" in
		*.sh | .ci/run) echo "$f" ;;
		*)
			first=""
			LC_ALL=C read -r -n 64 first <"$f" || true
			[[ "$first" =~ ^\#!.*(bash|/sh|busybox\ sh) ]] && echo "$f"
			;;
		esac
	done < <(git ls-files --cached --others --exclude-standard | while read -r f; do [ -f "$f" ] && echo "$f"; done)
	return 0
}

test_shellcheck_clean() {
	have shellcheck || skip "shellcheck is not installed (./run.sh setup)"
	local -a files
	mapfile -t files < <(shell_files)
	[ "${#files[@]}" -gt 10 ] || fail "found only ${#files[@]} shell files"
	# Two at a time: shellcheck -x rereads the sourced files for each.
	printf '%s\0' "${files[@]}" | xargs -0 -P "$(nproc)" -n 6 shellcheck -x
}

# The shell files of tests/, exercises/ and lab/ (and run.sh, .ci/run)
# that bash runs on the host.
host_shell_files() {
	local f first
	while IFS= read -r f; do
		case "$f" in
		tests/* | exercises/* | lab/* | run.sh | .ci/run) [[ "$(sed -n 1p "$f")" == *bash* ]] && echo "$f" ;;
		esac
	done < <(shell_files)
	return 0
}

test_no_shapes_that_hide_failures() {
	local -a files
	mapfile -t files < <(host_shell_files)
	[ "${#files[@]}" -gt 30 ] || fail "found only ${#files[@]} host shell files"
	tests/check-shapes.sh "${files[@]}" || fail "see tests/check-shapes.sh for why these shapes hide failures"
}

test_shape_check_finds_every_shape() {
	# The check itself can fail: samples of each shape, and the fixed
	# forms that must pass.
	local bad="$TEST_TMP/bad-shapes.sh" good="$TEST_TMP/good-shapes.sh" out rc=0
	cat >"$bad" <<-'EOF'
		helper() {
			assert_eq "$1" x
			echo "$TEST_TMP/f"
		}
		outer() {
			local f
			f=$(helper y)
		}
		reader() {
			llvm-objdump -d vmlinux | grep -q ud2
			x=$(find . -name '*.ko' | head -n 1)
			llvm-nm vmlinux |
				grep -m1 foo
			nm vmlinux | awk '$3 == "f" { print $1; exit }'
		}
		runner() {
			(
				assert_eq a b
			) >log || rc=$?
		}
		cleanup() {
			trap "rm -rf '$dir'" EXIT
		}
	EOF
	out=$(tests/check-shapes.sh "$bad") || rc=$?
	assert_eq "$rc" 1 "exit status on bad shapes"
	assert_eq "$(printf '%s\n' "$out" | cut -d: -f2 | tr '\n' ' ')" "7 10 11 13 14 19 22 " "the lines found"
	cat >"$good" <<-'EOF'
		helper() {
			assert_eq "$1" x
			RESULT="$TEST_TMP/f"
		}
		reader() {
			dis=$(llvm-objdump -d vmlinux)
			grep -q ud2 <<<"$dis"
			x=$(find . -name '*.ko' | sed -n 1p)
			[ "$x" = y ] || helper "$x"
			echo a || grep -q b c
		}
		runner() {
			(
				assert_eq a b
			) >log &
			wait "$!" || rc=$?
		}
		cleanup() {
			trap 'rm -rf "$dir"' EXIT
		}
	EOF
	tests/check-shapes.sh "$good" || fail "the fixed forms were flagged"
}

# machinery_files / host_free_files: what the name check reads. The
# machinery names no arch, kernel, host, LLVM suffix or mirror; the
# exercises, the C tool's build, tests and benches, whose subject is an
# arch or a kernel, name no host, LLVM suffix or mirror.
machinery_files() {
	printf '%s\n' run.sh lab/*.sh lab/*.py exercises/lib.sh
}

host_free_files() {
	local f
	for f in exercises/[0-9]*/* lab/kcfi/Makefile lab/kcfi/tests/*.sh lab/kcfi/bench.sh \
		tests/*.sh bench/*.sh gdb-scripts/*; do
		# Prose and the check's own fixtures are not code.
		case "$f" in
		*.md | tests/check-arch-free.sh) continue ;;
		esac
		# Text only (grep -I passes over binary files): a fresh machine
		# has no file(1).
		if [ -f "$f" ] && grep -Iq . "$f"; then
			echo "$f"
		fi
	done
}

# Every arch, kernel and host fact of the machinery lives in lab/arch/,
# lab/kernel/ and lab/host/.
test_machinery_names_no_arch_kernel_or_host() {
	local -a files
	mapfile -t files < <(machinery_files)
	[ "${#files[@]}" -gt 15 ] || fail "found only ${#files[@]} files"
	# The pieces the check once missed: the exercises' library and the
	# docs' listing checker.
	[[ " ${files[*]} " == *" exercises/lib.sh "* ]] || fail "the machinery's files lack exercises/lib.sh: ${files[*]}"
	[[ " ${files[*]} " == *" lab/doc-listings.py "* ]] || fail "the machinery's files lack lab/doc-listings.py: ${files[*]}"
	tests/check-arch-free.sh "${files[@]}" || fail "arch, kernel or host knowledge outside lab/arch/, lab/kernel/ and lab/host/"
}

test_code_names_no_host_or_llvm_suffix() {
	local -a files
	mapfile -t files < <(host_free_files)
	[ "${#files[@]}" -gt 40 ] || fail "found only ${#files[@]} files"
	tests/check-arch-free.sh --host-only "${files[@]}" || fail "host or LLVM suffix knowledge outside lab/host/"
}

test_arch_check_finds_arch_names() {
	# The check itself can fail: each kind of name it must find, and the
	# forms it must leave alone, spelled from the data files.
	local bad="$TEST_TMP/arch-bad.sh" good="$TEST_TMP/arch-good.sh" hostbad="$TEST_TMP/host-bad.sh" out rc=0
	local f arch alias kernel pkg word n=0 h=0 ex first_arch
	local -a aliases
	# shellcheck disable=SC2016 # the samples are shell text
	for f in lab/arch/*.conf; do
		arch=$(basename "$f" .conf)
		printf '[ "$arch" = %s ] && echo\n' "$arch"
		# A name after a dash: a QEMU binary.
		printf 'run qemu-system-%s\n' "$arch"
		n=$((n + 2))
		read -r -a aliases <<<"$(sed -n 's/^aliases=//p' "$f")"
		for alias in "${aliases[@]}"; do
			printf 'case $a in %s) ;; esac\n' "$alias"
			n=$((n + 1))
		done
	done >"$bad"
	ex=$(find exercises -maxdepth 1 -name '[0-9][0-9]-*' -printf '%f\n' | sort | sed -n 1p)
	first_arch=$(find lab/arch -name '*.conf' -printf '%f\n' | sort | sed -n 1p)
	first_arch=${first_arch%.conf}
	for f in lab/kernel/*.conf; do
		kernel=$(basename "$f" .conf)
		pkg=$(sed -n 's/^source_package=//p' "$f")
		printf 'echo "Linux %s"\napt-get install %s\n' "$kernel" "$pkg"
		# A kernel after an arch (a build directory), beside an exercise.
		printf 'ls build/%s-%s exercises/%s\n' "$first_arch" "$kernel" "$ex"
		n=$((n + 3))
	done >>"$bad"
	# Hosts, the suites they name, LLVM suffixes and a mirror.
	for f in lab/host/*.conf; do
		printf 'cat lab/host/%s.conf\n' "$(basename "$f" .conf)"
		h=$((h + 1))
		for word in $(sed -n -e 's/^suite=//p' -e 's/^[^=]*_suites=//p' "$f" | tr ' ' '\n' | sort -u); do
			printf 'apt-get -t %s install x\n' "$word"
			h=$((h + 1))
		done
		while read -r word; do
			printf 'llvm-objdump%s -d x\n' "$word"
			h=$((h + 1))
		done < <(sed -n 's/^[^=]*[.]llvm=//p' "$f" | sort -u)
	done >"$hostbad"
	# (spelled in two parts: this file is checked too)
	printf 'echo "deb %s//mirror.example.org/debian stable main"\n' http: >>"$hostbad"
	h=$((h + 1))
	cat "$hostbad" >>"$bad"
	n=$((n + h))
	out=$("$KCFI_LAB_ROOT"/tests/check-arch-free.sh "$bad") || rc=$?
	assert_eq "$rc" 1 "exit status on arch names"
	assert_eq "$(printf '%s\n' "$out" | grep -c .)" "$n" "lines found of $n: $out"
	rc=0
	out=$("$KCFI_LAB_ROOT"/tests/check-arch-free.sh --host-only "$hostbad") || rc=$?
	assert_eq "$rc" 1 "exit status on host names"
	assert_eq "$(printf '%s\n' "$out" | grep -c .)" "$h" "host lines found of $h: $out"
	for f in lab/arch/*.conf; do
		printf '# %s in a comment\necho %s_foo %sx\n' \
			"$(basename "$f" .conf)" "$(basename "$f" .conf)" "$(basename "$f" .conf)"
	done >"$good"
	# Every exercise's name (04-x86-check holds an arch's alias).
	find exercises -maxdepth 1 -name '[0-9][0-9]-*' -printf 'lab_find %f\n' >>"$good"
	echo 'cut -c1-16; echo v6.10 6.100' >>"$good"
	tests/check-arch-free.sh "$good" || fail "names that are not arch knowledge were flagged"
}

# Every arch file sets every key the machinery reads, and every alias
# leads to its file.
test_arch_files_are_complete() {
	local f arch alias got
	for f in lab/arch/*.conf; do
		arch=$(basename "$f" .conf)
		for alias in "$arch" $(sed -n 's/^aliases=//p' "$f"); do
			# On the first kernel that has the arch.
			got=$(bash -c '. lab/common.sh; use_kernel "$(kernel_for_arch "$1")"; normalize_arch "$1"' _ "$alias" 2>&1) ||
				fail "$alias: $got"
			assert_eq "$got" "$arch" "the arch of $alias"
		done
	done
	cp -r lab "$TEST_TMP/"
	sed -i '/^console=/d' "$TEST_TMP/lab/arch/$arch.conf"
	got=$(KCFI_LAB_ROOT=$TEST_TMP bash -c '. "$KCFI_LAB_ROOT/lab/common.sh"; use_kernel "$(kernel_for_arch "$1")"; normalize_arch "$1"' _ "$arch" 2>&1) || true
	assert_eq "$got" "kcfi-lab: error: lab/arch/$arch.conf does not set console" "a file without a key"
}

test_shell_syntax() {
	local f
	while IFS= read -r f; do
		if [[ "$(sed -n 1p "$f")" == *bash* ]]; then bash -n "$f"; else busybox sh -n "$f"; fi
	done < <(shell_files)
}

test_bundle_verifies_in_empty_repo() {
	local repo="$TEST_TMP/empty.git"
	git init -q --bare "$repo"
	git --git-dir="$repo" bundle verify "$KCFI_LAB_ROOT/kernel-branch.bundle"
	local size
	size=$(stat -c %s "$KCFI_LAB_ROOT/kernel-branch.bundle")
	[ "$size" -lt 1048576 ] || fail "bundle is $size bytes"
}

test_bundle_commits_are_the_labs() {
	local repo="$TEST_TMP/b.git" root n
	git init -q --bare "$repo"
	git --git-dir="$repo" fetch -q "$KCFI_LAB_ROOT/kernel-branch.bundle" "refs/heads/kcfi-lab:refs/heads/kcfi-lab"
	root=$(git --git-dir="$repo" rev-list --max-parents=0 kcfi-lab)
	n=$(git --git-dir="$repo" rev-list --count "$root..kcfi-lab")
	[ "$n" -ge 3 ] || fail "only $n lab commits in the bundle"
	# Every commit is authored by the lab, has an upstream-style subject and a sign-off.
	git --git-dir="$repo" log --format='%an|%s' "$root..kcfi-lab" | while IFS='|' read -r author subject; do
		assert_eq "$author" "KCFI Lab" "author of '$subject'"
		[[ "$subject" =~ ^[a-z0-9/_-]+:\ [a-z] ]] || fail "subject not upstream style: $subject"
	done
	[ "$(git --git-dir="$repo" log --format=%b "$root..kcfi-lab" | grep -c '^Signed-off-by: KCFI Lab')" = "$n" ] ||
		fail "a commit lacks Signed-off-by"
	# The root is sparse: only the files the lab touches.
	local files
	files=$(git --git-dir="$repo" ls-tree -r --name-only "$root" | wc -l)
	[ "$files" -lt 100 ] || fail "sparse root holds $files files"
}

test_config_check_catches_dropped_option() {
	(
		# shellcheck source=lab/common.sh
		. lab/common.sh
		# shellcheck source=lab/build.sh
		. lab/build.sh
		KCFI_LAB_HOME="$TEST_TMP/home"
		LAB_WORKTREE="$TEST_TMP/tree"
		mkdir -p "$LAB_WORKTREE/kernel/configs" "$LAB_WORKTREE/arch/x86/configs" "$(build_dir x86_64)"
		printf 'CONFIG_A=y\n# CONFIG_B is not set\n' >"$LAB_WORKTREE/kernel/configs/kcfi-lab.config"
		printf 'CONFIG_C="x y"\n' >"$LAB_WORKTREE/arch/x86/configs/kcfi-lab.config"
		printf 'CONFIG_A=y\nCONFIG_C="x y"\n' >"$(build_dir x86_64)/.config"
		(verify_config x86_64) || fail "a complete .config was rejected"
		printf 'CONFIG_A=y\nCONFIG_B=y\n' >"$(build_dir x86_64)/.config"
		local out rc=0
		out=$( (verify_config x86_64) 2>&1) || rc=$?
		[ "$rc" = 1 ] || fail "verify_config accepted a .config missing options"
		[[ "$out" == *"CONFIG_B=n (got y)"* ]] || fail "no word on CONFIG_B: $out"
		[[ "$out" == *'CONFIG_C="x y" (got n)'* ]] || fail "no word on CONFIG_C: $out"
		[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "error is not one line: $out"
	)
}

test_host_tool_make_check() {
	local var
	[ -f lab/kcfi/Makefile ] || skip "lab/kcfi not present"
	# make check compares with each arch's toolchain: on a machine where
	# only the default kernel's was installed (./run.sh, then ./run.sh
	# test --quick), the others are missing.
	tool_toolchains
	for var in $(tool_llvm_args); do
		have "clang${var#*=}" || skip "clang${var#*=} is not installed (./run.sh setup --kernel of each kernel; ./run.sh test does it)"
	done
	# Where the lab builds the tool, so a warm home builds nothing.
	tool_make check || fail "make -C lab/kcfi O=$LAB_TOOL_DIR check: $(tail -n 20 "$LAB_TOOL_LOG")"
	tail -n 1 "$LAB_TOOL_LOG"
}

test_tests_see_default_signal_handling() {
	# Tests send SIGINT and SIGHUP as a terminal would; a suite started
	# with them ignored (nohup, a script's background job) resets them.
	local ign
	ign=$(awk '/^SigIgn:/ { print $2 }' /proc/self/status)
	[ $((0x$ign & 0x7)) = 0 ] || fail "this test runs with SIGHUP, SIGINT or SIGQUIT ignored (SigIgn $ign)"
	[ -z "${KCFI_LAB_TEST_NESTED:-}" ] || return 0
	# A home of its own: the nested suite's cleanup looks for QEMU and
	# gdb of its KCFI_LAB_HOME, and must not take the outer suite's
	# guests, running beside it, for its own leftovers.
	mkdir -p "$TEST_TMP/nested-home"
	expect_exit 0 env --ignore-signal=HUP,INT,QUIT -u KCFI_LAB_TEST_SIGNALS KCFI_LAB_TEST_NESTED=1 \
		KCFI_LAB_HOME="$TEST_TMP/nested-home" tests/run.sh --quick --only '^test_tests_see_default_signal_handling$'
	[[ "$OUT" == *"ok   test_tests_see_default_signal_handling "*"passed, 0 failed"* ]] ||
		fail "the suite started with signals ignored: $OUT"
}

# lab/tar-import.py against git itself, on a small tarball with what a
# source tarball can hold: modes git keeps one bit of, links of both
# kinds, names git quotes, a "./" before the top directory, names and
# link targets too long for a tar header, in each of tar's formats. The
# tree it writes is the tree "git add -A -f" of the extracted files
# writes. A damaged or cut archive is refused, with no commit.
test_tar_import_writes_what_git_add_writes() {
	local dir="$TEST_TMP/tar-import" repo want got prefix format long
	have python3 || skip "python3 is not installed (./run.sh setup)"
	rm -rf "$dir"
	long="a-directory-name-of-sixty-characters-to-pass-a-header-s-field"
	mkdir -p "$dir/top/sub dir" "$dir/x" "$dir/top/$long/$long"
	printf 'a\n' >"$dir/top/plain"
	printf 'b\n' >"$dir/top/group-x"
	chmod 0654 "$dir/top/group-x"
	printf '#!/bin/sh\n' >"$dir/top/sub dir/run"
	chmod 0755 "$dir/top/sub dir/run"
	printf 'q\n' >"$dir/top/\"quoted name"
	printf 'l\n' >"$dir/top/$long/$long/a-file-whose-path-is-longer-than-one-hundred-and-fifty-five-bytes"
	ln -s "../plain" "$dir/top/sub dir/link"
	ln -s "$long/$long/a-file-whose-path-is-longer-than-one-hundred-and-fifty-five-bytes" "$dir/top/long-link"
	ln "$dir/top/plain" "$dir/top/hard"
	printf 'ignored\n' >"$dir/top/.gitignore"
	repo="$dir/repo.git"
	git init -q --bare "$repo"
	want=$(tree_of "$dir")
	printf 'm\n' >"$dir/msg"
	for format in gnu pax ustar; do
		if [ "$format" = ustar ]; then
			# ustar holds no link target over 100 bytes.
			rm "$dir/top/long-link"
			want=$(tree_of "$dir")
		fi
		for prefix in top ./top; do
			tar_import "$dir" "$format" "$prefix" || fail "the import of $prefix as $format failed: $(cat "$dir/err")"
			got=$(git --git-dir="$repo" rev-parse 'refs/lab/import^{tree}')
			assert_eq "$got" "$want" "the tree of a $format tarball of $prefix against git add's: $(git --git-dir="$repo" diff-tree -r "$want" "$got" | sed -n 1,3p)"
		done
	done
	# A flipped byte in the first header, then an archive cut short.
	(cd "$dir" && tar -cf "$dir/good.tar" top)
	{ printf 'x'; tail -c +2 "$dir/good.tar"; } >"$dir/bad.tar"
	head -c 5000 "$dir/good.tar" >"$dir/cut.tar"
	for format in bad cut; do
		! tar_import "$dir" "$format" top || fail "a $format archive was imported"
		grep -q '^tar-import: ' "$dir/err" || fail "no tar-import error for a $format archive: $(cat "$dir/err")"
		! git --git-dir="$repo" rev-parse -q --verify refs/lab/import >/dev/null || fail "a $format archive left a commit"
	done
}

# tree_of DIR: the tree "git add -A -f" writes of DIR/top, in DIR/repo.git.
tree_of() {
	rm -f "$1/index"
	GIT_INDEX_FILE="$1/index" git --git-dir="$1/repo.git" --work-tree="$1/top" add -A -f . &&
		GIT_INDEX_FILE="$1/index" git --git-dir="$1/repo.git" write-tree
}

# tar_import DIR FORMAT PREFIX: DIR/PREFIX as a FORMAT tarball (or DIR/FORMAT.tar)
# through lab/tar-import.py into DIR/repo.git's refs/lab/import, its errors in DIR/err.
tar_import() {
	local dir=$1 format=$2 prefix=$3
	git --git-dir="$dir/repo.git" update-ref -d refs/lab/import 2>/dev/null || true
	# shellcheck disable=SC2031 # KCFI_LAB_ROOT is this run's, not a mutant's
	{
		if [ -f "$dir/$format.tar" ]; then
			cat "$dir/$format.tar"
		else
			(cd "$dir" && tar --format="$format" -cf - "$prefix")
		fi
	} | python3 "$KCFI_LAB_ROOT/lab/tar-import.py" refs/lab/import "$dir/msg" "0 +0000" "KCFI Lab" kcfi-lab@localhost \
		-- git --git-dir="$dir/repo.git" fast-import --quiet 2>"$dir/err"
}

# Every source mutant of tests/mutants.txt still changes its file: code
# that moved or was reworded would leave a mutant that changes nothing,
# found otherwise only at the end of a full run.
test_source_mutants_still_apply() {
	# shellcheck disable=SC2031 # the suite's root: a test above sets its own in a subshell only
	local root=$KCFI_LAB_ROOT name boundary fault file stale="" out="$TEST_TMP/mutant-applied"
	while IFS=$'\t' read -r name boundary fault _; do
		[ "$boundary" = source ] || continue
		file=${fault%%:*}
		if [ ! -f "$root/$file" ]; then
			stale="$stale $name($file: no such file)"
			continue
		fi
		sed -E "${fault#*:}" "$root/$file" >"$out"
		! cmp -s "$out" "$root/$file" || stale="$stale $name($file)"
	done < <(mutant_list)
	[ -z "$stale" ] || fail "source mutants that change nothing:$stale"
}
