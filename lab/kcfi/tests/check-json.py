#!/usr/bin/env python3
"""kcfi site --json, decode and decode --preamble against llvm-objdump.

usage: check-json.py KCFI IMAGE ARCH TEXT_BIN < REFERENCE

REFERENCE is objdump-ref.awk's output for IMAGE ("S ADDR ID ..." for each
check site, "F ADDR ID NAME" for each preamble); TEXT_BIN is IMAGE's
.text as raw bytes.  One Python for all of an image's sites, so that the
interpreter starts once, not once a site.  Prints one line per check,
"pass: ..." or "fail: ...", with details indented under a failure.
"""
import json
import subprocess
import sys


def kcfi(*args):
    """The tool's standard output as JSON, or None when it failed."""
    r = subprocess.run([KCFI, *args], capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    try:
        return json.loads(r.stdout), r.stdout
    except ValueError:
        return None, r.stdout[:300]


def report(name, bad, n, what):
    if bad or n == 0:
        print(f"fail: {name}")
        for b in bad:
            print(f"    {b}")
    else:
        print(f"pass: {name}: {what.format(n=n)}")


KCFI, IMAGE, ARCH, TEXT = sys.argv[1:5]
short = IMAGE.rsplit("/", 1)[-1]
code = open(TEXT, "rb").read()
sites, funcs, seen = [], [], set()
for line in sys.stdin:
    w = line.split()
    if w and w[0] == "S":
        sites.append((w[1], w[2]))
    elif w and w[0] == "F" and w[3] not in seen:
        seen.add(w[3])
        funcs.append((w[2], w[3]))

# kcfi site --json: valid JSON, the id of the text form, and a check that
# ends with its trap (ud2: 2 bytes, brk: 4, riscv64: its trap_length).
bad_site, bad_decode = [], []
for loc, tid in sites:
    j, raw = kcfi("site", IMAGE, "0x" + loc, "--json")
    try:
        s = j["sites"][0]
        trap = s.get("trap_length", 4 if "brk_immediate" in s else 2)
        ok = (s["type_id"] == "0x" + tid and len(j["sites"]) == 1 and
              int(s["check"]["address"], 16) + s["length"] ==
              int(s["trap"]["address"], 16) + trap)
    except (TypeError, KeyError, IndexError, ValueError):
        ok = False
    if not ok:
        bad_site.append(f"site 0x{loc} --json: {raw[:300]}")
        bad_decode.append(f"decode 0x{loc}: not tried, no site")
        continue
    # kcfi decode: the check's bytes, with 8 bytes of code around them (as
    # gdb reads memory), decode to llvm-objdump's id at the right offset.
    off, n = s["check"]["offset"], s["length"]
    data = code[max(off - 8, 0):off + n + 8].hex(" ")
    d, raw = kcfi("decode", "--arch", ARCH, "--json", data)
    try:
        ok = d["offset"] == min(off, 8) and d["type_id"] == "0x" + tid
    except (TypeError, KeyError):
        ok = False
    if not ok:
        bad_decode.append(f"decode 0x{loc}: {raw[:300]}")
report(f"site --json {short}", bad_site, len(sites),
       "{n} sites, ids and check extents right")
report(f"decode {short}", bad_decode, len(sites),
       "the bytes of {n} check sites decode to llvm-objdump's ids")

# --preamble: the 64 bytes before each entry hold llvm-objdump's id.
bad = []
for tid, name in funcs:
    j, raw = kcfi("func", IMAGE, name, "--json")
    try:
        e = j["functions"][0]["entry"]["offset"]
    except (TypeError, KeyError, IndexError):
        bad.append(f"func {name} --json: {raw[:300]}")
        continue
    d, raw = kcfi("decode", "--arch", ARCH, "--preamble", "--json",
                  code[max(e - 64, 0):e].hex(" "))
    if not d or d.get("type_id") != "0x" + tid:
        bad.append(f"preamble {name}: {raw[:300]}")
report(f"decode --preamble {short}", bad, len(funcs),
       "the bytes before {n} entries hold llvm-objdump's ids")
