#!/usr/bin/env python3
"""Re-run the commands of the documentation's listings and compare.

usage: doc-listings.py [--regen | --diff] FILE...

A listing is a fenced code block whose first line is "$ COMMAND": the
lines after each "$ " command, up to the next one or the end of the
block, are its output as the build printed it. A line "..." in the
output stands for any number of lines left out. A block right after a
line "<!-- listing: not checked (REASON) -->" is not run.

A guest's console does not repeat itself to the digit (timestamps,
pids, stack addresses): a block right after "<!-- listing: ./run.sh
ARGS -->" is an excerpt of that command's output, compared line by line
by shape (the same text with other numbers), anywhere in the output; a
line may leave out the start of the console's (the timestamp).
Each such command runs once; with DOC_LISTINGS_CACHE set, its output is
kept in that directory and reused.

Each block runs in one bash, from the current directory, with the
variables of docs/kcfi.md ("Before you start") set: L, X, A, K, X12,
A12, R12, K12 and KCFI. Commands may span lines (a trailing backslash, an open
quote, a here-document).

Prints one line per command that no longer matches, "FILE:LINE: ...",
and exits 1 when there is one; --diff also shows how. With --regen, rewrites those listings
from the output of the current build where it can (lines matched by
their shape: the same text with other numbers), and prints the ones it
cannot rewrite; review the diff before committing it.
"""
import difflib
import glob
import hashlib
import os
import re
import shlex
import subprocess
import sys

SKIP = re.compile(r"^<!-- listing: not checked \(.+\) -->$")
GUEST = re.compile(r"^<!-- listing: (\./run\.sh .+) -->$")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
MARK = "@@kcfi-lab-listing-%d@@"


def complete(text):
    """True when TEXT is a whole shell command: no trailing backslash and
    no open quote."""
    if text.endswith("\\"):
        return False
    try:
        shlex.split(text.replace("$'", "'"), comments=True)
    except ValueError:
        return False
    return True


def blocks(lines):
    """Yield (first line index, [(command, command line index,
    [output lines], first output index)]) for each listing."""
    i, n = 0, len(lines)
    while i < n:
        if not lines[i].lstrip().startswith("```"):
            i += 1
            continue
        # A fence may be indented (a listing in a list item): so are its
        # lines, and the indent is not part of them.
        indent = len(lines[i]) - len(lines[i].lstrip())
        prev = i - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        skip = prev >= 0 and SKIP.match(lines[prev].strip())
        guest = GUEST.match(lines[prev].strip()) if prev >= 0 else None
        start = i + 1
        end = start
        while end < n and not lines[end].lstrip().startswith("```"):
            end += 1
        body = [x[indent:] if x[:indent].isspace() else x for x in lines[start:end]]
        i = end + 1
        if guest and not skip:
            yield start, [[guest.group(1), prev, body, start, True]]
            continue
        if skip or not body or not body[0].startswith("$ "):
            continue
        cmds = []
        j = 0
        while j < len(body):
            if not body[j].startswith("$ "):
                cmds[-1][2].append(body[j])
                j += 1
                continue
            text, at = body[j][2:], j
            j += 1
            while not complete(text) and j < len(body):
                text += "\n" + body[j]
                j += 1
            m = HEREDOC.search(text)
            if m:
                while j < len(body):
                    text += "\n" + body[j]
                    j += 1
                    if body[j - 1].strip() == m.group(2):
                        break
            cmds.append([text, start + at, [], start + j, False])
        yield start, cmds


def run(cmds, env_script):
    """Run a block's commands in one bash; return each one's output."""
    script = [env_script, "exec 2>&1"]
    for k, c in enumerate(cmds):
        script.append("printf '%s\\n' '" + MARK % k + "'")
        script.append(c[0])
    script.append("printf '%s\\n' '" + MARK % len(cmds) + "'")
    out = subprocess.run(["bash", "-c", "\n".join(script)], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, errors="replace").stdout
    outs = []
    for k in range(len(cmds)):
        a = out.find(MARK % k)
        b = out.find(MARK % (k + 1))
        if a < 0 or b < 0:
            outs.append(None)
            continue
        text = out[a + len(MARK % k):b].strip("\n")
        outs.append([x.rstrip() for x in text.split("\n")] if text else [])
    return outs


def run_guest(command, cache):
    """The output of a ./run.sh command (stdout and stderr), once."""
    if command in cache:
        return cache[command]
    keep = os.environ.get("DOC_LISTINGS_CACHE")
    path = None
    if keep:
        os.makedirs(keep, exist_ok=True)
        path = os.path.join(keep, hashlib.sha256(command.encode()).hexdigest())
        if os.path.exists(path):
            cache[command] = open(path, encoding="utf-8").read().split("\n")
            return cache[command]
    r = subprocess.run(["bash", "-c", command], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, errors="replace")
    out = [x.rstrip() for x in r.stdout.split("\n")] if r.returncode == 0 else None
    if out is not None and path:
        open(path, "w", encoding="utf-8").write("\n".join(out))
    cache[command] = out
    return out


def segments(listed):
    """The output as runs of lines between "..." lines, and whether it
    begins and ends with a gap."""
    segs, cur = [], []
    for x in listed:
        if x.strip() == "...":
            segs.append(cur)
            cur = []
        else:
            cur.append(x.rstrip())
    segs.append(cur)
    return segs


