#!/usr/bin/env bash
# The command line: help, usage errors, status, missing tools.

test_help_for_every_subcommand() {
	local sub
	for sub in "" setup prepare build test status clean bundle lab pack unpack kcfi path; do
		# shellcheck disable=SC2086
		expect_exit 0 lab $sub --help
		[[ "$OUT" == usage:* ]] || fail "'run.sh $sub --help' printed no usage"
	done
}

test_unknown_arch_is_a_usage_error() {
	expect_exit 2 env KCFI_LAB_HOME="$TEST_TMP/h" "$KCFI_LAB_ROOT/run.sh" sparc
	local line f
	line=$(printf '%s\n' "$OUT" | sed -n 1p)
	[[ "$line" == "kcfi-lab: error: unknown arch or command: sparc (arches: "*"; see lab/arch/)" ]] ||
		fail "unexpected message: $OUT"
	# It lists the arch files, whatever they are.
	for f in "$KCFI_LAB_ROOT"/lab/arch/*.conf; do
		[[ "$line" == *" $(basename "$f" .conf)"[,\;]* ]] || fail "the message does not list $(basename "$f" .conf): $line"
	done
	[[ "$OUT" == *usage:* ]] || fail "no usage after the error"
	[ ! -e "$TEST_TMP/h" ] || fail "a usage error created the state directory"
}

test_unknown_option_is_a_usage_error() {
	expect_exit 2 lab arm64 --frobnicate
	[[ "$OUT" == "kcfi-lab: error: unknown option: --frobnicate"* ]] || fail "unexpected message: $OUT"
	expect_exit 2 lab --run
	[[ "$OUT" == *"--run needs a value"* ]] || fail "unexpected message: $OUT"
	expect_exit 2 lab --timeout soon --run true
	expect_exit 2 lab x86_64 arm64
	expect_exit 2 lab build x86_64 --debs
	[[ "$OUT" == "kcfi-lab: error: --debs is an option of pack"* ]] || fail "unexpected message: $OUT"
}

# An option that does not apply to the subcommand is refused, not
# ignored, and the refusal leaves no state behind.
test_options_that_do_not_apply_are_refused() {
	local h="$TEST_TMP/refused"
	expect_exit 2 env KCFI_LAB_HOME="$h" "$KCFI_LAB_ROOT/run.sh" build x86_64 --gdb
	assert_eq "$(printf '%s\n' "$OUT" | sed -n 1p)" "kcfi-lab: error: --gdb is an option of a boot (./run.sh [ARCH]), not of build" "build --gdb"
	expect_exit 2 env KCFI_LAB_HOME="$h" "$KCFI_LAB_ROOT/run.sh" status --all
	assert_eq "$(printf '%s\n' "$OUT" | sed -n 1p)" "kcfi-lab: error: --all is an option of clean, not of status" "status --all"
	expect_exit 2 env KCFI_LAB_HOME="$h" "$KCFI_LAB_ROOT/run.sh" --debs
	assert_eq "$(printf '%s\n' "$OUT" | sed -n 1p)" "kcfi-lab: error: --debs is an option of pack, not of a boot" "a boot with --debs"
	expect_exit 2 env KCFI_LAB_HOME="$h" "$KCFI_LAB_ROOT/run.sh" clean x86_64
	assert_eq "$(printf '%s\n' "$OUT" | sed -n 1p)" "kcfi-lab: error: unexpected argument: x86_64 (clean takes no arch)" "clean ARCH"
	expect_exit 2 env KCFI_LAB_HOME="$h" "$KCFI_LAB_ROOT/run.sh" --timeout 5
	assert_eq "$(printf '%s\n' "$OUT" | sed -n 1p)" "kcfi-lab: error: --timeout goes with --run (a scripted boot)" "--timeout alone"
	expect_exit 2 env KCFI_LAB_HOME="$h" "$KCFI_LAB_ROOT/run.sh" --gdb-port 4321
	assert_eq "$(printf '%s\n' "$OUT" | sed -n 1p)" "kcfi-lab: error: --gdb-port goes with --gdb" "--gdb-port alone"
	expect_exit 2 env KCFI_LAB_HOME="$h" "$KCFI_LAB_ROOT/run.sh" setup --quick
	assert_eq "$(printf '%s\n' "$OUT" | sed -n 1p)" "kcfi-lab: error: unknown option: --quick" "setup --quick"
	[ ! -e "$h" ] || fail "a refused command created the state directory"
}

# The options are run.sh's command line and nothing else: variables of
# the caller's environment named like the old globals change nothing.
test_environment_cannot_set_options() {
	local h="$TEST_TMP/env-opts"
	expect_exit 2 env KCFI_LAB_HOME="$h" OPT_PACK=/nonexistent.tar.gz "$KCFI_LAB_ROOT/run.sh" unpack
	assert_eq "$(printf '%s\n' "$OUT" | sed -n 1p)" "kcfi-lab: error: unpack needs a pack file" "unpack with OPT_PACK set"
	expect_exit 0 env KCFI_LAB_HOME="$h" OPT_TIMEOUT=soon OPT_GDB_PORT=x OPT_RUN=true OPT_GDB=1 "$KCFI_LAB_ROOT/run.sh" status
	[[ "$OUT" == *"worktree:       none"* ]] || fail "status did not run: $OUT"
}

test_status_on_empty_home_with_spaces() {
	local home="$TEST_TMP/a home with spaces"
	expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" status
	[[ "$OUT" == *"KCFI_LAB_HOME:  $home"* ]] || fail "status does not name the home: $OUT"
	[[ "$OUT" == *"x86_64:         not built"* ]] || fail "status claims a build: $OUT"
	[[ "$OUT" == *"worktree:       none"* ]] || fail "status claims a worktree: $OUT"
}

# path_without CMD: set NO_PATH to a PATH holding every host command but
# CMD. Asserts, so never inside $(...).
path_without() {
	local dir="$TEST_TMP/path-without-$1" d
	mkdir -p "$dir"
	for d in /usr/local/bin /usr/bin /bin /usr/sbin /sbin; do
		# One ln for a whole directory; names already linked are skipped.
		ln -s "$d"/* "$dir/" 2>/dev/null || true
	done
	rm -f "$dir/$1"
	[ ! -e "$dir/$1" ] || fail "could not hide $1"
	NO_PATH=$dir
}

# A command the lab needs is missing from PATH although its package is
# installed: a one-line hint with the host's package name. The lab must
# not reach apt here (this test installs nothing): a shim apt-get fails
# the test if it is called.
test_missing_tool_gives_install_hint() {
	local entry pkg cmd qemu_pkg qemu
	[ -n "$LAB_HOST" ] || skip "no host file for this machine"
	[ -z "$(missing_packages)" ] || skip "the lab's packages are not all installed (./run.sh setup)"
	[ -z "$LAB_TOOLCHAIN_BIN" ] || skip "this host's toolchain for Linux $LAB_KERNEL lives in the lab's home"
	entry=$(toolchain_packages | sed -n 1p)
	pkg=${entry%%:*} cmd=${entry#*:}
	path_without "$cmd"
	# NO_PATH/apt-get is a link to the host's: replace the link, never
	# write through it.
	rm -f "$NO_PATH/apt-get"
	printf '#!/bin/sh\necho "apt-get $*" >>"%s/apt-calls"\nexit 1\n' "$TEST_TMP" >"$NO_PATH/apt-get"
	chmod +x "$NO_PATH/apt-get"
	expect_exit 1 env PATH="$NO_PATH" KCFI_LAB_HOME="$TEST_TMP/h2" "$KCFI_LAB_ROOT/run.sh" build
	assert_eq "$OUT" "kcfi-lab: error: $cmd not found; install it with: ./run.sh setup (or: sudo apt-get install $pkg)"
	qemu=$(arch_get arm64 qemu) qemu_pkg=$(arch_get arm64 qemu_package)
	path_without "$qemu"
	rm -f "$NO_PATH/apt-get"
	cp "$TEST_TMP/path-without-$cmd/apt-get" "$NO_PATH/apt-get"
	expect_exit 1 env PATH="$NO_PATH" KCFI_LAB_HOME="$TEST_TMP/h2" "$KCFI_LAB_ROOT/run.sh" arm64 --run true
	[[ "$OUT" == *"$qemu not found"*"apt-get install $qemu_pkg)" ]] || fail "unexpected: $OUT"
	[ ! -e "$TEST_TMP/apt-calls" ] || fail "the test reached apt: $(cat "$TEST_TMP/apt-calls")"
}

# apt reads a name it does not know as a pattern: a package the host's
# sources lack must be refused by name, before apt installs another one
# (on a host without linux-source-6.1, that name finds linux-source-6.12).
# A shim apt-get records what the lab asks of it; apt-cache is the host's.
test_package_names_are_exact() {
	local shims="$TEST_TMP/exact-shims" name
	mkdir -p "$shims"
	printf '#!/bin/sh\necho "apt-get $*" >>"%s/exact-apt-calls"\nexit 0\n' "$TEST_TMP" >"$shims/apt-get"
	printf '#!/bin/sh\nexec "$@"\n' >"$shims/sudo"
	chmod +x "$shims/apt-get" "$shims/sudo"
	# A prefix of a real package's name, which apt would take as a pattern.
	name=${DISTRO_PACKAGE%?}
	# shellcheck disable=SC2016 # the inner bash expands $KCFI_LAB_ROOT
	expect_exit 1 env PATH="$shims:$PATH" KCFI_LAB_HOME="$TEST_TMP/h-exact" bash -c \
		'. "$KCFI_LAB_ROOT/lab/common.sh"; . "$KCFI_LAB_ROOT/lab/setup.sh"; . "$KCFI_LAB_ROOT/lab/suites.sh"; install_packages "$1"' _ "$name"
	assert_eq "$OUT" "kcfi-lab: installing $name
kcfi-lab: error: the host's apt sources have no package named $name (lab/host/$LAB_HOST.conf names it); nothing was installed"
	! grep -q ' install ' "$TEST_TMP/exact-apt-calls" || fail "apt-get install was called: $(cat "$TEST_TMP/exact-apt-calls")"
}

# A host the lab has no file for gets one line naming the host files,
# before anything is installed or fetched.
test_unknown_host_is_one_clear_line() {
	local rel="$TEST_TMP/os-release" want
	printf 'ID=somedistro\nVERSION_ID="7"\n' >"$rel"
	expect_exit 1 env KCFI_LAB_OS_RELEASE="$rel" KCFI_LAB_HOME="$TEST_TMP/h-unknown" "$KCFI_LAB_ROOT/run.sh" setup
	want="kcfi-lab: error: this host (somedistro-7, from $rel) has no file in lab/host/ (hosts: $(host_list))"
	[[ "$OUT" == "$want"* ]] || fail "unexpected: $OUT"
	assert_eq "$(printf '%s\n' "$OUT" | wc -l)" 1 "lines of the error"
	# Commands that need no host knowledge still work there.
	expect_exit 0 env KCFI_LAB_OS_RELEASE="$rel" KCFI_LAB_HOME="$TEST_TMP/h-unknown" "$KCFI_LAB_ROOT/run.sh" --help
}

test_gdb_port_taken_is_refused_early() {
	local port
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	python3 -c "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',$port)); s.listen(); time.sleep(30)" &
	local pid=$! _
	for _ in $(seq 1 100); do
		[ -n "$(ss -Htln "sport = :$port")" ] && break
		sleep 0.1
	done
	# Were the check to miss, the lab must not start a kernel import here.
	export KCFI_LAB_TARBALL=/nonexistent
	expect_exit 1 env KCFI_LAB_HOME="$TEST_TMP/h3" "$KCFI_LAB_ROOT/run.sh" --gdb --gdb-port "$port" --run true
	kill "$pid"
	assert_eq "$OUT" "kcfi-lab: error: gdb port $port on 127.0.0.1 is already in use; pick another with --gdb-port or leave it out"
	[ ! -e "$TEST_TMP/h3" ] || fail "the refused run created state"
}

test_kcfi_subcommand_agrees_with_clang() {
	have "clang$KCFI_LAB_LLVM" || skip "clang$KCFI_LAB_LLVM is not installed (./run.sh setup)"
	printf 'void f(int *p) { (void)p; }\nvoid (*g)(int *) = f;\n' >"$TEST_TMP/f.c"
	"clang$KCFI_LAB_LLVM" -O2 -fsanitize=kcfi -c -o "$TEST_TMP/f.o" "$TEST_TMP/f.c"
	local want got
	want=$("llvm-objdump$KCFI_LAB_LLVM" -d --disassemble-symbols=__cfi_f "$TEST_TMP/f.o" |
		sed -nE 's/.*movl[[:space:]]+[$]0x([0-9a-f]+), %eax.*/\1/p')
	[ -n "$want" ] || fail "no preamble in clang's output"
	got=$(lab kcfi hash 'void (int *)' | awk '{ print $1 }')
	assert_eq "$got" "0x$want" "kcfi hash vs clang$KCFI_LAB_LLVM"
	expect_exit 2 lab kcfi frobnicate
}

