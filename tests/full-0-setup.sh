#!/usr/bin/env bash
# Setup first: the rest of the suite (shellcheck, clang, QEMU, every
# kernel's toolchain for make check) needs it. It goes through the lab's
# own setup, for every kernel, as a user's ./run.sh --kernel V would: on
# a fresh machine the tests after it find what they need.

test_setup_installs_what_is_missing() {
	local k
	lab setup --tests
	for k in $(lab_kernels); do
		lab setup --kernel "$k"
	done
	# Idempotent: a second run finds nothing to install or fetch.
	for k in $(lab_kernels); do
		expect_exit 0 lab setup --kernel "$k"
		[[ "$OUT" != *installing* && "$OUT" != *fetching* ]] || fail "second setup of $k did it again: $OUT"
	done
	[ -x "$(busybox_binary arm64)" ] || fail "no arm64 busybox"
	# ELF e_machine (bytes 18-19) is 0xb7 for AArch64.
	assert_eq "$(od -An -tx2 -j18 -N2 "$(busybox_binary arm64)" | tr -d ' ')" 00b7 "arm64 busybox's ELF machine"
	# The host's dpkg configuration is unchanged: no foreign arch added.
	! dpkg --print-foreign-architectures | has_match '^arm64$' || fail "arm64 was added to the host's dpkg"
}

# Every suite the lab fetches from outside the host's own sources is
# checked by apt against the host file's keyring: with a keyring that
# lacks the archive's key, the fetch fails and nothing arrives.
test_foreign_archive_signature_is_checked() {
	local home="$TEST_TMP/sig-home" root="$TEST_TMP/sig-root" empty="$TEST_TMP/empty.gpg" out rc=0
	[ -n "$LAB_HOST" ] || skip "no host file for this machine"
	mkdir -p "$root"
	cp -r "$KCFI_LAB_ROOT/lab" "$KCFI_LAB_ROOT/run.sh" "$root/"
	: >"$empty"
	sed -i "s|^keyring=.*|keyring=$empty|" "$root/lab/host/$LAB_HOST.conf"
	out=$(KCFI_LAB_ROOT="$root" KCFI_LAB_HOME="$home" bash -c \
		'set -euo pipefail; . "$1/lab/common.sh"; . "$1/lab/setup.sh"; . "$1/lab/suites.sh"; suite_state "$2/apt-sig" "$(dpkg --print-architecture)" "$(host_get suite)"; echo REACHED' \
		_ "$root" "$home" 2>&1) || rc=$?
	assert_eq "$rc" 1 "exit status with a keyring that lacks the archive's key"
	[[ "$out" == *"failed or was not verified"* && "$out" != *REACHED* ]] || fail "an archive signed by an unknown key was used: $out"
	[ -z "$(find "$home/apt-sig/lists" -name '*_Packages*' 2>/dev/null)" ] || fail "package lists kept without a signature check"
}

# make_test_mirror DIR SUITE VALID-UNTIL: a Debian-style archive in DIR/mirror
# with an empty SUITE, its InRelease valid until VALID-UNTIL (a date(1)
# expression) and signed by a new key of the test's (keyring
# DIR/mirror.gpg); an apt configuration DIR/apt.conf whose only source it
# is. gpg works in a short directory of its own (its agent's socket
# path has a length limit) and leaves nothing behind.
make_test_mirror() {
	local dir=$1 suite=$2 until=$3 debarch m gnupg f
	debarch=$(dpkg --print-architecture)
	m="$dir/mirror/dists/$suite"
	rm -rf "$m"
	mkdir -p "$m/main/binary-$debarch" "$dir/parts"
	: >"$m/main/binary-$debarch/Packages"
	xz -k "$m/main/binary-$debarch/Packages"
	{
		echo "Origin: KCFI Lab test"
		echo "Suite: $suite"
		echo "Codename: $suite"
		echo "Date: $(LC_ALL=C date -u -R -d '2 days ago')"
		echo "Valid-Until: $(LC_ALL=C date -u -R -d "$until")"
		echo "Architectures: $debarch"
		echo "Components: main"
		echo "SHA256:"
		for f in Packages Packages.xz; do
			printf ' %s %s main/binary-%s/%s\n' "$(sha256sum <"$m/main/binary-$debarch/$f" | cut -d' ' -f1)" \
				"$(stat -c %s "$m/main/binary-$debarch/$f")" "$debarch" "$f"
		done
	} >"$m/Release"
	gnupg=$(mktemp -d /tmp/kcfi-gpg.XXXXXX)
	local -a gpg=(gpg --homedir "$gnupg" --batch --pinentry-mode loopback --passphrase '')
	if "${gpg[@]}" --quick-gen-key "KCFI Lab test mirror" ed25519 sign never >>"$dir/gpg.log" 2>&1 &&
		"${gpg[@]}" --export >"$dir/mirror.gpg" 2>>"$dir/gpg.log" &&
		"${gpg[@]}" --yes --clearsign -o "$m/InRelease" "$m/Release" >>"$dir/gpg.log" 2>&1; then
		f=ok
	fi
	gpgconf --homedir "$gnupg" --kill gpg-agent 2>/dev/null || true
	rm -rf "$gnupg"
	[ "${f:-}" = ok ] || fail "gpg: $(tail -n 3 "$dir/gpg.log")"
	echo "deb [signed-by=$dir/mirror.gpg] file:$dir/mirror $suite main" >"$dir/sources.list"
	printf 'Dir::Etc::SourceList "%s";\nDir::Etc::SourceParts "%s";\n' "$dir/sources.list" "$dir/parts" >"$dir/apt.conf"
}

