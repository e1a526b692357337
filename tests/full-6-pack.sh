#!/usr/bin/env bash
# Classroom packs: pack, unpack into a fresh home, boot without building.

# instructor_key: the public key the lab's home signs its packs with.
instructor_key() {
	echo "$KCFI_LAB_HOME/keys/instructor.pub"
}

make_pack() {
	PACK="$TEST_TMP/pack both.tar.gz"
	[ -f "$PACK" ] && return
	lab build x86_64 arm64
	lab pack x86_64 arm64 -o "$PACK"
}

test_pack_unpack_boots_without_building() {
	make_pack
	local home="$TEST_TMP/learner home" start
	start=$SECONDS
	KCFI_LAB_HOME="$home" lab unpack "$PACK" --key "$(instructor_key)"
	expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" --run 'lkdtm CFI_FORWARD_PROTO; echo ALIVE'
	echo "unpack to first oops: $((SECONDS - start)) s; pack: $(stat -c %s "$PACK") bytes"
	[[ "$OUT" == *"using the x86_64 kernel from the pack"* ]] || fail "did not boot from the pack: $OUT"
	[[ "$OUT" == *"CFI failure at lkdtm_indirect_call"* ]] || fail "no CFI failure: $OUT"
	[[ "$OUT" == *ALIVE* ]] || fail "guest did not survive"
	[ ! -e "$home/linux.git" ] || fail "the pack user got a kernel import"
	expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" status
	[[ "$OUT" == *"pack:           installed"* ]] || fail "status does not mention the pack: $OUT"
	[[ "$OUT" == *"cfi: add cfi=warn"* ]] || fail "status does not list the pack's kernel commits: $OUT"
	# The packed vmlinux is the built one: same type ids for gdb and objdump.
	cmp -s "$home/build/x86_64/vmlinux" "$(vmlinux_of x86_64)" || fail "packed vmlinux differs"
	[ -f "$home/build/x86_64/scripts/gdb/linux/utils.py" ] || fail "gdb's lx- scripts missing from the pack"
	# The kernel's build refuses paths with spaces: a checker that builds
	# a module says so in one line, as does one without a kernel tree
	# (a pack made before packs carried one).
	expect_exit 2 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/exercises/09-traps-modules/check" a b
	assert_eq "$OUT" "cannot check: the kernel's build cannot use a path with spaces or colons (KCFI_LAB_HOME=$home); set KCFI_LAB_HOME to another directory"
	rm -rf "$home/worktree"
	local ex
	for ex in 01-tour/check:"1 x" 06-strict-oops/check:"a b:1 c:2" 07-permissive/check:"a b"; do
		# shellcheck disable=SC2086 # the answers are words
		expect_exit 2 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/exercises/${ex%%:*}" ${ex#*:}
		assert_eq "$OUT" "cannot check: no kernel source tree in $home/worktree; import it with ./run.sh prepare, or unpack a pack made by this version of the lab" "${ex%%:*} without a tree"
	done
}

# seed_pack_home_consoles HOME: the exercise tests' guest consoles
# (keyed by image times, which the pack keeps) into HOME's cache, when
# every packed kernel and initramfs image is the same as the suite's.
seed_pack_home_consoles() {
	local home=$1 arch suite="$TEST_TMP/exercises/consoles"
	[ -d "$suite" ] || return 0
	for arch in $(lab_arches); do
		[ -f "$home/build/$arch/$(arch_get "$arch" image)" ] || continue
		cmp -s "$home/build/$arch/$(arch_get "$arch" image)" "$(kernel_image "$arch")" || return 0
		cmp -s "$home/initramfs/$arch.cpio.gz" "$(initramfs_image "$arch")" || return 0
	done
	mkdir -p "$home/exercises"
	cp -r "$suite" "$home/exercises/"
}