# What came after the lab's first kernels, against the newest kernel's
# clang: LLVM 22's FNV-1a hash (kcfi hash --hash fnv1a) and LLVM 21's
# arity (kcfi scan's "arity"), on functions that read 0 to 8 arguments.
# The ids and registers come from clang's output, read by llvm-objdump.
test_kcfi_fnv1a_and_arity_agree_with_clang() {
	local latest cc objdump k i args sum proto want got reg
	local src="$TEST_TMP/latest.c" regs="eax ecx edx ebx esp ebp esi edi"
	tool_toolchains
	latest=$(tool_llvm_args | sed -n 's/^LLVM_LATEST=//p')
	cc=clang$latest objdump=llvm-objdump$latest
	have "$cc" || skip "$cc is not installed (./run.sh setup --kernel $(lab_kernels | sed -n '$p'))"
	"$cc" -fsanitize=kcfi -fsanitize-kcfi-arity -Xclang -fsanitize-kcfi-hash=FNV-1a -c -x c /dev/null -o /dev/null 2>/dev/null ||
		skip "$cc has neither LLVM 22's FNV-1a hash nor arity"
	for k in 0 1 2 3 4 5 6 7 8; do
		args="" sum=0
		for ((i = 1; i <= k; i++)); do
			args="$args${args:+, }long a$i" sum="$sum + a$i"
		done
		echo "long reads$k(${args:-void}) { return $sum; }"
		echo "void *reads${k}_p = reads$k;"
	done >"$src"
	"$cc" -O2 -fsanitize=kcfi -fsanitize-kcfi-arity -c -o "$TEST_TMP/arity.o" "$src"
	"$cc" -O2 -fsanitize=kcfi -Xclang -fsanitize-kcfi-hash=FNV-1a -c -o "$TEST_TMP/fnv1a.o" "$src"
	lab kcfi scan --json "$TEST_TMP/arity.o" >"$TEST_TMP/arity.json"
	for k in 0 1 2 3 4 5 6 7 8; do
		reg=$("$objdump" -d --disassemble-symbols="__cfi_reads$k" "$TEST_TMP/arity.o" |
			sed -nE 's/.*movl[[:space:]]+[$]0x[0-9a-f]+, %(e[a-z]{2}).*/\1/p')
		want=$(awk -v r="$reg" '{ for (i = 1; i <= NF; i++) if ($i == r) print i - 1 }' <<<"$regs")
		[ -n "$want" ] || fail "reads$k: no preamble register in clang's output ('$reg')"
		got=$(python3 -c 'import json, sys; print([f["arity"] for f in json.load(open(sys.argv[1]))["functions"] if f["name"] == sys.argv[2]])' \
			"$TEST_TMP/arity.json" "reads$k")
		assert_eq "$got" "[$want]" "reads$k: kcfi's arity, $cc's register %$reg"
		proto="long (void)"
		[ "$k" = 0 ] || proto="long ($(printf 'long, %.0s' $(seq "$k") | sed 's/, $//'))"
		want=$("$objdump" -d --disassemble-symbols="__cfi_reads$k" "$TEST_TMP/fnv1a.o" |
			sed -nE 's/.*movl[[:space:]]+[$]0x([0-9a-f]+), %eax.*/\1/p')
		[ -n "$want" ] || fail "reads$k: no FNV-1a id in clang's output"
		got=$(lab kcfi hash --hash fnv1a "$proto" | awk '{ print $1 }')
		assert_eq "$got" "$(printf '0x%08x' "0x$want")" "$proto: kcfi hash --hash fnv1a vs $cc"
	done
	python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["summary"]; sys.exit(s["arity"] is not True)' "$TEST_TMP/arity.json" ||
		fail "scan --json does not say the image has arity"
	# scan --types explains each arity that is not the number of C
	# parameters: a struct in two registers, a double, a stack argument.
	"$cc" -g -O2 -fsanitize=kcfi -fsanitize-kcfi-arity -c -o "$TEST_TMP/demo.o" "$KCFI_LAB_ROOT/lab/kcfi/tests/arity-demo.c"
	got=$(lab kcfi scan --types --json "$TEST_TMP/demo.o" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join("%s=%s" % (f["name"], f.get("arity_against_prototype")) for f in d["functions"]))')
	assert_eq "$got" "f=the C parameters call=the C parameters pair=two registers for one argument half=floating-point arguments seven=stack arguments" \
		"scan --types on lab/kcfi/tests/arity-demo.c"
}

