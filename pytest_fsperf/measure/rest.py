"""The rest of the machine during a run: the CPU of processes that are neither the daemon's
nor the plugin's own (the load generator, the meters, an embedded object store), and a VM's
steal.

An interleaved A/B drops a pair whose two runs met different machines. The canary read
before each run said so only roughly (two readings 2 s apart on an idle machine moved up to
21%, and right after a cold start it misread a steady CPU hog as a change: 13 false drops
in 26 gate trials) and cost 0.25 s a run. This is read over the run itself, from the
kernel's counters, for nothing: the machine's busy CPU time in processes (psutil.cpu_times:
user, nice, system) less that of the daemon's processes, of this process's tree and of the
kernel's own threads. Kernel threads and interrupts work for the workload and for the cold
start before it (writeback, reclaim, a VM's free page reporting after a cache drop), so
they are not the rest; a neighbour's busy process is, and moved it by 0.66-0.76 cores when
it started between the two runs of a pair (benchmarks/rest_jitter.py).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psutil

from pytest_fsperf.measure.reading import Reading, Span
from pytest_fsperf.result.daemon import SHORT_WINDOW
from pytest_fsperf.result.machine import Rest


def _busy(t: Any) -> float:  # psutil's scputimes: the time in processes, not interrupts
    return sum(getattr(t, f, 0.0) for f in ("user", "nice", "system"))


def _idle(t: Any) -> float:
    return sum(getattr(t, f, 0.0) for f in ("idle", "iowait"))


def own_cpu(children: bool = True) -> float:
    """This process and (children=True) its reaped children (fio or sysbench once waited
    for), in CPU-seconds. An engine of this process alone counts no child: a helper reaped
    in its window (the mount probe) once gave a 10 ms stat 833% of a 2-CPU machine."""
    t = os.times()
    return t.user + t.system + ((t.children_user + t.children_system) if children else 0.0)


Key = tuple[int, float]  # pid, create time: a reused pid is another process


def _cpu(procs: list[psutil.Process]) -> dict[Key, float]:
    out: dict[Key, float] = {}
    for p in procs:
        with contextlib.suppress(psutil.Error):
            t = p.cpu_times()
            out[(p.pid, p.create_time())] = t.user + t.system
    return out


def _ours(pids: Sequence[int]) -> dict[Key, float]:
    """CPU-seconds so far of the daemon's processes, of this process's live descendants
    (an embedded store, a running fio) and of the kernel's threads, each once."""
    procs: list[psutil.Process] = []
    with contextlib.suppress(psutil.Error):
        procs = psutil.Process().children(recursive=True)
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            procs.append(psutil.Process(pid))
    procs += [p for p in psutil.process_iter(["ppid"]) if p.pid == 2 or p.info["ppid"] == 2]
    return _cpu(procs)


# The kernel counts CPU time in 10 ms ticks, per process: over a window of 40 ms a quiet
# machine's rest read 0 to 0.78 cores. From half a second on the ticks' error is small.
SHORT = SHORT_WINDOW  # s: the daemon's CPU% and the rest share the one limit


class RestMeter:
    """Start before the window, stop after it: the rest of the machine over it, or None
    where the kernel's counters could not be read or the window was under SHORT."""

    def __init__(self, pids: Sequence[int]) -> None:
        self.pids = tuple(pids)
        self._start: tuple[float, Any, float, dict[Key, float]] | None = None

    def start(self) -> None:
        try:
            self._start = (time.monotonic(), psutil.cpu_times(), own_cpu(), _ours(self.pids))
        except (OSError, psutil.Error):
            self._start = None

    def stop(self) -> Rest | None:
        if self._start is None:
            return None
        t0, sys0, own0, ours0 = self._start
        try:
            sys1, own1, ours1 = psutil.cpu_times(), own_cpu(), _ours(self.pids)
        except (OSError, psutil.Error):
            return None
        wall = time.monotonic() - t0
        if wall < SHORT:
            return None
        # a process that ended in the window (not reaped by us) is lost to both sums alike
        ours = (own1 - own0) + sum(v - ours0.get(k, 0.0) for k, v in ours1.items())
        rest = _busy(sys1) - _busy(sys0) - ours
        steal = getattr(sys1, "steal", 0.0) - getattr(sys0, "steal", 0.0)
        idle = _idle(sys1) - _idle(sys0)
        return Rest(cpu=round(max(0.0, rest) / wall, 3), steal=round(max(0.0, steal) / wall, 3),
                    idle=round(max(0.0, idle) / wall, 3))


# A pair whose two runs' rest of the machine differ by more than this many cores met two
# machines (a neighbour's busy process started or stopped between them). Above what the
# workload's own kernel work moves between a build and one 10% slower (see measuring.md).
REST_LIMIT = 0.3


# Cores left idle below which a run had the whole machine busy. There the rest's CPU is what
# the workload left it (two CPU hogs took 1.14 cores beside an unthrottled rclone read and
# 1.85 beside a throttled one), not a change of the machine: it is not compared.
SATURATED = 0.15


STEADY_SAMPLE = 0.5  # seconds per look at the machine while waiting for it to settle


def wait_steady(most: float) -> float:
    """Wait, at most `most` s, until the machine's busy CPU holds still: two looks of
    STEADY_SAMPLE s in a row within REST_LIMIT cores of each other (a neighbour's burst that
    spoilt a pair has started or ended). Returns the seconds waited."""
    t0 = time.monotonic()
    try:
        last, prev = psutil.cpu_times(), None
        while time.monotonic() - t0 + STEADY_SAMPLE <= most:
            time.sleep(STEADY_SAMPLE)
            now = psutil.cpu_times()
            busy = (_busy(now) - _busy(last)) / STEADY_SAMPLE
            if prev is not None and abs(busy - prev) <= REST_LIMIT:
                break
            last, prev = now, busy
    except (OSError, psutil.Error):
        pass
    return time.monotonic() - t0


def saturated(r: Rest) -> bool:
    return r.idle is not None and r.idle < SATURATED


def moved(a: Rest | None, b: Rest | None, first: str, second: str,
          limit: float = REST_LIMIT, cpu: bool = True) -> str:
    """Why a pair may not stand because the rest of the machine changed between its runs
    ("" where it may, or where either side was not read). Where both runs found the machine
    saturated, or cpu=False, only the steal is compared."""
    if a is None or b is None:
        return ""
    checks = [("the VM's steal", a.steal, b.steal)]
    if cpu and not (saturated(a) and saturated(b)):
        checks.insert(0, ("the rest of the machine's CPU", a.cpu, b.cpu))
    for what, x, y in checks:
        if abs(y - x) > limit:
            return (f"the machine changed between {first} and {second}: {what} went from "
                    f"{x:.2f} to {y:.2f} cores (more than {limit:g} apart)")
    return ""


@dataclass(frozen=True)
class RestReading(Reading):
    rest: Rest | None  # the rest of the machine's CPU and steal over the window
    cache_filled: int | None = None  # how much the machine's page cache grew, bytes


class MachineRest:
    """What the rest of the machine used in the window, and how much its page cache grew."""

    def __init__(self, pids: Sequence[int]) -> None:
        self.meter = RestMeter(list(pids))
        self.cached = 0

    def start(self) -> None:
        self.cached = psutil.virtual_memory().cached
        self.meter.start()

    def stop(self, span: Span) -> RestReading:
        return RestReading(self.meter.stop(), max(0, psutil.virtual_memory().cached - self.cached))

    def abort(self) -> None:
        pass  # counters read twice: nothing held
