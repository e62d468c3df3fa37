"""A run interval by interval, as a result holds it (measure/timeline.py samples it), and
the figures of its shape thresholds judge: stalls, decay, memory growth, never settling."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from pytest_fsperf import typed
from pytest_fsperf.figures import Fig

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
    # fio's mean latency per second of its own clock (its latency log; it starts when fio's
    # job does, a little after t = 0): (s, ns), of the kind latency_kind says
    clat: list[tuple[float, float]] = field(default_factory=list)
    # the kernel's FUSE requests sent per interval, by opcode (where the trace was on)
    fuse_ops: dict[str, list[int]] = field(default_factory=dict)
    latency_kind: str = "clat"  # "lat": total (submission + completion), as the table; "clat": completion

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
    return {Fig.STALL_S: longest_stall(t), Fig.DECAY: decay(t), Fig.BW_SWING: swing(t),
            Fig.RSS_GROWTH: rss_growth(t)}
