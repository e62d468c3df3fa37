"""The neighbours adjusted for, not only vetoed (issue 63).

A run's figure moves with what the rest of the machine's CPU does beside it (a neighbour's
build, a second job on a shared runner). A pair whose two runs met different neighbours was
dropped; on a runner whose neighbours change every few seconds that was most pairs. Here the
figure's sensitivity to the neighbours is fitted over the runs, and each pair's log ratio
ln(B/A) is taken less that sensitivity times the difference in the rest's CPU between its B
and A runs:

    d'_i = ln(B_i / A_i) - slope_(i-1) * (rest_B,i - rest_A,i)

slope_(i-1) is ln(figure) per core of the rest, fitted by least squares with each side's own
intercept over the runs before pair i (those of pairs kept and of pairs dropped alike: their
runs were valid): it is known before pair i runs (predictable), so under "B/A = r" each d'_i
is centred on ln r whatever the slope, as long as the neighbours do not move with the side
(their load is independent of which side runs, and A and B take turns going first). Then d'
is a sequence the confidence sequences of paired.py apply to, with less spread: a neighbour's
burst no longer lands in the difference. The side-correlation is checked: where the rest's
CPU differs between the sides on average (B's runs meeting busier neighbours, as when the
candidate's own CPU use changes what a saturated neighbour gets), nothing is adjusted.

Not adjusted, and the pair still dropped where its rest moved: runs whose machine was
saturated (the rest is then what the workload left, not the neighbours' demand), a change in
the VM's steal, and any pair before the slope can be fitted (runs on both sides, their rest
spread over at least MIN_SPREAD cores). tests/test_paired.py simulates both rules beside a
bursty neighbour; docs/explanation/statistics.md has the figures.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_fsperf.judge.deciding import primary
from pytest_fsperf.measure.rest import saturated
from pytest_fsperf.result.machine import Rest
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.vocab import AB

MIN_RUNS = 3  # per side, before a slope is fitted
MIN_SPREAD = 0.3  # cores the runs' rest must span for a slope to mean anything
WITH_SIDE = 0.15  # cores: a mean difference of the rest between sides past this (and past
# two standard errors) says the neighbours move with the side: not adjusted


@dataclass(frozen=True)
class Point:
    """One valid run, as the fit sees it."""

    side: AB
    rest: float  # the rest of the machine's CPU over the run, cores
    log_value: float  # ln of the deciding figure


def point(side: AB, rest: Rest | None, value: float | None) -> Point | None:
    """A run as a point of the fit, or None where it cannot be one (the rest not read, or
    read on a saturated machine; no figure)."""
    if rest is None or saturated(rest) or not value or value <= 0:
        return None
    return Point(side, rest.cpu, math.log(value))


def slope(points: Sequence[Point]) -> float | None:
    """ln(figure) per core of the rest of the machine: least squares with each side's own
    intercept (the sides' difference is what is judged, never fitted away). None where a side
    has fewer than MIN_RUNS runs or the rest spans less than MIN_SPREAD cores within a side
    (a neighbour that came and went with the side would be the sides' difference)."""
    by_side = {side: [p for p in points if p.side is side] for side in AB}
    if any(len(v) < MIN_RUNS for v in by_side.values()):
        return None
    if max(max(p.rest for p in v) - min(p.rest for p in v) for v in by_side.values()) < MIN_SPREAD:
        return None
    sxy = sxx = 0.0
    for runs in by_side.values():
        mx = statistics.fmean(p.rest for p in runs)
        my = statistics.fmean(p.log_value for p in runs)
        sxy += sum((p.rest - mx) * (p.log_value - my) for p in runs)
        sxx += sum((p.rest - mx) ** 2 for p in runs)
    return sxy / sxx if sxx > 0 else None


def with_side(moves: Sequence[float]) -> bool:
    """Whether the rest's CPU differs between B's and A's runs on average (moves: B's rest
    less A's, per pair): the neighbours answer to the side, and adjusting would take part of
    the difference being judged with it."""
    if len(moves) < 3:
        return False
    mean = statistics.fmean(moves)
    se = statistics.stdev(moves) / math.sqrt(len(moves))
    return abs(mean) > max(WITH_SIDE, 2 * se)


@dataclass
class Neighbours:
    """One comparison's fit and its pairs' offsets, built as the pairs come."""

    points: list[Point]
    moves: list[float]  # B's rest less A's, per kept pair where both were read
    offsets: list[float]  # per kept pair: taken off its ln(B/A)
    saved: int = 0  # pairs kept, adjusted, whose rest moved past the drop limit
    last_slope: float | None = None

    @classmethod
    def empty(cls) -> Neighbours:
        return cls([], [], [])

    def current(self) -> float | None:
        """The slope a pair run now would be adjusted by (None: not adjusted)."""
        if with_side(self.moves):
            return None
        return slope(self.points)

    def seen(self, runs: Sequence[tuple[AB, Rest | None, float | None]]) -> None:
        """Valid runs, for the fit (a dropped pair's too)."""
        self.points += [p for r in runs if (p := point(*r)) is not None]

    def keep(self, a: tuple[Rest | None, float | None], b: tuple[Rest | None, float | None],
             moved: bool) -> None:
        """A kept pair's offset, by the slope fitted before it; then its runs join the fit.
        moved: its rest moved past the drop limit (kept because it is adjusted)."""
        fitted = self.current()
        pa, pb = point(AB.A, *a), point(AB.B, *b)
        move = pb.rest - pa.rest if pa is not None and pb is not None else None
        self.offsets.append(fitted * move if fitted is not None and move is not None else 0.0)
        if move is not None:
            self.moves.append(move)
        if fitted is not None:
            self.last_slope = fitted
        self.saved += moved
        self.seen([(AB.A, *a), (AB.B, *b)])

    def said(self) -> str:
        """What was adjusted, for the report ("" where nothing was)."""
        if self.last_slope is None or not any(self.offsets):
            if with_side(self.moves):
                return ("not adjusted for the neighbours: the rest of the machine's CPU moved "
                        f"with the side (B's runs {statistics.fmean(self.moves):+.2f} cores on "
                        "average)")
            return ""
        per_core = math.exp(self.last_slope) - 1
        kept = f"; {self.saved} pair{'' if self.saved == 1 else 's'} kept that it moved past " \
               "the drop limit" if self.saved else ""
        return (f"adjusted for the neighbours: the figure moved {100 * per_core:+.0f}% per "
                f"core of the rest of the machine (fitted over {len(self.points)} runs){kept}")


OFF = 0.25  # both runs of a pair this far off their sides' medians: the machine, not a side


def both_off(runs: Mapping[AB, list[WorkloadResult]], these: Mapping[AB, WorkloadResult],
             first: str, second: str) -> str:
    """Why a pair may not stand because the machine changed under it without the rest of
    the machine's CPU showing it: both runs more than OFF off their own side's median of
    the pairs so far (from 3 on), the same way (as found: a 4-thread read ran 1.88 GB/s on
    A and 0.78 on B in one pair of 32 that ran 2.5-3.3 GB/s on both; that one pair put the
    A/A's interval at 0.88-1.04 after 32 pairs). Asked of both sides alike, so it favours
    neither; one side alone off its median is what a comparison is for."""
    if len(runs[AB.A]) < 3:
        return ""
    metric = primary(these[AB.B])
    offs = {}
    for side in AB:
        kept = sorted(v for r in runs[side] if (v := r.single_metrics().get(metric)))
        value = these[side].single_metrics().get(metric)
        if not kept or not value:
            return ""
        offs[side] = value / kept[len(kept) // 2]
    if all(x < 1 - OFF for x in offs.values()) or all(x > 1 + OFF for x in offs.values()):
        return (f"the machine changed under pair {first}/{second}: both runs were off their "
                f"sides' medians the same way (A {offs[AB.A]:.2f}x, B {offs[AB.B]:.2f}x)")
    return ""
