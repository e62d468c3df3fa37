"""The measured window: the pending cold state taken, the daemon's meters, the store's and
the kernel's counters, the sampler and the progress line around one workload."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psutil

from pytest_fsperf.errors import MeasurementError, WorkloadHung
from pytest_fsperf.measure import fusetrace, profile, progress, timeline
from pytest_fsperf.measure.cache import ColdRead, DaemonCache, PageCache
from pytest_fsperf.measure.diskmeter import DiskMeter
from pytest_fsperf.measure.figures import DaemonStats
from pytest_fsperf.measure.fusetrace import FuseRequests, Trace, Tracing
from pytest_fsperf.measure.meters import DaemonExited, DaemonMeter
from pytest_fsperf.measure.placement import Placement, pinned
from pytest_fsperf.measure.profile import Profile, Profiler
from pytest_fsperf.measure.rest import Rest, RestMeter, own_cpu
from pytest_fsperf.measure.timeline import Timeline
from pytest_fsperf.mounts.daemon import Lookup
from pytest_fsperf.result.workload import OpStats, WorkloadResult, check_cold
from pytest_fsperf.runner.target import safe_name
from pytest_fsperf.store import juicefs
from pytest_fsperf.store.cost import Cost
from pytest_fsperf.store.requests import Requests
from pytest_fsperf.vocab import EngineKind

if TYPE_CHECKING:
    from pytest_fsperf.runner.workspace import Workspace

NOT_HERE = "not counted here: this machine's JuiceFS client did not run the workload"


def _daemon_cache(lookup: Lookup, page: PageCache | None,
                  daemon_cold: DaemonCache | None) -> DaemonCache:
    if not lookup.fuse:
        return DaemonCache.NO_DAEMON
    if page is None:
        return DaemonCache.WARM
    return daemon_cold or DaemonCache.UNKNOWN


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
    io_span: tuple[float, float] | None = None  # when the I/O ran (monotonic s), if known
    expected: int | None = None  # the bytes the load generator says it moved, if known
    started: float = 0.0  # monotonic s of the timeline's t = 0


def measure_engine(ws: Workspace, label: str, judged: bool, kind: EngineKind, options: dict[str, str],
            run: Callable[[], OpStats]) -> WorkloadResult:
    """Measure an in-process engine with the daemon meter, as fio is measured. Past the
    workload deadline (--fsperf-workload-timeout, else an hour) the hang is handled as for
    fio: on a mount the plugin owns, the aborted connection ends the engine's waits."""
    timeout = ws.state.settings.workload_timeout or 3600.0
    fired = threading.Event()
    told: list[str] = []

    def hang() -> None:
        fired.set()  # before the abort, which is what wakes the engine
        told.append(ws.on_hang())

    timer = threading.Timer(timeout, hang)
    timer.daemon = True
    with measured(ws, label, progress.own_io) as w:
        cpu0 = own_cpu()
        timer.start()
        try:
            ops = run()
        except (MeasurementError, OSError):
            if not fired.is_set():  # failed for a reason of its own
                raise
        finally:
            timer.cancel()
        if fired.is_set():
            timer.join()
            raise WorkloadHung(f"{label}: did not finish within {timeout:g} s: the filesystem "
                               f"stopped answering{told[0]}")
        cpu = own_cpu() - cpu0
    return record(ws, w, name=label, kind=kind, options=options, read=None, write=None,
                       tool_cpu_percent=100.0 * cpu / w.wall if w.wall > 0 else 0.0,
                       judged=judged, ops=ops)


