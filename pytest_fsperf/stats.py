"""Robust statistics over rounds: median, MAD, and bootstrap confidence intervals.

The bootstrap is seeded, so a verdict is the same every time it is computed from the
same figures.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence

from pytest_fsperf.vocab import Direction

RESAMPLES = 2000
LEVEL = 0.95


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def mad(values: Sequence[float]) -> float:
    """Median absolute deviation (unscaled)."""
    m = median(values)
    return median([abs(v - m) for v in values])


def _interval(samples: list[float], level: float) -> tuple[float, float]:
    samples.sort()
    lo = samples[int((1 - level) / 2 * (len(samples) - 1))]
    hi = samples[int((1 + level) / 2 * (len(samples) - 1))]
    return lo, hi


def median_ci(values: Sequence[float], level: float = LEVEL, seed: int = 1) -> tuple[float, float]:
    """Bootstrap confidence interval of the median. One value: (v, v)."""
    if len(values) < 2:
        return float(values[0]), float(values[0])
    rng = random.Random(seed)
    n = len(values)
    return _interval([median(rng.choices(values, k=n)) for _ in range(RESAMPLES)], level)


def ratio_ci(new: Sequence[float], old: Sequence[float], level: float = LEVEL,
             seed: int = 1) -> tuple[float, float]:
    """Bootstrap confidence interval of median(new) / median(old)."""
    rng = random.Random(seed)
    out = []
    for _ in range(RESAMPLES):
        base = median(rng.choices(old, k=len(old)))
        out.append(median(rng.choices(new, k=len(new))) / base if base else float("inf"))
    return _interval(out, level)


def shift(new: Sequence[float], old: Sequence[float], tolerance: float,
          ) -> tuple[float, float | None, float | None, Direction]:
    """median(new) / median(old), its 95% interval (None unless both sides have 2+ values),
    and the direction: "up" or "down" when the ratio is past the tolerance AND the interval
    excludes 1; "same" when the interval (or, without one, the ratio) lies within the
    tolerance; "unclear" otherwise. A/B comparisons and saved-run comparisons share it."""
    ratio = median(new) / median(old)
    lo, hi = ratio_ci(new, old) if len(new) > 1 and len(old) > 1 else (None, None)
    return ratio, lo, hi, direction(ratio, lo, hi, tolerance)


def direction(ratio: float, lo: float | None, hi: float | None, tolerance: float) -> Direction:
    """The tolerance rule on a ratio and its interval (see shift); the one rule, also for
    interleaved pairs (judge/paired.py)."""
    if lo is not None and hi is not None:
        if ratio > 1 + tolerance and lo > 1:
            return Direction.UP
        if ratio < 1 - tolerance and hi < 1:
            return Direction.DOWN
    low, high = (lo, hi) if lo is not None and hi is not None else (ratio, ratio)
    if low >= 1 - tolerance and high <= 1 + tolerance:
        return Direction.SAME
    return Direction.UNCLEAR
