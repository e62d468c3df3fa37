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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import psutil

from pytest_fsperf.infra import typed

INTERVAL = 1.0
MIN_INTERVALS = 3
TAIL = 5  # intervals of the steady-state check (fio's steadystate idea: the last few agree)


@dataclass(frozen=True)
class Timeline:
    """Per interval i (from t[i-1] to t[i], t[0] = 0 the start): bytes moved and the daemon's
    CPU% over it; the daemon's RSS, threads and fds, and the cache disk, at its end.
    None where the daemon could not be read."""

    interval: float
    t: list[float]  # seconds since the window opened, one more than the intervals
    moved: list[int]  # bytes per interval
    cpu: list[float | None]  # daemon CPU%, 100 = one core
    rss: list[int | None]  # bytes
    threads: list[int | None]
    fds: list[int | None]
    disk: list[int | None]  # the daemon's cache dirs
    # fio's mean completion latency per second of its own clock (its latency log; it starts
    # when fio's job does, a little after t = 0): (s, ns)
    clat: list[tuple[float, float]] = field(default_factory=list)
    # the kernel's FUSE requests sent per interval, by opcode (where the trace was on)
    fuse_ops: dict[str, list[int]] = field(default_factory=dict)

    @property
    def bw(self) -> list[float]:
        """Bytes/s per interval."""
        spans = itertools.pairwise(self.t)
        return [m / (b - a) if b > a else 0.0 for m, (a, b) in zip(self.moved, spans, strict=True)]

    def until(self, end: float) -> Timeline:
        """The intervals up to `end` (s since t = 0: when the I/O ended), the last one ending
        there: the window's close after the I/O (the load generator's exit) is not drawn as
        a second in which the filesystem slowed down."""
        keep = sum(1 for x in self.t[1:] if x < end) + 1  # intervals that began before end
        if keep > len(self.moved) or end <= self.t[0]:
            return self
        if keep >= 2 and end - self.t[keep - 1] < self.interval / 4:
            keep -= 1  # a sliver: its counts go to the interval before

            def counts(xs: list[int]) -> list[int]:
                return [*xs[:keep - 1], xs[keep - 1] + xs[keep]]
        else:
            def counts(xs: list[int]) -> list[int]:
                return xs[:keep]
        return replace(self, t=[*self.t[:keep], end], moved=counts(self.moved),
                       cpu=self.cpu[:keep], rss=self.rss[:keep], threads=self.threads[:keep],
                       fds=self.fds[:keep], disk=self.disk[:keep],
                       fuse_ops={k: counts(v) for k, v in self.fuse_ops.items()})

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "bw": self.bw}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Timeline:
        """to_dict's JSON back (bw, derived, is left)."""
        return typed.read(cls, {k: v for k, v in data.items() if k != "bw"}, "timeline")


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


def _active(t: Timeline) -> range:
    """The intervals from the first that moved bytes to the last that did: start-up (fio
    laying out, opening) and teardown are not stalls."""
    moving = [i for i, m in enumerate(t.moved) if m > 64 * 1024]
    return range(moving[0], moving[-1] + 1) if moving else range(0)


def longest_stall(t: Timeline) -> float:
    """Seconds of the longest run of still intervals inside the active span: intervals that
    moved under 1% of the span's median interval (and under 64 KiB): the load generator's own
    bookkeeping moves a few bytes while the filesystem answers nothing."""
    span = _active(t)
    if not span:
        return 0.0
    still = min(64 * 1024, 0.01 * statistics.median(t.moved[i] for i in span))
    longest = run = 0.0
    for i in span:
        run = run + (t.t[i + 1] - t.t[i]) if t.moved[i] <= still else 0.0
        longest = max(longest, run)
    return round(longest, 3)


def _full(t: Timeline) -> list[float]:
    """Bandwidth of the full intervals of the active span (its first and last are partial)."""
    span = _active(t)
    bw = t.bw
    return [bw[i] for i in span][1:-1]


def decay(t: Timeline) -> float | None:
    """How much slower the last third of the run is than its first third, in percent (median
    of each; 0 when not slower). None under 6 full intervals."""
    bw = _full(t)
    if len(bw) < 6:
        return None
    third = len(bw) // 3
    first, last = statistics.median(bw[:third]), statistics.median(bw[-third:])
    return round(max(0.0, 100.0 * (1 - last / first)), 1) if first > 0 else None


def swing(t: Timeline) -> float | None:
    """The steady-state check: the widest distance of the last TAIL full intervals from their
    mean, in percent of it (fio's steadystate bw:N% idea). None under TAIL full intervals."""
    bw = _full(t)[-TAIL:]
    if len(bw) < TAIL:
        return None
    mean = statistics.fmean(bw)
    return round(100.0 * max(abs(b - mean) for b in bw) / mean, 1) if mean > 0 else None


def rss_growth(t: Timeline) -> float | None:
    """The daemon's RSS slope, bytes per minute (least squares over the intervals' ends).
    None under MIN_INTERVALS readings."""
    points = [(t.t[i + 1], r) for i, r in enumerate(t.rss) if r is not None]
    if len(points) < MIN_INTERVALS:
        return None
    try:
        fit = statistics.linear_regression([p[0] for p in points], [float(p[1]) for p in points])
    except statistics.StatisticsError:  # every reading at one time
        return None
    return 60.0 * fit.slope


def shape(t: Timeline | None) -> dict[str, float | None]:
    """The figures thresholds judge: stall_s, decay, bw_swing, rss_growth (None: not enough
    points; missing altogether: no timeline)."""
    if t is None:
        return {}
    return {"stall_s": longest_stall(t), "decay": decay(t), "bw_swing": swing(t),
            "rss_growth": rss_growth(t)}


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
