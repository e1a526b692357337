#!/usr/bin/env bash
# QEMU: the command line for each arch, accelerator choice, the gdbstub
# port, and the scripted (--run) and inline console boots. Sourced by run.sh.

# An interactive console: the serial port and QEMU's monitor on this
# terminal (Ctrl-a x quits, Ctrl-a c is the monitor). Not -nographic:
# with it SeaBIOS's serial console turns the terminal's line wrap off
# (ESC [?7l), and long kernel lines (the CFI report, Code:) are cut at
# the pane's edge.
CONSOLE_ARGS=(-display none -serial mon:stdio)

# kernel_cmdline ARCH MODE EXTRA: no "quiet": learners read the boot log.
kernel_cmdline() {
	local arch=$1 mode=$2 extra=$3 line extra_arch
	line="console=$(arch_get "$arch" console) nokaslr panic=-1"
	extra_arch=$(arch_get "$arch" kernel_args)
	[ -n "$extra_arch" ] && line+=" $extra_arch"
	[ "$mode" = permissive ] && line+=" cfi=warn"
	[ -n "$extra" ] && line+=" $extra"
	echo "$line"
}

# kvm_may_work ARCH: the arch file allows KVM, the host is that arch, and
# /dev/kvm can be opened (KCFI_LAB_ACCEL=tcg forbids it).
kvm_may_work() {
	[ "$(arch_get "$1" kvm)" = yes ] && arch_is_host "$1" &&
		[ "${KCFI_LAB_ACCEL:-}" != tcg ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]
}

# machine_args ARCH ACCEL: QEMU's machine, accelerator, CPU and firmware
# for ARCH.
machine_args() {
	local machine firmware
	machine=$(arch_get "$1" qemu_machine)
	firmware=$(arch_get "$1" qemu_firmware)
	echo "${machine:+-M $machine }-accel $2 -cpu $(arch_get "$1" qemu_cpu)${firmware:+ -bios $firmware}"
}

# kvm_creates_vm: the host's KVM makes a VM when asked (KVM_CREATE_VM on
# /dev/kvm, _IO(0xAE, 1)): no module, or a CPU without virtualization,
# says no here in milliseconds, before any test boot. Without python3 the
# test boot decides alone.
kvm_creates_vm() {
	have python3 || return 0
	python3 -c 'import fcntl, os; kvm = os.open("/dev/kvm", os.O_RDWR); os.close(fcntl.ioctl(kvm, 0xAE01, 0))' 2>/dev/null
}

# Where the host's CPU flags are read (a test gives another file).
LAB_CPUINFO=/proc/cpuinfo

# kvm_cpu_virtualizes ARCH: the host's CPU lists one of the flags ARCH's
# file says KVM needs (vmx or svm on x86_64), or the file names none.
# Seen: /dev/kvm that opens and makes a VM on a CPU without them, where
# the test boot could only time out.
kvm_cpu_virtualizes() {
	local flags
	flags=$(arch_get "$1" kvm_cpu_flags)
	[ -n "$flags" ] || return 0
	grep -qwE "${flags// /|}" "$LAB_CPUINFO" 2>/dev/null
}

# kvm_usable: /dev/kvm existing is not enough (seen: a device whose
# KVM_SET_MSRS fails); the CPU's flags and the host's answer to a VM
# request decide in milliseconds, then a short real boot, once per QEMU
# version.
kvm_usable() {
	local arch=$1 cache version qemu
	kvm_may_work "$arch" && kvm_cpu_virtualizes "$arch" && kvm_creates_vm || return 1
	qemu=$(qemu_binary "$arch")
	version=$("$qemu" --version | sed -n 1p)
	cache="$LAB_STATE/kvm-probe-$arch"
	if [ -f "$cache" ] && [ "$(head -n 1 "$cache")" = "$version" ]; then
		[ "$(sed -n 2p "$cache")" = yes ]
		return
	fi
	local tmp ok=no initrd
	local -a machine
	tmp=$(mktemp -d)
	initrd=$(guest_initrd "$arch" true "$tmp")
	read -r -a machine <<<"$(machine_args "$arch" kvm)"
	timeout 30 "$qemu" "${machine[@]}" -m 256 -display none -monitor none \
		-serial stdio -no-reboot -kernel "$(kernel_image "$arch")" -initrd "$initrd" \
		-append "$(kernel_cmdline "$arch" strict "")" </dev/null >"$tmp/console" 2>&1 || true
	grep -q 'kcfi-lab: run finished' "$tmp/console" && ok=yes
	rm -rf "$tmp"
	printf '%s\n%s\n' "$version" "$ok" >"$cache"
	[ "$ok" = yes ]
}

# accel_args ARCH: KVM when it really works, TCG otherwise (announced).
accel_args() {
	local arch=$1
	if kvm_usable "$arch"; then
		machine_args "$arch" kvm
		return
	fi
	if kvm_may_work "$arch" && [ -e /dev/kvm ]; then
		if kvm_cpu_virtualizes "$arch"; then
			info "/dev/kvm is present but a test boot failed; using TCG (slower)"
		else
			info "/dev/kvm is present but the CPU has no $(arch_get "$arch" kvm_cpu_flags | sed 's/ / or /g') flag; using TCG (slower)"
		fi
	fi
	machine_args "$arch" tcg
}

port_in_use() {
	[ -n "$(ss -Htln "sport = :$1" 2>/dev/null)" ]
}

