"""Where the daemon and the load run: pinned to CPU sets, so that every run of an A/B meets
the same placement.

On a VM, waking a task on another vCPU costs the waker far more than on its own (the
hypervisor delivers the IPI to a halted vCPU). A FUSE daemon wakes the reader once per
request, so where the scheduler puts the two decides its cost per byte: bindfs over tmpfs
here read 1 GiB at 2.5 GB/s and 0.3 daemon CPU-s/GB with fio on the daemon's CPU, and at
0.95 GB/s and 0.55 with fio on the other; unpinned, runs landed in either state at random
(issue 24: the gate of a build against itself saw two clusters, 2.4x apart).
"""

from __future__ import annotations

import contextlib
import enum
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import psutil

from pytest_fsperf.errors import UsageError
from pytest_fsperf.measure.reading import Reading
from pytest_fsperf.result.machine import Placement, cpus_text


class CpuMode(enum.Enum):
    OFF = "off"  # the scheduler places them (the plain runs' default)
    SPLIT = "split"  # the daemon on the upper half of the CPUs, the load on the lower half
    AUTO = "auto"  # split in an interleaved A/B (gate, compare), off elsewhere
    GIVEN = "given"  # the user's own sets


@dataclass(frozen=True)
class CpuSetting:
    mode: CpuMode
    given: Placement | None = None  # CpuMode.GIVEN only

    def placement(self, paired: bool, cpus: Iterable[int] | None = None) -> Placement | None:
        """The placement for a run (paired: a run of an interleaved A/B), or None: unpinned.
        SPLIT needs two CPUs; on one, nothing is pinned."""
        if self.mode == CpuMode.GIVEN:
            return self.given
        if self.mode == CpuMode.OFF or (self.mode == CpuMode.AUTO and not paired):
            return None
        return split(sorted(os.sched_getaffinity(0) if cpus is None else cpus))


AUTO = CpuSetting(CpuMode.AUTO)


def split(cpus: list[int]) -> Placement | None:
    if len(cpus) < 2:
        return None
    half = len(cpus) // 2
    return Placement(daemon=tuple(cpus[half:]), load=tuple(cpus[:half]))


def parse(text: str, where: str, allowed: Iterable[int] | None = None) -> CpuSetting:
    """off | auto | split | DAEMON/LOAD, each a CPU list such as 1 or 2-3,6 (as taskset -c)."""
    word = text.strip().lower()
    for mode in (CpuMode.OFF, CpuMode.AUTO, CpuMode.SPLIT):
        if word == mode.value:
            return CpuSetting(mode)
    daemon, sep, load = word.partition("/")
    if not sep:
        raise UsageError(f"{where}: {text!r} is not off, auto, split or DAEMON_CPUS/LOAD_CPUS "
                         "(e.g. 1/0)")
    have = set(os.sched_getaffinity(0) if allowed is None else allowed)
    sets = []
    for part, who in ((daemon, "daemon"), (load, "load")):
        cpus = _cpu_list(part, f"{where}: the {who}'s CPUs {part[:40]!r}")
        missing = sorted(set(cpus) - have)
        if missing:
            raise UsageError(f"{where}: the {who}'s CPU {cpus_text(tuple(missing))} is not one this "
                             f"process may use ({cpus_text(tuple(sorted(have)))})")
        sets.append(cpus)
    return CpuSetting(CpuMode.GIVEN, Placement(daemon=sets[0], load=sets[1]))


def _cpu_list(text: str, where: str) -> tuple[int, ...]:
    found: set[int] = set()
    for item in text.split(","):
        low, dash, high = item.strip().partition("-")
        if not _cpu_number(low) or (dash and not _cpu_number(high)):
            raise UsageError(f"{where} is not a CPU list such as 1 or 2-3,6 (CPUs 0 to {MAX_CPU})")
        first, last = int(low), int(high) if dash else int(low)
        if last < first:
            raise UsageError(f"{where}: {item.strip()} runs backwards")
        found.update(range(first, last + 1))
    return tuple(sorted(found))


MAX_CPU = 65535  # a CPU number past any machine's (Linux's NR_CPUS is at most 8192)


def _cpu_number(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 5 and int(text) <= MAX_CPU


def _threads(pids: Iterable[int]) -> list[int]:
    found: list[int] = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            found.extend(t.id for t in psutil.Process(pid).threads())
    return found


@contextlib.contextmanager
def pinned(placement: Placement | None, daemon_pids: Iterable[int]) -> Iterator[None]:
    """Every thread of the daemon's processes on placement.daemon, and the calling thread
    (the load: fio started from it, an in-process engine's threads made by it) on
    placement.load, for the body; then each back where it was (a daemon thread made during
    the body goes where its process's first thread was)."""
    if placement is None:
        yield
        return
    pids = list(daemon_pids)
    saved: dict[int, set[int]] = {}
    for tid in _threads(pids):
        with contextlib.suppress(OSError):  # gone meanwhile, or not ours to move
            saved[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, placement.daemon)
    own = os.sched_getaffinity(0)
    os.sched_setaffinity(0, placement.load)
    try:
        yield
    finally:
        os.sched_setaffinity(0, own)
        for pid in pids:
            for tid in _threads([pid]):
                cpus = saved.get(tid, saved.get(pid))
                if cpus is not None:
                    with contextlib.suppress(OSError):
                        os.sched_setaffinity(tid, cpus)


@dataclass(frozen=True)
class PlacementReading(Reading):
    placement: Placement | None  # the CPUs the daemon and the load were pinned to
