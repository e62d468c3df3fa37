"""What an ELF program loads from beside itself: its RUNPATH/RPATH directories ($ORIGIN
expanded) and the libraries it needs found there. Root runs the program, so those
directories are checked as the program is; a build's identity includes those libraries."""

from __future__ import annotations

import os
import struct
from typing import BinaryIO

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_RPATH, DT_RUNPATH = 0, 1, 5, 15, 29
MAX_READ = 1 << 30  # a header naming offsets past this is not a program we load


def _segments(f: BinaryIO) -> tuple[str, bool, list[tuple[int, int, int]], tuple[int, int] | None]:
    """(byte order, 64-bit, PT_LOAD (vaddr, offset, size) list, PT_DYNAMIC (offset, size))."""
    head = f.read(64)
    if len(head) < 52 or head[:4] != b"\x7fELF" or head[4] not in (1, 2) or head[5] not in (1, 2):
        return "<", False, [], None
    wide, end = head[4] == 2, "<" if head[5] == 1 else ">"
    phoff = struct.unpack_from(end + ("Q" if wide else "I"), head, 32 if wide else 28)[0]
    phentsize, phnum = struct.unpack_from(end + "HH", head, 54 if wide else 42)
    f.seek(min(phoff, MAX_READ))
    table = f.read(min(phentsize * phnum, 1 << 16))
    loads, dyn = [], None
    for i in range(len(table) // max(phentsize, 1)):
        if wide:
            kind, _fl, off, vaddr, _pa, size = struct.unpack_from(end + "IIQQQQ", table, i * phentsize)
        else:
            kind, off, vaddr, _pa, size = struct.unpack_from(end + "IIIII", table, i * phentsize)
        if kind == PT_LOAD:
            loads.append((vaddr, off, size))
        elif kind == PT_DYNAMIC:
            dyn = (off, size)
    return end, wide, loads, dyn


def _dynamic(path: str) -> tuple[list[str], list[str]]:
    """(RUNPATH and RPATH entries, NEEDED names) of an ELF file; ([], []) when it is not one."""
    with open(path, "rb") as f:
        end, wide, loads, dyn = _segments(f)
        if dyn is None:
            return [], []
        f.seek(min(dyn[0], MAX_READ))
        raw = f.read(min(dyn[1], 1 << 20))
        fmt, size = (end + "qQ", 16) if wide else (end + "iI", 8)
        entries = [struct.unpack_from(fmt, raw, i) for i in range(0, len(raw) - size + 1, size)]
        strtab = next((v for t, v in entries if t == DT_STRTAB), -1)
        base = next((off + strtab - va for va, off, sz in loads if va <= strtab < va + sz), None)
        if base is None:
            return [], []

        def string(at: int) -> str:
            f.seek(min(base + at, MAX_READ))
            return f.read(4096).split(b"\0", 1)[0].decode("utf-8", "replace")

        paths, needed = [], []
        for tag, value in entries:
            if tag == DT_NULL:
                break
            if tag in (DT_RPATH, DT_RUNPATH):
                paths += [p for p in string(value).split(":") if p]
            elif tag == DT_NEEDED:
                needed.append(string(value))
        return paths, needed


def search_dirs(program: str) -> list[str]:
    """The directories `program` (a real path) asks the loader to search first, $ORIGIN
    (and ${ORIGIN}) expanded to its own directory; relative entries as the loader takes them
    (from the current directory: named as such)."""
    try:
        paths, _needed = _dynamic(program)
    except (OSError, struct.error):
        return []
    origin = os.path.dirname(program)
    return [p.replace("${ORIGIN}", origin).replace("$ORIGIN", origin) for p in paths]


def bundled(program: str) -> list[str]:
    """The libraries `program` needs that lie in its own $ORIGIN directories (shipped beside
    it, as ossfs2 ships libfuse3): real paths, sorted."""
    try:
        paths, needed = _dynamic(program)
    except (OSError, struct.error):
        return []
    origin = os.path.dirname(program)
    found = set()
    for entry in paths:
        if "ORIGIN" not in entry:
            continue
        where = entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
        for name in needed:
            candidate = os.path.join(where, name)
            if os.sep not in name and os.path.isfile(candidate):
                found.add(os.path.realpath(candidate))
    return sorted(found)
