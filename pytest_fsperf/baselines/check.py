"""Measured figures against a baseline's, per scenario: ratios, and misses beyond a tolerance."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .. import units
from ..result import WorkloadResult
from . import METRICS, Baseline

LABELS = {"bw": "bandwidth", "cpu": "daemon CPU", "rss": "daemon peak memory"}
SHOW = {"bw": units.format_rate, "cpu": units.format_percent, "rss": units.format_mb}


@dataclass(frozen=True)
class Check:
    baseline: str
    key: str  # scenario id, or TEST:WORKLOAD for a saved run's own workloads
    metric: str  # bw, cpu, rss
    measured: float | None
    documented: float
    printed: str  # as the baseline printed it
    ratio: float | None  # measured / documented
    ok: bool | None  # within tolerance; None: not measured

    def message(self, workload: str, tolerance: float) -> str:
        shown = SHOW[self.metric](self.measured) if self.measured is not None else "-"
        bound = f"{100 * (1 - tolerance):g}% of" if self.metric == "bw" else f"{100 * (1 + tolerance):g}% of"
        op = "<" if self.metric == "bw" else ">"
        return (f"{workload}: {LABELS[self.metric]} {shown} {op} {bound} {self.baseline}'s "
                f"{self.printed} ({self.key})")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def key_of(result: WorkloadResult) -> str:
    return result.scenario or f"{result.test}:{result.name}"


def check(result: WorkloadResult, baseline: Baseline, tolerance: float) -> list[Check]:
    key = key_of(result)
    entry = baseline.entry(key)
    if entry is None:
        return []
    measured = result.metrics()
    checks = []
    for metric, figure in entry.items():
        if metric not in METRICS or not isinstance(figure, dict):
            continue
        documented = float(figure["value"])
        value = measured.get(METRICS[metric])
        ratio = value / documented if value is not None and documented else None
        if value is None:
            ok = None
        elif metric == "bw":
            ok = value >= documented * (1 - tolerance)
        else:
            ok = value <= documented * (1 + tolerance)
        checks.append(Check(baseline.name, key, metric, value, documented,
                            str(figure.get("printed", "")), ratio, ok))
    return checks


def entry_of(result: WorkloadResult) -> dict[str, Any]:
    """The figures of one workload, in the baseline file format."""
    m = result.metrics()
    out: dict[str, Any] = {}
    for key, metric in METRICS.items():
        value = m.get(metric)
        if value is not None:
            out[key] = {"printed": SHOW[key](value), "value": value}
    return out