def align(listed, actual, same):
    """Where each run of listed lines sits in actual, in order: a list of
    start indexes, or None. The first run must start the output and the
    last end it, unless a "..." stands there."""
    while listed and not listed[-1].strip():
        listed = listed[:-1]
    segs = segments(listed)
    pos, starts = 0, []
    for k, seg in enumerate(segs):
        if not seg:
            starts.append(pos)
            continue
        if k == 0:
            cands = [0]
        elif k == len(segs) - 1:
            # The last run ends the output: it can only sit at its end.
            cands = [len(actual) - len(seg)] if len(actual) - len(seg) >= pos else []
        else:
            cands = range(pos, len(actual) - len(seg) + 1)
        found = None
        for j in cands:
            if j + len(seg) <= len(actual) and all(same(a, b) for a, b in zip(seg, actual[j:j + len(seg)])):
                found = j
                break
        if found is None:
            return None
        starts.append(found)
        pos = found + len(seg)
    if segs[-1] and pos != len(actual):
        return None
    return starts


NUM = re.compile(r"(0x)?[0-9a-fA-F]*[0-9][0-9a-fA-F]*")


# An oops's "Code:" line dumps the bytes around the trap; the bytes of
# an address in them (a string's, a call's offset) move with the build,
# and a byte of letters only ("cd", "ff") is a number too.
CODE = re.compile(r"(Code: )(.*)$")
BYTE = re.compile(r"\b[0-9a-f]{2}\b")


def shape(line):
    line = CODE.sub(lambda m: m.group(1) + BYTE.sub("#", m.group(2)), line.rstrip())
    return re.sub(r"[ \t]+", " ", NUM.sub("#", line))


def regen(listed, actual):
    """The listing rewritten from actual, keeping its "..." gaps, or None
    when its lines cannot be found by their shape."""
    if not any(x.strip() == "..." for x in listed):
        return actual
    segs = segments(listed)
    starts = align(listed, actual, lambda a, b: shape(a) == shape(b))
    if starts is None:
        return None
    out = []
    for k, seg in enumerate(segs):
        if k:
            out.append("...")
        out.extend(actual[starts[k]:starts[k] + len(seg)])
    return out


def differs(what, listed, actual, diff):
    """Report a listing that no longer matches; with --diff, show how."""
    print(what)
    if diff:
        sys.stdout.writelines(difflib.unified_diff(
            [x + "\n" for x in listed], [x + "\n" for x in actual],
            "listing", "output", n=1))


def read_conf(path):
    """A lab data file's KEY=VALUE lines, as a dict."""
    conf = {}
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            conf[key] = value
    return conf


def version_key(version):
    return tuple(int(part) for part in version.split("."))


def listing_env():
    """The shell variables the docs' listings use, from the arch and kernel
    files: L the lab's home, KCFI the tool, and per kernel a worktree (K)
    and a vmlinux per arch (its first letter): X, A, K for the default
    kernel; X12, A12, R12, K12 for one whose version ends in .12."""
    lab = os.path.dirname(os.path.abspath(__file__))
    arches = {os.path.basename(f)[:-5]: read_conf(f)
              for f in sorted(glob.glob(os.path.join(lab, "arch", "*.conf")))}
    lines = ["L=${KCFI_LAB_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/kcfi-lab}"]
    for f in sorted(glob.glob(os.path.join(lab, "kernel", "*.conf"))):
        version = os.path.basename(f)[:-5]
        default = read_conf(f).get("default") == "yes"
        suffix = "" if default else "-" + version
        tag = "" if default else version.split(".")[-1]
        for arch, conf in arches.items():
            if version_key(conf.get("kcfi_since") or "0") <= version_key(version):
                lines.append(f"{arch[0].upper()}{tag}=$L/build/{arch}{suffix}/vmlinux")
        lines.append(f"K{tag}=$L/worktree{suffix}")
    lines.append("KCFI=$L/build/tool/kcfi")
    return "\n".join(lines)


def main(argv):
    regenerate = argv[:1] == ["--regen"]
    diff = argv[:1] == ["--diff"]
    files = argv[1:] if regenerate or diff else argv
    if not files:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    env_script = listing_env()
    bad = checked = 0
    guests = {}
    for f in files:
        lines = open(f, encoding="utf-8").read().split("\n")
        edits = []
        for first_line, cmds in blocks(lines):
            if cmds[0][4]:
                text, at, listed = cmds[0][:3]
                actual = run_guest(text, guests)
                checked += 1
                if actual is None:
                    print("%s:%d: failed: %s" % (f, at + 1, text))
                    bad += 1
                elif align(["..."] + listed + ["..."], actual,
                           lambda a, b: shape(b).endswith(shape(a))) is None:
                    differs("%s:%d: the console no longer shows this excerpt: %s" % (f, at + 1, text),
                            listed, actual, diff)
                    bad += 1
                continue
            outs = run(cmds, env_script)
            indent = len(lines[first_line - 1]) - len(lines[first_line - 1].lstrip())
            for (text, at, listed, _, _), actual in zip(cmds, outs):
                checked += 1
                first = text.split("\n")[0]
                if actual is None:
                    print("%s:%d: did not finish: $ %s" % (f, at + 1, first))
                    bad += 1
                    continue
                if align(listed, actual, lambda a, b: a == b) is not None:
                    continue
                new = regen(listed, actual) if regenerate else None
                if new is None:
                    differs("%s:%d: output differs from the listing: $ %s" % (f, at + 1, first),
                            listed, actual, diff)
                    bad += 1
                else:
                    edits.append((at + 1 + text.count("\n"), len(listed),
                                  [" " * indent + x if x else x for x in new]))
                    print("%s:%d: rewritten: $ %s" % (f, at + 1, first))
        for begin, count, new in sorted(edits, reverse=True):
            lines[begin:begin + count] = new
        if edits:
            open(f, "w", encoding="utf-8").write("\n".join(lines))
    print("listings: %d commands checked, %d differ" % (checked, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
