"""The daemon's resident memory just before the window and, --fsperf-rss-settle s after it,
what it gave back (read outside the window: the settle is not the workload's)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from pytest_fsperf.measure.meters import status_kib
from pytest_fsperf.measure.reading import Reading, Span
from pytest_fsperf.mounts.daemon import Lookup


@dataclass(frozen=True)
class RssReading(Reading):
    rss_before: int | None = None  # the daemon's RSS just before the window
    rss_after: int | None = None  # and a while after it (--fsperf-rss-settle)


def rss_of(lookup: Lookup) -> int | None:
    """The daemon's resident memory now, all its processes."""
    found = [status_kib(m.pid, "VmRSS") for m in lookup.daemon.members] if lookup.daemon else []
    return 1024 * sum(k for k in found if k is not None) if found and None not in found else None


class DaemonRss:
    def __init__(self, lookup: Lookup, before: int | None, settle: float) -> None:
        self.lookup, self.before, self.settle = lookup, before, settle

    def start(self) -> None:
        pass

    def stop(self, span: Span) -> RssReading:
        if not self.settle or self.lookup.daemon is None:
            return RssReading(self.before)
        time.sleep(self.settle)
        return RssReading(self.before, rss_of(self.lookup))

    def abort(self) -> None:
        pass
