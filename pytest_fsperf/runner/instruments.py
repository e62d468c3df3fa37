"""The meters a measured window (window.py) composes, each an Instrument (measure/reading.py):
started before the workload, stopped after it into its typed reading (readings.py), and
released however the window ended. Adding a meter: its module in measure/ (the meter and
its Reading), a field for the reading on the result, and one line in `INSTRUMENTS` below.
The daemons' meters and the sampler are the window's own (window.py): the daemon is what
it measures, and the sampler spans it."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psutil

from pytest_fsperf.infra import cgroup
from pytest_fsperf.measure import fusetrace, profile
from pytest_fsperf.measure.diskmeter import DiskMeter
from pytest_fsperf.measure.faults import PageFaults
from pytest_fsperf.measure.fusetrace import Trace, Tracing
from pytest_fsperf.measure.meters import DaemonMeter, status_kib
from pytest_fsperf.measure.profile import Profiler
from pytest_fsperf.measure.reading import Instrument, Reading, Span, When
from pytest_fsperf.measure.rest import RestMeter
from pytest_fsperf.measure.timeline import Sampler
from pytest_fsperf.mounts.daemon import Lookup
from pytest_fsperf.plan.conditions import conditions_text
from pytest_fsperf.result.daemon import DaemonStats
from pytest_fsperf.result.timeline import Timeline
from pytest_fsperf.runner.readings import (
    DaemonReading,
    DiskReading,
    FuseReading,
    MemoryReading,
    ProfileReading,
    RestReading,
    RssReading,
    StoreReading,
    TimelineReading,
)
from pytest_fsperf.runner.target import safe_name
from pytest_fsperf.store import juicefs
from pytest_fsperf.store import requests as store_requests

if TYPE_CHECKING:
    from pytest_fsperf.runner.space import Space

NOT_HERE = "not counted here: this machine's JuiceFS client did not run the workload"


@dataclass(frozen=True)
class Context:
    """What an instrument may need to be made: the test's space, its daemon, the daemons'
    processes, the workload's name, whether it runs on this machine, the daemon's RSS
    before it (where taken)."""

    ws: Space
    lookup: Lookup
    pids: list[int]
    label: str
    here: bool = True
    rss_before: int | None = None


def rss_of(lookup: Lookup) -> int | None:
    """The daemon's resident memory now, all its processes."""
    found = [status_kib(m.pid, "VmRSS") for m in lookup.daemon.members] if lookup.daemon else []
    return 1024 * sum(k for k in found if k is not None) if found and None not in found else None


class Daemons:
    """The target's FUSE daemon and the daemons of the other clients measured with it."""

    def __init__(self, label: str, meter: DaemonMeter | None,
                 peers: list[tuple[Lookup, DaemonMeter | None]]) -> None:
        self.label, self.meter, self.peers = label, meter, peers
        self.peer_stats: list[DaemonStats | None] = []

    def _all(self) -> list[DaemonMeter]:
        return [m for m in (self.meter, *(m for _o, m in self.peers)) if m is not None]

    def start(self) -> None:
        for m in self._all():
            m.start()

    def check(self) -> None:
        """After a failed workload: raise DaemonExited where a daemon died (the cause)."""
        for m in self._all():
            m.stop(self.label)

    def stop(self, span: Span) -> DaemonReading:
        self.peer_stats = [m.stop(self.label, span.io_span, span.expected) if m else None
                           for _o, m in self.peers]
        return DaemonReading(self.meter.stop(self.label, span.io_span, span.expected)
                             if self.meter else None)

    def abort(self) -> None:
        for m in self._all():
            m.abort()


