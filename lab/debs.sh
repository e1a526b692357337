#!/usr/bin/env bash
# Offline installs for classroom packs: the Debian packages a learner runs
# (QEMU, gdb, tmux, the LLVM tools), with everything they depend on, as a
# flat apt repository that pack --debs ships and unpack installs from
# without a network. Sourced by run.sh.

DEBS_DIR="$KCFI_LAB_HOME/debs"

# learner_packages ARCH...: what a learner with a pack runs: the QEMU of
# ARCH..., the lab kernel's toolchain (exercise 03 asks clang for type
# ids, 09 and 10 build modules) and the host file's learner_packages.
learner_packages() {
	local arch entry
	for arch in "$@"; do
		arch_get "$arch" qemu_package
	done
	host_get learner_packages | tr ' ' '\n' | sed '/^$/d'
	for entry in $(toolchain_packages); do
		echo "${entry%%:*}"
	done
}

# debs_fetch_opts DIR: a private apt state in DIR whose dpkg status is
# empty, so that apt resolves as on a machine with nothing installed and
# the download holds every dependency.
debs_fetch_opts() {
	printf '%s\n' -o "Dir::State=$1" -o "Dir::State::Lists=$1/lists" \
		-o "Dir::State::status=$1/status" -o "Dir::Cache=$1/cache" \
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root
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

# write_packages_index DIR: the Packages file of a flat repository.
write_packages_index() {
	local deb
	for deb in "$1"/*.deb; do
		dpkg-deb -f "$deb"
		echo "Filename: ./${deb##*/}"
		echo "Size: $(stat -c %s "$deb")"
		# apt refuses a download it cannot check with a strong hash.
		echo "SHA256: $(sha256sum <"$deb" | cut -d' ' -f1)"
		echo
	done >"$1/Packages.tmp"
	mv "$1/Packages.tmp" "$1/Packages"
}

# debs_fetch ARCH...: download the learner packages of ARCH... and their
# dependencies into DEBS_DIR, a flat repository. Downloads are cached in
# KCFI_LAB_HOME/apt-debs; the host's own apt state is left alone.
debs_fetch() {
	local apt_dir="$KCFI_LAB_HOME/apt-debs" log closure name version arch file
	local -a opts
	if ! have apt-get || ! have dpkg-deb; then
		die "pack --debs needs apt-get and dpkg-deb (a Debian host)"
	fi
	mapfile -t DEBS_PACKAGES < <(learner_packages "$@")
	mapfile -t opts < <(debs_fetch_opts "$apt_dir")
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
	: >"$apt_dir/status"
	log=$(new_log apt-debs)
	info "downloading ${DEBS_PACKAGES[*]} and their dependencies (private apt state in $apt_dir)"
	# The private lists are refreshed once a day (offline, older lists
	# do, as long as the downloads they name are cached), and again when
	# a download fails.
	if [ -z "$(find "$apt_dir/lists" -maxdepth 1 -name '*_Packages*' -mmin -1440 2>/dev/null)" ] &&
		! apt-get "${opts[@]}" update >>"$log" 2>&1 &&
		[ -z "$(find "$apt_dir/lists" -maxdepth 1 -name '*_Packages*' 2>/dev/null)" ]; then
		die "apt-get update failed (log: $log); pack --debs needs the network once"
	fi
	if ! apt-get "${opts[@]}" install -y -q --download-only --no-install-recommends "${DEBS_PACKAGES[@]}" >>"$log" 2>&1; then
		apt-get "${opts[@]}" update >>"$log" 2>&1 ||
			die "apt-get update failed (log: $log); pack --debs needs the network once"
		apt-get "${opts[@]}" install -y -q --download-only --no-install-recommends "${DEBS_PACKAGES[@]}" >>"$log" 2>&1 ||
			die "downloading the packages failed (log: $log)"
	fi
	closure=$(debs_closure "${opts[@]}") || die "cannot read apt's list of packages to download (log: $log)"
	# The same packages as last time, asked for by the same list: the
	# repository is ready. (A new learner package may be in the closure
	# already, as a dependency of another.)
	if [ -f "$DEBS_DIR/Packages" ] && [ "$(cat "$DEBS_DIR/closure" 2>/dev/null)" = "$closure" ] &&
		[ "$(cat "$DEBS_DIR/learner-packages" 2>/dev/null)" = "$(printf '%s\n' "${DEBS_PACKAGES[@]}")" ]; then
		return 0
	fi
	rm -rf "$DEBS_DIR.tmp"
	mkdir -p "$DEBS_DIR.tmp"
	while read -r name version arch; do
		# apt names its downloads NAME_VERSION_ARCH.deb, the epoch's
		# colon escaped.
		file="$apt_dir/cache/archives/${name}_${version//:/%3a}_$arch.deb"
		[ -f "$file" ] || die "$name $version was not downloaded (log: $log)"
		ln -f "$file" "$DEBS_DIR.tmp/" 2>/dev/null || cp "$file" "$DEBS_DIR.tmp/"
	done <<<"$closure"
	write_packages_index "$DEBS_DIR.tmp"
	printf '%s\n' "${DEBS_PACKAGES[@]}" >"$DEBS_DIR.tmp/learner-packages"
	printf '%s\n' "$closure" >"$DEBS_DIR.tmp/closure"
	rm -rf "$DEBS_DIR"
	mv "$DEBS_DIR.tmp" "$DEBS_DIR"
}

# debs_repo_opts DIR STATE: apt options that see only the flat repository
# in DIR (no network), with lists and caches in STATE.
debs_repo_opts() {
	local dir=$1 state=$2
	mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/sources.list.d"
	# A file: URI escapes spaces.
	echo "deb [trusted=yes] file:${dir// /%20} ./" >"$state/sources.list"
	printf '%s\n' -o "Dir::Etc::SourceList=$state/sources.list" \
		-o "Dir::Etc::SourceParts=$state/sources.list.d" \
		-o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" \
		-o APT::Sandbox::User=root
}

# debs_install: install the learner packages that are missing, from the
# unpacked DEBS_DIR only.
debs_install() {
	local state="$KCFI_LAB_HOME/apt-offline" log pkg
	local -a opts missing=()
	while read -r pkg; do
		package_installed "$pkg" || missing+=("$pkg")
	done <"$DEBS_DIR/learner-packages"
	if [ "${#missing[@]}" = 0 ]; then
		info "the pack's packages are installed already: $(paste -sd' ' "$DEBS_DIR/learner-packages")"
		return 0
	fi
	mapfile -t opts < <(debs_repo_opts "$DEBS_DIR" "$state")
	if [ "$(id -u)" != 0 ] && ! have sudo; then
		die "installing ${missing[*]} from the pack needs root; run the same unpack as root"
	fi
	log=$(new_log apt-offline)
	info "installing ${missing[*]} from the pack (no network)"
	if ! as_root apt-get "${opts[@]}" update >"$log" 2>&1 ||
		! as_root env DEBIAN_FRONTEND=noninteractive apt-get "${opts[@]}" install -y -q \
			--no-install-recommends "${missing[@]}" >>"$log" 2>&1; then
		die "installing from the pack failed (log: $log)"
	fi
}