# A mirror's stale answer (a Release file past its Valid-Until, as a
# mirror that stopped syncing or replays an old one gives) is an error
# and nothing arrives, even on a host whose apt configuration turns that
# check off; the same mirror, fresh, is used.
test_stale_mirror_answer_is_refused() {
	have gpg || skip "gpg is not installed"
	local dir="$TEST_TMP/stale" root="$TEST_TMP/stale-root" home="$TEST_TMP/stale-home" out rc=0
	[ -n "$LAB_HOST" ] || skip "no host file for this machine"
	mkdir -p "$dir" "$root"
	cp -r "$KCFI_LAB_ROOT/lab" "$KCFI_LAB_ROOT/run.sh" "$root/"
	make_test_mirror "$dir" labtest '1 day ago'
	sed -i -e "s|^keyring=.*|keyring=$dir/mirror.gpg|" -e "s|^suite=.*|suite=labtest|" "$root/lab/host/$LAB_HOST.conf"
	# As this host may have it: Valid-Until not checked, or stretched.
	printf 'Acquire::Check-Valid-Until "false";\nAcquire::Check-Date "false";\nAcquire::Min-ValidTime "99999999";\n' >"$dir/parts/relaxed.conf"
	printf '#include "%s";\n' "$dir/parts/relaxed.conf" >>"$dir/apt.conf"
	# shellcheck disable=SC2016 # expanded by that bash
	local script='set -euo pipefail; . "$1/lab/common.sh"; . "$1/lab/setup.sh"; . "$1/lab/suites.sh"; suite_state "$2/apt-stale" "$(dpkg --print-architecture)" labtest; echo REACHED'
	out=$(APT_CONFIG="$dir/apt.conf" KCFI_LAB_ROOT="$root" KCFI_LAB_HOME="$home" bash -c "$script" _ "$root" "$home" 2>&1) || rc=$?
	assert_eq "$rc" 1 "exit status with a stale Release file"
	[[ "$out" == *"kcfi-lab: error: the mirror's Release file for labtest expired on "*" (a stale answer): nothing installed; "* &&
		"$out" != *REACHED* ]] || fail "a stale Release file was used: $out"
	[ -z "$(find "$home/apt-stale/lists" -name '*_Packages*' 2>/dev/null)" ] || fail "package lists kept from a stale Release"
	make_test_mirror "$dir" labtest '5 days'
	rc=0
	out=$(APT_CONFIG="$dir/apt.conf" KCFI_LAB_ROOT="$root" KCFI_LAB_HOME="$home" bash -c "$script" _ "$root" "$home" 2>&1) || rc=$?
	assert_eq "$rc" 0 "exit status with the same mirror, fresh: $out"
	[[ "$out" == *REACHED* ]] || fail "the fresh mirror was not used: $out"
}

