#!/usr/bin/env python3
"""A tar stream on standard input as one git commit, written by git
fast-import: no temporary tree, no loose objects.

usage: tar-import.py [--streams N] REF MESSAGE-FILE DATE NAME EMAIL -- FAST-IMPORT...

FAST-IMPORT is the command that runs "git fast-import" in the repository
(with its options). The files' contents go to N of them at once
(default 2), each with a share of the bytes, because fast-import hashes
and compresses on one core; then one more writes the trees and the
commit, naming the contents by the marks the others exported.

The archive's top-level directory is taken off the paths (Debian's
linux-source tarball holds linux-source-VERSION/). Regular files keep
git's two modes (executable or not), symbolic links are links, a hard
link is its target's content; directories, devices and fifos are not
files to git, and any other kind of member is an error. The commit is
REF's only commit, by NAME <EMAIL> at DATE ("SECONDS +0000"), so the
same tarball gives the same commit as "git add -A -f" of its extracted
tree and "git commit-tree" did. Progress goes to standard error:
"import: MB of input" lines.
"""

import fcntl
import os
import queue
import subprocess
import sys
import tempfile
import threading

BLOCK = 512
# Input read at a time, and bytes a stream's writer takes at a time.
CHUNK = 1 << 20
BATCH = 1 << 18
PROGRESS_EVERY = 64 << 20
# fcntl's F_SETPIPE_SZ: a larger pipe lets a stream run on while the
# parser serves the other one.
F_SETPIPE_SZ = 1031

FILE_TYPES = (b"0", b"\0", b"7")
SKIPPED_TYPES = (b"3", b"4", b"5", b"6")
# GNU's long name and long link, pax's headers for one member and for all.
META_TYPES = (b"L", b"K", b"x", b"g")


class Refused(Exception):
    """A tarball this script will not import, or a fast-import that failed."""


def quote(path):
    """fast-import's path syntax: C-style quotes when needed."""
    if b"\n" in path or path.startswith(b'"'):
        return b'"' + path.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n") + b'"'
    return path


def strip_top(name):
    """The path below the archive's top directory, "./" and "//" off."""
    parts = [p for p in name.split(b"/") if p not in (b"", b".")]
    return b"/".join(parts[1:])


def field(raw):
    """A NUL-terminated header field."""
    end = raw.find(b"\0")
    return raw if end < 0 else raw[:end]


def number(raw):
    """A numeric header field: octal, or GNU's base-256."""
    if raw[0] & 0x80:
        return int.from_bytes(raw[1:], "big")
    digits = field(raw).strip()
    return int(digits, 8) if digits else 0


def checksum_ok(header):
    """The header's checksum field against its bytes, the field read as
    spaces: unsigned bytes (POSIX), or signed ones (some old tars)."""
    stored = number(header[148:156])
    unsigned = sum(header[:148]) + 8 * 32 + sum(header[156:])
    if stored == unsigned:
        return True
    return stored == unsigned - 256 * sum(1 for b in header[:148] + header[156:] if b > 127)


def pax_records(data):
    """A pax extended header's "LENGTH KEY=VALUE\\n" records."""
    records = {}
    at = 0
    while at < len(data):
        space = data.index(b" ", at)
        length = int(data[at:space])
        key, value = data[space + 1:at + length - 1].split(b"=", 1)
        records[key] = value
        at += length
    return records


class Input:
    """Standard input, taken in whole blocks."""

    def __init__(self, stream):
        self.stream = stream
        self.buf = b""
        self.pos = 0
        self.done = 0

    def take(self, size):
        """SIZE bytes, or fewer at the end of the input."""
        if len(self.buf) - self.pos < size:
            parts = [self.buf[self.pos:]]
            have = len(parts[0])
            while have < size:
                chunk = self.stream.read(max(size - have, CHUNK))
                if not chunk:
                    break
                parts.append(chunk)
                have += len(chunk)
            self.buf = b"".join(parts)
            self.pos = 0
        out = self.buf[self.pos:self.pos + size]
        self.pos += len(out)
        self.done += len(out)
        return out

    def drain(self):
        """Read what follows the archive, so that its writer ends well."""
        while self.stream.read(CHUNK):
            pass


class Stream:
    """One fast-import process, fed from a thread of its own."""

    def __init__(self, command, marks):
        self.proc = subprocess.Popen(command + ["--export-marks=" + marks], stdin=subprocess.PIPE)
        try:
            fcntl.fcntl(self.proc.stdin.fileno(), F_SETPIPE_SZ, CHUNK)
        except OSError:
            pass
        self.queue = queue.Queue(maxsize=32)
        self.pending = []
        self.size = 0
        self.sent = 0
        self.error = None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        self.write(b"feature done\n")

    def run(self):
        fd = self.proc.stdin.fileno()
        while True:
            data = self.queue.get()
            if data is None:
                break
            if self.error:
                continue
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(fd, view):]
            except OSError as e:
                self.error = e
        self.proc.stdin.close()

    def write(self, data):
        self.pending.append(data)
        self.size += len(data)
        self.sent += len(data)
        if self.size >= BATCH:
            self.flush()

    def flush(self):
        if self.pending:
            self.queue.put(b"".join(self.pending))
        self.pending = []
        self.size = 0

    def finish(self):
        """Ends the stream; fast-import's status."""
        self.write(b"done\n")
        self.flush()
        self.queue.put(None)
        self.thread.join()
        return self.proc.wait()


