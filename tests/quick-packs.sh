#!/usr/bin/env bash
# Packs from outside: hostile packs made here by hand in the pack format,
# with checksums that match, signed or not. Each must be refused before
# anything of it is written, or nothing of it may run on the host; and
# nothing outside the learner's home may change.

# signing_key NAME: an ssh key of the test's (TEST_TMP/keys/NAME, .pub).
signing_key() {
	local key="$TEST_TMP/keys/$1"
	if [ ! -f "$key" ]; then
		mkdir -p "${key%/*}"
		ssh-keygen -q -t ed25519 -N '' -C "test $1" -f "$key"
	fi
	echo "$key"
}

# pack_stage DIR: a small pack in DIR as the lab writes one: a manifest
# for this repository's bundle, a kernel config.
pack_stage() {
	local dir=$1
	mkdir -p "$dir/build/x86_64"
	echo "CONFIG_CFI_CLANG=y" >"$dir/build/x86_64/.config"
	{
		echo "format: kcfi-lab-pack 2"
		echo "kernel: $LAB_DEFAULT_KERNEL"
		echo "arches: x86_64"
		echo "bundle-sha256: $(sha256sum <"$KCFI_LAB_BUNDLE" | cut -d' ' -f1)"
		echo "host: $LAB_HOST"
	} >"$dir/MANIFEST"
}

# tar_files DIR OUT [TAR-OPTION...]: OUT, a tar.gz of what DIR holds
# but its directories, as pack writes one.
tar_files() {
	local dir=$1 out=$2
	shift 2
	(cd "$dir" && find . ! -type d -printf '%P\n' | LC_ALL=C sort) | tar -czf "$out" "$@" -C "$dir" -T -
}

# seal_pack DIR OUT [KEY]: OUT, the tar.gz of DIR with SHA256SUMS made
# anew over every file of it (as an attacker can), signed with KEY when
# one is given.
seal_pack() {
	local dir=$1 out=$2 key=${3:-}
	rm -f "$dir/SHA256SUMS" "$out" "$out.sig"
	(cd "$dir" && find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs -r sha256sum) >"$TEST_TMP/sums"
	mv "$TEST_TMP/sums" "$dir/SHA256SUMS"
	tar_files "$dir" "$out"
	[ -z "$key" ] || ssh-keygen -q -Y sign -f "$key" -n kcfi-lab-pack "$out"
}

