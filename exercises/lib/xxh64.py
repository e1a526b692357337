#!/usr/bin/env python3
"""xxh64.py STRING...: the kCFI type id of each mangled type name.

kCFI's type id is the low 32 bits of xxHash64 (seed 0) of the mangled
type name, for example _ZTSFvPiE for void (int *). Pure Python, no
packages: a fallback for lab/kcfi/kcfi hash.
"""
import sys

P1 = 0x9E3779B185EBCA87
P2 = 0xC2B2AE3D27D4EB4F
P3 = 0x165667B19E3779F9
P4 = 0x85EBCA77C2B2AE63
P5 = 0x27D4EB2F165667C5
M = (1 << 64) - 1


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def rnd(acc, lane):
    acc = (acc + lane * P2) & M
    return (rotl(acc, 31) * P1) & M


def merge(acc, val):
    acc ^= rnd(0, val)
    return (acc * P1 + P4) & M


def xxh64(data, seed=0):
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed, (seed - P1) & M]
        while i + 32 <= n:
            for j in range(4):
                v[j] = rnd(v[j], int.from_bytes(data[i + 8 * j:i + 8 * j + 8], "little"))
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for x in v:
            h = merge(h, x)
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 8 <= n:
        h ^= rnd(0, int.from_bytes(data[i:i + 8], "little"))
        h = (rotl(h, 27) * P1 + P4) & M
        i += 8
    if i + 4 <= n:
        h ^= (int.from_bytes(data[i:i + 4], "little") * P1) & M
        h = (rotl(h, 23) * P2 + P3) & M
        i += 4
    while i < n:
        h ^= (data[i] * P5) & M
        h = (rotl(h, 11) * P1) & M
        i += 1
    h ^= h >> 33
    h = (h * P2) & M
    h ^= h >> 29
    h = (h * P3) & M
    h ^= h >> 32
    return h


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: xxh64.py MANGLED-NAME...   (e.g. _ZTSFvPiE)", file=sys.stderr)
        return 2
    for name in argv:
        print("0x%08x  %s" % (xxh64(name.encode()) & 0xFFFFFFFF, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
