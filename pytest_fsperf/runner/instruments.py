"""What the measured window (window.py) composes: each meter behind one small protocol,
started before the workload, stopped into the window after it, and released however the
window ended."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import psutil

from pytest_fsperf.infra.cgroup import Reading
from pytest_fsperf.measure import fusetrace, profile
from pytest_fsperf.measure.figures import DaemonStats
from pytest_fsperf.measure.fusetrace import FuseRequests, Trace, Tracing
from pytest_fsperf.measure.meters import DaemonMeter
from pytest_fsperf.measure.placement import Placement
from pytest_fsperf.measure.profile import Profile, Profiler
from pytest_fsperf.measure.rest import Rest, RestMeter
from pytest_fsperf.measure.timeline import Sampler, Timeline
from pytest_fsperf.mounts.daemon import Lookup
from pytest_fsperf.runner.target import safe_name
from pytest_fsperf.store import juicefs
from pytest_fsperf.store.requests import Requests
from pytest_fsperf.vocab import DaemonCache, PageCache

if TYPE_CHECKING:
    from pytest_fsperf.runner.space import Space


@dataclass
class Window:
    """What a measured window saw around the workload: cache state, daemon, cache disk."""

    lookup: Lookup
    cache: PageCache
    daemon_cache: DaemonCache
    cold_steps: tuple[str, ...]
    wall: float = 0.0
    daemon: DaemonStats | None = None
    disk_peak: int | None = None
    requests: Requests | None = None
    requests_note: str = ""
    timeline: Timeline | None = None
    daemon_counters: dict[str, float] | None = None
    placement: Placement | None = None
    fuse: FuseRequests | None = None  # the kernel's FUSE requests in the window
    fuse_note: str = ""  # why there is no trace, when there is none
    profile: Profile | None = None  # the daemon's CPU profile, inside profiling()
    profile_note: str = ""  # why a profile asked for was not taken
    peers: list[tuple[Lookup, DaemonMeter | None]] = dataclasses.field(default_factory=list)
    peer_stats: list[DaemonStats | None] = dataclasses.field(default_factory=list)
    cache_filled: int | None = None  # how much the machine's page cache grew in the window, bytes
    rest: Rest | None = None  # what the rest of the machine used in the window
    memory: Reading | None = None  # the daemon's cgroup, where it has a memory limit
    rss_after: int | None = None  # the daemon's RSS a while after the window
    rss_before: int | None = None  # and just before it
    page_cache: int | None = None  # the page cache the workload's files held at its end
    page_cache_note: str = ""  # why it was not counted
    io_span: tuple[float, float] | None = None  # when the I/O ran (monotonic s), if known
    expected: int | None = None  # the bytes the load generator says it moved, if known
    started: float = 0.0  # monotonic s of the timeline's t = 0
    began: float = 0.0  # monotonic s the workload began (after the pinning)


NOT_HERE = "not counted here: this machine's JuiceFS client did not run the workload"


class Instrument(Protocol):
    def start(self) -> None:
        """Begin: just before the workload."""

    def stop(self, w: Window) -> None:
        """The workload ended well: put the reading into the window."""

    def abort(self) -> None:
        """However the window ended: release what it holds (a no-op once stopped)."""


class Daemons:
    """The target's FUSE daemon and the daemons of the other clients measured with it."""

    def __init__(self, label: str, meter: DaemonMeter | None,
                 peers: list[tuple[Lookup, DaemonMeter | None]]) -> None:
        self.label, self.meter, self.peers = label, meter, peers

    def _all(self) -> list[DaemonMeter]:
        return [m for m in (self.meter, *(m for _o, m in self.peers)) if m is not None]

    def start(self) -> None:
        for m in self._all():
            m.start()

    def check(self) -> None:
        """After a failed workload: raise DaemonExited where a daemon died (the cause)."""
        for m in self._all():
            m.stop(self.label)

    def stop(self, w: Window) -> None:
        w.daemon = self.meter.stop(self.label, w.io_span, w.expected) if self.meter else None
        w.peer_stats = [m.stop(self.label, w.io_span, w.expected) if m else None
                        for _o, m in self.peers]

    def abort(self) -> None:
        for m in self._all():
            m.abort()


