"""After a test's call: record its figures as JUnit properties and judge them against the
thresholds, the baseline and the saved run. Fails at the test, never in the summary."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from . import runs
from .baselines.check import check
from .keys import CHECKS, PLAN, RESULTS, RUN_CMP, STATE, VERDICTS
from .plan import Plan
from .result import WorkloadResult
from .verdict import judge


def properties(item: pytest.Item, results: list[WorkloadResult]) -> None:
    for r in results:
        figures: dict[str, Any] = {"bw_bytes": r.bw_bytes, "iops": r.iops,
                                   "lat_p99_ns": r.lat_p99_ns, "cache": r.cache}
        if r.daemon:
            figures.update(daemon_cpu_percent=round(r.daemon.cpu_percent, 1),
                           daemon_peak_rss_bytes=r.daemon.peak_rss_bytes,
                           daemon_peak_rss_method=r.daemon.peak_rss_method)
        else:
            figures["daemon"] = r.daemon_note
        for key, value in figures.items():
            item.user_properties.append((f"fsperf.{r.name}.{key}", value))


def finish(item: pytest.Item) -> list[str]:
    """Record properties, store each workload's verdict; return the failure messages."""
    results = item.stash.get(RESULTS, [])
    properties(item, results)
    plan = item.stash.get(PLAN, Plan(item.nodeid, ()))
    item.stash[VERDICTS] = {}  # stays empty if judging is a usage error
    verdict = judge(plan, results)
    gate = _baseline(item, plan, results, verdict.per_workload)
    regressions, unsure = _against_earlier(item, plan, results, verdict.per_workload)
    verdict.inconclusive += unsure
    failures = verdict.failures + gate + regressions
    if item.config.stash[STATE].settings.inconclusive == "fail":
        failures += verdict.inconclusive
    else:
        for message in verdict.inconclusive:
            warnings.warn(pytest.PytestWarning(f"fsperf: {message}"), stacklevel=1)
    listed = failures + verdict.inconclusive
    item.stash[VERDICTS] = {
        name: (v, [f for f in listed if f.startswith(name + ":")])
        for name, v in verdict.per_workload.items()
    }
    return failures + (verdict.notes if failures else [])


def _against_earlier(item: pytest.Item, plan: Plan, results: list[WorkloadResult],
                     per_workload: dict[str, str]) -> tuple[list[str], list[str]]:
    """--fsperf-compare: each judged workload against the same one of the saved run.
    Returns (regressions, inconclusive and incomparable messages)."""
    state = item.config.stash[STATE]
    item.stash[RUN_CMP] = {}
    if not state.earlier_name:
        return [], []
    regressions, unsure = [], []
    for r in results:
        old = state.earlier.get(f"{r.test}::{r.name}")
        if not r.judged or old is None:
            continue
        new = {"total": r.total(), "rounds": list(r.rounds),
               "fingerprint": runs.fingerprint(r.scenario, r.options, r.mount, state.env)}
        c = runs.compare(state.earlier_name, f"{r.test}::{r.name}", old, new, plan.tolerance)
        item.stash[RUN_CMP][r.name] = c
        message = c.message(plan.tolerance, r.name)
        if c.outcome == runs.REGRESSION:
            regressions.append(message)
            per_workload[r.name] = "REGRESSION"
        elif c.outcome in (runs.INCONCLUSIVE, runs.INCOMPARABLE):
            unsure.append(message)
            if per_workload[r.name] not in ("FAIL", "REGRESSION"):
                per_workload[r.name] = c.outcome.upper()
    return regressions, unsure


def _baseline(item: pytest.Item, plan: Plan, results: list[WorkloadResult],
              per_workload: dict[str, str]) -> list[str]:
    """Measured / documented for each judged workload with a baseline entry; with
    --fsperf-gate=baseline, a miss beyond the tolerance fails the test."""
    state = item.config.stash[STATE]
    name = plan.baseline or state.settings.baseline
    item.stash[CHECKS] = {}
    if name is None:
        return []
    where = f"{item.nodeid}: fsperf marker baseline" if plan.baseline else state.settings.baseline_where
    found = state.baseline(name, where)
    gated = state.settings.gate == "baseline"
    misses = []
    for r in results:
        if not r.judged:
            continue
        checks = check(r, found, plan.tolerance)
        item.stash[CHECKS][r.name] = checks
        for c in checks:
            if gated and c.ok is False:
                misses.append(c.message(r.name, plan.tolerance))
                per_workload[r.name] = "FAIL"
    return misses


