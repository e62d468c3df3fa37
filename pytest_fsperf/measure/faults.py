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
from pytest_fsperf.measure.reading import Figures, Span
from pytest_fsperf.mounts.daemon import stat_fields

MINFLT, MAJFLT, STARTED = 7, 9, 19  # /proc/PID/stat fields 10, 12 and 22 (stat_fields' count)


def _counts(pid: int) -> tuple[int, int, int] | None:
    """Its start time (the same process at both ends, not a PID reused) and its counts."""
    found = stat_fields(pid)
    if not found or len(found) <= STARTED:
        return None
    return int(found[STARTED]), int(found[MINFLT]), int(found[MAJFLT])


class PageFaults:
    """Each daemon process's fault counts at the window's start and end."""

    FIGURES: ClassVar[tuple[str, ...]] = (Fig.DAEMON_MAJOR_FAULTS, Fig.DAEMON_MINOR_FAULTS)

    def __init__(self, pids: tuple[int, ...]) -> None:
        self.pids = pids
        self.before: dict[int, tuple[int, int, int]] = {}

    @classmethod
    def made(cls, pids: tuple[int, ...]) -> PageFaults | None:
        return cls(pids) if pids else None

    def start(self) -> None:
        self.before = {pid: c for pid in self.pids if (c := _counts(pid)) is not None}

    def stop(self, span: Span) -> Figures:
        after = {pid: c for pid, was in self.before.items()
                 if (c := _counts(pid)) is not None and c[0] == was[0]}
        if not after:  # the daemon's counts could not be read
            return Figures(dict.fromkeys(self.FIGURES))
        return Figures({Fig.DAEMON_MAJOR_FAULTS: float(sum(after[p][2] - self.before[p][2] for p in after)),
                        Fig.DAEMON_MINOR_FAULTS: float(sum(after[p][1] - self.before[p][1] for p in after))})

    def abort(self) -> None:
        pass  # counters read twice: nothing held
