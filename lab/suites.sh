#!/usr/bin/env bash
# Debian packages from a suite other than the host's own (another
# release's archive, or its security suite), fetched into the lab's home
# with a private apt state: the mirror is the one the host's apt already
# uses, apt checks every Release file against the host file's keyring,
# and the host's apt sources, lists and dpkg stay as they are. Nothing
# is installed: the packages are unpacked. Sourced by run.sh.

# SUITE_APT_EXTRA: more apt options for the next suite_state.
SUITE_APT_EXTRA=()

# suite_mirror SUITE: the URI the host's apt fetches the suite with
# SUITE's ending from (bookworm-security: the host's -security mirror);
# for a suite the host has no counterpart of (-backports), the archive
# of the host's own suite. The sources as configured: no lists needed. A classroom's own mirror or caching proxy is used as it is.
suite_mirror() {
	local want=$1 own ending="" release uri kind archive=""
	own=$(host_get suite)
	case "$want" in *-*) ending="-${want#*-}" ;; esac
	# shellcheck disable=SC2016 # apt's own $(FIELD) syntax
	while read -r kind release uri; do
		[ "$kind" = deb ] || continue
		if [ "$release" = "$own$ending" ]; then
			echo "$uri"
			return 0
		fi
		[ "$release" != "$own" ] || archive=$uri
	done < <(apt-get indextargets --no-release-info --format '$(TARGET_OF) $(RELEASE) $(REPO_URI)' 2>/dev/null | sort -u)
	# The security archive lives apart from the others: no guessing.
	[ "$ending" != -security ] || return 1
	[ -n "$archive" ] || return 1
	echo "$archive"
}

# suite_sources SUITE...: the sources.list of a private state for SUITE...,
# every line signed by the host file's keyring.
suite_sources() {
	local suite uri keyring
	keyring=$(host_get keyring)
	[ -f "$keyring" ] || die "$keyring not found: install debian-archive-keyring"
	for suite in "$@"; do
		uri=$(suite_mirror "$suite") || {
			warn "the host's apt has no mirror for ${suite#*-} suites: $suite left out"
			continue
		}
		printf 'deb [signed-by=%s] %s %s main\n' "$keyring" "$uri" "$suite"
	done
}

# suite_apt_opts DIR DEBARCH STATUS: apt's options for the private state
# in DIR, for packages of DEBARCH, resolving against dpkg status file
# STATUS (an empty one: as on a machine with nothing installed), with
# the state's own preferences (suite_state), never the host's.
# A Release file past its Valid-Until, or dated in the future, is
# refused whatever the host's apt configuration says (a host may turn
# those checks off for a snapshot mirror of its own).
suite_apt_opts() {
	printf '%s\n' -o "Dir::State=$1" -o "Dir::State::Lists=$1/lists" \
		-o "Dir::State::status=$3" -o "Dir::Cache=$1/cache" \
		-o "Dir::Etc::SourceList=$1/sources.list" -o "Dir::Etc::SourceParts=$1/sources.list.d" \
		-o "Dir::Etc::Preferences=$1/preferences" -o "Dir::Etc::PreferencesParts=$1/preferences.d" \
		-o "APT::Architecture=$2" -o "APT::Architectures::=$2" \
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root \
		-o Acquire::Check-Valid-Until=true -o Acquire::Check-Date=true
}

# suite_state DIR DEBARCH SUITE...: a private apt state in DIR whose only
# sources are SUITE..., with fresh lists. Dies with the log on failure:
# a Release file that is stale or not signed by the keyring fails here.
suite_state() {
	local dir=$1 debarch=$2 log
	shift 2
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/sources.list.d" \
		"$dir/preferences.d" "$dir/debs"
	: >"$dir/status"
	suite_preferences "$@" >"$dir/preferences"
	suite_sources "$@" >"$dir/sources.list.tmp"
	[ -s "$dir/sources.list.tmp" ] || die "no mirror for $* in the host's apt sources"
	if grep -qE 'trusted=|allow-insecure|allow-weak|allow-downgrade' "$dir/sources.list.tmp"; then
		die "a private apt source must not turn apt's signature check off"
	fi
	mv "$dir/sources.list.tmp" "$dir/sources.list"
	log=$(new_log "apt-${dir##*/}")
	mapfile -t SUITE_OPTS < <(suite_apt_opts "$dir" "$debarch" "$dir/status")
	SUITE_OPTS+=("${SUITE_APT_EXTRA[@]}")
	if ! apt_update_verified "$log" "${SUITE_OPTS[@]}"; then
		die "apt-get update of $* failed or was not verified (log: $log)"
	fi
	suite_fresh "$dir/lists" "$*"
}