test_kcfi_tool_is_built_once_out_of_the_tree() {
	have make || skip "make is not installed (./run.sh setup)"
	local home="$TEST_TMP/tool home" fake="$TEST_TMP/failing-make" tool
	tool="$home/$LAB_TOOL_REL/kcfi"
	touch "$TEST_TMP/before"
	expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" kcfi hash 'void (int *)'
	[ -x "$tool" ] || fail "no tool at $tool"
	local written
	written=$(find "$KCFI_LAB_ROOT/lab/kcfi" -newer "$TEST_TMP/before" -print -quit)
	[ -z "$written" ] || fail "the build wrote into the source tree: $written"
	# Once built, a call runs no make: a make that always fails changes nothing.
	mkdir -p "$fake"
	printf '#!/bin/sh\necho "make: no, not now" >&2\nexit 1\n' >"$fake/make"
	chmod +x "$fake/make"
	expect_exit 0 env PATH="$fake:$PATH" KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" kcfi hash 'void (int *)'
	# Older than its sources by time only: still current (a pack's tool
	# on a learner's machine without a compiler).
	touch -d '2001-01-01' "$tool"
	expect_exit 0 env PATH="$fake:$PATH" KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" kcfi hash 'void (int *)'
	# Built from other sources: it is built again, and a failed build
	# says so.
	echo 0000 >"$home/$LAB_TOOL_REL/sources.sha256"
	expect_exit 1 env PATH="$fake:$PATH" KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" kcfi hash 'void (int *)'
	[[ "$OUT" == *"make: no, not now"*"kcfi-lab: error: building the kcfi host tool failed"* ]] ||
		fail "unexpected: $OUT"
	expect_exit 0 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" kcfi hash 'void (int *)'
}

