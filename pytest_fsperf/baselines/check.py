"""Measured figures against a baseline's, per scenario: ratios, and misses beyond a tolerance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_fsperf.baselines import Baseline
from pytest_fsperf.figures import FILE_KEYS, METRICS
from pytest_fsperf.result.judged import Check
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.vocab import EngineKind


def key_of(result: WorkloadResult) -> str:
    return result.scenario or f"{result.test}:{result.name}"


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-12 * max(abs(a), abs(b))


@dataclass(frozen=True)
class ScaleRule:
    """How a baseline's figures stand at this --fsperf-scale: `note` says why they differ
    ("" where they do not), `judged` whether they are a verdict all the same."""

    note: str = ""
    judged: bool = True


def scale_mismatch(baseline: Baseline, scale: float | None, judge_scaled: bool = False) -> ScaleRule:
    """A saved baseline measured at another scale is not compared. A shipped one was measured
    at the document's full size (scale 1): at another scale files shrink until they wrap or
    fit the page cache, and counts of small files fall a hundredfold, so no shipped figure is
    taken as scale-free. Such a comparison is shown, labelled, and judged only when asked
    (judge_scaled: --fsperf-baseline-any-scale)."""
    if scale is None:
        return ScaleRule()
    if baseline.origin == "shipped":
        if _same(scale, 1.0):
            return ScaleRule()
        return ScaleRule(f"scale {scale:g}, documented at 1: " +
                         ("judged (--fsperf-baseline-any-scale)" if judge_scaled else "not judged"),
                         judge_scaled)
    saved = baseline.data.get("scale")
    if not isinstance(saved, int | float) or _same(saved, scale):
        return ScaleRule()
    return ScaleRule(f"saved at scale {saved:g}, measured at {scale:g}: not compared", False)


def conditions_differ(result: WorkloadResult, baseline: Baseline) -> list[str]:
    """Each condition of the baseline's source that this measurement did not share, named:
    shown next to the ratio (the figure is still compared: a difference is for the reader
    to weigh, not a reason to hide it)."""
    conditions = baseline.data.get("conditions") or {}
    said = []
    documented = conditions.get("ioengine")
    if result.kind == EngineKind.FIO and isinstance(documented, str):
        used = result.options.get("ioengine", "psync")  # fio's default on Linux
        if used != documented:
            said.append(f"measured with {used}, documented with {documented}")
    return said


def check(result: WorkloadResult, baseline: Baseline, tolerance: float,
          scale: float | None = None, judge_scaled: bool = False) -> list[Check]:
    key = key_of(result)
    entry = baseline.entry(key)
    if entry is None:
        return []
    rule = scale_mismatch(baseline, scale, judge_scaled)
    mismatch = rule.note
    differ = conditions_differ(result, baseline)
    measured = result.metrics()
    checks = []
    for metric, figure in entry.items():
        if metric not in FILE_KEYS or not isinstance(figure, dict):
            continue
        documented = float(figure["value"])
        value = measured.get(FILE_KEYS[metric])
        per, top, note = str(figure.get("per", "total")), None, mismatch
        if per == "job":  # the slowest job against the document's slowest, the range shown
            each = [j.bw_bytes for j in result.jobs]
            value, top = (min(each), max(each)) if each else (None, None)
            if not each:
                note = ("documented per job; this run reported only the total (per_job=False)"
                        + (f"; {mismatch}" if mismatch else ""))
        ratio = value / documented if value is not None and documented else None
        if value is None or not rule.judged:
            ok = None
        elif METRICS[FILE_KEYS[metric]].bigger_is_better:
            ok = value >= documented * (1 - tolerance)
        else:
            ok = value <= documented * (1 + tolerance)
        high = figure.get("high")
        note = "; ".join(n for n in (note, *differ) if n)
        checks.append(Check(baseline.name, key, metric, value, documented,
                            str(figure.get("printed", "")), ratio, ok,
                            float(high) if isinstance(high, int | float) else None, note, per, top))
    return checks


def entry_of(result: WorkloadResult) -> dict[str, Any]:
    """The figures of one workload, in the baseline file format."""
    m = result.metrics()
    out: dict[str, Any] = {}
    for key, metric in FILE_KEYS.items():
        value = m.get(metric)
        if value is not None:
            out[key] = {"printed": METRICS[metric].show(value), "value": value}
    return out
