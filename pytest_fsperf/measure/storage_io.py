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
from pytest_fsperf.infra.procs import proc_io
from pytest_fsperf.measure.reading import Counts, ProcessCounts
from pytest_fsperf.mounts.daemon import start_time

KEYS = ("read_bytes", "write_bytes", "cancelled_write_bytes")


class StorageIo(ProcessCounts):
    FIGURES: ClassVar[tuple[str, ...]] = (Fig.DAEMON_DISK_READ, Fig.DAEMON_DISK_WRITTEN)

    def read(self, pid: int) -> Counts | None:
        """Its start time (the same process at both ends, not a PID reused) and its counts."""
        started, io = start_time(pid), proc_io(pid)
        if started is None or io is None or any(k not in io for k in KEYS):
            return None
        return started, tuple(io[k] for k in KEYS)

    def figures(self, moved: tuple[int, ...]) -> dict[str, float | None]:
        read, written, cancelled = moved
        return {Fig.DAEMON_DISK_READ: float(read),
                Fig.DAEMON_DISK_WRITTEN: float(max(0, written - cancelled))}
