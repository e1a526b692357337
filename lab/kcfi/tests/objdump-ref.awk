# Reads `llvm-objdump-16 -d` output and prints what clang emitted, as
# reference data for tests/run.sh, independent of kcfi.  Run with
# -v exec=1 for linked images (locations are addresses), exec=0 for .o
# files (locations are SECTION:OFFSET).  Records (hex without 0x):
#   F LOC ID NAME              preamble: type id ID before function NAME
#   S LOC ID REG               check site: trap at LOC, expected ID, target REG
#   XB ID REG CREG BYTES...    x86_64: the check's bytes (movl..ud2), CREG
#                              the register it computes in (r10 or r11)
#   AB BRK REG TREG ID         arm64: brk immediate, target and type registers
# x86_64 preambles: the movl $id, %eax inside __cfi_NAME, before label NAME.
# arm64 preambles: a .word under a $d label followed, after at most $x and
# nops, by a function label.
BEGIN { FS = "\t"; sec = ""; resetsite() }

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

/^Disassembly of section / {
	sec = $0; sub(/^Disassembly of section /, "", sec); sub(/:$/, "", sec)
	cfi = ""; word = ""; resetsite(); next
}

/^[0-9a-f]+ <.*>:$/ {
	split($0, p, " "); addr = p[1]
	name = $0; sub(/^[0-9a-f]+ </, "", name); sub(/>:$/, "", name)
	if (name ~ /^\$d/) { word = ""; inword = 1; next }
	if (name ~ /^\$x/) { inword = 0; next }
	if (cfi != "" && name == cfi && cfiid != "") print "F", loc(addr), hex8(hex2num(cfiid)), name
	else if (word != "" && name !~ /^__cfi_/) print "F", loc(addr), hex8(hex2num(word)), name
	cfi = ""; cfiid = ""; word = ""; inword = 0
	if (name ~ /^__cfi_/) cfi = substr(name, 7)
	resetsite(); next
}

/^ *[0-9a-f]+:/ {
	split($1, p, ":"); addr = trim(p[1]); bytes = trim(p[2]); mn = $2; ops = $3
	if (mn == ".word") {
		word = inword ? hexof(ops) : ""
		next
	}
	if (mn != "nop") word = ""
	if (cfi != "" && mn == "movl" && ops ~ /, %eax/) cfiid = hexof(ops)

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
