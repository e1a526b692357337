#!/usr/bin/env bash
# Pack signatures, with OpenSSH's file signatures (ssh-keygen -Y): the
# instructor's key is made on the first pack and kept in the lab's home;
# a learner names the key (its .pub file, or the fingerprint the
# instructor wrote on the board) and unpack checks the whole pack
# against it before it reads anything of it. Sourced by run.sh.

# The signature namespace: a pack signature is never valid as any other
# kind of ssh signature, nor the other way round.
PACK_SIG_NAMESPACE="kcfi-lab-pack"

pack_key() {
	echo "$KCFI_LAB_HOME/keys/instructor"
}

# need_ssh_keygen: ssh-keygen, installed from the host's own apt sources
# (the package the host file names for it) when it is missing, as the
# lab's setup installs what it needs: a fresh machine's first command
# may be unpack.
need_ssh_keygen() {
	local pkg
	have ssh-keygen && return 0
	pkg=$(host_get packages | tr ' ' '\n' | sed -n 's/:ssh-keygen$//p' | sed -n 1p)
	[ -n "$pkg" ] || die "pack signatures need ssh-keygen, and lab/host/$LAB_HOST.conf names no package for it"
	install_packages "$pkg"
	have ssh-keygen || die "pack signatures need ssh-keygen, which $pkg did not bring onto PATH"
}

# pack_key_init: the instructor's key, made on first use (ed25519, no
# passphrase: a classroom machine signs without a prompt).
pack_key_init() {
	local key
	key=$(pack_key)
	need_ssh_keygen
	[ -f "$key" ] && [ -f "$key.pub" ] && return 0
	mkdir -p "${key%/*}"
	chmod 700 "${key%/*}"
	rm -f "$key" "$key.pub"
	ssh-keygen -q -t ed25519 -N '' -C "KCFI Lab instructor" -f "$key" ||
		die "could not make the instructor's key in ${key%/*}"
	info "made the instructor's signing key: $key.pub"
}

# key_fingerprint PUBFILE: the SHA256 fingerprint of an ssh public key,
# or nothing when the file holds none.
key_fingerprint() {
	ssh-keygen -l -E sha256 -f "$1" 2>/dev/null | awk 'NR == 1 { print $2 }'
}

# pack_sign FILE: FILE.sig, the instructor's signature of FILE.
pack_sign() {
	local file=$1 key
	key=$(pack_key)
	pack_key_init
	rm -f "$file.sig"
	ssh-keygen -q -Y sign -f "$key" -n "$PACK_SIG_NAMESPACE" "$file" 2>/dev/null ||
		die "could not sign $file with $key"
}

# pack_expected_fingerprint KEY: KEY is a public key file or a SHA256
# fingerprint; prints the fingerprint the signature must have.
pack_expected_fingerprint() {
	local want=$1 fp
	if [ -f "$want" ]; then
		fp=$(key_fingerprint "$want")
		[ -n "$fp" ] || die "$want is not an ssh public key (the instructor's .pub file)"
		echo "$fp"
		return 0
	fi
	case "$want" in
	SHA256:*) ;;
	*) die "--key takes the instructor's public key file or its fingerprint (SHA256:...), not: $want" ;;
	esac
	[[ "$want" =~ ^SHA256:[A-Za-z0-9+/]{43}$ ]] || die "not a SHA256 key fingerprint: $want"
	echo "$want"
}

# pack_verify FILE KEY [NAME]: FILE.sig is a valid pack signature of all
# of FILE by the key KEY names (see pack_expected_fingerprint); NAME is
# what messages call FILE (default FILE). ssh-keygen checks the signature
# with the key inside it; that key must be the one named.
pack_verify() {
	local file=$1 name=${3:-$1} want out got
	need_ssh_keygen
	want=$(pack_expected_fingerprint "$2")
	[ -f "$file.sig" ] || die "$name is not signed: no $name.sig beside it; copy the pack's .sig file with it"
	out=$(ssh-keygen -Y check-novalidate -n "$PACK_SIG_NAMESPACE" -s "$file.sig" <"$file" 2>&1) ||
		die "$name does not match its signature $name.sig: do not use it; copy both files again"
	# "Good "NAMESPACE" signature with TYPE key SHA256:..."
	got=$(printf '%s\n' "$out" | sed -n 's/^Good "[^"]*" signature with [A-Z0-9-]* key \(SHA256:[A-Za-z0-9+/]*\)$/\1/p')
	[ -n "$got" ] || die "cannot read ssh-keygen's answer on $name.sig: $out"
	[ "$got" = "$want" ] || die "$name is signed by key $got, not by $want: do not use it"
}
