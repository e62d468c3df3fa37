"""Peak disk use of a daemon's cache directories during a workload, sampled.

ossfs 1.x and s3fs stage data in `use_cache` (or a temp dir); the ossfs 1.91 document
compares the peak disk use of large reads with and without direct_read. The sum of
allocated blocks (st_blocks x 512) under the directories is sampled every 0.5 s.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass

from pytest_fsperf.measure.reading import NO_SPAN, Reading, Span


def disk_use(paths: list[str]) -> int:
    total = 0
    for root in paths:
        for dirpath, _dirs, files in os.walk(root):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


class DiskMeter:
    def __init__(self, paths: list[str], interval: float = 0.5) -> None:
        self.paths = paths
        self.interval = interval
        self.peak = 0
        self.last = 0  # the latest sample (for the timeline)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            self.last = disk_use(self.paths)
            self.peak = max(self.peak, self.last)
            if self._stop.wait(self.interval):
                return

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, disk_use(self.paths))
        return self.peak


@dataclass(frozen=True)
class DiskReading(Reading):
    cache_disk_peak_bytes: int | None  # peak disk use of the daemon's cache dirs


class CacheDisk:
    """Peak disk use of the daemon's cache directories, sampled (started when made)."""

    def __init__(self, meter: DiskMeter) -> None:
        self.meter = meter
        self.peak: int | None = None

    @classmethod
    def made(cls, dirs: tuple[str, ...]) -> CacheDisk | None:
        paths = [p for p in dirs if os.path.isdir(p)]
        if not paths:
            return None
        meter = DiskMeter(paths)
        meter.start()
        return cls(meter)

    def start(self) -> None:
        pass  # sampling since it was made

    def stop(self, span: Span) -> DiskReading:
        if self.peak is None:
            self.peak = self.meter.stop()
        return DiskReading(self.peak)

    def abort(self) -> None:
        self.stop(NO_SPAN)
