#!/usr/bin/env python3
"""A tar stream on standard input as one git commit, in git fast-import's
input format on standard output: no temporary tree, no loose objects.

usage: tar-import.py REF MESSAGE-FILE DATE NAME EMAIL

The archive's top-level directory is taken off the paths (Debian's
linux-source tarball holds linux-source-VERSION/). Regular files keep
git's two modes (executable or not), symbolic links are links, a hard
link is its target's content; directories and anything else are not
files to git. The commit is REF's only commit, by NAME <EMAIL> at DATE
("SECONDS +0000"), so the same tarball gives the same commit as
"git add -A -f" of its extracted tree and "git commit-tree" did.
Progress goes to standard error: "import: MB of input" lines.
"""

import sys
import tarfile


def quote(path):
    """fast-import's path syntax: C-style quotes when needed."""
    if "\n" in path or path.startswith('"'):
        return '"' + path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return path


def strip_top(name):
    """The path below the archive's top directory, "./" and "//" off."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    return "/".join(parts[1:])


def main(argv):
    if len(argv) != 6:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    ref, message_file, date, name, email = argv[1:]
    with open(message_file, "rb") as f:
        message = f.read()
    out = sys.stdout.buffer
    source = sys.stdin.buffer
    files = {}  # path -> (mode, mark)
    mark = 0
    reported = 0
    with tarfile.open(fileobj=source, mode="r|", encoding="utf-8", errors="surrogateescape") as tar:
        for member in tar:
            path = strip_top(member.name.rstrip("/"))
            if not path:
                continue
            if member.isfile():
                data = tar.extractfile(member).read()
                # git keeps the owner's execute bit only.
                mode = "100755" if member.mode & 0o100 else "100644"
            elif member.issym():
                data = member.linkname.encode("utf-8", "surrogateescape")
                mode = "120000"
            elif member.islnk():
                target = files.get(strip_top(member.linkname))
                if target is None:
                    sys.stderr.write(f"tar-import: {member.name} links to {member.linkname}, not seen before\n")
                    return 1
                files[path] = target
                continue
            else:
                continue
            mark += 1
            out.write(b"blob\nmark :%d\ndata %d\n" % (mark, len(data)))
            out.write(data)
            out.write(b"\n")
            files[path] = (mode, mark)
            done = tar.fileobj.tell() if hasattr(tar.fileobj, "tell") else 0
            if done - reported >= 64 << 20:
                reported = done
                sys.stderr.write(f"import: {done >> 20} MB\n")
                sys.stderr.flush()
    who = f"{name} <{email}> {date}".encode()
    out.write(b"commit %s\n" % ref.encode())
    out.write(b"author %s\ncommitter %s\n" % (who, who))
    out.write(b"data %d\n%s\n" % (len(message), message))
    for path in sorted(files):
        mode, blob = files[path]
        out.write(f"M {mode} :{blob} {quote(path)}\n".encode("utf-8", "surrogateescape"))
    out.write(b"\ndone\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
