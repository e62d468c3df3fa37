"""The measured window: the pending cold state taken, the daemon's meters, the store's and
the kernel's counters, the sampler and the progress line around one workload."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from pytest_fsperf.errors import MeasurementError, WorkloadHung
from pytest_fsperf.measure import progress, timeline
from pytest_fsperf.measure.cache import check_cold, device_read_bytes, served_itself, waited_outside
from pytest_fsperf.measure.cage import CageMemory
from pytest_fsperf.measure.daemons import Daemons
from pytest_fsperf.measure.diskmeter import CacheDisk
from pytest_fsperf.measure.fuse_requests import FuseTrace
from pytest_fsperf.measure.meters import DaemonExited, DaemonMeter
from pytest_fsperf.measure.placement import PlacementReading, pinned
from pytest_fsperf.measure.reading import Instrument, Reading, When
from pytest_fsperf.measure.registry import INSTRUMENTS, Context
from pytest_fsperf.measure.rest import own_cpu
from pytest_fsperf.measure.rss import rss_of
from pytest_fsperf.measure.store_requests import StoreRequests
from pytest_fsperf.measure.timeline import Sampled, TimelineReading
from pytest_fsperf.mounts.daemon import Lookup
from pytest_fsperf.mounts.mounter import MountedFs
from pytest_fsperf.result.parts import OpStats
from pytest_fsperf.result.store import Cost, Requests
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner.readings import Window
from pytest_fsperf.runner.space import Space
from pytest_fsperf.runner.target import safe_name
from pytest_fsperf.vocab import ColdRead, DaemonCache, EngineKind, PageCache


def _daemon_cache(lookup: Lookup, page: PageCache | None,
                  daemon_cold: DaemonCache | None) -> DaemonCache:
    if not lookup.fuse:
        return DaemonCache.NO_DAEMON
    if page is None:
        return DaemonCache.WARM
    return daemon_cold or DaemonCache.UNKNOWN


def measure_engine(ws: Space, label: str, judged: bool, kind: EngineKind,
                   options: dict[str, str], run: Callable[[], OpStats],
                   counter: Callable[[], int] | None = None,
                   before: Callable[[Window], None] | None = None) -> WorkloadResult:
    """Measure an in-process engine with the daemon meter, as fio is measured. Past the
    workload deadline (--fsperf-workload-timeout, else an hour) the hang is handled as for
    fio: on a mount the plugin owns, the aborted connection ends the engine's waits."""
    timeout = ws.running.workload_timeout or 3600.0
    fired = threading.Event()
    told: list[str] = []

    def hang() -> None:
        fired.set()  # before the abort, which is what wakes the engine
        told.append(ws.on_hang())

    timer = threading.Timer(timeout, hang)
    timer.daemon = True
    with measured(ws, label, counter or progress.own_io, before=before) as w:
        children = kind is EngineKind.FILES  # the compiled worker is a child; the others are not
        cpu0 = own_cpu(children)
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
            raise WorkloadHung(f"{label}: did not finish within {timeout:g} s{told[0]}")
        cpu = own_cpu(children) - cpu0
    return record(ws, w, name=label, kind=kind, options=options, read=None, write=None,
                       tool_cpu_percent=100.0 * cpu / w.wall if w.wall > 0 else 0.0,
                       judged=judged, ops=ops)


