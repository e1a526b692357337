#!/usr/bin/env bash
# Offline installs for classroom packs: the Debian packages a learner runs
# (QEMU, gdb, tmux, the LLVM tools), with everything they depend on, as
# Debian's archives hold them (signed InRelease, Packages.xz, pool), which
# pack --debs ships and unpack installs from without a network, after
# apt verified them against the host's keyring. Sourced by run.sh.

DEBS_DIR="$KCFI_LAB_HOME/debs"

# learner_packages ARCH...: what a learner with a pack runs: the QEMU of
# ARCH... (but one the host takes from other suites: unpack says how to
# get it), the lab kernel's toolchain (exercise 03 asks clang for type
# ids, 09 and 10 build modules) and the host file's learner_packages.
learner_packages() {
	local arch entry
	for arch in "$@"; do
		[ -n "$(qemu_suites "$arch")" ] || arch_get "$arch" qemu_package
	done
	host_get learner_packages | tr ' ' '\n' | sed '/^$/d'
	for entry in $(toolchain_packages); do
		echo "${entry%%:*}"
	done
}

# debs_closure OPTS...: "NAME VERSION ARCH" of every package apt would
# install on an empty machine for the learner packages in DEBS_PACKAGES.
# A line is "Inst NAME (VERSION RELEASE... [ARCH])", sometimes followed
# by " []"; a line in another form fails the whole list.
debs_closure() {
	local sim
	sim=$(apt-get "$@" -s install --no-install-recommends "${DEBS_PACKAGES[@]}") || return 1
	printf '%s\n' "$sim" | awk '
		/^Inst / {
			n++
			if ($3 !~ /^\(/ || !match($0, /\[[a-z0-9]+\]\)/)) next
			print $2, substr($3, 2), substr($0, RSTART + 1, RLENGTH - 3)
			ok++
		}
		END { if (n == 0 || ok != n) exit 1 }'
}

