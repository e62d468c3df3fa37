"""The FUSE daemon's page faults over a window: minor (a page mapped from memory) and major
(read back from disk). A cold start's drop_caches drops the daemon's own code and data
pages too; a cold read's throughput then includes the daemon faulting them back in, and the
major count says how much. Read from /proc/PID/stat (minflt, majflt: the whole process, its
exited threads included; psutil gives neither), summed over the daemon's processes alive at
both ends (one that exited or started in the window is not counted).

The worked example of a meter (docs/explanation/architecture.md): this file, its figures in
figures.py and its line in measure/registry.py."""

from __future__ import annotations

from typing import ClassVar

from pytest_fsperf.figures import Fig
from pytest_fsperf.measure.reading import Counts, ProcessCounts
from pytest_fsperf.mounts.daemon import stat_fields

MINFLT, MAJFLT, STARTED = 7, 9, 19  # /proc/PID/stat fields 10, 12 and 22 (stat_fields' count)


class PageFaults(ProcessCounts):
    """Each daemon process's fault counts at the window's start and end."""

    FIGURES: ClassVar[tuple[str, ...]] = (Fig.DAEMON_MAJOR_FAULTS, Fig.DAEMON_MINOR_FAULTS)

    def read(self, pid: int) -> Counts | None:
        """Its start time (the same process at both ends, not a PID reused) and its counts."""
        found = stat_fields(pid)
        if not found or len(found) <= STARTED:
            return None
        return int(found[STARTED]), (int(found[MINFLT]), int(found[MAJFLT]))

    def figures(self, moved: tuple[int, ...]) -> dict[str, float | None]:
        minor, major = moved
        return {Fig.DAEMON_MAJOR_FAULTS: float(major), Fig.DAEMON_MINOR_FAULTS: float(minor)}
