"""A ceiling: the most a path beside the filesystem under test moves for the same work, and
what measuring it cost."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pytest_fsperf.vocab import Text


class CeilingPath(Text):
    """Which ceiling: the object store, read or written straight by a fast client; one FUSE
    daemon with nothing behind it (bindfs over tmpfs: one daemon's limit - bindfs ran one
    thread at 100% of a core - not the kernel's FUSE_PASSTHROUGH, which it does not use);
    tmpfs itself."""

    STORE = "store"
    FUSE = "bindfs over tmpfs"
    TMPFS = "tmpfs"

    @classmethod
    def _missing_(cls, value: object) -> CeilingPath | None:
        return cls.FUSE if value == "FUSE passthrough" else None  # runs saved before 2026-11-26


@dataclass(frozen=True)
class Ceiling:
    path: CeilingPath
    how: str  # what ran, e.g. "bindfs over tmpfs, fio read bs=1M numjobs=1 (cold)"
    bw_bytes: float  # B/s; 0 where none was measured
    ops: float = 0.0  # requests or I/Os per second
    requests: int = 0  # requests (or I/Os) in the timed part
    seconds: float = 0.0  # what measuring it cost, wall: layout, mounts, cleanup included
    unavailable: str = ""  # why it was not measured ("" where it was)
    note: str = ""  # what else to know (e.g. objects left in the store)

    def to_dict(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Text) else v for k, v in asdict(self).items()}


def missing(path: CeilingPath, why: str) -> Ceiling:
    return Ceiling(path, "", 0.0, unavailable=why)