@contextlib.contextmanager
def measured(ws: Workspace, label: str, counter: Callable[[], int],
             on_exit: Callable[[], None] | None = None,
             timed_io: bool = False, peers: int = 0,
             here: bool = True, spanned: bool = False) -> Iterator[Window]:
    """Take the pending cold state, then measure the body with the daemon meter, the
    cache-disk sampler and the progress line. A failure because the daemon died is
    reported as the daemon's death. timed_io: the counter counts the workload's bytes
    and nothing else (fio's processes), so the daemon's CPU% is taken over the time
    they moved; an in-process engine's run is its window already. peers: the daemons of
    the first `peers` other clients are measured too (w.peers, in the order of ws.peers).
    spanned: the body sets w.io_span, the time the I/O ran as the load generator says
    (fio): the meters sample the daemons' CPU for it. here=False: the workload ran
    elsewhere (hosts): this machine's JuiceFS client's own counts are not taken for it
    (a store's counters are: they count every client)."""
    lookup = ws.target.lookup_daemon()  # after any remount
    page, daemon_cold, steps = ws.take_cold()
    w = Window(lookup, page or PageCache.WARM, _daemon_cache(lookup, page, daemon_cold),
               steps if page else ())
    moved = counter if timed_io else None
    meter = (DaemonMeter(lookup.daemon, on_exit=on_exit, moved=moved, spanned=spanned)
             if lookup.daemon else None)
    others = [p.lookup_daemon() for p in ws.peers[:peers]]
    w.peers = [(o, DaemonMeter(o.daemon, on_exit=on_exit, moved=moved, spanned=spanned)
                if o.daemon else None) for o in others]
    pids = [m.pid for o in (lookup, *others) if o.daemon for m in o.daemon.members]
    disk = _disk_meter(ws, )
    store, w.requests_note = ws.target.request_meter()
    if not here and isinstance(store, juicefs.StatsMeter):
        store, w.requests_note = None, NOT_HERE
    if store is not None:
        try:
            store.start()
        except (OSError, ValueError) as exc:
            store, w.requests_note = None, f"the store's metrics failed: {exc}"
    # JuiceFS's own counters: from the request meter's reads when .stats is that already
    stats_root = (None if isinstance(store, juicefs.StatsMeter) or not here
                  else ws.target.juicefs_stats())
    own = juicefs.OwnMeter(stats_root) if stats_root is not None else None
    if own is not None:
        try:
            own.start()
        except (OSError, ValueError):
            own = None
    trace, w.fuse_note = _trace(ws, lookup)
    profiler = None
    if ws.profiled and pids:
        why = profile.refused(pids)
        if why:
            w.profile_note = f"not profiled: {why}"
        else:
            profiler = Profiler(pids, os.path.join(ws.local_dir(),
                                                   f"{safe_name(label)}.perf.data"))
    limit = ws.state.settings.stall_limit
    sampler = timeline.Sampler(counter, pids,
                               (lambda: disk.last) if disk else None,
                               stall_limit=limit if on_exit is not None else None,
                               on_stall=on_exit)
    sampler.start()
    w.started = sampler.started
    shown = _progress(ws, label, counter, sampler)
    try:
        for m in (meter, *(m for _o, m in w.peers)):
            if m is not None:
                m.start()
        w.placement = ws.settings.cpus.placement(ws.paired)
        try:
            with pinned(w.placement, pids):
                if profiler is not None:
                    profiler.start()
                if trace is not None:
                    trace.start()
                cached = psutil.virtual_memory().cached
                rest = RestMeter(pids)
                rest.start()
                t0 = time.monotonic()  # after the pinning: its cost is not the workload's
                yield w
        except (DaemonExited, WorkloadHung):  # the cause is named already
            raise
        except MeasurementError:
            # did the workload fail because a daemon died? Then say that.
            for m in (meter, *(m for _o, m in w.peers)):
                if m is not None:
                    m.stop(label)  # raises DaemonExited if it is gone
            if sampler.stalled is not None:  # stopped by the stall limit: say that
                raise MeasurementError(_stalled(label, sampler.stalled, limit)) from None
            raise
        w.wall = time.monotonic() - t0
        w.rest = rest.stop()
        w.cache_filled = max(0, psutil.virtual_memory().cached - cached)
        if trace is not None:
            trace.stop()
        if profiler is not None:
            try:
                w.profile = profiler.stop()
            except (OSError, subprocess.SubprocessError) as exc:
                w.profile_note = f"the profile failed: {exc}"
        if sampler.stalled is not None:
            raise MeasurementError(_stalled(label, sampler.stalled, limit))
        w.daemon = meter.stop(label, w.io_span, w.expected) if meter else None
        w.peer_stats = [m.stop(label, w.io_span, w.expected) if m else None
                        for _o, m in w.peers]
        if store is not None:
            try:
                w.requests = store.stop()
            except (OSError, ValueError) as exc:
                w.requests_note = f"the store's metrics failed: {exc}"
        if own is not None:
            with contextlib.suppress(OSError, ValueError):
                w.daemon_counters = own.stop()
        elif isinstance(store, juicefs.StatsMeter) and w.requests is not None:
            w.daemon_counters = store.counters
    except DaemonExited as exc:  # the target's own daemon: what its log said last
        owned = ws.target.owned
        mine = meter is not None and exc.pid == meter.daemon.pid
        said = owned.last_words() if owned is not None and mine else ""
        if not said:
            raise
        raise DaemonExited(f"{exc}; its log ends: {said}", exc.pid) from None
    finally:
        w.timeline = sampler.stop()
        if trace is not None:
            if w.wall:
                with contextlib.suppress(OSError, ValueError):
                    w.fuse = trace.summary(t0, t0 + w.wall)
                if w.timeline is not None and w.fuse is not None:
                    edges = [sampler.started + x for x in w.timeline.t[1:]]
                    w.timeline = dataclasses.replace(w.timeline, fuse_ops=trace.per_interval(
                        sampler.started, edges[-1], edges))
            trace.close()
        if profiler is not None:
            profiler.close()
        if shown:
            shown.stop()
        for m in (meter, *(m for _o, m in w.peers)):
            if m is not None:
                m.abort()
        w.disk_peak = disk.stop() if disk else None