# outside_state: what the tests' "outside the home" holds, names and
# contents, so that a change shows.
outside_state() {
	(cd "$TEST_TMP/outside" && find . -printf '%p %s\n' | LC_ALL=C sort && cat ./* 2>/dev/null) | sha256sum
}

make_outside() {
	mkdir -p "$TEST_TMP/outside"
	echo "precious" >"$TEST_TMP/outside/file"
}

test_pack_signature_is_checked_first() {
	have ssh-keygen || skip "ssh-keygen is not installed (openssh-client)"
	local key other stage="$TEST_TMP/sig-stage" pack="$TEST_TMP/sig pack.tar.gz" home="$TEST_TMP/sig home" fp
	key=$(signing_key instructor)
	other=$(signing_key other)
	fp=$(ssh-keygen -l -E sha256 -f "$key.pub" | awk '{ print $2 }')
	pack_stage "$stage"
	seal_pack "$stage" "$pack"
	expect_exit 1 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$key.pub"
	assert_eq "$OUT" "kcfi-lab: error: $pack is not signed: no $pack.sig beside it; copy the pack's .sig file with it"
	expect_exit 1 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" unpack "$pack"
	assert_eq "$OUT" "kcfi-lab: error: unpack needs the instructor's key: --key FILE.pub or --key SHA256:... (pack prints it)"
	# Signed by someone else: refused against the instructor's key file
	# and against the fingerprint.
	seal_pack "$stage" "$pack" "$other"
	expect_exit 1 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$key.pub"
	[[ "$OUT" == "kcfi-lab: error: $pack is signed by key SHA256:"*", not by $fp: do not use it" ]] || fail "unexpected: $OUT"
	expect_exit 1 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$fp"
	[[ "$OUT" == *"not by $fp: do not use it" ]] || fail "unexpected: $OUT"
	# Changed after signing: the signature covers every byte.
	seal_pack "$stage" "$pack" "$key"
	printf 'x' >>"$pack"
	expect_exit 1 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$fp"
	assert_eq "$OUT" "kcfi-lab: error: $pack does not match its signature $pack.sig: do not use it; copy both files again"
	expect_exit 1 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$TEST_TMP/sums-not-a-key"
	[[ "$OUT" == *"--key takes the instructor's public key file or its fingerprint (SHA256:...), not: "* ]] || fail "unexpected: $OUT"
	[ ! -e "$home/build" ] || fail "a refused pack was partly installed"
	# The genuine pack, by key file and by fingerprint.
	seal_pack "$stage" "$pack" "$key"
	expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$key.pub"
	expect_exit 0 env KCFI_LAB_HOME="$home 2" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$fp"
	[ -f "$home 2/build/x86_64/.config" ] || fail "the signed pack was not installed"
}

# expect_refused PACK WHY: unpack of the signed PACK into a fresh home
# fails with WHY (a glob), writes nothing into the home, and nothing
# outside it changes.
expect_refused() {
	local pack=$1 why=$2 home="$TEST_TMP/refused home" before
	rm -rf "$home"
	before=$(outside_state)
	expect_exit 1 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$(signing_key instructor).pub"
	# shellcheck disable=SC2053 # WHY is a pattern
	[[ "$OUT" == $why ]] || fail "unexpected: $OUT"
	[ -z "$(find "$home" -mindepth 1 -maxdepth 1 ! -name state ! -name logs ! -name '.lock*' 2>/dev/null)" ] ||
		fail "a refused pack wrote into the home: $(find "$home" -mindepth 1 -maxdepth 2 | sed -n 1,5p)"
	assert_eq "$(outside_state)" "$before" "what is outside the home"
}

test_hostile_pack_members_are_refused() {
	have ssh-keygen || skip "ssh-keygen is not installed (openssh-client)"
	local key stage="$TEST_TMP/hostile" pack="$TEST_TMP/hostile.tar.gz"
	key=$(signing_key instructor)
	make_outside
	# A link to outside the home, among files whose checksums match.
	pack_stage "$stage"
	ln -s "$TEST_TMP/outside" "$stage/build/x86_64/source"
	seal_pack "$stage" "$pack" "$key"
	expect_refused "$pack" "kcfi-lab: error: $pack holds build/x86_64/source -> $TEST_TMP/outside, which is not a regular file: refusing the pack"
	# A hard link to a file of the pack.
	rm -rf "$stage"
	pack_stage "$stage"
	ln "$stage/build/x86_64/.config" "$stage/build/x86_64/vmlinux"
	seal_pack "$stage" "$pack" "$key"
	expect_refused "$pack" "kcfi-lab: error: $pack holds build/x86_64/*link to*, which is not a regular file: refusing the pack"
	# Names that climb out of the home, or start at the root.
	rm -rf "$stage"
	pack_stage "$stage"
	seal_pack "$stage" "$pack"
	tar_files "$stage" "$pack" -P --transform 's|^build|../escape|' 
	ssh-keygen -q -Y sign -f "$key" -n kcfi-lab-pack "$pack"
	expect_refused "$pack" "kcfi-lab: error: $pack holds ../escape* (a '..' or '.' in its path): refusing the pack"
	tar_files "$stage" "$pack" -P --transform "s|^build|$TEST_TMP/outside/abs|"
	rm -f "$pack.sig"
	ssh-keygen -q -Y sign -f "$key" -n kcfi-lab-pack "$pack"
	expect_refused "$pack" "kcfi-lab: error: $pack holds $TEST_TMP/outside/abs* (an absolute path): refusing the pack"
	# A file outside the layout: the learner's keys.
	rm -rf "$stage"
	pack_stage "$stage"
	mkdir -p "$stage/keys"
	echo "ssh-ed25519 AAAA attacker" >"$stage/keys/instructor.pub"
	seal_pack "$stage" "$pack" "$key"
	expect_refused "$pack" "kcfi-lab: error: $pack holds keys/instructor.pub (not in the layout of its manifest's kernel and arches): refusing the pack"
	# Another kernel's worktree, and a git directory (its config would
	# run commands on the next git call there).
	local path
	for path in "worktree-6.12/Makefile:not in the layout of its manifest's kernel and arches" \
		"worktree/.git/config:a git directory"; do
		rm -rf "$stage"
		pack_stage "$stage"
		mkdir -p "$stage/$(dirname "${path%%:*}")"
		echo "[core] fsmonitor = touch $TEST_TMP/outside/RAN" >"$stage/${path%%:*}"
		seal_pack "$stage" "$pack" "$key"
		expect_refused "$pack" "kcfi-lab: error: $pack holds ${path%%:*} (${path#*:}): refusing the pack"
	done
	# A member twice: the checks would read one copy, tar keep the other.
	rm -rf "$stage"
	pack_stage "$stage"
	seal_pack "$stage" "$pack"
	tar -czf "$pack" --hard-dereference -C "$stage" SHA256SUMS MANIFEST build/x86_64/.config SHA256SUMS
	ssh-keygen -q -Y sign -f "$key" -n kcfi-lab-pack "$pack"
	expect_refused "$pack" "kcfi-lab: error: $pack holds SHA256SUMS twice: refusing the pack"
	# Checksums of a file that is not the pack's (sha256sum -c would read
	# it from outside the home).
	rm -rf "$stage"
	pack_stage "$stage"
	seal_pack "$stage" "$pack"
	sha256sum "$TEST_TMP/outside/file" >>"$stage/SHA256SUMS"
	tar_files "$stage" "$pack"
	ssh-keygen -q -Y sign -f "$key" -n kcfi-lab-pack "$pack"
	expect_refused "$pack" "kcfi-lab: error: $pack's SHA256SUMS lists $TEST_TMP/outside/file, which the pack does not hold: refusing the pack"
	# A member the checksums do not list.
	rm -rf "$stage"
	pack_stage "$stage"
	seal_pack "$stage" "$pack"
	echo "extra" >"$stage/build/x86_64/extra"
	tar_files "$stage" "$pack"
	ssh-keygen -q -Y sign -f "$key" -n kcfi-lab-pack "$pack"
	expect_refused "$pack" "kcfi-lab: error: $pack holds build/x86_64/extra, which its SHA256SUMS does not list: refusing the pack"
	# More than the home has room for (a df that says 1 KiB is free).
	rm -rf "$stage"
	pack_stage "$stage"
	head -c 65536 /dev/zero >"$stage/build/x86_64/vmlinux"
	seal_pack "$stage" "$pack" "$key"
	mkdir -p "$TEST_TMP/small-disk"
	rm -f "$TEST_TMP/small-disk/df"
	printf '#!/bin/sh\necho "Filesystem 1-blocks Used Available Capacity Mounted on"\necho "fake 1048576 1047552 1024 99%% /"\n' >"$TEST_TMP/small-disk/df"
	chmod +x "$TEST_TMP/small-disk/df"
	PATH="$TEST_TMP/small-disk:$PATH" expect_refused "$pack" "kcfi-lab: error: $pack unpacks to 1 MiB, * has 0 MiB free: make room first"
}

test_unpack_never_writes_through_a_home_link() {
	have ssh-keygen || skip "ssh-keygen is not installed (openssh-client)"
	local key stage="$TEST_TMP/links" pack="$TEST_TMP/links.tar.gz" home="$TEST_TMP/linked home" before
	key=$(signing_key instructor)
	make_outside
	pack_stage "$stage"
	seal_pack "$stage" "$pack" "$key"
	# build in the home is a link to a directory elsewhere.
	mkdir -p "$home"
	ln -s "$TEST_TMP/outside" "$home/build"
	before=$(outside_state)
	expect_exit 1 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$key.pub"
	assert_eq "$OUT" "kcfi-lab: error: $home/build is a symbolic link: unpack writes no pack file through it; remove it first"
	assert_eq "$(outside_state)" "$before" "what is outside the home"
	# The lab's lock file a link to a file elsewhere: never opened.
	rm -f "$home/build" "$home/.lock"
	ln -s "$TEST_TMP/outside/file" "$home/.lock"
	expect_exit 1 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$key.pub"
	assert_eq "$OUT" "kcfi-lab: error: $home/.lock is a symbolic link, not the lab's lock; remove it"
	assert_eq "$(outside_state)" "$before" "what is outside the home"
	# Files of the home that are links are replaced, not written through.
	rm "$home/.lock"
	mkdir -p "$home/build/x86_64"
	ln -s "$TEST_TMP/outside/file" "$home/build/x86_64/.config"
	expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$key.pub"
	[ ! -L "$home/build/x86_64/.config" ] || fail "the link in the home is still there"
	assert_eq "$(outside_state)" "$before" "what is outside the home"
}

test_pack_tool_never_runs_where_the_tool_builds() {
	have ssh-keygen || skip "ssh-keygen is not installed (openssh-client)"
	tool_can_build || skip "no C compiler with elfutils' headers here (./run.sh setup)"
	local key stage="$TEST_TMP/tool-stage" pack="$TEST_TMP/tool.tar.gz" home="$TEST_TMP/tool pack home"
	key=$(signing_key instructor)
	make_outside
	# A pack whose tool claims this checkout's sources: a script.
	pack_stage "$stage"
	mkdir -p "$stage/$LAB_TOOL_REL"
	printf '#!/bin/sh\ntouch "%s/RAN"\necho 0x7e0c52a5 forged\n' "$TEST_TMP/outside" >"$stage/$LAB_TOOL_REL/kcfi"
	chmod +x "$stage/$LAB_TOOL_REL/kcfi"
	echo "$LAB_TOOL_SHA" >"$stage/$LAB_TOOL_REL/sources.sha256"
	seal_pack "$stage" "$pack" "$key"
	expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$key.pub"
	# Where the tool builds, the checkout's is built and run.
	expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" kcfi hash 'void (int *)'
	[ ! -e "$TEST_TMP/outside/RAN" ] || fail "the pack's tool ran although the tool builds here"
	[[ "$OUT" != *forged* ]] || fail "the pack's tool answered: $OUT"
	[ "$(cat "$home/$LAB_TOOL_REL/source-dir")" = "$KCFI_LAB_ROOT/lab/kcfi" ] || fail "the tool was not built from the checkout"
	# Where it cannot (no C compiler), the signed pack's tool is the one
	# there is.
	expect_exit 0 env KCFI_LAB_HOME="$home 2" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$key.pub"
	expect_exit 0 env CC=/nonexistent/cc KCFI_LAB_HOME="$home 2" "$KCFI_LAB_ROOT/run.sh" kcfi hash 'void (int *)'
	[ -e "$TEST_TMP/outside/RAN" ] || fail "without a compiler the pack's tool did not run: $OUT"
}