test_pack_home_passes_every_exercise() {
	# A learner with only a pack, KCFI_LAB_HOME off the default path: the
	# instructor run passes every exercise on every packed arch, with the
	# sources and the module build tree the pack carries.
	make_pack
	local home="$TEST_TMP/pack-only" out="$TEST_TMP/pack-instructor.log" rc=0 name arch want=0
	KCFI_LAB_HOME="$home" lab unpack "$PACK" --key "$(instructor_key)"
	[ ! -e "$home/linux.git" ] || fail "the pack user got a kernel import"
	assert_eq "$(git -C "$home/worktree" log --format=%s distro..HEAD)" \
		"$(git -C "$LAB_WORKTREE" log --format=%s distro..HEAD)" "the pack worktree's lab commits"
	assert_eq "$(git -C "$home/worktree" status --porcelain)" "" "git status in the pack worktree"
	# The pack's tool runs without a build where there is no compiler
	# (no make, no cc).
	local fake="$TEST_TMP/no-make"
	mkdir -p "$fake"
	printf '#!/bin/sh\nexit 1\n' >"$fake/make"
	chmod +x "$fake/make"
	expect_exit 0 env PATH="$fake:$PATH" CC=/nonexistent/cc KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" kcfi hash 'void (int *)'
	# The guests this suite's exercise tests booted, when the pack's
	# kernels and initramfs images are byte for byte the ones they booted
	# (a boot from the pack is test_pack_unpack_boots_without_building's):
	# a boot with a module built here still happens. The answers and the
	# modules are the pack home's own.
	seed_pack_home_consoles "$home"
	env -u KCFI_LAB_EX_CACHE KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" lab --instructor >"$out" 2>&1 </dev/null || rc=$?
	cat "$out"
	assert_eq "$rc" 0 "instructor run from a pack"
	for name in $(cd "$KCFI_LAB_ROOT/exercises" && ls -d [0-9][0-9]-*); do
		# A pack carries one kernel, the lab's (default) one here.
		case " $(exercise_kernels "$name") " in
		*" $LAB_KERNEL "*) ;;
		*) continue ;;
		esac
		for arch in $(ex_arches "$name"); do
			want=$((want + 1))
			assert_grep "^PASS $name +$arch " "$out" "$name on $arch passes from a pack"
		done
	done
	assert_eq "$(grep -c '^PASS ' "$out")" "$want" "PASS lines"
	# The module was built here, against the pack's tree; without a file
	# of it the same checker cannot build: the pass depended on the pack.
	local ko
	ko=$(find "$home/exercises/modules/x86_64/09-traps-modules" -name '*.ko' -print -quit)
	[ -n "$ko" ] || fail "no module built in the pack home"
	rm -rf "$home/exercises/modules" "$home/worktree/scripts/Makefile.modpost"
	expect_exit 2 env -u KCFI_LAB_EX_CACHE KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/exercises/09-traps-modules/check" a b
	[[ "$OUT" == *"cannot check: module build failed"* ]] || fail "unexpected: $OUT"
}

test_newest_kernel_pack_passes_its_exercises() {
	# A pack of the newest kernel's x86_64 build, in a fresh home: the
	# instructor run passes every exercise of that kernel, those that
	# build a module with its toolchain included. Where the toolchain
	# lives in the lab's home rather than on the host, unpack says how
	# to get it and the learner's setup fetches it (no source package:
	# the pack carries what the exercises read).
	local kernel home="$TEST_TMP/newest-pack" pack="$TEST_TMP/newest.tar.gz" out="$TEST_TMP/newest-instructor.log"
	local rc=0 name want=0 where
	for kernel in $(lab_kernels); do :; done
	use_kernel "$kernel"
	[ -f "$(vmlinux_of x86_64)" ] || skip "no x86_64 Linux $kernel kernel built"
	lab --kernel "$kernel" pack x86_64 -o "$pack"
	expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$(instructor_key)"
	if [ -n "$(host_kernel_get toolchain_suites)" ]; then
		[[ "$OUT" == *"toolchain (clang$KCFI_LAB_LLVM) is not in $home yet"*"./run.sh setup --kernel $kernel"* ]] ||
			fail "unpack does not say how to get the toolchain: $OUT"
		expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" --kernel "$kernel" setup
		[ ! -e "$home/sources" ] || fail "setup in a pack home fetched the kernel's source package"
	fi
	env -u KCFI_LAB_EX_CACHE KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" --kernel "$kernel" lab --instructor >"$out" 2>&1 </dev/null || rc=$?
	cat "$out"
	assert_eq "$rc" 0 "instructor run from a Linux $kernel pack"
	for name in $(cd "$KCFI_LAB_ROOT/exercises" && ls -d [0-9][0-9]-*); do
		case " $(exercise_kernels "$name") " in *" $kernel "*) ;; *) continue ;; esac
		case " $(ex_arches "$name") " in *" x86_64 "*) ;; *) continue ;; esac
		where="x86_64${LAB_SUFFIX:+ $kernel}"
		if grep -q '^compares: default$' "$KCFI_LAB_ROOT/exercises/$name/lab.conf"; then
			assert_grep "^SKIP $name +$where no x86_64 Linux $LAB_DEFAULT_KERNEL kernel built to compare with" "$out" "$name from a pack"
			continue
		fi
		want=$((want + 1))
		assert_grep "^PASS $name +$where " "$out" "$name on x86_64 passes from a Linux $kernel pack"
	done
	assert_eq "$(grep -c '^PASS ' "$out")" "$want" "PASS lines"
}

