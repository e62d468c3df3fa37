"""The window's readings: each meter's stop() returns a typed reading (measure/registry.py),
a frozen dataclass whose fields are the result's fields of the same names (result/workload.py);
a meter's own figures (reading.Figures) are gathered into the result's `measured`. The result
is built from the readings (window.record), never copied field by field."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from pytest_fsperf.measure.daemons import DaemonReading
from pytest_fsperf.measure.fuse_requests import FuseReading
from pytest_fsperf.measure.meters import DaemonMeter
from pytest_fsperf.measure.reading import Figures, Reading
from pytest_fsperf.measure.rss import RssReading
from pytest_fsperf.measure.store_requests import StoreReading
from pytest_fsperf.measure.timeline import TimelineReading
from pytest_fsperf.mounts.daemon import Lookup
from pytest_fsperf.result.daemon import DaemonStats
from pytest_fsperf.result.fuse import FuseRequests
from pytest_fsperf.result.store import Requests
from pytest_fsperf.result.timeline import Timeline
from pytest_fsperf.vocab import DaemonCache, PageCache

R = TypeVar("R", bound=Reading)


@dataclass
class Window:
    """One measured window: the state it started in, when the I/O ran, and each
    instrument's reading (one of each type; a later one of a type replaces it)."""

    lookup: Lookup
    cache: PageCache
    daemon_cache: DaemonCache
    cold_steps: tuple[str, ...]
    wall: float = 0.0
    peers: list[tuple[Lookup, DaemonMeter | None]] = dataclasses.field(default_factory=list)
    peer_stats: list[DaemonStats | None] = dataclasses.field(default_factory=list)
    io_span: tuple[float, float] | None = None  # when the I/O ran (monotonic s), if known
    expected: int | None = None  # the bytes the load generator says it moved, if known
    started: float = 0.0  # monotonic s of the timeline's t = 0
    began: float = 0.0  # monotonic s the workload began (after the pinning)
    device_read: int | None = None  # a cold read with no daemon: its block device's bytes read
    stored: float | None = None  # monotonic s the store had received what the workload wrote
    # the bytes the store has received since the window opened (None: not counted here)
    received: Callable[[], float | None] = lambda: None
    readings: dict[type[Reading], Reading] = dataclasses.field(default_factory=dict)
    measured: dict[str, float | None] = dataclasses.field(default_factory=dict)  # Figures'

    def put(self, *found: Reading | None) -> None:
        for r in found:
            if isinstance(r, Figures):
                self.measured.update(r.measured)
            elif r is not None:
                self.readings[type(r)] = r

    def get(self, kind: type[R]) -> R | None:
        found = self.readings.get(kind)
        return found if isinstance(found, kind) else None

    def fields(self) -> dict[str, object]:
        """Every reading's fields by name: the result's, as measured."""
        return {**{f.name: getattr(r, f.name) for r in self.readings.values()
                   for f in dataclasses.fields(r)}, "measured": dict(self.measured)}

    # the readings later steps read (clients, hosts, fio's timeline, the cold check)
    @property
    def daemon(self) -> DaemonStats | None:
        r = self.get(DaemonReading)
        return r.daemon if r else None

    @property
    def timeline(self) -> Timeline | None:
        r = self.get(TimelineReading)
        return r.timeline if r else None

    @property
    def requests(self) -> Requests | None:
        r = self.get(StoreReading)
        return r.requests if r else None

    @property
    def fuse(self) -> FuseRequests | None:
        r = self.get(FuseReading)
        return r.fuse if r else None

    @property
    def rss_before(self) -> int | None:
        r = self.get(RssReading)
        return r.rss_before if r else None