# gdb_port [PORT]: the port for QEMU's gdbstub on 127.0.0.1: PORT
# (--gdb-port) or a free one picked at random (never a fixed 1234 that a
# second run collides with).
gdb_port() {
	local want=${1:-} p try
	if [ -n "$want" ]; then
		port_in_use "$want" &&
			die "gdb port $want on 127.0.0.1 is already in use; pick another with --gdb-port or leave it out"
		echo "$want"
		return
	fi
	for try in $(seq 1 50); do
		p=$((20000 + (RANDOM + try) % 20000))
		port_in_use "$p" || {
			echo "$p"
			return
		}
	done
	die "no free TCP port found on 127.0.0.1 for the gdbstub"
}

# qemu_args ARCH INITRD MODE APPEND [PORT]: the full command line, one
# word a line; APPEND is --append's kernel arguments.
qemu_args() {
	local arch=$1 initrd=$2 mode=$3 append=$4 port=${5:-}
	local -a accel
	read -r -a accel <<<"$(accel_args "$arch")"
	# -nic none: the guest needs no network, and QEMU's default user
	# network would reach every service on the host's loopback.
	printf '%s\n' "$(qemu_binary "$arch")" "${accel[@]}" -m 256 -smp 1 -no-reboot -nic none \
		-kernel "$(kernel_image "$arch")" -initrd "$initrd" \
		-append "$(kernel_cmdline "$arch" "$mode" "$append")"
	if [ -n "$port" ]; then
		printf '%s\n' -gdb "tcp:127.0.0.1:$port" -S
	fi
}

# qemu_note ARCH BINARY: when the QEMU a boot runs (BINARY) is not the
# host's own but one fetched from other suites, say which, and why.
qemu_note() {
	[[ "$2" == */* ]] || return 0
	info "QEMU: $2 (from $(qemu_suites "$1"): this host's own QEMU is wrong for Linux $LAB_KERNEL on $1, lab/host/$LAB_HOST.conf)"
}

# run_scripted ARCH MODE CMDS TIMEOUT PORT APPEND [FILE...]: boot, run
# CMDS, power off; the console goes to stdout and to a log. QEMU waits
# for gdb on PORT when it is not empty. Exit 0 iff the guest booted, ran
# CMDS and powered off within TIMEOUT seconds.
run_scripted() {
	local arch=$1 mode=$2 cmds=$3 timeout=$4 port=$5 append=$6 tmp log rc=0
	shift 6
	tmp=$(mktemp -d)
	local initrd
	initrd=$(guest_initrd "$arch" "$cmds" "$tmp" "$@")
	qemu_args "$arch" "$initrd" "$mode" "$append" "$port" >"$tmp/args"
	local -a cmd
	mapfile -t cmd <"$tmp/args"
	qemu_note "$arch" "${cmd[0]}"
	# However run.sh ends, it ends QEMU: timeout --foreground keeps QEMU
	# in run.sh's process group, where Ctrl-C and a hangup reach it, and
	# the EXIT trap covers a kill of run.sh alone. The console is not
	# block-buffered on its way (sed -u): a reader sees each line as the
	# guest prints it.
	cmd+=(-pidfile "$tmp/qemu.pid")
	QEMU_TMP=$tmp
	trap 'stop_qemu "$QEMU_TMP"' EXIT
	log=$(new_log "run-$arch")
	info "booting $arch ($mode), running: $cmds (console log: $log)"
	[ -n "$port" ] && info "QEMU is halted; gdbstub on 127.0.0.1:$port (target remote 127.0.0.1:$port)"
	{
		rc=0
		timeout --foreground "$timeout" "${cmd[@]}" -display none -monitor none -serial stdio </dev/null 2>&1 || rc=$?
		echo "$rc" >"$tmp/rc"
	} | sed -u 's/\r//g' | tee "$log"
	rc=$(cat "$tmp/rc")
	stop_qemu "$tmp"
	trap - EXIT
	info "console log: $log"
	if [ "$rc" = 124 ]; then
		tail -n 5 "$log" | sed 's/^/  | /' >&2
		die "$arch guest did not power off within ${timeout}s (last console lines above); if it was still booting, raise --timeout"
	fi
	grep -q 'KCFI Lab guest:' "$log" || die "$arch guest never reached the initramfs (QEMU exit $rc); see $log"
	grep -q 'kcfi-lab: run finished' "$log" || die "$arch guest did not finish the commands (QEMU exit $rc); see $log"
	[ "$rc" = 0 ] || die "QEMU exited with status $rc; see $log"
}

# run_inline ARCH MODE APPEND [FILE...]: the console on this terminal
# (Ctrl-a x quits).
run_inline() {
	local arch=$1 mode=$2 append=$3 tmp rc=0 initrd
	shift 3
	tmp=$(mktemp -d)
	initrd=$(guest_initrd "$arch" "" "$tmp" "$@")
	qemu_args "$arch" "$initrd" "$mode" "$append" >"$tmp/args"
	local -a cmd
	mapfile -t cmd <"$tmp/args"
	qemu_note "$arch" "${cmd[0]}"
	QEMU_TMP=$tmp
	trap 'stop_qemu "$QEMU_TMP"' EXIT
	info "booting $arch ($mode); Ctrl-a x quits QEMU"
	"${cmd[@]}" "${CONSOLE_ARGS[@]}" -pidfile "$tmp/qemu.pid" || rc=$?
	stop_qemu "$tmp"
	trap - EXIT
	return "$rc"
}

# stop_qemu DIR: end the QEMU whose pid file is in DIR, if it still
# runs (its command line names DIR: a pid reused since is left alone),
# and remove DIR.
stop_qemu() {
	local pid cmd
	pid=$(cat "$1/qemu.pid" 2>/dev/null) || pid=""
	if [ -n "$pid" ] && cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") && [[ "$cmd" == *"$1/"* ]]; then
		kill "$pid" 2>/dev/null || true
	fi
	rm -rf "$1"
}
