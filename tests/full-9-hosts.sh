#!/usr/bin/env bash
# The newest kernel on the fresh machines of the other hosts
# (tests/lanes.sh; the default kernel's lanes are tests/full-1-lanes.sh).

# shellcheck source=tests/lanes.sh
. "$KCFI_LAB_ROOT/tests/lanes.sh"

# The newest kernel on every other host the lab has a file for (this
# machine's suite runs every kernel on this machine's host), from a pack
# of this machine's build of its default arch, as a classroom gets it:
# unpack, the setup unpack asks for, then the README's command for that
# kernel. A host file that takes packages for it from elsewhere (another
# QEMU: Debian 13's own runs past the byte 7.3's x86 checks trap on) is
# tested here, where those packages arrive on a fresh machine.
test_fresh_hosts_newest_kernel_from_a_pack() {
	local why host kernel arch pack="$TEST_TMP/newest.tar.gz" want_expected want_target log ran=""
	local norand qemu_line start shown
	why=$(lane_unready)
	[ -z "$why" ] || skip "$why"
	for kernel in $(lab_kernels); do :; done
	use_kernel "$kernel"
	arch=$(kernel_get default_arch)
	[ -f "$(vmlinux_of "$arch")" ] || skip "no $arch Linux $kernel kernel built"
	want_expected=$(preamble_type "$arch" lkdtm_increment_void)
	want_target=$(preamble_type "$arch" lkdtm_increment_int)
	[[ "$want_expected$want_target" =~ ^[0-9a-f]{16}$ ]] || fail "no ids from this machine's Linux $kernel $arch build"
	norand=$(kernel_get norand_arg)
	[ -f "$pack" ] || lab --kernel "$kernel" pack "$arch" -o "$pack"
	for host in $(lane_hosts); do
		[ "$host" != "$LAB_HOST" ] || continue
		ran=1
		qemu_line=$(sed -n "s/^${kernel//./[.]}[.]${arch}[.]qemu_suites=//p" "$KCFI_LAB_ROOT/lab/host/$host.conf")
		lane_root "$host"
		lane_start "$host"
		cp "$pack" "$pack.sig" "$(instructor_key)" "$LANE/root/"
		log="$TEST_TMP/lane-$host-newest.log"
		start=$SECONDS
		lane_run "$log" bash -c "./run.sh unpack /root/${pack##*/} --key /root/instructor.pub &&
			./run.sh --kernel $kernel setup &&
			./run.sh --kernel $kernel ${norand:+--append $norand} --run 'lkdtm CFI_FORWARD_PROTO; echo LANE-ALIVE'" ||
			fail "$host: Linux $kernel from a pack failed: $(tail -n 15 "$log")"
		assert_grep "Linux version ${kernel//./[.]}[.]" "$log" "$host: Linux $kernel booted"
		assert_grep "CFI failure at lkdtm_indirect_call.*expected type: 0x$want_expected; target type: 0x$want_target" \
			"$log" "$host: the seed's ids on Linux $kernel"
		assert_grep '^LANE-ALIVE' "$log" "$host: the guest survived"
		if [ -n "$qemu_line" ]; then
			assert_grep "QEMU for $arch is not in /root/.cache/kcfi-lab yet: ./run.sh setup --kernel $kernel fetches" "$log" \
				"$host: unpack saying how to get the QEMU its host file names"
			assert_grep "^kcfi-lab: QEMU: /root/.cache/kcfi-lab/qemu/$kernel-$arch/bin/" "$log" "$host: the boot on the QEMU its host file names"
			# docs/troubleshooting.md shows that line as this host prints it.
			shown=$(grep -m1 "^kcfi-lab: QEMU: .*lab/host/${host}[.]conf)$" "$KCFI_LAB_ROOT/docs/troubleshooting.md" || true)
			[ -z "$shown" ] || grep -qFx -- "$shown" "$log" ||
				fail "$host: docs/troubleshooting.md shows '$shown', the lane printed: $(grep '^kcfi-lab: QEMU: ' "$log")"
		fi
		echo "lane $host: Linux $kernel from a pack, setup and first oops in $((SECONDS - start))s"
		rm -rf "$LANE"
	done
	[ -n "$ran" ] || skip "no host file but this machine's"
}
