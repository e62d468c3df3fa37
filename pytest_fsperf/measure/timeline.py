"""Inside a run: what moved and what the daemon did, interval by interval, on one clock, and
the verdicts on its shape (stalls, decay, memory growth, never settling).

The sampler is one thread waking once an interval (default 1 s): the workload's bytes so far
(fio's processes or the engine's own I/O counters), and the daemon's CPU time, RSS, threads
and open descriptors (psutil), and its cache directories' disk use when asked. A workload
shorter than MIN_INTERVALS intervals gets no timeline: a shape needs points.
"""

from __future__ import annotations

import contextlib
import itertools
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import psutil

from pytest_fsperf.measure.reading import NO_SPAN, Reading, Span
from pytest_fsperf.result.timeline import INTERVAL, MIN_INTERVALS, Timeline


class Sampler:
    """Samples until stop(); timeline() then gives the intervals (None if too short)."""

    def __init__(self, moved: Callable[[], int], pids: Sequence[int],
                 disk: Callable[[], int] | None = None, interval: float = INTERVAL,
                 stall_limit: float | None = None, on_stall: Callable[[], None] | None = None
                 ) -> None:
        self._moved, self._disk, self.interval = moved, disk, interval
        self._limit, self._on_stall = stall_limit, on_stall
        self.stalled: float | None = None  # seconds without progress when it was stopped
        self._procs: list[psutil.Process] = []  # every process of the daemon
        for pid in pids:
            with contextlib.suppress(psutil.Error):
                self._procs.append(psutil.Process(pid))
        self._rows: list[tuple[float, int, float | None, int | None, int | None, int | None,
                               int | None]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fsperf-timeline", daemon=True)
        self.started = 0.0  # time.monotonic() of the first sample: the timeline's t = 0

    def _daemon(self) -> tuple[float | None, int | None, int | None, int | None]:
        """CPU seconds, RSS, threads, fds: summed over the daemon's processes."""
        if not self._procs:
            return None, None, None, None
        cpu, rss, threads, fds = 0.0, 0, 0, 0
        try:
            for proc in self._procs:
                with proc.oneshot():
                    times = proc.cpu_times()
                    cpu += times.user + times.system
                    rss += proc.memory_info().rss
                    threads += proc.num_threads()
                    fds += proc.num_fds()
        except psutil.Error:
            return None, None, None, None
        return cpu, rss, threads, fds

    def _sample(self) -> None:
        disk = None
        if self._disk is not None:
            with contextlib.suppress(OSError):
                disk = self._disk()
        self._rows.append((time.monotonic(), self._moved(), *self._daemon(), disk))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()
            if self._limit is not None and self.stalled is None:
                self._check_stall(self._limit)

    def _check_stall(self, limit: float) -> None:
        """After the first progress, `limit` s with no more than 64 KiB moved: stop it."""
        rows = self._rows
        if rows[-1][1] - rows[0][1] <= 64 * 1024:
            return  # not started yet: start-up is not a stall
        last = rows[-1]
        since = next((r for r in reversed(rows) if last[1] - r[1] > 64 * 1024), rows[0])
        still = last[0] - since[0]
        if still >= limit:
            self.stalled = round(still, 1)
            if self._on_stall is not None:
                self._on_stall()

    def latest(self) -> tuple[float, int | None]:
        """The last interval's bytes/s and the daemon's RSS then (for the progress line)."""
        rows = self._rows[-2:]
        if len(rows) < 2:
            return 0.0, None
        (t0, m0, *_), (t1, m1, _c, rss, *_r) = rows
        return ((m1 - m0) / (t1 - t0) if t1 > t0 else 0.0), rss

    def start(self) -> None:
        self._sample()
        self.started = self._rows[0][0]
        self._thread.start()

    def stop(self) -> Timeline | None:
        self._stop.set()
        self._thread.join()
        self._sample()
        rows = self._rows
        if len(rows) < MIN_INTERVALS + 1:
            return None
        t0 = rows[0][0]
        pairs = list(itertools.pairwise(rows))
        return Timeline(
            self.interval, [round(r[0] - t0, 3) for r in rows],
            [max(0, b[1] - a[1]) for a, b in pairs],
            [round(100.0 * (b[2] - a[2]) / (b[0] - a[0]), 1)
             if a[2] is not None and b[2] is not None and b[0] > a[0] else None for a, b in pairs],
            [b[3] for _a, b in pairs], [b[4] for _a, b in pairs], [b[5] for _a, b in pairs],
            [b[6] for _a, b in pairs])


# -- the shape -------------------------------------------------------------------------


BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float], width: int = 12) -> str:
    """A row of block characters, at most `width` (intervals averaged into buckets)."""
    if not values:
        return ""
    n = min(width, len(values))
    buckets = [statistics.fmean(values[i * len(values) // n:(i + 1) * len(values) // n])
               for i in range(n)]
    top = max(buckets)
    if top <= 0:
        return BARS[0] * n
    return "".join(BARS[min(len(BARS) - 1, int(b / top * (len(BARS) - 1) + 0.5))] for b in buckets)


@dataclass(frozen=True)
class TimelineReading(Reading):
    timeline: Timeline | None  # per interval, when the run lasted a few


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
        self.stop(NO_SPAN)
