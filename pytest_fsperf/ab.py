"""A/B of two mount-option sets in one session (fsperf.compare): interleaved rounds, each after
a cold remount, per-round figures, medians and B/A ratios. (Saved runs are runs.py.)"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .engine import fio as fio_engine
from .errors import UsageError
from .measure.workspace import Workspace
from .mounts.request import parse_options
from .result import WorkloadResult
from .stats import shift
from .vocab import METRICS as FIGURES

Workload = Mapping[str, object] | Callable[["Workspace"], WorkloadResult]

METRICS = ("bw", "iops", "lat_p99", "daemon_cpu", "daemon_rss")  # the figures an A/B compares


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
    ci_low: float | None = None  # 95% bootstrap interval of the ratio (2+ rounds each)
    ci_high: float | None = None
    outcome: str = "inconclusive"  # "B better", "B worse", "same" or "inconclusive"

    @property
    def bigger_is_better(self) -> bool:
        return FIGURES[self.metric].bigger_is_better


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
            order: str, tolerance: float = 0.10) -> Comparison:
    metrics = {}
    for metric in METRICS:
        av = tuple(r.metrics().get(metric) for r in a)
        bv = tuple(r.metrics().get(metric) for r in b)
        am, bm = median(list(av)), median(list(bv))
        if am is None and bm is None:
            continue
        ratio = bm / am if am and bm is not None else None
        metrics[metric] = _judged(metric, av, bv, am, bm, ratio, tolerance)
    return Comparison(test, name, backend, a_options, b_options, len(a), order,
                      tuple(r.name for r in a), tuple(r.name for r in b), metrics)


def _judged(metric: str, av: tuple[float | None, ...], bv: tuple[float | None, ...],
            am: float | None, bm: float | None, ratio: float | None,
            tolerance: float) -> MetricComparison:
    """The saved-run rule (stats.shift), for 2+ rounds on each side; with fewer, no
    outcome can be claimed."""
    a = [v for v in av if v is not None]
    b = [v for v in bv if v is not None]
    if ratio is None or len(a) < 2 or len(b) < 2:
        return MetricComparison(metric, av, bv, am, bm, ratio)
    _ratio, lo, hi, direction = shift(b, a, tolerance)
    outcome = {"same": "same", "unclear": "inconclusive"}.get(direction)
    if outcome is None:
        better = (direction == "up") == FIGURES[metric].bigger_is_better
        outcome = "B better" if better else "B worse"
    return MetricComparison(metric, av, bv, am, bm, ratio, lo, hi, outcome)


def run_compare(fs: Workspace, workload: Workload, a: Sequence[str] | str, b: Sequence[str] | str,
                rounds: int, name: str | None, where: str, tolerance: float = 0.10) -> Comparison:
    """A and B interleaved (A B A B ...) on the same mount point, each after a cold remount;
    a read job's files are laid out once first. The original options are restored."""
    owned = fs.target.owned
    if owned is None or not owned.backend.has_daemon:
        raise UsageError(f"{where}: needs a backend the plugin mounts (fsperf_mount marker or "
                         "--fsperf-backend), not an existing directory")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= 100:
        raise UsageError(f"{where}: rounds={rounds!r} must be a whole number from 1 to 100")
    variants = {"A": parse_options(a, f"{where} a"), "B": parse_options(b, f"{where} b")}
    original = owned.options
    job: dict[str, str] | None = None
    if isinstance(workload, Mapping):
        base, job = fs.job(name, workload, where)
    elif callable(workload):
        base = name or str(getattr(workload, "__name__", "workload"))
    else:
        raise UsageError(f"{where}: workload must be fio options (a dict) or a function")
    runs: dict[str, list[WorkloadResult]] = {"A": [], "B": []}
    try:
        if job is not None and fio_engine.is_reading(job):
            fs.remount(variants["A"], wipe=False)
            fs.layout(job, fs.output(base))
        for n in range(1, rounds + 1):
            for variant, options in variants.items():
                fs.cold_start(options)
                if job is not None:
                    label = fs.unique(f"{base}[{variant}{n}]")
                    result = fs.keep(fs.measure(label, False, job, layout=False))
                else:
                    assert callable(workload)
                    result = workload(fs)
                runs[variant].append(result)
    finally:
        if owned.options != original or not owned.alive():
            fs.remount(original, wipe=False)
    outcome = compare(fs.test, base, owned.backend.name, tuple(owned.shown(variants["A"])),
                      tuple(owned.shown(variants["B"])), runs["A"], runs["B"], "AB" * rounds,
                      tolerance)
    return outcome
