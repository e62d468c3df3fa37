"""A/B comparison of two mount-option sets: per-round figures, medians and B/A ratios."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from .result import WorkloadResult

METRICS = ("bw", "iops", "lat_p99", "daemon_cpu", "daemon_rss")
BIGGER_IS_BETTER = frozenset({"bw", "iops"})


def median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


@dataclass(frozen=True)
class MetricComparison:
    metric: str
    a: tuple[float | None, ...]  # one figure per round
    b: tuple[float | None, ...]
    a_median: float | None
    b_median: float | None
    ratio: float | None  # b_median / a_median

    @property
    def bigger_is_better(self) -> bool:
        return self.metric in BIGGER_IS_BETTER


@dataclass(frozen=True)
class Comparison:
    test: str
    name: str
    backend: str
    a_options: tuple[str, ...]  # redacted
    b_options: tuple[str, ...]
    rounds: int
    order: str  # how the rounds ran, e.g. "ABABAB", each after a cold remount
    a_results: tuple[str, ...]  # names of the WorkloadResults behind the figures
    b_results: tuple[str, ...]
    metrics: dict[str, MetricComparison]

    def ratio(self, metric: str = "bw") -> float:
        """B's median over A's, e.g. ratio('bw') == 0.5: B has half A's bandwidth."""
        m = self.metrics.get(metric)
        if m is None or m.ratio is None:
            raise LookupError(f"{self.name}: no {metric!r} figures to compare")
        return m.ratio

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compare(test: str, name: str, backend: str, a_options: tuple[str, ...],
            b_options: tuple[str, ...], a: list[WorkloadResult], b: list[WorkloadResult],
            order: str) -> Comparison:
    metrics = {}
    for metric in METRICS:
        av = tuple(r.metrics().get(metric) for r in a)
        bv = tuple(r.metrics().get(metric) for r in b)
        am, bm = median(list(av)), median(list(bv))
        if am is None and bm is None:
            continue
        ratio = bm / am if am and bm is not None else None
        metrics[metric] = MetricComparison(metric, av, bv, am, bm, ratio)
    return Comparison(test, name, backend, a_options, b_options, len(a), order,
                      tuple(r.name for r in a), tuple(r.name for r in b), metrics)
