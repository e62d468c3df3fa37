"""What the FUSE daemon read from and wrote to storage over a window: /proc/PID/io's
read_bytes (brought in from a block device) and write_bytes less cancelled_write_bytes (page
cache it dirtied on a disk-backed filesystem and did not truncate again: what writeback
sends). A client over object storage that stages reads or uploads on a local disk (s3fs's
and ossfs 1.x's temp files, a cache directory, rclone's VFS cache) shows it here; a tmpfs
stage does not (it has no storage). The whole process's counts, its exited threads included;
summed over the daemon's processes alive at both ends. psutil gives no cancelled_write_bytes,
so the file is read here."""

from __future__ import annotations

from typing import ClassVar

from pytest_fsperf.figures import Fig
from pytest_fsperf.measure.reading import Figures, Span
from pytest_fsperf.mounts.daemon import start_time

Counts = tuple[int, int, int]  # read_bytes, write_bytes, cancelled_write_bytes


def _io(pid: int) -> Counts | None:
    try:
        with open(f"/proc/{pid}/io", encoding="ascii") as f:
            found = dict(line.split(":", 1) for line in f if ":" in line)
        return int(found["read_bytes"]), int(found["write_bytes"]), int(found["cancelled_write_bytes"])
    except (OSError, KeyError, ValueError):
        return None


def _counts(pid: int) -> tuple[int, Counts] | None:
    """Its start time (the same process at both ends, not a PID reused) and its counts."""
    started, io = start_time(pid), _io(pid)
    return (started, io) if started is not None and io is not None else None


class StorageIo:
    FIGURES: ClassVar[tuple[str, ...]] = (Fig.DAEMON_DISK_READ, Fig.DAEMON_DISK_WRITTEN)

    def __init__(self, pids: tuple[int, ...]) -> None:
        self.pids = pids
        self.before: dict[int, tuple[int, Counts]] = {}

    @classmethod
    def made(cls, pids: tuple[int, ...]) -> StorageIo | None:
        return cls(pids) if pids else None

    def start(self) -> None:
        self.before = {pid: c for pid in self.pids if (c := _counts(pid)) is not None}

    def stop(self, span: Span) -> Figures:
        moved = [tuple(b - a for a, b in zip(was[1], now[1], strict=True))
                 for pid, was in self.before.items()
                 if (now := _counts(pid)) is not None and now[0] == was[0]]
        if not moved:  # the daemon's counts could not be read (another user's, or gone)
            return Figures(dict.fromkeys(self.FIGURES))
        return Figures({Fig.DAEMON_DISK_READ: float(sum(m[0] for m in moved)),
                        Fig.DAEMON_DISK_WRITTEN: float(max(0, sum(m[1] - m[2] for m in moved)))})

    def abort(self) -> None:
        pass  # counters read twice: nothing held
