#!/usr/bin/env bash
# The README's path on a fresh machine of every host the lab has a file
# for (tests/lanes.sh): in a new root of that release, with nothing of the
# lab installed, ./run.sh --run 'lkdtm CFI_FORWARD_PROTO' to the first
# oops with the seed's ids, then ./run.sh test --quick. A missing install
# step, a package name the release lacks, a compiler or source that does
# not arrive fails here, though this machine has them all.
#
# A file of the side lane (tests/run.sh): it starts once the main lane
# has built the default kernel (the ids, and the compiler cache the
# lanes compile from), and runs beside the main lane's guests. A lane's
# QEMU runs in a root, a home and a pid namespace of its own.

# shellcheck source=tests/lanes.sh
. "$KCFI_LAB_ROOT/tests/lanes.sh"

test_fresh_hosts_first_oops_and_quick_suite() {
	local why host arch want_expected want_target log start first quick last
	why=$(lane_unready)
	[ -z "$why" ] || skip "$why"
	arch=$(kernel_get default_arch)
	# The ids this machine's build of the default kernel holds: a fresh
	# host builds the same code with the same compiler.
	want_expected=$(preamble_type "$arch" lkdtm_increment_void)
	want_target=$(preamble_type "$arch" lkdtm_increment_int)
	[[ "$want_expected$want_target" =~ ^[0-9a-f]{16}$ ]] || fail "no ids from this machine's $arch build"
	for host in $(lane_hosts); do
		lane_root "$host"
		lane_start "$host"
		log="$TEST_TMP/lane-$host-run.log"
		start=$SECONDS
		lane_run "$log" ./run.sh --run 'lkdtm CFI_FORWARD_PROTO; echo LANE-ALIVE' ||
			fail "$host: the first run failed: $(tail -n 15 "$log")"
		first=$((SECONDS - start))
		assert_grep "CFI failure at lkdtm_indirect_call.*expected type: 0x$want_expected; target type: 0x$want_target" \
			"$log" "$host: the seed's ids in the first oops"
		assert_grep '^LANE-ALIVE' "$log" "$host: the guest survived"
		log="$TEST_TMP/lane-$host-quick.log"
		start=$SECONDS
		lane_run "$log" ./run.sh test --quick || fail "$host: ./run.sh test --quick failed: $(grep -E '^(FAIL|skip) ' "$log")"
		quick=$((SECONDS - start))
		last=$(tail -n 1 "$log")
		[[ "$last" =~ ^[0-9]+\ passed,\ 0\ failed ]] || fail "$host: the quick suite ended with: $last"
		echo "lane $host: first oops in ${first}s, quick suite in ${quick}s: $last"
		grep -E '^skip ' "$log" | sed "s/^/lane $host: /" || true
		rm -rf "$LANE"
	done
}