test_damaged_pack_is_refused() {
	make_pack
	local bad="$TEST_TMP/bad.tar.gz" stage="$TEST_TMP/stage"
	mkdir -p "$stage"
	tar -xzf "$PACK" -C "$stage"
	printf 'X' | dd of="$stage/initramfs/x86_64.cpio.gz" bs=1 seek=100 conv=notrunc 2>/dev/null
	tar_files "$stage" "$bad"
	# Damaged before it was signed (on the instructor's disk): the
	# signature holds, the checksums do not.
	rm -f "$bad.sig"
	ssh-keygen -q -Y sign -f "${KCFI_LAB_HOME}/keys/instructor" -n kcfi-lab-pack "$bad"
	expect_exit 1 env KCFI_LAB_HOME="$TEST_TMP/h-bad" "$KCFI_LAB_ROOT/run.sh" unpack "$bad" --key "$(instructor_key)"
	assert_eq "$OUT" "kcfi-lab: error: $bad is damaged: checksum mismatch in initramfs/x86_64.cpio.gz, although its signature holds (it was damaged before it was signed): ask its maker for a new pack"
	[ ! -e "$TEST_TMP/h-bad/build" ] || fail "a damaged pack was partly installed"
	# Damaged on the way (cut short): the signature no longer holds.
	head -c 4096 "$PACK" >"$bad"
	cp "$PACK.sig" "$bad.sig"
	expect_exit 1 env KCFI_LAB_HOME="$TEST_TMP/h-bad" "$KCFI_LAB_ROOT/run.sh" unpack "$bad" --key "$(instructor_key)"
	assert_eq "$OUT" "kcfi-lab: error: $bad does not match its signature $bad.sig: do not use it; copy both files again"
}

test_pack_for_another_branch_is_refused() {
	make_pack
	local other="$TEST_TMP/other.bundle"
	cp "$KCFI_LAB_ROOT/kernel-branch.bundle" "$other"
	echo >>"$other"
	expect_exit 1 env KCFI_LAB_BUNDLE="$other" KCFI_LAB_HOME="$TEST_TMP/h-other" "$KCFI_LAB_ROOT/run.sh" unpack "$PACK" --key "$(instructor_key)"
	[[ "$OUT" == *"was built from another kernel branch"* ]] || fail "unexpected: $OUT"
}

test_pack_debs_install_offline_on_an_empty_machine() {
	# pack --debs ships the learner's packages and all they depend on as
	# a flat apt repository. apt with an empty dpkg status (a machine with
	# nothing installed) and, as its only source, the repository the way
	# unpack configures it must be able to fetch and install them all: no
	# dependency left out, no network.
	have apt-get || skip "apt-get not found"
	lab build x86_64
	local pack="$TEST_TMP/pack debs.tar.gz" home="$TEST_TMP/offline home" state="$TEST_TMP/empty machine"
	local learner
	learner=$(bash -c '. "$KCFI_LAB_ROOT/lab/common.sh"; . "$KCFI_LAB_ROOT/lab/debs.sh"; learner_packages x86_64' | paste -sd' ')
	[[ " $learner " == *" qemu-system-x86 "*" gdb-multiarch "*" llvm$KCFI_LAB_LLVM "* ]] || fail "learner packages: $learner"
	lab pack x86_64 --debs -o "$pack"
	expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$(instructor_key)"
	# Here the packages are installed, so unpack has nothing to do.
	[[ "$OUT" == *"the pack's packages are installed already: $learner"* ]] || fail "unexpected: $OUT"
	assert_grep "^debs: [a-z0-9]+, [0-9]+ packages for $learner\$" "$home/pack.manifest"
	expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" status
	[[ "$OUT" == *"Debian packages: "*" packages for $learner ($home/debs)"* ]] ||
		fail "status does not mention the pack's packages: $OUT"
	local -a opts
	mapfile -t opts < <(KCFI_LAB_HOME="$home" bash -c '. "$KCFI_LAB_ROOT/lab/common.sh"; . "$KCFI_LAB_ROOT/lab/suites.sh"; . "$KCFI_LAB_ROOT/lab/debs.sh"; debs_repo_opts "$DEBS_DIR" "$1"' _ "$state")
	[ "${#opts[@]}" -gt 0 ] || fail "no apt options for the pack's repository"
	# apt checks the pack's repository against Debian's keyring, as the
	# host file names it: no line turns that off.
	local keyring
	keyring=$(host_get keyring)
	assert_no_grep 'trusted=|allow-insecure' "$state/sources.list"
	assert_eq "$(grep -vc "^deb \[signed-by=$keyring check-valid-until=no\] file:" "$state/sources.list")" 0 "lines not signed by $keyring"
	assert_grep "^deb .* $(host_get suite) main\$" "$state/sources.list" "the host's suite"
	: >"$state/status"
	opts+=(-o "Dir::State::status=$state/status" -o Debug::NoLocking=1)
	local -a pkgs
	read -r -a pkgs <<<"$learner"
	apt-get "${opts[@]}" update >"$state/update.log" 2>&1 || fail "apt-get update on the pack's repository: $(tail -n 3 "$state/update.log")"
	apt-get "${opts[@]}" -s install --no-install-recommends "${pkgs[@]}" >"$state/install.log" 2>&1 ||
		fail "the pack's packages do not install on an empty machine: $(grep -E '^ |^E:' "$state/install.log" | sed -n 1,8p)"
	# The fetch step of a real install: apt checks every file against the
	# index's hashes (it refuses files it cannot check).
	apt-get "${opts[@]}" -y --download-only install --no-install-recommends "${pkgs[@]}" \
		>"$state/fetch.log" 2>&1 || fail "apt cannot fetch the pack's packages: $(grep '^E:' "$state/fetch.log" | sed -n 1,3p)"
	assert_grep '^Download complete and in download only mode' "$state/fetch.log"
	local pkg
	for pkg in "${pkgs[@]}" libllvm16 qemu-system-common; do
		assert_grep "^Inst $pkg " "$state/install.log" "$pkg installed from the pack"
	done
	echo "$(grep -c '^Inst ' "$state/install.log") packages from the pack; pack: $(du -h "$pack" | cut -f1)"
}