class StoreRequests:
    """The object requests behind the mount (the store's counters, or JuiceFS's .stats) and
    JuiceFS's own counters; started at once (before the sampler), as the meters are read
    around the whole window. here=False: the workload ran elsewhere: this machine's JuiceFS
    client's own counts are not taken for it (a store's counters are: they count every client)."""

    def __init__(self, ws: Space, here: bool) -> None:
        self.store, self.note = ws.target.request_meter()
        if not here and isinstance(self.store, juicefs.StatsMeter):
            self.store, self.note = None, NOT_HERE
        self.own: juicefs.OwnMeter | None = None
        self._here, self._ws = here, ws
        self.proxy = ws.target.conditions_proxy()
        self._before: dict[str, object] = {}

    def start(self) -> None:
        if self.proxy is not None:
            self._before = self.proxy.stats()
        if self.store is not None:
            try:
                self.store.start()
            except (OSError, ValueError) as exc:
                self.store, self.note = None, f"the store's metrics failed: {exc}"
        # JuiceFS's own counters: from the request meter's reads when .stats is that already
        stats_root = (None if isinstance(self.store, juicefs.StatsMeter) or not self._here
                      else self._ws.target.juicefs_stats())
        self.own = juicefs.OwnMeter(stats_root) if stats_root is not None else None
        if self.own is not None:
            try:
                self.own.start()
            except (OSError, ValueError):
                self.own = None

    def stop(self, span: Span) -> StoreReading:
        requests, note, counters = None, self.note, None
        if self.store is not None:
            try:
                requests = self.store.stop()
            except (OSError, ValueError) as exc:
                note = f"the store's metrics failed: {exc}"
        if self.own is not None:
            with contextlib.suppress(OSError, ValueError):
                counters = self.own.stop()
        elif isinstance(self.store, juicefs.StatsMeter) and requests is not None:
            counters = self.store.counters
        if requests is not None and span.stored is not None:
            start = span.io_span[0] if span.io_span else span.began
            requests = dataclasses.replace(requests, stored_after=span.stored - start)
        if self.proxy is not None:  # what the store conditions did in the window
            did = self.proxy.window(self._before, self.proxy.stats())
            if requests is not None:
                requests = dataclasses.replace(requests, conditions=did)
            else:
                note += "; under the store conditions: " + conditions_text(did)
        return StoreReading(requests, note, counters)

    def received(self) -> float | None:
        """What the store has received since the window opened; None where not counted."""
        if isinstance(self.store, store_requests.RequestMeter):
            with contextlib.suppress(OSError, ValueError):
                return self.store.received()
        return None

    def abort(self) -> None:
        pass  # counters read twice: nothing held


class FuseTrace:
    """The kernel's FUSE requests of the window (armed when made: tracefs opened)."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    @classmethod
    def armed(cls, ws: Space, lookup: Lookup) -> FuseTrace | FuseReading | None:
        """The trace of the window; else why not (a reading without a trace); None: not FUSE."""
        if not lookup.fuse:
            return None
        if ws.settings.fuse_trace == Tracing.OFF:
            return FuseReading(None, "not traced (--fsperf-fuse-trace=off)")
        why = fusetrace.unavailable()
        if why:
            return FuseReading(None, f"not available: {why}")
        try:
            mount = ws.target.mount()
        except (OSError, LookupError) as exc:
            return FuseReading(None, f"not available: the mount could not be read ({exc})")
        trace = Trace(fusetrace.connection_id(mount.major, mount.minor))
        try:
            trace.open()
        except OSError as exc:
            trace.close()
            return FuseReading(None, f"not available: tracefs refused the trace ({exc.strerror or exc})")
        return cls(trace)

    def start(self) -> None:
        self.trace.start()

    def stop(self, span: Span) -> FuseReading:
        self.trace.stop()
        try:
            return FuseReading(self.trace.summary(span.began, span.began + span.wall))
        except (OSError, ValueError):
            return FuseReading(None)

    def per_interval(self, timeline: Timeline, started: float) -> Timeline:
        """The timeline with the FUSE requests of each of its intervals."""
        edges = [started + x for x in timeline.t[1:]]
        return dataclasses.replace(timeline, fuse_ops=self.trace.per_interval(started, edges[-1], edges))

    def abort(self) -> None:
        self.trace.close()


class DaemonProfile:
    """The daemon's CPU profile (perf record -g), inside Workspace.profiling()."""

    def __init__(self, profiler: Profiler) -> None:
        self.profiler = profiler

    @classmethod
    def wanted(cls, c: Context) -> DaemonProfile | ProfileReading | None:
        if not (c.ws.profiled and c.pids):
            return None
        why = profile.refused(c.pids)
        if why:
            return ProfileReading(None, f"not profiled: {why}")
        return cls(Profiler(c.pids, os.path.join(c.ws.local_dir(), f"{safe_name(c.label)}.perf.data")))

    def start(self) -> None:
        self.profiler.start()

    def stop(self, span: Span) -> ProfileReading:
        try:
            return ProfileReading(self.profiler.stop())
        except (OSError, subprocess.SubprocessError) as exc:
            return ProfileReading(None, f"the profile failed: {exc}")

    def abort(self) -> None:
        self.profiler.close()