class StoreRequests:
    """The object requests behind the mount (the store's counters, or JuiceFS's .stats) and
    JuiceFS's own counters; started at once (before the sampler), as the meters are read
    around the whole window. here=False: the workload ran elsewhere: this machine's JuiceFS
    client's own counts are not taken for it (a store's counters are: they count every client)."""

    def __init__(self, ws: Space, w: Window, here: bool) -> None:
        self.store, w.requests_note = ws.target.request_meter()
        if not here and isinstance(self.store, juicefs.StatsMeter):
            self.store, w.requests_note = None, NOT_HERE
        self.own: juicefs.OwnMeter | None = None
        self.note = w.requests_note
        self._here, self._ws = here, ws

    def start(self) -> None:
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

    def stop(self, w: Window) -> None:
        if self.store is not None:
            try:
                w.requests = self.store.stop()
            except (OSError, ValueError) as exc:
                w.requests_note = f"the store's metrics failed: {exc}"
        if self.own is not None:
            with contextlib.suppress(OSError, ValueError):
                w.daemon_counters = self.own.stop()
        elif isinstance(self.store, juicefs.StatsMeter) and w.requests is not None:
            w.daemon_counters = self.store.counters

    def abort(self) -> None:
        pass  # counters read twice: nothing held


class FuseTrace:
    """The kernel's FUSE requests of the window (armed when made: tracefs opened)."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    @classmethod
    def armed(cls, ws: Space, lookup: Lookup, w: Window) -> FuseTrace | None:
        """The trace of the window, or None with why in w.fuse_note."""
        if not lookup.fuse:
            return None
        if ws.settings.fuse_trace == Tracing.OFF:
            w.fuse_note = "not traced (--fsperf-fuse-trace=off)"
            return None
        why = fusetrace.unavailable()
        if why:
            w.fuse_note = f"not available: {why}"
            return None
        try:
            mount = ws.target.mount()
        except (OSError, LookupError) as exc:
            w.fuse_note = f"not available: the mount could not be read ({exc})"
            return None
        trace = Trace(fusetrace.connection_id(mount.major, mount.minor))
        try:
            trace.open()
        except OSError as exc:
            trace.close()
            w.fuse_note = f"not available: tracefs refused the trace ({exc.strerror or exc})"
            return None
        return cls(trace)

    def start(self) -> None:
        self.trace.start()

    def stop(self, w: Window) -> None:
        self.trace.stop()

    def finish(self, w: Window, sampler: Sampler) -> None:
        """After a workload that ended well and the timeline: the requests of its window, and
        per interval of the timeline."""
        with contextlib.suppress(OSError, ValueError):
            w.fuse = self.trace.summary(w.began, w.began + w.wall)
        if w.timeline is not None and w.fuse is not None:
            edges = [sampler.started + x for x in w.timeline.t[1:]]
            w.timeline = dataclasses.replace(w.timeline, fuse_ops=self.trace.per_interval(
                sampler.started, edges[-1], edges))

    def abort(self) -> None:
        self.trace.close()


class DaemonProfile:
    """The daemon's CPU profile (perf record -g), inside Workspace.profiling()."""

    def __init__(self, profiler: Profiler) -> None:
        self.profiler = profiler

    @classmethod
    def wanted(cls, ws: Space, pids: list[int], label: str, w: Window) -> DaemonProfile | None:
        if not (ws.profiled and pids):
            return None
        why = profile.refused(pids)
        if why:
            w.profile_note = f"not profiled: {why}"
            return None
        return cls(Profiler(pids, os.path.join(ws.local_dir(), f"{safe_name(label)}.perf.data")))

    def start(self) -> None:
        self.profiler.start()

    def stop(self, w: Window) -> None:
        try:
            w.profile = self.profiler.stop()
        except (OSError, subprocess.SubprocessError) as exc:
            w.profile_note = f"the profile failed: {exc}"

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

    def stop(self, w: Window) -> None:
        w.rest = self.meter.stop()
        w.cache_filled = max(0, psutil.virtual_memory().cached - self.cached)

    def abort(self) -> None:
        pass  # counters read twice: nothing held