# fake_host DIR: commands that make this host look like a learner's: tmux
# not installed, a user who is not root, apt-get that only records its
# calls (in DIR/calls). With "sudo", also a sudo that records and runs.
fake_host() {
	local dir=$1
	mkdir -p "$dir"
	cat >"$dir/dpkg-query" <<-'SH'
		#!/bin/sh
		case " $* " in *" tmux "*) printf 'deinstall ok config-files'; exit 0 ;; esac
		exec /usr/bin/dpkg-query "$@"
	SH
	cat >"$dir/id" <<-'SH'
		#!/bin/sh
		[ "$1" = -u ] && { echo 1000; exit 0; }
		exec /usr/bin/id "$@"
	SH
	# apt-get records every call and runs the real one, except an install.
	# shellcheck disable=SC2016 # $* and $@ are the shims' own
	printf '#!/bin/sh\necho "apt-get $*" >>"%s/calls"\ncase " $* " in *" install -y "*) exit 0 ;; esac\nexec /usr/bin/apt-get "$@"\n' "$dir" >"$dir/apt-get"
	if [ "${2:-}" = sudo ]; then
		# shellcheck disable=SC2016 # $1 and $@ are the shim's own
		printf '#!/bin/sh\necho "sudo $1" >>"%s/calls"\nexec "$@"\n' "$dir" >"$dir/sudo"
	fi
	chmod +x "$dir"/*
}

test_unpack_installs_missing_packages_offline() {
	# The install branch of unpack, on a host made to look like a
	# learner's (see fake_host): only the missing package, from the
	# pack's repository only, through sudo; without sudo, a clear stop.
	have apt-get || skip "apt-get not found"
	local pack="$TEST_TMP/pack debs.tar.gz" fake="$TEST_TMP/fake host"
	[ -f "$pack" ] || {
		lab build x86_64
		lab pack x86_64 --debs -o "$pack"
	}
	fake_host "$fake" sudo
	expect_exit 0 env PATH="$fake:$PATH" KCFI_LAB_HOME="$TEST_TMP/sudo home" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$(instructor_key)"
	[[ "$OUT" == *"kcfi-lab: installing tmux from the pack (no network; verified by apt)"* ]] || fail "unexpected: $OUT"
	cat "$fake/calls"
	assert_grep '^sudo env$' "$fake/calls" "apt-get install through sudo"
	assert_grep "^apt-get .*-o Dir::Etc::SourceList=$TEST_TMP/sudo home/apt-offline/sources.list .* update\$" "$fake/calls"
	assert_grep '^apt-get .* install -y -q --no-install-recommends tmux$' "$fake/calls" "only the missing package"
	assert_eq "$(sed -n 's|^deb \[[^]]*\] file:\([^ ]*\) .*|\1|p' "$TEST_TMP/sudo home/apt-offline/sources.list" | sed 's|/repo/.*||' | sort -u)" \
		"${TEST_TMP// /%20}/sudo%20home/debs" "the pack's repository as the only source"

	rm -rf "$fake"
	fake_host "$fake"
	expect_exit 1 env PATH="$fake:$PATH" KCFI_LAB_HOME="$TEST_TMP/user home" "$KCFI_LAB_ROOT/run.sh" unpack "$pack" --key "$(instructor_key)"
	[[ "$OUT" == *"kcfi-lab: error: installing tmux from the pack needs root; run the same unpack as root" ]] ||
		fail "unexpected: $OUT"
	[ ! -e "$fake/calls" ] || fail "apt-get ran without root: $(cat "$fake/calls")"
	[ -f "$TEST_TMP/user home/build/x86_64/vmlinux" ] || fail "the kernels were not unpacked"
}

# reseal_debs_pack STAGE OUT: OUT, the pack in STAGE with its checksums
# made anew and signed with the instructor's key (a signed pack whose
# Debian packages were tampered with before it was signed).
reseal_debs_pack() {
	seal_pack "$1" "$2"
	ssh-keygen -q -Y sign -f "$KCFI_LAB_HOME/keys/instructor" -n kcfi-lab-pack "$2"
}

test_pack_debs_are_verified_by_apt() {
	# Even a signed pack's Debian packages install only as Debian signed
	# them: a changed InRelease and a swapped .deb are refused, by
	# name, and apt installs nothing.
	have apt-get || skip "apt-get not found"
	# The pack an earlier test made: a mutant's run (its own TEST_TMP)
	# gets the real run's (tests/full-7-mutations.sh) and makes none.
	local pack="${DEBS_PACK_CACHE:-$TEST_TMP}/pack debs.tar.gz" fake="$TEST_TMP/fake verify host" stage="$TEST_TMP/debs stage"
	local bad="$TEST_TMP/bad debs.tar.gz" release deb other
	[ -f "$pack" ] || {
		lab build x86_64
		lab pack x86_64 --debs -o "$pack"
	}
	rm -rf "$stage"
	mkdir -p "$stage"
	tar -xzf "$pack" -C "$stage"
	# One line of the archive's InRelease changed.
	release=$(find "$stage/debs/repo" -path "*/dists/$(host_get suite)/InRelease")
	[ -f "$release" ] || fail "no InRelease of $(host_get suite) in the pack"
	cp "$release" "$TEST_TMP/InRelease.orig"
	sed 's/^Origin: Debian$/Origin: Debiam/' "$TEST_TMP/InRelease.orig" >"$release"
	! cmp -s "$release" "$TEST_TMP/InRelease.orig" || fail "the InRelease did not change"
	reseal_debs_pack "$stage" "$bad"
	rm -rf "$fake"
	fake_host "$fake" sudo
	expect_exit 1 env PATH="$fake:$PATH" KCFI_LAB_HOME="$TEST_TMP/verify home" "$KCFI_LAB_ROOT/run.sh" unpack "$bad" --key "$(instructor_key)"
	[[ "$OUT" == *"kcfi-lab: error: the pack's package index is not signed by Debian's keys as this host knows them: nothing installed (log: "* ]] ||
		fail "unexpected: $OUT"
	assert_no_grep ' install -y |^sudo ' "$fake/calls" "an install"
	# tmux's .deb swapped for another package's.
	cp "$TEST_TMP/InRelease.orig" "$release"
	deb=$(find "$stage/debs/repo" -name 'tmux_*.deb')
	other=$(find "$stage/debs/repo" -name 'make_*.deb' -print -quit)
	if [ ! -f "$deb" ] || [ ! -f "$other" ]; then
		fail "no tmux or make package in the pack"
	fi
	cp "$other" "$deb"
	reseal_debs_pack "$stage" "$bad"
	rm -rf "$fake" "$TEST_TMP/verify home"
	fake_host "$fake" sudo
	expect_exit 1 env PATH="$fake:$PATH" KCFI_LAB_HOME="$TEST_TMP/verify home" "$KCFI_LAB_ROOT/run.sh" unpack "$bad" --key "$(instructor_key)"
	assert_eq "$(printf '%s\n' "$OUT" | sed -n '$p')" "kcfi-lab: error: the pack's tmux (${deb##*/}) is not the package Debian's signed index names: nothing installed"
	assert_no_grep ' install -y |^sudo ' "$fake/calls" "an install"
}