# repo_slug URI: a directory name for the archive at URI.
repo_slug() {
	local uri=${1#*://}
	uri=${uri%/}
	printf '%s\n' "${uri//[^A-Za-z0-9.-]/_}"
}

# url_decode TEXT: TEXT with its %XX escapes decoded (apt escapes "+"
# and "~" in the URIs it prints).
url_decode() {
	printf '%b\n' "${1//%/\\x}"
}

# apt_uris OPTS...: the downloads of "apt-get OPTS... --print-uris -qq",
# one a line: URI, file name and hash, separated by tabs. apt prints
# "'URI' FILE SIZE HASH", the URI quoted (a file: URI may hold spaces).
apt_uris() {
	apt-get "$@" | sed -n "s/^'\(.*\)' \([^ ]*\) [0-9]* \([^ ]*\)\$/\1\t\2\t\3/p"
}

# lists_name URI: the name apt gives the file it fetched from URI in its
# lists directory.
lists_name() {
	local uri=${1#*://}
	uri=${uri//_/%5f}
	printf '%s\n' "${uri//\//_}"
}

# debs_fetch ARCH...: the learner packages of ARCH... and everything they
# need on a machine with nothing installed, as Debian's own archives
# hold them: DEBS_DIR/repo/ARCHIVE/ with each suite's signed InRelease
# and its Packages.xz (the mirror's bytes, as apt verified them) and the
# .deb files at the paths those name. unpack gives the repository to apt
# with the host's keyring: apt itself checks every file. Downloads are
# cached in KCFI_LAB_HOME/apt-debs; the host's own apt state is left
# alone.
debs_fetch() {
	local apt_dir="$KCFI_LAB_HOME/apt-debs" log closure debarch line uri file
	if ! have apt-get || ! have dpkg-deb; then
		die "pack --debs needs apt-get and dpkg-deb (a Debian host)"
	fi
	if [ -n "$(host_kernel_get toolchain_suites)" ]; then
		die "pack --debs: on $(host_get name), Linux $LAB_KERNEL's toolchain comes from $(host_kernel_get toolchain_suites), not from the host's own suites; make the pack without --debs, or on a host whose own suites have it"
	fi
	mapfile -t DEBS_PACKAGES < <(learner_packages "$@")
	debarch=$(host_debian_arch)
	info "downloading ${DEBS_PACKAGES[*]} and their dependencies (private apt state in $apt_dir)"
	# The index files as the mirror has them (not recompressed, not
	# patched), so that the learner's apt can check them against the
	# signed InRelease.
	rm -rf "$apt_dir/lists"
	# shellcheck disable=SC2034 # read by suite_state
	SUITE_APT_EXTRA=(-o Acquire::IndexTargets::deb::Packages::KeepCompressedAs=xz -o Acquire::PDiffs=false)
	# shellcheck disable=SC2046 # the host file's suites are words
	suite_state "$apt_dir" "$debarch" $(host_get own_suites)
	# shellcheck disable=SC2034 # read by suite_state
	SUITE_APT_EXTRA=()
	log=$(new_log apt-debs)
	# Exact names: apt would read a name it does not know as a pattern.
	for line in "${DEBS_PACKAGES[@]}"; do
		suite_has "$apt_dir" "$debarch" "$line" ||
			die "no package named $line in $(host_get own_suites) (the host file's learner packages)"
	done
	apt-get "${SUITE_OPTS[@]}" install -y -q --download-only --no-install-recommends "${DEBS_PACKAGES[@]}" >>"$log" 2>&1 ||
		die "downloading the packages failed (log: $log)"
	closure=$(debs_closure "${SUITE_OPTS[@]}") || die "cannot read apt's list of packages to download (log: $log)"
	rm -rf "$DEBS_DIR.tmp"
	mkdir -p "$DEBS_DIR.tmp/repo" "$apt_dir/no-archives/partial"
	# Where each package comes from: "'URI' FILE SIZE SHA256:HASH" for
	# every download, with an empty archive directory so that none is
	# left out as cached.
	while IFS=$'\t' read -r uri file _; do
		[[ "$uri" == */pool/* ]] || die "apt names no pool path for $file: $uri (log: $log)"
		[ -f "$apt_dir/cache/archives/$file" ] || die "$file was not downloaded (log: $log)"
		line="$DEBS_DIR.tmp/repo/$(repo_slug "${uri%%/pool/*}")/pool/$(url_decode "${uri#*/pool/}")"
		mkdir -p "${line%/*}"
		ln -f "$apt_dir/cache/archives/$file" "$line" 2>/dev/null || cp "$apt_dir/cache/archives/$file" "$line"
	done < <(apt_uris "${SUITE_OPTS[@]}" -o "Dir::Cache::Archives=$apt_dir/no-archives" --print-uris -qq \
		install --no-install-recommends "${DEBS_PACKAGES[@]}" 2>>"$log")
	debs_indexes "$apt_dir" "$debarch" "$DEBS_DIR.tmp/repo"
	[ "$(find "$DEBS_DIR.tmp/repo" -name '*.deb' | wc -l)" = "$(printf '%s\n' "$closure" | wc -l)" ] ||
		die "the downloads do not match apt's list of packages (log: $log)"
	printf '%s\n' "${DEBS_PACKAGES[@]}" >"$DEBS_DIR.tmp/learner-packages"
	printf '%s\n' "$closure" >"$DEBS_DIR.tmp/closure"
	rm -rf "$DEBS_DIR"
	mv "$DEBS_DIR.tmp" "$DEBS_DIR"
}

# debs_indexes STATE DEBARCH REPO: for each suite of STATE's sources whose
# archive has packages in REPO, its InRelease and Packages.xz as apt
# fetched them (dists/SUITE/...).
debs_indexes() {
	local state=$1 debarch=$2 repo=$3 kind opts uri suite comp dir
	# shellcheck disable=SC2034 # kind and opts are the line's first words
	while read -r kind opts uri suite comp; do
		dir="$repo/$(repo_slug "$uri")"
		[ -d "$dir/pool" ] || continue
		mkdir -p "$dir/dists/$suite/$comp/binary-$debarch"
		cp "$state/lists/$(lists_name "${uri%/}/dists/$suite/InRelease")" "$dir/dists/$suite/InRelease" ||
			die "no InRelease of $suite in $state/lists"
		cp "$state/lists/$(lists_name "${uri%/}/dists/$suite/$comp/binary-$debarch/Packages").xz" \
			"$dir/dists/$suite/$comp/binary-$debarch/Packages.xz" ||
			die "no Packages.xz of $suite in $state/lists"
	done <"$state/sources.list"
}

# debs_repo_sources DIR: the sources.list of the pack's repository in DIR:
# each archive's suites that are the host file's own_suites, signed by
# the host file's keyring. Valid-Until
# is not checked: a pack is a snapshot, used offline days after it was
# made (the security suite's Release is valid for a week).
debs_repo_sources() {
	local keyring release dir suite
	keyring=$(host_get keyring)
	[ -f "$keyring" ] || die "$keyring not found: install debian-archive-keyring"
	for release in "$1"/repo/*/dists/*/InRelease; do
		[ -f "$release" ] || continue
		suite=${release%/InRelease}
		dir=${suite%/dists/*}
		suite=${suite##*/}
		# The host file's suites only: the keyring also signs other
		# releases, which the pack does not choose.
		host_get own_suites | tr ' ' '\n' | exact_line "$suite" || continue
		# A file: URI escapes spaces.
		printf 'deb [signed-by=%s check-valid-until=no] file:%s %s main\n' "$keyring" "${dir// /%20}" "$suite"
	done
}

# debs_repo_opts DIR STATE: apt options that see only the pack's
# repository in DIR (no network), with lists and caches in STATE.
debs_repo_opts() {
	local dir=$1 state=$2
	mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/sources.list.d"
	debs_repo_sources "$dir" >"$state/sources.list"
	printf '%s\n' -o "Dir::Etc::SourceList=$state/sources.list" \
		-o "Dir::Etc::SourceParts=$state/sources.list.d" \
		-o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" \
		-o APT::Sandbox::User=root
}

# debs_verify OPTS...: apt, with the pack's repository as its only
# source (OPTS), has verified its index files against Debian's keyring,
# and every .deb the install of DEBS_MISSING could take (all it needs on
# a machine with nothing installed) against the signed index: apt's own
# fetch, into an archive directory of the lab's, without root. Dies
# naming the first package that does not match.
debs_verify() {
	local log uri deb
	log=$(new_log apt-offline)
	if ! apt_update_verified "$log" "$@"; then
		die "the pack's package index is not signed by Debian's keys as this host knows them: nothing installed (log: $log)"
	fi
	apt-get "$@" -o "Dir::Cache::Archives=${DEBS_STATE:?}/no-archives" -o "Dir::State::status=$DEBS_STATE/empty-status" \
		-o Debug::NoLocking=1 -y -q --download-only install --no-install-recommends "${DEBS_MISSING[@]}" >>"$log" 2>&1 && return 0
	# "E: Failed to fetch URI  Hash Sum mismatch" (or "Size mismatch");
	# a file: URI may hold spaces.
	uri=$(sed -n 's/^E: Failed to fetch \(.*\.deb\)  *\(Hash Sum\|Size\) mismatch.*/\1/p' "$log" | sed -n 1p)
	[ -n "$uri" ] || die "apt cannot take the pack's packages: nothing installed (log: $log)"
	deb=$(url_decode "${uri##*/}")
	die "the pack's ${deb%%_*} ($deb) is not the package Debian's signed index names: nothing installed"
}

# debs_install ARCH...: install the learner packages of ARCH... (from the
# checkout's lists, never the pack's) that are missing, from the
# unpacked DEBS_DIR only, after apt verified them.
debs_install() {
	local state="$KCFI_LAB_HOME/apt-offline" log pkg arch
	local -a opts missing=() arches=()
	for arch in "$@"; do
		pkg=$(normalize_arch "$arch") || die "the pack names an unknown arch: $arch"
		arches+=("$pkg")
	done
	while read -r pkg; do
		package_installed "$pkg" || missing+=("$pkg")
	done < <(learner_packages "${arches[@]}")
	if [ "${#missing[@]}" = 0 ]; then
		info "the pack's packages are installed already: $(learner_packages "${arches[@]}" | paste -sd' ')"
		return 0
	fi
	if [ "$(id -u)" != 0 ] && ! have sudo; then
		die "installing ${missing[*]} from the pack needs root; run the same unpack as root"
	fi
	rm -rf "$state"
	mkdir -p "$state/no-archives/partial"
	: >"$state/empty-status"
	# In this shell: a die in the process substitution below would end
	# only that subshell, and apt would run with the host's own sources.
	[ -f "$(host_get keyring)" ] || die "$(host_get keyring) not found: install debian-archive-keyring"
	mapfile -t opts < <(debs_repo_opts "$DEBS_DIR" "$state")
	if [ "${#opts[@]}" = 0 ] || [ ! -s "$state/sources.list" ]; then
		die "the pack holds no Debian archive of this host's suites ($(host_get own_suites))"
	fi
	DEBS_STATE=$state DEBS_MISSING=("${missing[@]}")
	debs_verify "${opts[@]}"
	log=$(new_log apt-offline)
	info "installing ${missing[*]} from the pack (no network; verified by apt)"
	if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get "${opts[@]}" install -y -q \
		--no-install-recommends "${missing[@]}" >"$log" 2>&1; then
		die "installing from the pack failed (log: $log)"
	fi
}