def _trace(ws: Workspace, lookup: Lookup) -> tuple[Trace | None, str]:
    """The FUSE request trace of the window (armed, not started), or why there is none."""
    setting = ws.settings.fuse_trace
    if not lookup.fuse:
        return None, ""
    if setting == Tracing.OFF:
        return None, "not traced (--fsperf-fuse-trace=off)"
    why = fusetrace.unavailable()
    if why:
        return None, f"not available: {why}"
    try:
        mount = ws.target.mount()
    except (OSError, LookupError) as exc:
        return None, f"not available: the mount could not be read ({exc})"
    trace = Trace(fusetrace.connection_id(mount.major, mount.minor))
    try:
        trace.open()
    except OSError as exc:
        trace.close()
        return None, f"not available: tracefs refused the trace ({exc.strerror or exc})"
    return trace, ""


def _cost(ws: Workspace, q: Requests | None) -> Cost | None:
    price = ws.state.settings.price_list
    return price.cost(q) if q is not None and price is not None else None


def record(ws: Workspace, w: Window, cold: tuple[ColdRead, str] | None = None,
           **fields: Any) -> WorkloadResult:
    """The result of a measured window; cold: the cold-read check, where the caller made
    it (many clients: each client's daemon against its own bytes)."""
    result = WorkloadResult(
        test=ws.test, cache=w.cache, daemon_cache=w.daemon_cache, daemon=w.daemon,
        daemon_note=w.lookup.note, wall_seconds=w.wall, mount=ws.target.describe(),
        cold_steps=w.cold_steps, cache_disk_peak_bytes=w.disk_peak, requests=w.requests,
        requests_note=w.requests_note, cost=_cost(ws, w.requests), timeline=w.timeline,
        daemon_counters=w.daemon_counters, placement=w.placement, fuse=w.fuse,
        fuse_note=w.fuse_note, profile=w.profile, profile_note=w.profile_note,
        cache_filled=w.cache_filled, rest=w.rest, **fields)
    found, evidence = cold or check_cold(w.cache, w.daemon, result.read_only_bytes, w.fuse)
    return dataclasses.replace(result, cold_read=found, cold_evidence=evidence)


def _progress(ws: Workspace, label: str, counter: Callable[[], int],
              sampler: timeline.Sampler) -> progress.Progress | None:
    terminal = ws.state.progress_write
    if terminal is None:
        return None

    def now() -> str:
        bw, rss = sampler.latest()
        return f"; now {bw / 1e6:,.1f} MB/s" + (f", daemon RSS {rss / 1e6:,.0f} MB" if rss else "")

    line = progress.Progress(terminal[0], label, counter, terminal[1], now)
    line.start()
    return line


def _disk_meter(ws: Workspace) -> DiskMeter | None:
    paths = [p for p in ws.cache_dirs if os.path.isdir(p)]
    if not paths:
        return None
    meter = DiskMeter(paths)
    meter.start()
    return meter


def _stalled(label: str, seconds: float, limit: float | None) -> str:
    return (f"{label}: stopped after {seconds:g} s without progress "
            f"(--fsperf-stall-limit={limit or 0:g})")
