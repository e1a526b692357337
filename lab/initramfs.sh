#!/usr/bin/env bash
# The guest's initramfs: busybox-static plus the files in initramfs/,
# packed with the kernel's own gen_init_cpio, without root and
# reproducibly (fixed timestamps, gzip -n). Sourced by run.sh.

gen_init_cpio() {
	local tool="$LAB_BIN/gen_init_cpio" src="$LAB_WORKTREE/usr/gen_init_cpio.c"
	if [ ! -x "$tool" ] || [ "$src" -nt "$tool" ]; then
		mkdir -p "$LAB_BIN"
		cc -O2 -o "$tool" "$src" || die "cannot compile $src"
	fi
	echo "$tool"
}

# initramfs_list ARCH STAGE: the gen_init_cpio file list.
initramfs_list() {
	local arch=$1 stage=$2 d
	for d in /bin /sbin /usr /usr/bin /usr/sbin /dev /proc /sys /tmp /etc /etc/kcfi-lab /root; do
		echo "dir $d 0755 0 0"
	done
	echo "nod /dev/console 0600 0 0 c 5 1"
	echo "file /bin/busybox $stage/busybox 0755 0 0"
	echo "file /init $stage/init 0755 0 0"
	echo "file /bin/lkdtm $stage/lkdtm 0755 0 0"
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

initramfs_inputs() {
	printf '%s\n' "$(busybox_binary "$1")" "$KCFI_LAB_ROOT"/initramfs/*
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
	out=$(initramfs_image "$arch")
	busybox=$(busybox_binary "$arch")
	[ -x "$busybox" ] || die "busybox for $arch not found at $busybox; run: ./run.sh setup"
	stamp=$(initramfs_stamp "$arch")
	[ -f "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ] && return 0
	stage="$KCFI_LAB_HOME/initramfs/stage-$arch"
	rm -rf "$stage"
	mkdir -p "$stage"
	cp "$busybox" "$stage/busybox"
	cp "$KCFI_LAB_ROOT/initramfs/init" "$KCFI_LAB_ROOT/initramfs/lkdtm" \
		"$KCFI_LAB_ROOT/initramfs/poweroff" "$KCFI_LAB_ROOT/initramfs/profile" "$stage/"
	touch -d @0 "$stage"/*
	initramfs_list "$arch" "$stage" >"$stage.list"
	pack_cpio "$stage.list" "$out"
	echo "$stamp" >"$out.stamp"
	rm -rf "$stage" "$stage.list"
	info "initramfs: $out"
}

# run_overlay CMDS OUT: a second archive holding /etc/kcfi-lab/run. The
# kernel unpacks concatenated archives in order, so it adds to the base.
run_overlay() {
	local cmds=$1 out=$2 stage
	stage=$(mktemp -d)
	printf '%s\n' "$cmds" >"$stage/run"
	touch -d @0 "$stage/run"
	echo "file /etc/kcfi-lab/run $stage/run 0644 0 0" >"$stage/list"
	pack_cpio "$stage/list" "$out"
	rm -rf "$stage"
}
