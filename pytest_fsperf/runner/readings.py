"""What each instrument's stop() returns: a typed reading, a frozen dataclass whose fields are
the result's fields of the same names (result/workload.py), and the window that gathers
them. The result is built from the readings (window.record), never copied field by field."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from pytest_fsperf.measure.meters import DaemonMeter
from pytest_fsperf.measure.reading import Reading
from pytest_fsperf.mounts.daemon import Lookup
from pytest_fsperf.result.daemon import DaemonStats, Profile
from pytest_fsperf.result.daemon import Memory as CgroupReading
from pytest_fsperf.result.fuse import FuseRequests
from pytest_fsperf.result.machine import Placement, Rest
from pytest_fsperf.result.store import Requests
from pytest_fsperf.result.timeline import Timeline
from pytest_fsperf.vocab import DaemonCache, PageCache

R = TypeVar("R", bound=Reading)


@dataclass(frozen=True)
class DaemonReading(Reading):
    daemon: DaemonStats | None  # the target's daemon over the window (None: not measured)


@dataclass(frozen=True)
class StoreReading(Reading):
    requests: Requests | None  # what the object store served in the window
    requests_note: str = ""  # why not, where not
    daemon_counters: dict[str, float] | None = None  # the daemon's own (JuiceFS .stats)


@dataclass(frozen=True)
class FuseReading(Reading):
    fuse: FuseRequests | None  # the kernel's FUSE requests to the daemon, by opcode
    fuse_note: str = ""  # why there is no trace, when there is none


@dataclass(frozen=True)
class ProfileReading(Reading):
    profile: Profile | None  # the daemon's CPU profile (an A/B's profiled pair)
    profile_note: str = ""  # why a profile asked for was not taken


@dataclass(frozen=True)
class RestReading(Reading):
    rest: Rest | None  # the rest of the machine's CPU and steal over the window
    cache_filled: int | None = None  # how much the machine's page cache grew, bytes


@dataclass(frozen=True)
class DiskReading(Reading):
    cache_disk_peak_bytes: int | None  # peak disk use of the daemon's cache dirs


@dataclass(frozen=True)
class MemoryReading(Reading):
    memory: CgroupReading | None  # the daemon's cgroup: limit, peak, OOM kills


@dataclass(frozen=True)
class RssReading(Reading):
    rss_before: int | None = None  # the daemon's RSS just before the window
    rss_after: int | None = None  # and a while after it (--fsperf-rss-settle)


@dataclass(frozen=True)
class TimelineReading(Reading):
    timeline: Timeline | None  # per interval, when the run lasted a few


@dataclass(frozen=True)
class PlacementReading(Reading):
    placement: Placement | None  # the CPUs the daemon and the load were pinned to


@dataclass(frozen=True)
class PageCacheReading(Reading):
    page_cache: int | None  # the page cache the workload's files held at its end
    page_cache_note: str = ""  # why it was not counted


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

    def put(self, *found: Reading | None) -> None:
        for r in found:
            if r is not None:
                self.readings[type(r)] = r

    def get(self, kind: type[R]) -> R | None:
        found = self.readings.get(kind)
        return found if isinstance(found, kind) else None

    def fields(self) -> dict[str, object]:
        """Every reading's fields by name: the result's, as measured."""
        return {f.name: getattr(r, f.name) for r in self.readings.values()
                for f in dataclasses.fields(r)}

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
