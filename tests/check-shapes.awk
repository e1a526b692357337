# The program behind tests/check-shapes.sh; see there for the two shapes.
# Variables: asserting (the helper names, space-separated).

# strip S: S without single-quoted strings and without a trailing
# comment, so that awk and sed programs do not count as shell.
function strip(s) {
	gsub(/'[^']*'/, "''", s)
	sub(/[ \t]#.*$/, "", s)
	return s
}

function early_reader(s) {
	return s ~ /^[ \t]*(grep[^|);&]*[ \t]-[A-Za-z]*[qlm]|grep[^|);&]*--(quiet|silent|max-count|files-with-matches)|head([ \t]|$|\))|sed[^|);&]*[0-9\/}][ \t]*q)/
}

FNR == 1 { file_no++; files[file_no] = FILENAME; cur = "" }
{
	lines[file_no, FNR] = $0
	nlines[file_no] = FNR
	if (match($0, /^[A-Za-z_][A-Za-z0-9_]*\(\)/)) {
		cur = substr($0, 1, RLENGTH - 2)
		next
	}
	if ($0 ~ /^}/) { cur = ""; next }
	if (cur != "" && $0 !~ /^[ \t]*#/) body[cur] = body[cur] " " strip($0)
}

END {
	n = split(asserting, a, " ")
	for (i = 1; i <= n; i++) bad[a[i]] = 1
	# The closure: a function that calls an asserting function asserts.
	do {
		changed = 0
		for (f in body) {
			if (f in bad) continue
			for (g in bad) {
				if (body[f] ~ ("(^|[^A-Za-z0-9_-])" g "([^A-Za-z0-9_-]|$)")) {
					bad[f] = 1
					changed = 1
					break
				}
			}
		}
	} while (changed)
	found = 0
	for (k = 1; k <= file_no; k++) {
		prev = ""
		heredoc = ""
		for (l = 1; l <= nlines[k]; l++) {
			line = lines[k, l]
			# A here-document's body is text, not shell.
			if (heredoc != "") {
				t = line
				sub(/^\t*/, "", t)
				if (t == heredoc) heredoc = ""
				continue
			}
			if (match(line, /<<-?[ \t]*['"]?[A-Za-z_]+/)) {
				heredoc = substr(line, RSTART, RLENGTH)
				sub(/^<<-?[ \t]*['"]?/, "", heredoc)
			}
			if (line ~ /^[ \t]*#/) continue
			if (line ~ /# shape-ok: /) { prev = ""; continue }
			s = strip(line)
			rest = s
			while (match(rest, /\$\([ \t]*[A-Za-z_][A-Za-z0-9_]*/)) {
				w = substr(rest, RSTART + 2, RLENGTH - 2)
				sub(/^[ \t]*/, "", w)
				if (w in bad) {
					printf "%s:%d: %s asserts, and runs inside $(...) where a failed assertion does not stop it\n", files[k], l, w
					found = 1
				}
				rest = substr(rest, RSTART + RLENGTH)
			}
			early = 0
			# A reader after a "|" on this line, or first on a line that
			# continues a pipeline.
			rest = s
			while (match(rest, /(^|[^|])\|[^|]/)) {
				rest = substr(rest, RSTART + RLENGTH - 1)
				if (early_reader(rest)) early = 1
			}
			if (prev ~ /(^|[^|])\|[ \t]*$/ && early_reader(s)) early = 1
			if (line ~ /(^|[^|])\|[ \t]*awk[ \t][^|]*[^A-Za-z_]exit([^A-Za-z_]|$)/) early = 1
			# 3. A multi-line subshell whose status is tested: inside it,
			# errexit is off, and a failed assertion does not stop it.
			if (s ~ /^[ \t]*\)[^|&]*(\|\||&&)/) {
				printf "%s:%d: the status of this subshell is tested (|| or &&), so errexit is off inside it: run it in the background and wait for it\n", files[k], l
				found = 1
			}
			# 4. A trap action in double quotes with a "$" in it: the value
			# is expanded now, so a quote in it ends the string and the
			# rest runs as shell when the trap fires.
			if (line ~ /(^|[^A-Za-z0-9_-])trap[ \t]+"[^"]*\$/) {
				printf "%s:%d: this trap expands its values now, and a quote in one becomes code: single-quote the action and keep the values in variables\n", files[k], l
				found = 1
			}
			if (early) {
				printf "%s:%d: an early-exiting reader ends a pipeline: its writer can die of SIGPIPE and pipefail fails it\n", files[k], l
				found = 1
			}
			prev = s
		}
	}
	exit found
}