class MachineRest:
    """What the rest of the machine used in the window, and how much its page cache grew."""

    def __init__(self, pids: list[int]) -> None:
        self.meter = RestMeter(pids)
        self.cached = 0

    def start(self) -> None:
        self.cached = psutil.virtual_memory().cached
        self.meter.start()

    def stop(self, span: Span) -> RestReading:
        return RestReading(self.meter.stop(), max(0, psutil.virtual_memory().cached - self.cached))

    def abort(self) -> None:
        pass  # counters read twice: nothing held


class CacheDisk:
    """Peak disk use of the daemon's cache directories, sampled (started when made)."""

    def __init__(self, meter: DiskMeter) -> None:
        self.meter = meter
        self.peak: int | None = None

    @classmethod
    def made(cls, c: Context) -> CacheDisk | None:
        paths = [p for p in c.ws.cache_dirs if os.path.isdir(p)]
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
        self.stop(_NO_SPAN)


class CageMemory:
    """The daemon's cgroup, where it runs under a memory limit: its peak and OOM kills."""

    def __init__(self, cage: cgroup.MemoryCage) -> None:
        self.cage = cage
        self.killed = cage.read().oom_kills  # before: a kill in the window is the window's

    @classmethod
    def made(cls, c: Context) -> CageMemory | None:
        owned = c.ws.target.owned
        return cls(owned.cage) if owned is not None and owned.cage is not None else None

    def start(self) -> None:
        self.cage.reset_peak()

    def stop(self, span: Span) -> MemoryReading:
        return MemoryReading(self.cage.read())

    def abort(self) -> None:
        pass


class DaemonRss:
    """The daemon's RSS just before the window and, --fsperf-rss-settle s after it, what it
    gave back (read outside the window)."""

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


class Sampled:
    """The timeline: bytes, the daemon's CPU, RSS, threads, fds and cache disk per interval."""

    def __init__(self, sampler: Sampler) -> None:
        self.sampler = sampler
        self.timeline: Timeline | None = None
        self._stopped = False

    def start(self) -> None:
        self.sampler.start()

    def stop(self, span: Span) -> TimelineReading:
        if not self._stopped:
            self._stopped = True
            self.timeline = self.sampler.stop()
        return TimelineReading(self.timeline)

    def abort(self) -> None:
        self.stop(_NO_SPAN)


@dataclass
class _Span:
    wall: float = 0.0
    began: float = 0.0
    io_span: tuple[float, float] | None = None
    expected: int | None = None
    stored: float | None = None


_NO_SPAN = _Span()

# Every meter of the window but the daemons' and the sampler, in the order each kind starts
# (AROUND ones stop in this order, PINNED ones in reverse), each made from the window's
# context: None where not wanted here, or a reading saying why not.
INSTRUMENTS: list[tuple[When, Callable[[Context], Instrument[Reading] | Reading | None]]] = [
    (When.AROUND, lambda c: StoreRequests(c.ws, c.here)),
    (When.AROUND, CageMemory.made),
    (When.AROUND, lambda c: DaemonRss(c.lookup, c.rss_before, c.ws.rss_settle)),
    (When.PINNED, DaemonProfile.wanted),
    (When.PINNED, lambda c: FuseTrace.armed(c.ws, c.lookup)),
    (When.PINNED, lambda c: MachineRest(c.pids)),
    (When.PINNED, lambda c: PageFaults(c.pids) if c.pids else None),
]
