# Reads `llvm-objdump-16 -d` output and prints what clang emitted, as
# reference data for tests/run.sh, independent of kcfi.  Run with
# -v exec=1 for linked images (locations are addresses), exec=0 for .o
# files (locations are SECTION:OFFSET).  Records (hex without 0x):
#   F LOC ID NAME              preamble: type id ID before function NAME
#   R LOC REG NAME             x86_64: the register of its movl (eax; with
#                              -fsanitize-kcfi-arity, the arguments' count)
#   S LOC ID REG               check site: trap at LOC, expected ID, target REG
#   XB ID REG CREG BYTES...    x86_64: the check's bytes (movl..ud2), CREG
#                              the register it computes in (r10 or r11)
#   AB BRK REG TREG ID         arm64: brk immediate, target and type registers
#   RB ID REG LREG TREG BYTES...  riscv64: the check's bytes with its call,
#                              the registers its beq compares
# x86_64 preambles: the movl $id, %eax inside __cfi_NAME, before label NAME.
# arm64 preambles: a .word under a $d label followed, after at most $x and
# nops, by a function label.
# riscv64 (objdump -d -z -M no-aliases, which disassembles data too): a
# function label whose bytes before it are, after at most c.nop/nop
# padding, 4 bytes starting at a $d mapping symbol; the symbols come from
# `llvm-objdump -t`, in the file named by -v dmaps ("ADDRESS SECTION" a
# line).  Addresses are awk numbers: fine for test images, not vmlinux.
BEGIN {
	FS = "\t"; sec = ""; resetsite()
	while (dmaps != "" && (getline l < dmaps) > 0) {
		split(l, q, " ")
		dm[(exec ? "" : q[2]) SUBSEP hex2num(q[1])] = 1
	}
}

function resetsite() { st = 0; sbytes = "" }
function hexof(s) { sub(/^[^0]*0x/, "", s); sub(/[^0-9a-f].*$/, "", s); return s }
function trim(s) { sub(/^ +/, "", s); sub(/ +$/, "", s); return s }
function strip0(s) { sub(/^0+/, "", s); return s == "" ? "0" : s }
function loc(a) { return exec ? strip0(a) : sec ":" strip0(a) }
function hex2num(s,    n, i) {
	n = 0
	for (i = 1; i <= length(s); i++)
		n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
	return n
}
function hex8(n,    s, i, d) {
	s = ""
	for (i = 0; i < 8; i++) { d = n % 16; s = substr("0123456789abcdef", d + 1, 1) s; n = (n - d) / 16 }
	return s
}
function pad4(s) { return substr("0000" s, length(s) + 1) }

/file format elf64-littleriscv/ { rv = 1 }

# riscv64 helpers: a signed immediate ("-0x479"); an instruction as
# objdump prints it ("ffc7a303": a little-endian value; longer encodings,
# as data decodes to, as 16-bit parcels: "e91f 3f65 8082") into the bytes
# map and as bytes in memory order; the 32 bits at an address.
function simm(s) { s = trim(s); return s ~ /^-/ ? -hex2num(hexof(s)) : hex2num(hexof(s)) }
function rvbytes(a, h,    t, nt, k, v, i, n, b, out) {
	nt = split(h, t, " "); out = ""
	for (k = 1; k <= nt; k++) {
		v = hex2num(t[k]); n = length(t[k]) / 2
		for (i = 0; i < n; i++) {
			b = v % 256; v = (v - b) / 256
			mem[(exec ? "" : sec) SUBSEP a] = b
			a++
			out = out (out == "" ? "" : " ") substr("0123456789abcdef", int(b / 16) + 1, 1) substr("0123456789abcdef", b % 16 + 1, 1)
		}
	}
	return out
}
function byteat(a) { return mem[(exec ? "" : sec) SUBSEP a] }
function rvword(a) { return byteat(a) + 256 * (byteat(a + 1) + 256 * (byteat(a + 2) + 256 * byteat(a + 3))) }
function rvknown(a) { return ((exec ? "" : sec) SUBSEP a) in mem }
# The id in front of the function at A: a $d at A-4, or before c.nop/nop padding.
function rvpreamble(a,    pad, d) {
	for (pad = 0; pad <= 64; ) {
		d = a - 4 - pad
		if (d < 0 || !rvknown(d)) return ""
		if (((exec ? "" : sec) SUBSEP d) in dm) return hex8(rvword(d))
		if (rvknown(a - pad - 2) && byteat(a - pad - 2) == 1 && byteat(a - pad - 1) == 0) pad += 2
		else if (rvknown(a - pad - 4) && rvword(a - pad - 4) == 19) pad += 4
		else return ""
	}
	return ""
}

/^Disassembly of section / {
	sec = $0; sub(/^Disassembly of section /, "", sec); sub(/:$/, "", sec)
	cfi = ""; word = ""; resetsite(); next
}

/^[0-9a-f]+ <.*>:$/ {
	split($0, p, " "); addr = p[1]
	name = $0; sub(/^[0-9a-f]+ </, "", name); sub(/>:$/, "", name)
	if (name ~ /^\$d/) { word = ""; inword = 1; next }
	if (name ~ /^\$x/) { inword = 0; next }
	if (rv) {
		if (name !~ /^[.$]/ && (id = rvpreamble(hex2num(addr))) != "") print "F", loc(addr), id, name
		resetsite(); next
	}
	if (cfi != "" && name == cfi && cfiid != "") {
		print "F", loc(addr), hex8(hex2num(cfiid)), name
		print "R", loc(addr), cfireg, name
	}
	else if (word != "" && name !~ /^__cfi_/) print "F", loc(addr), hex8(hex2num(word)), name
	cfi = ""; cfiid = ""; cfireg = ""; word = ""; inword = 0
	if (name ~ /^__cfi_/) cfi = substr(name, 7)
	resetsite(); next
}