@contextlib.contextmanager
def measured(ws: Space, label: str, counter: Callable[[], int],
             on_exit: Callable[[], None] | None = None,
             timed_io: bool = False, peers: int = 0,
             here: bool = True, spanned: bool = False,
             before: Callable[[Window], None] | None = None) -> Iterator[Window]:
    """Take the pending cold state, then measure the body with every instrument, the
    sampler and the progress line; each instrument's reading goes into the window. A failure
    because the daemon died is reported as the daemon's death. timed_io: the counter counts
    the workload's bytes and nothing else (fio's processes), so the daemon's CPU% is taken
    over the time they moved; an in-process engine's run is its window already. peers: the
    daemons of the first `peers` other clients are measured too (w.peers, in the order of
    ws.peers). spanned: the body sets w.io_span, the time the I/O ran as the load generator
    says (fio): the meters sample the daemons' CPU for it. here=False: the workload ran
    elsewhere (hosts): this machine's JuiceFS client's own counts are not taken for it (a
    store's counters are: they count every client)."""
    lookup = ws.target.lookup_daemon()  # after any remount
    page, daemon_cold, steps = ws.take_cold()
    w = Window(lookup, page or PageCache.WARM, _daemon_cache(lookup, page, daemon_cold),
               steps if page else ())
    if before is not None:  # after the cold start, before the meters: e.g. files opened
        before(w)
    m = _meters(ws, w, lookup, label, counter, on_exit, timed_io, peers, here, spanned)
    daemons, outer, inner, sampler, disk, limit = m.daemons, m.outer, m.inner, m.sampler, m.disk, m.limit
    owned, cage, pids = ws.target.owned, m.cage, m.pids
    sampled = Sampled(sampler)
    for each in outer:
        each.start()
    sampled.start()
    w.started = sampler.started
    shown = _progress(ws, label, counter, sampler)
    with contextlib.ExitStack() as release:  # however the window ends, last first:
        if disk is not None:
            release.callback(lambda: w.put(disk.stop(w)))
        release.callback(daemons.abort)
        if shown:
            release.callback(shown.stop)
        for each in inner:
            release.callback(each.abort)
        release.callback(_timeline, w, sampled, m.trace)
        try:
            daemons.start()
            w.put(PlacementReading(ws.running.cpus.placement(ws.paired)))
            placement = w.get(PlacementReading)
            try:
                with pinned(placement.placement if placement else None, pids):
                    for each in inner:
                        each.start()
                    device0 = (device_read_bytes(str(ws.workdir))
                               if lookup.daemon is None and w.cache.cold else None)
                    w.began = time.monotonic()  # after the pinning: its cost is not the workload's
                    yield w
            except (DaemonExited, WorkloadHung):  # the cause is named already
                raise
            except MeasurementError:
                daemons.check()  # did the workload fail because a daemon died? Then say that.
                if sampler.stalled is not None:  # stopped by the stall limit: say that
                    raise MeasurementError(_stalled(label, sampler.stalled, limit)) from None
                raise
            w.wall = time.monotonic() - w.began
            device1 = device_read_bytes(str(ws.workdir)) if device0 is not None else None
            w.device_read = device1 - device0 if device0 is not None and device1 is not None else None
            for each in reversed(inner):
                w.put(each.stop(w))
            if sampler.stalled is not None:
                raise MeasurementError(_stalled(label, sampler.stalled, limit))
            w.put(daemons.stop(w))
            w.peer_stats = daemons.peer_stats
            for each in outer:
                w.put(each.stop(w))
        except DaemonExited as exc:  # the target's own daemon: what its log said last
            told = _death(exc, daemons, owned, cage)
            if told is None:
                raise
            raise told from None


@dataclasses.dataclass
class _Meters:
    """What measures a window, made before it opens."""

    daemons: Daemons
    outer: list[Instrument[Reading]]  # read around the whole window
    inner: list[Instrument[Reading]]  # started last, stopped first
    trace: FuseTrace | None
    sampler: timeline.Sampler
    disk: CacheDisk | None
    cage: CageMemory | None
    pids: list[int]
    limit: float | None  # the stall limit


def _meters(ws: Space, w: Window, lookup: Lookup, label: str, counter: Callable[[], int],
            on_exit: Callable[[], None] | None, timed_io: bool, peers: int, here: bool,
            spanned: bool) -> _Meters:
    """The window's meters: the daemons' (and the first `peers` other clients'), the store's,
    the cgroup's, the RSS, the pinned instruments and the sampler."""
    moved = counter if timed_io else None
    others = [p.lookup_daemon() for p in ws.peers[:peers]]
    w.peers = [(o, DaemonMeter(o.daemon, on_exit=on_exit, moved=moved, spanned=spanned)
                if o.daemon else None) for o in others]
    daemons = Daemons(label, DaemonMeter(lookup.daemon, on_exit=on_exit, moved=moved, spanned=spanned)
                      if lookup.daemon else None, w.peers)
    pids = [m.pid for o in (lookup, *others) if o.daemon for m in o.daemon.members]
    # (also for a cold read on a daemon not restarted: what its memory may already hold)
    unknown = w.cache.cold and w.daemon_cache == DaemonCache.UNKNOWN
    rss_before = w.rss_before
    if (ws.rss_settle or unknown) and rss_before is None:
        rss_before = rss_of(lookup)
    owned, target = ws.target.owned, ws.target
    context = Context(
        lookup=lookup, pids=tuple(pids), here=here, rss_before=rss_before, rss_settle=ws.rss_settle,
        tracing=ws.running.fuse_trace, mount=target.mount,
        profile_to=os.path.join(ws.local_dir(), f"{safe_name(label)}.perf.data")
        if ws.profiled and pids else None,
        cage=owned.cage if owned is not None else None, requests=target.request_meter(),
        proxy=target.conditions_proxy(), juicefs_root=target.juicefs_stats)
    disk = CacheDisk.made(tuple(ws.cache_dirs))
    made = [(listed.when, listed.make(context)) for listed in INSTRUMENTS]
    w.put(*(m for _w, m in made if isinstance(m, Reading)))  # why a meter is not here
    meters = [(when, m) for when, m in made if m is not None and not isinstance(m, Reading)]
    outer = [m for when, m in meters if when is When.AROUND]
    inner = [m for when, m in meters if when is When.PINNED]
    store = next(m for m in outer if isinstance(m, StoreRequests))
    w.received = store.received
    cage = next((m for m in outer if isinstance(m, CageMemory)), None)
    trace = next((m for m in inner if isinstance(m, FuseTrace)), None)
    limit = ws.running.stall_limit
    sampler = timeline.Sampler(counter, pids, (lambda: disk.meter.last) if disk else None,
                               stall_limit=limit if on_exit is not None else None,
                               on_stall=on_exit)
    return _Meters(daemons, outer, inner, trace, sampler, disk, cage, pids, limit)