# Values from the command line and the environment are data, never code
# or options: a newline in --append would start QEMU options, a port out
# of range would be reported while QEMU listened elsewhere, and a quote
# in KCFI_LAB_HOME ran the rest of its name as shell in a trap.
test_user_values_are_checked_and_never_run() {
	local home="$TEST_TMP/h'; touch '$TEST_TMP/INJECTED'; '" port
	# Were a check to miss, the lab must not start a kernel import here.
	export KCFI_LAB_TARBALL=/nonexistent
	for port in 0 99999 65536; do
		expect_exit 2 env KCFI_LAB_HOME="$TEST_TMP/h-values" "$KCFI_LAB_ROOT/run.sh" --gdb --gdb-port "$port" --run true
		assert_eq "$(printf '%s\n' "$OUT" | sed -n 1p)" "kcfi-lab: error: --gdb-port takes a port from 1 to 65535, not $port" "--gdb-port $port"
	done
	expect_exit 2 env KCFI_LAB_HOME="$TEST_TMP/h-values" "$KCFI_LAB_ROOT/run.sh" --append $'quiet\n-name INJECTED' --run true
	assert_eq "$(printf '%s\n' "$OUT" | sed -n 1p)" "kcfi-lab: error: --append must not hold control characters (newlines, tabs)" "--append with a newline"
	[ ! -e "$TEST_TMP/h-values" ] || fail "a refused command line created state"
	# A home whose name holds a quote: unpack's cleanup runs nothing of
	# it (a signed pack that is refused once unpacked: a file changed
	# after its checksum was taken).
	if have ssh-keygen; then
		local key
		key=$(signing_key instructor)
		pack_stage "$TEST_TMP/junk"
		seal_pack "$TEST_TMP/junk" "$TEST_TMP/junk.tar.gz"
		echo "changed" >>"$TEST_TMP/junk/build/x86_64/.config"
		tar_files "$TEST_TMP/junk" "$TEST_TMP/junk.tar.gz"
		ssh-keygen -q -Y sign -f "$key" -n kcfi-lab-pack "$TEST_TMP/junk.tar.gz"
		expect_exit 1 env KCFI_LAB_HOME="$home" "$KCFI_LAB_ROOT/run.sh" unpack "$TEST_TMP/junk.tar.gz" --key "$key.pub"
		[[ "$OUT" == *"is damaged: checksum mismatch in build/x86_64/.config"* ]] || fail "unexpected: $OUT"
	fi
	[ ! -e "$TEST_TMP/INJECTED" ] || fail "a quote in KCFI_LAB_HOME ran code"
	[ -z "$(find "$home" -name 'unpack.*' 2>/dev/null)" ] || fail "unpack left its temporary directory"
	# A relative home is made absolute; a home that is a file is one line.
	expect_exit 0 env -C "$TEST_TMP" KCFI_LAB_HOME=rel-home "$KCFI_LAB_ROOT/run.sh" path
	assert_eq "$OUT" "$TEST_TMP/rel-home" "a relative KCFI_LAB_HOME"
	: >"$TEST_TMP/home-file"
	expect_exit 1 env KCFI_LAB_HOME="$TEST_TMP/home-file" "$KCFI_LAB_ROOT/run.sh" setup
	assert_eq "$OUT" "kcfi-lab: error: KCFI_LAB_HOME ($TEST_TMP/home-file) is not a directory; set it to a directory the lab may use"
}

