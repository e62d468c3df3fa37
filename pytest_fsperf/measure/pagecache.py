"""The page cache a workload takes: its load generator's processes run in a memory cgroup of
their own (no limit), and the page cache charged to it at the window's end is what the
workload's reads and writes brought in: its files' pages, not the machine-wide figure other
processes move. (Counting by file with mincore is no use on FUSE: opening a file there drops
its cached pages unless the daemon asks the kernel to keep them.)"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_fsperf.infra import cgroup
from pytest_fsperf.measure.reading import Reading
from pytest_fsperf.vocab import Text


class Counting(Text):
    """--fsperf-page-cache: whether the page cache a workload takes is counted."""

    AUTO = "auto"  # fio workloads, where the plugin is root and cgroups have memory (default)
    OFF = "off"


def load_cage(counting: Counting) -> tuple[cgroup.MemoryCage | None, str]:
    """A cgroup for the load generator, or None and why the page cache is not counted."""
    if counting is Counting.OFF:
        return None, "not counted (--fsperf-page-cache=off)"
    try:
        return cgroup.MemoryCage(None), ""
    except OSError as exc:
        return None, f"not counted: {exc.strerror or exc}"


def taken(cage: cgroup.MemoryCage | None, uncounted: str) -> tuple[int | None, str]:
    """The page cache charged to the load generator's cgroup now, or None and why not."""
    if cage is None:
        return None, uncounted
    pages = cage.read().page_cache
    return pages, "" if pages is not None else "not counted: the cgroup has no page-cache figure"


@dataclass(frozen=True)
class PageCacheReading(Reading):
    page_cache: int | None  # the page cache the workload's files held at its end
    page_cache_note: str = ""  # why it was not counted
