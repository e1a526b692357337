#!/usr/bin/env bash
# Fresh-machine lanes: for each host file in lab/host/, a pristine root of
# that release made with mmdebstrap from this machine's own mirror (a
# tarball kept in $KCFI_LAB_HOME/lanes between runs), copied fresh for
# each run, the repository cloned into it, and there, as a new user
# would, the README's commands. Sourced by the tests, never executed.

LANES_DIR="$KCFI_LAB_HOME/lanes"
# What a fresh root holds besides apt: what a user who clones a
# repository has (the lab installs the rest).
LANE_INCLUDE=ca-certificates,debian-archive-keyring,git,sudo,python3,xz-utils

# lane_unready: why no lane can run on this machine, or nothing.
lane_unready() {
	if [ "$(id -u)" != 0 ]; then
		echo "the lanes need root (chroot and mounts)"
	elif ! have mmdebstrap; then
		echo "mmdebstrap is not installed (./run.sh setup --tests)"
	elif ! have unshare; then
		echo "unshare is not installed"
	elif [ -z "$LAB_HOST" ]; then
		echo "no host file for this machine"
	fi
}

# lane_hosts: the host files' names.
lane_hosts() {
	local f
	for f in "$KCFI_LAB_ROOT"/lab/host/*.conf; do
		f=${f##*/}
		echo "${f%.conf}"
	done
}

# lane_root HOST: make HOST's pristine root ($LANES_DIR/HOST.tar) unless
# it is there: its suite and that suite's security updates, from the
# mirrors this machine's apt uses, checked against its keyring.
lane_root() {
	local host=$1 suite log="$TEST_TMP/lane-$1-mmdebstrap.$BASHPID.log" tmp
	local -a sources
	[ ! -s "$LANES_DIR/$host.tar" ] || return 0
	suite=$(sed -n 's/^suite=//p' "$KCFI_LAB_ROOT/lab/host/$host.conf")
	[ -n "$suite" ] || fail "lab/host/$host.conf names no suite"
	mapfile -t sources < <(suite_sources "$suite" "$suite-security")
	[ "${#sources[@]}" -gt 0 ] || fail "no mirror for $suite"
	mkdir -p "$LANES_DIR"
	# Names of its own: two tests may make the same root at once.
	tmp="$LANES_DIR/$host.tar.tmp.$BASHPID"
	if ! mmdebstrap --mode=root --variant=apt --format=tar --include="$LANE_INCLUDE" \
		"$suite" "$tmp" "${sources[@]}" >"$log" 2>&1; then
		rm -f "$tmp"
		fail "mmdebstrap of $suite failed: $(tail -n 5 "$log")"
	fi
	mv "$tmp" "$LANES_DIR/$host.tar"
}

# lane_start HOST: a fresh copy of HOST's root in LANE (a new directory
# in TEST_TMP: the lanes of two tests may run at once), with the
# repository cloned into /root/kcfi-lab, as the work tree is (a run
# before a commit tests what it has). A checkout that is not a
# repository (a mutant's copy, tests/full-7-mutations.sh) is copied as
# it is.
lane_start() {
	LANE=$(mktemp -d "$TEST_TMP/lane-$1.XXXXXX")
	# A root directory, as mkdir makes it (mktemp's is the owner's only).
	chmod 755 "$LANE"
	tar -C "$LANE" -xf "$LANES_DIR/$1.tar"
	if [ ! -d "$KCFI_LAB_ROOT/.git" ]; then
		cp -a "$KCFI_LAB_ROOT" "$LANE/root/kcfi-lab"
	else
		git clone -q "$KCFI_LAB_ROOT" "$LANE/root/kcfi-lab"
		(cd "$KCFI_LAB_ROOT" && git ls-files -z -c -o --exclude-standard | tar --null -T - -cf -) |
			tar -C "$LANE/root/kcfi-lab" -xf -
	fi
	cp /etc/resolv.conf "$LANE/etc/resolv.conf" 2>/dev/null || true
}

# lane_run LOG CMD...: CMD in the lane, as root in /root/kcfi-lab with a
# new user's environment (no KCFI_LAB_HOME: the default home), in mount
# and process namespaces of its own: /proc, /sys, /dev, a /tmp and this
# machine's compiler cache are mounted for it alone, what it starts ends
# with it, and its test suite's reaper sees its own processes only.
# Output into LOG; returns CMD's status.
lane_run() {
	local log=$1
	shift
	# shellcheck disable=SC2016 # the script's own expansions
	unshare --mount --propagation private --pid --fork -- bash -c '
		set -e
		r=$1 ccache=$2
		shift 2
		mount -t proc proc "$r/proc"
		mount -t sysfs sys "$r/sys"
		mount --rbind /dev "$r/dev"
		mount -t tmpfs tmpfs "$r/tmp"
		# The compiler cache of this machine'"'"'s home, where the lane'"'"'s
		# default home keeps it: the same compiler on the same paths
		# compiles the same tree once.
		if [ -d "$ccache" ]; then
			mkdir -p "$r/root/.cache/kcfi-lab/ccache"
			mount --bind "$ccache" "$r/root/.cache/kcfi-lab/ccache"
		fi
		exec chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			/bin/bash -c "cd /root/kcfi-lab && exec \"\$@\"" _ "$@"
	' _ "$LANE" "$KCFI_LAB_HOME/ccache" "$@" >"$log" 2>&1
}