# The guest gets no network device: QEMU's default user network would
# reach every service on the host's loopback through its gateway.
test_guest_has_no_network() {
	local args
	args=$(bash -c '. "$1/lab/common.sh"; . "$1/lab/qemu.sh"; accel_args() { echo -accel tcg; }; qemu_args "$2" /dev/null strict ""' \
		_ "$KCFI_LAB_ROOT" "$(kernel_get default_arch)" | paste -sd' ')
	[[ " $args " == *" -nic none "* ]] || fail "QEMU gets a network: $args"
	[[ " $args " != *" -netdev "* && " $args " != *" -net "* ]] || fail "QEMU gets a network: $args"
}

# The build's progress: objects made so far, counted from kbuild's
# output as it grows, of the total of the tree's last full build, with
# the time left; a plain line where standard error is no terminal.
test_build_progress_counts_objects() {
	local log="$TEST_TMP/progress/build.log" record="$TEST_TMP/progress/record" out pid
	mkdir -p "$TEST_TMP/progress"
	: >"$log"
	echo "10 100" >"$record"
	(
		for i in 1 2 3 4 5; do
			printf '  CC      obj%s.o\n  LD      obj%s\n' "$i" "$i" >>"$log"
			sleep 1
		done
	) &
	pid=$!
	out=$(KCFI_LAB_PROGRESS_SECONDS=1 show_progress "$pid" "$log" "build test" "$record" 2>&1)
	printf '%s\n' "$out"
	printf '%s\n' "$out" | has_match '^kcfi-lab: build test: [0-9]+ of ~10 objects, [0-9]+ s, ~[0-9]+ s left$' ||
		fail "no progress line with a total and the time left"
	printf '%s\n' "$out" | has_match '^kcfi-lab: build test: ([4-9]|10) of ~10 objects' || fail "the count does not grow"
	rm -f "$record"
	out=$(KCFI_LAB_PROGRESS_SECONDS=1 show_progress "$pid" "$log" "build test" "$record" 2>&1)
	record_build "$log" 42 "$record"
	assert_eq "$(cat "$record")" "10 42" "the record of a full build"
}

