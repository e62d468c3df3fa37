"""Saved runs as series: each workload's figure per run (the median of its rounds), one series
per fingerprint, a release gate's B/A per reference, and what differs between a workload's
series. judge/history.py finds the change points in them."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_fsperf.figures import METRICS
from pytest_fsperf.result.comparison import Comparison
from pytest_fsperf.saved.runs import Run, SavedResult
from pytest_fsperf.vocab import CompareKind

# figures followed, per run (the median of its rounds), as the metric registry names them
# daemon CPU per GB moved, not CPU%: a daemon throttled to half a core used half the CPU% for
# half the work, and CPU% called that run "better by 49.7%" beside bandwidth worse by 54.1%
FOLLOWED = tuple(key for key, m in METRICS.items() if m.history)  # Metric.history
CANARY = "canary"  # the machine canary's series: a score, higher is faster
# comparisons of a candidate build against a reference build (or mount)
AGAINST_KINDS = frozenset({CompareKind.GATE, CompareKind.BUILDS, CompareKind.MOUNT_GATE})


@dataclass(frozen=True)
class Point:
    run: str
    build: str
    created: str
    value: float  # the median of the run's rounds
    low: float  # the run's slowest and fastest rounds (the value where it had one)
    high: float
    canary: float | None  # the median machine canary score around its rounds
    rest: float | None = None  # cores the rest of the machine used over the run (rest.py)


@dataclass(frozen=True)
class Series:
    key: str  # TEST::WORKLOAD
    figure: str  # bw, ops, daemon_cpu_per_gb, daemon_rss
    fingerprint: tuple[tuple[str, str], ...]
    points: tuple[Point, ...]
    # the reference build this series is B/A against (its values are ratios), "" for the
    # figure itself
    against: str = ""

    @property
    def higher_is_better(self) -> bool:
        return self.figure == CANARY or METRICS[self.figure].bigger_is_better

    def shown(self, value: float) -> str:
        if self.against:
            return f"{value:.3f}x"
        return f"{value:.3g}" if self.figure == CANARY else METRICS[self.figure].show(value)

    @property
    def label(self) -> str:
        if self.figure == CANARY:
            return "machine canary"
        return METRICS[self.figure].label + (f" B/A against {self.against}" if self.against else "")

    @property
    def group(self) -> tuple[str, str]:
        """What a series follows, whatever its fingerprint: the workload, and its reference."""
        return self.key, self.against

    def values(self) -> list[float]:
        return [p.value for p in self.points]

    def canary(self) -> list[float] | None:
        found = [p.canary for p in self.points]
        return None if any(c is None for c in found) else [c for c in found if c is not None]


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _fingerprint(result: SavedResult | None) -> tuple[tuple[str, str], ...]:
    fp = result.fingerprint if result is not None else {}
    return tuple(sorted((str(k), json.dumps(v, sort_keys=True)) for k, v in fp.items()))


def series(found: Sequence[Run], figures: Sequence[str] = FOLLOWED) -> list[Series]:
    """Each workload's figures over the runs, one series per fingerprint; and, from runs
    saved by a release gate, each workload's B/A against each reference build."""
    points: dict[tuple[str, str, tuple[tuple[str, str], ...], str], list[Point]] = {}
    for run in found:
        results = [r for r in run.results if r.judged]
        for r in results:
            for figure in figures:
                got = [v for v in r.values(figure) if math.isfinite(v) and v > 0]
                if got:
                    points.setdefault((r.key, figure, _fingerprint(r), ""), []).append(
                        _point(run, r, statistics.median(got), min(got), max(got)))
        for c in comparisons_of(run)[0]:
            if c.kind not in AGAINST_KINDS:
                continue
            key = f"{c.test}::{c.name}"
            ours = next((r for r in results if r.key == key), None)
            against = " ".join(c.a_options) or "the reference"
            for figure in figures:
                m = c.metrics.get(figure)
                ratio, low, high = ((_positive(v) for v in (m.ratio, m.ci_low, m.ci_high))
                                    if m else (None, None, None))
                if ratio is None:
                    continue
                points.setdefault((key, figure, _fingerprint(ours), against), []).append(
                    _point(run, ours, ratio, low or ratio, high or ratio))
    return [Series(key, figure, fp, tuple(p), against)
            for (key, figure, fp, against), p in sorted(
                points.items(), key=lambda kv: (kv[0][0], kv[0][3], FOLLOWED.index(kv[0][1])
                                                if kv[0][1] in FOLLOWED else 99, len(kv[1]) * -1))]


def comparisons_of(run: Run) -> tuple[list[Comparison], list[str]]:
    """A run's comparisons read into their type, and why each that does not read is left out
    (the run's own figures still count; report() says so)."""
    found, left = [], []
    for c in run.doc.get("comparisons") or []:
        try:
            found.append(Comparison.from_dict(c))
        except ValueError as exc:
            left.append(f"run {run.name}: a comparison left out: {exc}"[:300])
    return found, left


def _positive(v: object) -> float | None:
    """v as a float where it is a finite number above 0, else None."""
    return float(v) if isinstance(v, int | float) and math.isfinite(v) and v > 0 else None


def _point(run: Run, r: SavedResult | None, value: float, low: float, high: float) -> Point:
    """A run's point: its value, with the run's canary and rest-of-the-machine readings."""
    canary = _median(list(r.canary)) if r is not None else None
    busy = r.rest.cpu if r is not None and r.rest is not None else None
    return Point(run.name, run.build, run.created, float(value), float(low), float(high), canary,
                 busy)


@dataclass(frozen=True)
class Mixed:
    """A workload (and reference) measured under more than one fingerprint."""

    key: str  # TEST::WORKLOAD
    against: str  # the reference of its B/A series, "" for its figures
    fingerprints: int
    fields: tuple[str, ...]  # the fingerprint fields that differ

    def said(self) -> str:
        what = self.key + (f" (B/A against {self.against})" if self.against else "")
        return (f"{what}: measured under {self.fingerprints} fingerprints (differing in "
                f"{', '.join(self.fields)}); each is a series of its own")


def differences(found: Sequence[Series]) -> list[Mixed]:
    """The workloads measured under more than one fingerprint, and the fields that differ
    between their series (each series is judged on its own)."""
    by_group: dict[tuple[str, str], set[tuple[tuple[str, str], ...]]] = {}
    for s in found:
        by_group.setdefault(s.group, set()).add(s.fingerprint)
    return [Mixed(key, against, len(fps), tuple(sorted(
        {k for fp in fps for k, _v in fp if len({dict(f).get(k) for f in fps}) > 1})))
        for (key, against), fps in by_group.items() if len(fps) > 1]


# -- change points -------------------------------------------------------------------