def _death(exc: DaemonExited, daemons: Daemons, owned: MountedFs | None,
           cage: CageMemory | None) -> DaemonExited | None:
    """The target's own daemon's death with what its log said last and whether the kernel
    killed it for memory; None where there is nothing to add."""
    mine = daemons.meter is not None and exc.pid == daemons.meter.daemon.pid
    said = owned.last_words() if owned is not None and mine else ""
    oom = cage.cause() if mine and cage is not None else ""
    if not said and not oom:
        return None
    kind = KilledForMemory if oom else DaemonExited
    return kind(f"{oom}{exc}" + (f"; its log ends: {said}" if said else ""), exc.pid)


class KilledForMemory(DaemonExited):
    """The daemon died because the kernel killed it for its cgroup's memory limit."""


def _timeline(w: Window, sampled: Sampled, trace: FuseTrace | None) -> None:
    """The window's timeline; with the FUSE requests of a workload that ended well."""
    found = sampled.stop(w)
    if trace is not None and w.wall and found.timeline is not None and w.fuse is not None:
        found = TimelineReading(trace.per_interval(found.timeline, w.started))
    w.put(found)


def _cost(ws: Space, q: Requests | None) -> Cost | None:
    price = ws.running.price_list
    return price.cost(q) if q is not None and price is not None else None


def record(ws: Space, w: Window, cold: tuple[ColdRead, str] | None = None,
           **fields: Any) -> WorkloadResult:
    """The result of a measured window, built from its readings; cold: the cold-read check,
    where the caller made it (many clients: each client's daemon against its own bytes)."""
    result = WorkloadResult(**{
        "test": ws.test, "cache": w.cache, "daemon_cache": w.daemon_cache, "daemon": None,
        "daemon_note": w.lookup.note, "wall_seconds": w.wall, "mount": ws.target.describe(),
        "cold_steps": w.cold_steps, "cost": _cost(ws, w.requests), **w.fields(), **fields})
    found, evidence = cold or check_cold(w.cache, w.daemon, result.read_only_bytes, w.fuse,
                                         w.device_read)
    itself = served_itself(w.cache, w.daemon_cache, result.read_only_bytes,
                           w.requests.sent_bytes if w.requests is not None else None,
                           w.rss_before, _file_set(ws) if w.daemon_cache == DaemonCache.UNKNOWN else None,
                           (w.daemon.read_bytes, w.daemon.write_bytes) if w.daemon else (None, None))
    p99 = result.lat_p99_ns
    outside = waited_outside(w.daemon.cpu_percent if w.daemon else None,
                             p99 / 1e9 if p99 else None,
                             w.requests.ttfb_at_most.get("p99") if w.requests else None)
    if outside:
        result = dataclasses.replace(result, notes=(*result.notes, outside))
    if itself:  # never called cold: the figure is the daemon's cache, said with its evidence
        return dataclasses.replace(result, cold_read=found, cold_evidence=evidence,
                                   daemon_cache=DaemonCache.SERVED_ITSELF,
                                   notes=(*result.notes, f"warm in the daemon: {itself}"))
    return dataclasses.replace(result, cold_read=found, cold_evidence=evidence)


def _file_set(ws: Space) -> int:
    """The bytes of the files directly in the work dir (fio's), 0 where it holds none."""
    total = 0
    with contextlib.suppress(OSError), os.scandir(ws.workdir) as entries:
        for e in entries:
            with contextlib.suppress(OSError):
                if e.is_file(follow_symlinks=False):
                    total += e.stat(follow_symlinks=False).st_size
    return total


def _progress(ws: Space, label: str, counter: Callable[[], int],
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


def _stalled(label: str, seconds: float, limit: float | None) -> str:
    return (f"{label}: stopped after {seconds:g} s without progress "
            f"(--fsperf-stall-limit={limit or 0:g})")
