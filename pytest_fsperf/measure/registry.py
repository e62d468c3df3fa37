"""The one list of the meters a measured window runs (runner/window.py), each made from what
the window resolved for it (Context), each following the one protocol (reading.Instrument):
started just before the workload, stopped after it into its typed reading, released however
the window ended. The daemons' meters and the sampler are the window's own: the daemon is
what it measures, and the sampler spans it.

Adding a meter: its module here in measure/ (the meter; where it yields figures of its own,
their keys as its FIGURES and a stop() that returns reading.Figures), those figures in
figures.py (`measured=True`), and one line in INSTRUMENTS. A meter whose reading is a part
of the result of its own (the store's requests, the FUSE trace) has a field there too."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_fsperf.infra import cgroup
from pytest_fsperf.infra.mountinfo import Mount
from pytest_fsperf.measure.cage import CageMemory
from pytest_fsperf.measure.faults import PageFaults
from pytest_fsperf.measure.fuse_requests import FuseTrace
from pytest_fsperf.measure.fusetrace import Tracing
from pytest_fsperf.measure.profiled import DaemonProfile
from pytest_fsperf.measure.reading import Instrument, Reading, When
from pytest_fsperf.measure.rest import MachineRest
from pytest_fsperf.measure.rss import DaemonRss
from pytest_fsperf.measure.storage_io import StorageIo
from pytest_fsperf.measure.store_requests import StoreRequests
from pytest_fsperf.mounts.daemon import Lookup
from pytest_fsperf.store.conditioner import Conditioned
from pytest_fsperf.store.requests import Meter


@dataclass(frozen=True)
class Context:
    """What a listed meter is made from, resolved once per window by the runner from the
    test's settings and its mount: no meter reads a setting or the mount itself."""

    lookup: Lookup  # the target's daemon, found after any remount
    pids: tuple[int, ...]  # its processes, and those of the other clients' daemons measured
    here: bool  # the workload ran on this machine (not on hosts or in pods)
    rss_before: int | None  # the daemon's RSS just before the window, where taken
    rss_settle: float  # s after the window before its RSS is read again (0: not read)
    tracing: Tracing
    mount: Callable[[], Mount]  # the mount's entry now (its device: the FUSE connection)
    profile_to: str | None  # where the daemon's profile goes; None: not profiled
    cage: cgroup.MemoryCage | None  # the daemon's cgroup, where it runs under a memory limit
    requests: tuple[Meter | None, str]  # the store's request counters, else why not
    proxy: Conditioned | None  # the store conditions' proxy, where it runs under conditions
    juicefs_root: Callable[[], Path | None]  # the mount root, where JuiceFS keeps its .stats


Made = Instrument[Reading] | Reading | None  # a meter; else a reading saying why not; None: n/a


@dataclass(frozen=True)
class Listed:
    """One meter of the list: when it runs, and what makes it."""

    when: When
    make: Callable[[Context], Made]


# In the order each kind starts (AROUND ones stop in this order, PINNED ones in reverse).
INSTRUMENTS: tuple[Listed, ...] = (
    Listed(When.AROUND, lambda c: StoreRequests(c.requests, c.proxy, c.juicefs_root, c.here)),
    Listed(When.AROUND, lambda c: CageMemory.made(c.cage)),
    Listed(When.AROUND, lambda c: DaemonRss(c.lookup, c.rss_before, c.rss_settle)),
    Listed(When.PINNED, lambda c: DaemonProfile.wanted(c.profile_to, c.pids)),
    Listed(When.PINNED, lambda c: FuseTrace.armed(c.lookup.fuse, c.tracing, c.mount)),
    Listed(When.PINNED, lambda c: MachineRest(c.pids)),
    Listed(When.PINNED, lambda c: PageFaults.made(c.pids)),
    Listed(When.PINNED, lambda c: StorageIo.made(c.pids)),
)