# host_apt_state: a checksum of the host's apt sources and dpkg status.
host_apt_state() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/* /var/lib/dpkg/status; do
		if [ -f "$f" ]; then cat "$f"; fi
	done | sha256sum
}

# A host that takes a kernel's toolchain and source package from another
# suite (Debian 13 takes 6.1's from Debian 12's archive): here, a copy of
# this host's file that takes the default kernel's from this host's own
# suites by that route. The source arrives unpacked in the home, the
# toolchain as wrappers the lab puts first on PATH, both verified by apt;
# the host's apt sources and dpkg database do not change.
# compiler_id_is_the_tools CC NAME WHAT: CC compiles kCFI code, and the
# id it gives void (int *) is the one the lab's tool computes. Asserts.
compiler_id_is_the_tools() {
	local cc=$1 src="$TEST_TMP/$2-f" got want
	printf 'void f(int *p) { (void)p; }\nvoid (*g)(int *) = f;\n' >"$src.c"
	"$cc" -O2 -fsanitize=kcfi -c -o "$src.o" "$src.c"
	got=$(lab kcfi func "$src.o" f | awk 'NR == 1 { print $1 }')
	want=$(lab kcfi hash 'void (int *)' | awk '{ print $1 }')
	assert_eq "$got" "$want" "$3"
}

test_toolchain_and_source_from_another_suite() {
	local root="$TEST_TMP/suite-root" home="$TEST_TMP/suite-home" conf suite before after cc
	[ -n "$LAB_HOST" ] || skip "no host file for this machine"
	[ -z "$LAB_TOOLCHAIN_BIN$LAB_SOURCE_ROOT" ] || skip "this host takes Linux $LAB_KERNEL's toolchain from another suite already (every run does this)"
	mkdir -p "$root"
	cp -r "$KCFI_LAB_ROOT/lab" "$KCFI_LAB_ROOT/run.sh" "$KCFI_LAB_ROOT/kernel-branch.bundle" "$root/"
	conf="$root/lab/host/$LAB_HOST.conf"
	suite=$(host_get suite)
	sed -i -e "s/^${LAB_KERNEL//./[.]}[.]toolchain_suites=.*/$LAB_KERNEL.toolchain_suites=$suite/" \
		-e "s/^${LAB_KERNEL//./[.]}[.]source_suites=.*/$LAB_KERNEL.source_suites=$suite $suite-security/" "$conf"
	before=$(host_apt_state)
	expect_exit 0 env KCFI_LAB_HOME="$home" "$root/run.sh" setup
	after=$(host_apt_state)
	assert_eq "$after" "$before" "the host's apt sources and dpkg status"
	[[ "$OUT" == *"fetching $DISTRO_PACKAGE from $suite $suite-security"* ]] || fail "the source did not come from the suites: $OUT"
	# The tarball the kernel file names, inside the home, and its version.
	[ -f "$home/sources/$DISTRO_PACKAGE$(kernel_get source_tarball)" ] || fail "no source tarball in the home"
	assert_eq "$(cat "$home/sources/$DISTRO_PACKAGE/version")" "$(apt-cache policy "$DISTRO_PACKAGE" | sed -n 's/^  Candidate: //p')" "the source's version"
	# The lab's own environment finds the toolchain in the home, first.
	cc=$(KCFI_LAB_ROOT="$root" KCFI_LAB_HOME="$home" bash -c '. "$KCFI_LAB_ROOT/lab/common.sh"; command -v "clang$KCFI_LAB_LLVM"')
	[[ "$cc" == "$home/toolchain/"* ]] || fail "the lab's clang$KCFI_LAB_LLVM is $cc, not the one in the home"
	# It compiles kCFI code: its id for a prototype is the lab tool's.
	compiler_id_is_the_tools "$cc" suite "the id the fetched clang$KCFI_LAB_LLVM gives void (int *)"
	# The home's status names both.
	expect_exit 0 env KCFI_LAB_HOME="$home" "$root/run.sh" status
	[[ "$OUT" == *"(in the lab's home), clang$KCFI_LAB_LLVM in $home/toolchain/"* ]] || fail "status: $OUT"
}

# A toolchain from a newer release than the host's (Debian 12 takes
# Linux 7.3's clang from Debian 13, built against its newer C library)
# arrives with every package it needs, C library included, in a root of
# its own in the home, and runs on that root's dynamic loader: in a fresh
# home, setup fetches it, the host's apt and dpkg stay as they were, the
# C library that runs is the root's, and it compiles kCFI code with the
# lab tool's ids.
test_newer_toolchain_runs_from_a_root_of_its_own() {
	local home="$TEST_TMP/newer-home" k found="" before after cc libc
	[ -n "$LAB_HOST" ] || skip "no host file for this machine"
	for k in $(lab_kernels); do
		[ -n "$(host_get "$k.toolchain_suites")" ] || continue
		before=$(host_apt_state)
		expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" --kernel "$k" setup
		after=$(host_apt_state)
		assert_eq "$after" "$before" "Linux $k: the host's apt sources and dpkg status"
		[[ "$OUT" == *"need a newer C library than this host's"* ]] || continue
		found=$k
		cc=$(KCFI_LAB_HOME="$home" KCFI_LAB_KERNEL="$k" bash -c '. "$KCFI_LAB_ROOT/lab/common.sh"; command -v "clang$KCFI_LAB_LLVM"')
		[[ "$cc" == "$home/toolchain/"*/bin/clang* ]] || fail "Linux $k: the lab's clang is $cc, not the one in the home"
		# The loader says which C library it started the compiler with (the
		# last one: the wrapper is a shell script).
		libc=$(LD_DEBUG=libs "$cc" --version 2>&1 | sed -n 's/.*calling init: \(.*\/libc\.so\.6\)$/\1/p' | sed -n '$p')
		[[ "$libc" == "$home/toolchain/"* ]] || fail "Linux $k: clang ran on the C library '$libc', not its root's"
		compiler_id_is_the_tools "$cc" newer "the id clang$KCFI_LAB_LLVM of Linux $k gives void (int *)"
		# Compile and link in one call: the compiler runs its own
		# executable again for the second job (the kernel's host programs).
		printf 'int main(void) { return 0; }\n' >"$TEST_TMP/newer-main.c"
		"$cc" -o "$TEST_TMP/newer-main" "$TEST_TMP/newer-main.c" ||
			fail "Linux $k: clang$KCFI_LAB_LLVM cannot compile and link in one call"
		"$TEST_TMP/newer-main" || fail "Linux $k: the program clang$KCFI_LAB_LLVM linked does not run"
		echo "Linux $k: $("$cc" --version | sed -n 1p), on $libc"
	done
	[ -n "$found" ] || skip "no kernel's toolchain needs a newer C library than this host's"
}