/^ *[0-9a-f]+:/ {
	split($1, p, ":"); addr = trim(p[1]); bytes = trim(p[2]); mn = $2; ops = $3
	if (rv) { rvline(hex2num(addr), rvbytes(hex2num(addr), bytes)); next }
	if (mn == ".word") {
		word = inword ? hexof(ops) : ""
		next
	}
	if (mn != "nop") word = ""
	# The register is eax, or with -fsanitize-kcfi-arity the one that
	# says how many arguments arrive in registers.
	if (cfi != "" && mn == "movl" && ops ~ /^\$0x[0-9a-f]+, %e(ax|cx|dx|bx|sp|bp|si|di)( |$)/) {
		cfiid = hexof(ops); cfireg = ops; sub(/^.*%/, "", cfireg); sub(/ .*$/, "", cfireg)
	}

	# x86_64: movl $-id, %r10d; addl -D(%reg), %r10d; je; ud2
	if (mn == "movl" && ops ~ /^\$0x[0-9a-f]+, %r1[01]d/) {
		st = 1; sid = hex8((4294967296 - hex2num(hexof(ops))) % 4294967296)
		match(ops, /%r1[01]d/); scheck = substr(ops, RSTART + 1, 3)
		sbytes = bytes; next
	}
	if (st == 1 && mn == "addl" && ops ~ /^-0x[0-9a-f]+\(%[a-z0-9]+\), %r1[01]d/) {
		match(ops, /\(%[a-z0-9]+\)/); sreg = substr(ops, RSTART + 2, RLENGTH - 3)
		st = 2; sbytes = sbytes " " bytes; next
	}
	if (st == 2 && mn == "je") { st = 3; sbytes = sbytes " " bytes; next }
	if (st == 3 && mn == "ud2") {
		print "S", loc(addr), sid, sreg
		print "XB", sid, sreg, scheck, sbytes " " bytes
		resetsite(); next
	}

	# arm64: ldur wA, [xN, #-D]; movk wB, lo; movk wB, hi, lsl #16; cmp; b.eq; brk
	if (mn == "ldur" && ops ~ /^w[0-9]+, \[x[0-9]+, #-0x[0-9a-f]+\]$/) {
		match(ops, /\[x[0-9]+/); sreg = substr(ops, RSTART + 1, RLENGTH - 1)
		st = 11; next
	}
	if (st == 11 && mn == "movk" && ops !~ /lsl/) {
		split(ops, q, ","); treg = "x" substr(q[1], 2); lo = pad4(hexof(q[2])); st = 12; next
	}
	if (st == 12 && mn == "movk" && ops ~ /lsl #16/) {
		split(ops, q, ","); hi = pad4(hexof(q[2])); st = 13; next
	}
	if (st == 13 && mn == "cmp") { st = 14; next }
	if (st == 14 && mn == "b.eq") { st = 15; next }
	if (st == 15 && mn == "brk") {
		print "S", loc(addr), hi lo, sreg
		print "AB", hexof(ops), sreg, treg, hi lo
		resetsite(); next
	}
	resetsite()
}

# riscv64: lw tA, -D(rN); [c.]lui tB + [c.]addiw tB (or [c.]addi / c.li
# alone); beq tA, tB; [c.]ebreak; jalr/c.jalr/c.jr rN.
function rvline(a, b,    q, r) {
	if (mn == "lw" && ops ~ /^[a-z0-9]+, -0x[0-9a-f]+\([a-z0-9]+\)$/) {
		split(ops, q, ", "); lreg = q[1]
		match(ops, /\([a-z0-9]+\)/); sreg = substr(ops, RSTART + 1, RLENGTH - 2)
		st = 21; hi = 0; lo = 0; sbytes = b; return
	}
	split(ops, q, ", ")
	if (st == 21 && (mn == "lui" || mn == "c.lui")) { treg = q[1]; hi = hex2num(hexof(q[2])); st = 22 }
	else if (st == 22 && mn == "addiw" && q[1] == treg && q[2] == treg) { lo = simm(q[3]); st = 23 }
	else if (st == 22 && mn == "c.addiw" && q[1] == treg) { lo = simm(q[2]); st = 23 }
	else if (st == 21 && mn == "addi") { treg = q[1]; lo = simm(q[3]); st = 23 }
	else if (st == 21 && (mn == "c.addi" || mn == "c.li")) { treg = q[1]; lo = simm(q[2]); st = 23 }
	else if ((st == 22 || st == 23) && mn == "beq" && q[1] == lreg && q[2] == treg) st = 24
	else if (st == 24 && (mn == "ebreak" || mn == "c.ebreak")) { strap = a; st = 25 }
	else if (st == 25 && (mn == "c.jr" || mn == "c.jalr" || mn == "jalr")) {
		r = mn == "jalr" ? q[2] : q[1]
		sub(/^0x0\(/, "", r); sub(/\)$/, "", r)
		if (r == sreg) {
			sid = hex8(((hi * 4096 + lo) % 4294967296 + 4294967296) % 4294967296)
			print "S", loc(hexaddr(strap)), sid, sreg
			print "RB", sid, sreg, lreg, treg, sbytes " " b
		}
		resetsite(); return
	} else { resetsite(); return }
	sbytes = sbytes " " b
}
function hexaddr(n,    s, d) {
	s = ""
	do { d = n % 16; s = substr("0123456789abcdef", d + 1, 1) s; n = (n - d) / 16 } while (n > 0)
	return s
}
