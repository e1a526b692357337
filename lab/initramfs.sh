#!/usr/bin/env bash
# The guest's initramfs: busybox-static plus the files in initramfs/,
# packed with the kernel's own gen_init_cpio, without root and
# reproducibly (fixed timestamps, gzip -n). Sourced by run.sh.

gen_init_cpio() {
	local tool="$LAB_BIN/gen_init_cpio" src="$LAB_WORKTREE/usr/gen_init_cpio.c"
	if [ ! -x "$tool" ] || [ "$src" -nt "$tool" ]; then
		mkdir -p "$LAB_BIN"
		# Shared by every kernel's run.sh, which may build beside
		# another's: made under a name of its own, then renamed.
		cc -O2 -o "$tool.$$" "$src" || die "cannot compile $src"
		mv -f "$tool.$$" "$tool"
	fi
	echo "$tool"
}

# initramfs_list ARCH STAGE: the gen_init_cpio file list.
initramfs_list() {
	local arch=$1 stage=$2 d
	for d in /bin /sbin /usr /usr/bin /usr/sbin /dev /proc /sys /tmp /etc /etc/kcfi-lab /root \
		/usr/share /usr/share/kselftest /usr/share/kselftest/lkdtm /usr/libexec /usr/libexec/kcfi-lab \
		/usr/libexec/kcfi-lab/compat; do
		echo "dir $d 0755 0 0"
	done
	echo "nod /dev/console 0600 0 0 c 5 1"
	echo "file /bin/busybox $stage/busybox 0755 0 0"
	echo "file /init $stage/init 0755 0 0"
	echo "file /bin/lkdtm $stage/lkdtm 0755 0 0"
	echo "file /bin/lkdtm-selftest $stage/lkdtm-selftest 0755 0 0"
	echo "file /usr/libexec/kcfi-lab/compat/comm $stage/comm 0755 0 0"
	echo "file /usr/libexec/kcfi-lab/compat/mktemp $stage/mktemp 0755 0 0"
	echo "file /usr/share/kselftest/lkdtm/run.sh $stage/run.sh 0755 0 0"
	echo "file /usr/share/kselftest/lkdtm/tests.txt $stage/tests.txt 0644 0 0"
	echo "file /sbin/poweroff $stage/poweroff 0755 0 0"
	echo "file /etc/profile $stage/profile 0644 0 0"
}

# pack_cpio LIST OUT: a gzip'd newc archive with every timestamp at 0.
pack_cpio() {
	local tool
	tool=$(gen_init_cpio)
	"$tool" -t 0 "$1" | gzip -n -9 >"$2.tmp"
	mv "$2.tmp" "$2"
}

# kselftest_lkdtm: the kernel's lkdtm selftest files, from the worktree.
kselftest_lkdtm() {
	printf '%s\n' "$LAB_WORKTREE/tools/testing/selftests/lkdtm/run.sh" \
		"$LAB_WORKTREE/tools/testing/selftests/lkdtm/tests.txt"
}

initramfs_inputs() {
	busybox_binary "$1"
	find "$KCFI_LAB_ROOT/initramfs" -type f | LC_ALL=C sort
	kselftest_lkdtm
}

initramfs_stamp() {
	local -a inputs
	mapfile -t inputs < <(initramfs_inputs "$1")
	{
		echo "$1"
		cat "${inputs[@]}"
	} | sha256sum | cut -d' ' -f1
}

build_initramfs() {
	local arch=$1 out busybox stage stamp
	local -a selftest
	out=$(initramfs_image "$arch")
	busybox=$(busybox_binary "$arch")
	[ -x "$busybox" ] || die "busybox for $arch not found at $busybox; run: ./run.sh setup$LAB_KOPT"
	stamp=$(initramfs_stamp "$arch")
	[ -f "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ] && return 0
	stage="$KCFI_LAB_HOME/initramfs/stage-$arch$LAB_SUFFIX"
	rm -rf "$stage"
	mkdir -p "$stage"
	cp "$busybox" "$stage/busybox"
	cp "$KCFI_LAB_ROOT/initramfs/init" "$KCFI_LAB_ROOT/initramfs/lkdtm" \
		"$KCFI_LAB_ROOT/initramfs/lkdtm-selftest" "$KCFI_LAB_ROOT/initramfs/poweroff" \
		"$KCFI_LAB_ROOT/initramfs/profile" "$KCFI_LAB_ROOT"/initramfs/compat/* "$stage/"
	mapfile -t selftest < <(kselftest_lkdtm)
	cp "${selftest[@]}" "$stage/"
	touch -d @0 "$stage"/*
	initramfs_list "$arch" "$stage" >"$stage.list"
	pack_cpio "$stage.list" "$out"
	echo "$stamp" >"$out.stamp"
	rm -rf "$stage" "$stage.list"
	info "initramfs: $out"
}

# guest_initrd ARCH CMDS DIR [FILE...]: the initramfs for one boot, in
# DIR. When there are commands to run (--run) or files to add (--file,
# into /root),
# a second archive follows the base one: the kernel unpacks concatenated
# archives in order, so it adds to the base. It is packed with cpio, so
# that it needs no kernel tree (a pack's learner has none).
guest_initrd() {
	local arch=$1 cmds=$2 dir=$3 stage f
	shift 3
	local -a files=("$@")
	if [ -z "$cmds" ] && [ "${#files[@]}" = 0 ]; then
		initramfs_image "$arch"
		return
	fi
	stage="$dir/overlay"
	mkdir -p "$stage/etc/kcfi-lab" "$stage/root"
	[ -z "$cmds" ] || printf '%s\n' "$cmds" >"$stage/etc/kcfi-lab/run"
	for f in "${files[@]}"; do
		cp -p "$f" "$stage/root/"
	done
	find "$stage" -exec touch -h -d @0 {} +
	(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
		cpio --quiet -o -H newc -R 0:0 --reproducible) | gzip -n >"$dir/overlay.cpio.gz"
	cat "$(initramfs_image "$arch")" "$dir/overlay.cpio.gz" >"$dir/initrd"
	echo "$dir/initrd"
}