# Progress on a terminal (a tmux pane is one) is one line rewritten in
# place; into a log or a pipe, plain "kcfi-lab:" lines. Fed git's own
# checkout progress, through a pseudo-terminal (script) and a pipe.
test_progress_in_place_on_a_terminal_plain_in_a_log() {
	local feed="$TEST_TMP/progress-feed.sh" out
	have script || skip "script is not installed (util-linux)"
	cat >"$feed" <<'EOF'
. "$1/lab/common.sh"
. "$1/lab/kernel-branch.sh"
printf 'Updating files:  50%% (1/2)\rUpdating files: 100%% (2/2), done.\n' | checkout_progress
progress_end
info finished
EOF
	# shellcheck disable=SC2031 # KCFI_LAB_ROOT is this run's, not a mutant's
	out=$(script -qec "bash $(printf %q "$feed") $(printf %q "$KCFI_LAB_ROOT")" /dev/null </dev/null | cat -v)
	printf '%s\n' "$out"
	[[ "$out" == *'^M^[[K[checkout] 1 of 2 files^M^[[K[checkout] 2 of 2 files^M^[[Kkcfi-lab: finished'* ]] ||
		fail "no progress rewritten in place on a terminal: $out"
	# shellcheck disable=SC2031 # KCFI_LAB_ROOT is this run's, not a mutant's
	out=$(KCFI_LAB_PROGRESS_SECONDS=0 bash "$feed" "$KCFI_LAB_ROOT" 2>&1 | cat -v)
	assert_eq "$out" "kcfi-lab: checkout: 1 of 2 files
kcfi-lab: checkout: 2 of 2 files
kcfi-lab: finished" "the progress in a log"
}

