# Turns `kcfi scan` text output into the F and S records of
# tests/objdump-ref.awk, for comparison:
#   F LOC ID NAME    and    S LOC ID REG
function strip0(s) { sub(/^0+/, "", s); return s == "" ? "0" : s }
function loc(s,    i) {
	if (s ~ /^0x/) return strip0(substr(s, 3))
	i = match(s, /\+0x[0-9a-f]+$/)
	return substr(s, 1, i - 1) ":" strip0(substr(s, i + 3))
}
/^functions with a KCFI preamble/ { mode = "F"; next }
/^check sites/ { mode = "S"; next }
/^$/ { mode = ""; next }
/^  (ENTRY|TRAP|preambles found by)/ { next }
mode == "F" && /^  / { print "F", loc($1), substr($2, 3), $3 }
mode == "S" && /^  / { print "S", loc($1), substr($2, 3), $3 }
