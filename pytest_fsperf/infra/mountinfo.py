"""Parse /proc/self/mountinfo. Reading it never touches the mount itself."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

_ESCAPE = re.compile(r"\\([0-7]{3})")


def unescape(field: str) -> str:
    r"""The kernel writes space, tab, newline and backslash in paths as \040 etc."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


@dataclass(frozen=True)
class Mount:
    mount_id: int
    major: int
    minor: int
    root: str
    mount_point: str
    mount_options: str
    fstype: str
    source: str
    super_options: str

    @property
    def is_fuse(self) -> bool:
        return self.fstype in ("fuse", "fuseblk") or self.fstype.startswith(("fuse.", "fuseblk."))


def parse_line(line: str) -> Mount:
    """One mountinfo line: ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - TYPE SOURCE SUPER."""
    fields = line.rstrip("\n").split(" ")
    try:
        sep = fields.index("-", 6)
        major, minor = fields[2].split(":")
        fstype, source, super_options = fields[sep + 1 : sep + 4]
        return Mount(
            mount_id=int(fields[0]),
            major=int(major),
            minor=int(minor),
            root=unescape(fields[3]),
            mount_point=unescape(fields[4]),
            mount_options=fields[5],
            fstype=fstype,
            source=unescape(source),
            super_options=super_options,
        )
    except (ValueError, IndexError) as exc:
        raise ValueError(f"malformed mountinfo line: {line.strip()!r}") from exc


def read_mounts(path: str = "/proc/self/mountinfo") -> list[Mount]:
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return [parse_line(line) for line in f if line.strip()]


def _contains(mount_point: str, path: str) -> bool:
    if mount_point == "/":
        return True
    return path == mount_point or path.startswith(mount_point.rstrip("/") + "/")


def find_mount(path: str, mounts: list[Mount]) -> Mount:
    """The mount that serves `path` (absolute, normalised): the longest containing
    mount point; of several on the same point, the last one mounted is on top."""
    path = os.path.normpath(path)
    best: Mount | None = None
    for mount in mounts:
        if _contains(mount.mount_point, path) and (
            best is None or len(mount.mount_point) >= len(best.mount_point)
        ):
            best = mount
    if best is None:
        raise LookupError(f"no mount in mountinfo contains {path}")
    return best