def members(source):
    """(typeflag, path, link, mode, data) for each member of the archive."""
    meta = {}
    while True:
        header = source.take(BLOCK)
        if len(header) < BLOCK:
            raise Refused("the archive ends without its end blocks")
        if header == bytes(BLOCK):
            source.drain()
            return
        if not checksum_ok(header):
            raise Refused(f"a damaged tar header at byte {source.done - BLOCK}")
        kind = header[156:157]
        size = number(header[124:136])
        if kind not in META_TYPES and b"size" in meta:
            size = int(meta[b"size"])
        body = source.take((size + BLOCK - 1) // BLOCK * BLOCK)
        if len(body) < size:
            raise Refused("the archive ends inside a member")
        data = body[:size]
        if kind == b"L":
            meta[b"path"] = field(data)
            continue
        if kind == b"K":
            meta[b"linkpath"] = field(data)
            continue
        if kind == b"x":
            meta.update(pax_records(data))
            continue
        if kind == b"g":
            continue
        name = field(header[0:100])
        if header[257:262] == b"ustar":
            prefix = field(header[345:500])
            if prefix:
                name = prefix + b"/" + name
        name = meta.get(b"path", name)
        link = meta.get(b"linkpath", field(header[157:257]))
        meta = {}
        yield kind, name, link, number(header[100:108]), data


def import_tar(source, streams, commit_stream, ref, message, who):
    """The archive's contents into STREAMS, its tree and commit into
    COMMIT_STREAM's input; the number of files."""
    files = {}  # path -> (mode, mark)
    mark = 0
    reported = 0
    for kind, name, link, mode, data in members(source):
        path = strip_top(name)
        if not path:
            continue
        if kind in FILE_TYPES:
            # git keeps the owner's execute bit only.
            git_mode = b"100755" if mode & 0o100 else b"100644"
        elif kind == b"2":
            data = link
            git_mode = b"120000"
        elif kind == b"1":
            target = files.get(strip_top(link))
            if target is None:
                raise Refused(f"{os.fsdecode(name)} links to {os.fsdecode(link)}, not seen before")
            files[path] = target
            continue
        elif kind in SKIPPED_TYPES:
            continue
        else:
            raise Refused(f"{os.fsdecode(name)}: a tar member of type {kind!r}, which the import does not know")
        mark += 1
        stream = min(streams, key=lambda s: s.sent)
        stream.write(b"blob\nmark :%d\ndata %d\n" % (mark, len(data)))
        stream.write(data)
        stream.write(b"\n")
        files[path] = (git_mode, mark)
        if source.done - reported >= PROGRESS_EVERY:
            reported = source.done
            sys.stderr.write(f"import: {source.done >> 20} MB\n")
            sys.stderr.flush()
    out = [b"commit %s\n" % ref, b"author %s\ncommitter %s\n" % (who, who),
           b"data %d\n%s\n" % (len(message), message)]
    for path in sorted(files):
        git_mode, blob = files[path]
        out.append(b"M %s :%d %s\n" % (git_mode, blob, quote(path)))
    out.append(b"\ndone\n")
    commit_stream.write(b"".join(out))
    return len(files)


def usage():
    sys.stderr.write("usage: " + __doc__.split("usage: ")[1].split("\n")[0] + "\n")
    return 2


def main(argv):
    args = argv[1:]
    count = 2
    if args[:1] == ["--streams"] and len(args) > 1 and args[1].isdigit() and int(args[1]) > 0:
        count = int(args[1])
        args = args[2:]
    if "--" not in args or args.index("--") != 5 or len(args) < 7:
        return usage()
    ref, message_file, date, name, email = (os.fsencode(a) for a in args[:5])
    command = args[6:]
    with open(message_file, "rb") as f:
        message = f.read()
    who = b"%s <%s> %s" % (name, email, date)
    with tempfile.TemporaryDirectory(prefix="tar-import.") as tmp:
        marks = [os.path.join(tmp, f"marks{i}") for i in range(count)]
        streams = [Stream(command, m) for m in marks]
        error = None
        with tempfile.TemporaryFile(dir=tmp) as commit_stream:
            try:
                import_tar(Input(sys.stdin.buffer), streams, commit_stream, ref, message, who)
            except (Refused, ValueError) as e:
                error = f"tar-import: {e}"
            # Each stream ends ("done") only when the archive was whole:
            # fast-import fails on a stream that stops before it.
            for stream in streams:
                if error:
                    stream.proc.kill()
                status = stream.finish()
                if not error and (status != 0 or stream.error):
                    error = f"tar-import: git fast-import failed (exit {status})"
            if error:
                sys.stderr.write(error + "\n")
                return 1
            commit_stream.seek(0)
            imports = ["--import-marks=" + m for m in marks]
            if subprocess.run(command + imports, stdin=commit_stream).returncode != 0:
                sys.stderr.write("tar-import: git fast-import of the tree and commit failed\n")
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