# A QEMU fetched into the lab's home reads its firmware (the BIOS, the
# option ROMs) from its own root, whichever way it was built: with fixed
# paths, where "-L help" names /usr/share/..., which the wrapper must
# point into the root (or the host's files, of another QEMU, are read);
# or relocatable, where it names directories next to its binary. A
# stand-in QEMU lists its directories one way or the other and prints
# the arguments the wrapper gives it.
test_fetched_qemu_reads_its_roots_firmware() {
	local root="$TEST_TMP/fw root" kind got want
	for kind in fixed relocatable; do
		rm -rf "$root"
		mkdir -p "$root/usr/bin" "$root/usr/share/qemu" "$root/usr/share/seabios"
		# shellcheck disable=SC2016 # the stand-in's own expansions
		{
			echo '#!/bin/sh'
			echo 'if [ "$*" = "-L help" ]; then'
			if [ "$kind" = fixed ]; then
				printf '\tprintf "%%s\\n" /usr/share/qemu /usr/share/seabios /usr/lib/ipxe/qemu\n'
			else
				printf '\td=$(dirname "$0")\n\tprintf "%%s\\n" "$d/../share/qemu" "$d/../share/seabios" "$d/../lib/ipxe/qemu"\n'
			fi
			echo '	exit 0'
			echo 'fi'
			echo 'for a; do echo "$a"; done'
		} >"$root/usr/bin/qemu-stand-in"
		chmod +x "$root/usr/bin/qemu-stand-in"
		# The lab's code at KCFI_LAB_ROOT, in a shell of its own.
		# shellcheck disable=SC2016 # that shell's own expansions
		bash -c '. "$KCFI_LAB_ROOT/lab/common.sh"; . "$KCFI_LAB_ROOT/lab/roots.sh"; qemu_wrapper "$1" "$2"' \
			_ "$root" "$root/usr/bin/qemu-stand-in" >"$TEST_TMP/fw-wrapper"
		got=$(bash "$TEST_TMP/fw-wrapper" -M none | paste -sd' ')
		want="-L $root/usr/share/qemu -L $root/usr/share/seabios -M none"
		assert_eq "$got" "$want" "the arguments a $kind QEMU gets from its wrapper"
	done
}

# The KVM probe asks the CPU first: /dev/kvm that opens and makes a VM
# on a CPU without the flags the arch file names (vmx, svm) cannot run a
# guest, and a test boot there only times out (30 s on every new home).
test_kvm_probe_reads_the_cpu_flags() {
	local cpu="$TEST_TMP/cpuinfo" arch flags
	# virtualizes ARCH FLAGS: the lab's answer for a CPU with FLAGS.
	virtualizes() {
		printf 'processor\t: 0\nflags\t\t: %s\n' "$2" >"$cpu"
		bash -c '. "$1/lab/common.sh"; . "$1/lab/qemu.sh"; LAB_CPUINFO=$2; kvm_cpu_virtualizes "$3"' _ \
			"$KCFI_LAB_ROOT" "$cpu" "$1"
	}
	for arch in $(lab_arches); do
		flags=$(arch_get "$arch" kvm_cpu_flags)
		[ -n "$flags" ] || continue
		virtualizes "$arch" "fpu de pse ${flags%% *} lm" || fail "$arch: KVM refused on a CPU with ${flags%% *}"
		! virtualizes "$arch" "fpu de pse lm ${flags%% *}x" || fail "$arch: KVM tried on a CPU without $flags"
		return 0
	done
	skip "no arch file names CPU flags for KVM"
}