# suite_preferences SUITE...: every SUITE... at apt's default priority,
# so that the newest version among them wins. A suite whose Release file
# says NotAutomatic (a -backports suite) would otherwise lose to the
# release it extends, and the version the host file asks for by naming
# that suite would never arrive.
suite_preferences() {
	local suite
	for suite in "$@"; do
		printf 'Package: *\nPin: release n=%s\nPin-Priority: 500\n\n' "$suite"
	done
}

# apt_update_verified LOG OPTS...: "apt-get OPTS update" into LOG
# succeeded and said nothing of W: or E: (an index apt could not verify
# is a warning, and the old list stays).
apt_update_verified() {
	local log=$1
	shift
	apt-get "$@" update >"$log" 2>&1 && ! grep -qE '^(W|E): ' "$log"
}

# suite_fresh LISTS SUITES: no Release file in LISTS is past its
# Valid-Until, checked here as well as by apt (a host's apt
# configuration can stretch apt's check: Min-ValidTime). Dies and
# drops the lists otherwise.
suite_fresh() {
	local release until now
	now=$(date +%s)
	for release in "$1"/*InRelease; do
		[ -f "$release" ] || continue
		until=$(sed -n 's/^Valid-Until: //p' "$release" | sed -n 1p)
		[ -n "$until" ] || continue
		if [ "$(date -d "$until" +%s 2>/dev/null || echo 0)" -le "$now" ]; then
			rm -rf "$1"
			die "the mirror's Release file for $2 expired on $until (a stale answer): nothing installed; ${release##*/}"
		fi
	done
}

# suite_has DIR DEBARCH NAME: the private state in DIR has a package
# named exactly NAME. apt reads a name it does not know as a pattern
# (linux-source-6.1 would find linux-source-6.12), so ask for the list.
suite_has() {
	local -a opts
	mapfile -t opts < <(suite_apt_opts "$1" "$2" "$1/status")
	apt-cache "${opts[@]}" pkgnames "$3" 2>/dev/null | exact_line "$3"
}

# exact_line TEXT: standard input has a line that is TEXT. Reads to the
# end: under pipefail, a writer killed by SIGPIPE (grep -q) ends the
# pipeline with an error although the line was there.
exact_line() {
	awk -v want="$1" '$0 == want { found = 1 } END { exit !found }'
}

# suite_closure DIR DEBARCH STATUS PACKAGE...: NAME=VERSION of every
# package apt would install for PACKAGE... on a machine whose dpkg status
# file is STATUS, and PACKAGE... themselves (the host may have them
# installed, from this very suite, and apt would then add nothing).
# Fails when apt would have to replace a package STATUS has: the suite
# is newer than that machine, and its packages need a root of their own.
suite_closure() {
	local dir=$1 debarch=$2 status=$3
	shift 3
	local -a opts
	mapfile -t opts < <(suite_apt_opts "$dir" "$debarch" "$status")
	# "Inst NAME (VERSION SUITE [ARCH])"; an upgrade is
	# "Inst NAME [OLD] (VERSION SUITE [ARCH])".
	apt-get "${opts[@]}" -s install --no-install-recommends "$@" |
		awk -v want="$*" 'BEGIN { n = split(want, w, " "); for (i = 1; i <= n; i++) left[w[i]] = 1 }
			/^Inst / {
				if ($3 ~ /^\[/) upgrade = 1
				v = $3 ~ /^\[/ ? $4 : $3; sub(/^\(/, "", v); print $2 "=" v; delete left[$2]
			}
			END { for (p in left) print p; exit upgrade }'
}

# suite_download DIR DEBARCH STATUS PACKAGE...: download PACKAGE... into
# DIR/debs (and nothing else there); with STATUS a dpkg status file (the
# host's), also every package they need that STATUS lacks.
suite_download() {
	local dir=$1 debarch=$2 status=$3 log name
	shift 3
	local -a opts names=()
	for name in "$@"; do
		suite_has "$dir" "$debarch" "$name" || die "no package named $name in $(awk '{ print $(NF-1) }' "$dir/sources.list" | paste -sd' ')"
	done
	log=$(new_log "apt-${dir##*/}")
	if [ -n "$status" ]; then
		mapfile -t opts < <(suite_apt_opts "$dir" "$debarch" "$status")
		mapfile -t names < <(suite_closure "$dir" "$debarch" "$status" "$@" 2>>"$log" || true)
	else
		mapfile -t opts < <(suite_apt_opts "$dir" "$debarch" "$dir/status")
		names=("$@")
	fi
	rm -f "$dir/debs/"*.deb
	if ! (cd "$dir/debs" && apt-get "${opts[@]}" download "${names[@]}") >>"$log" 2>&1; then
		die "could not download $* (log: $log)"
	fi
	for name in "$@"; do
		compgen -G "$dir/debs/${name}_*.deb" >/dev/null || die "$name missing after download (log: $log)"
	done
}
