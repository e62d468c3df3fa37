"""A test's record, from its marker to its rows: the plan and the settings resolved once when
its fsperf fixture starts (session/per_test.py), carried; what it measured; the one judgement
of it; and its report rows, made as their types (dicts only for an xdist worker's report)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from pytest_fsperf.baselines.check import entry_of, key_of
from pytest_fsperf.judge import Earlier, Judgement, Past, judge_item, runs
from pytest_fsperf.options.config import for_item
from pytest_fsperf.plan.marker import Plan
from pytest_fsperf.result.comparison import Comparison
from pytest_fsperf.result.document import Limit, ResultRow
from pytest_fsperf.result.environment import Environment
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner.space import PerTest
from pytest_fsperf.session.state import FsperfSession
from pytest_fsperf.vocab import Gate, Outcome


@dataclass
class ItemRecord:
    """What one test measured and how it was judged: made by the fsperf fixture with the
    test's plan and settings, filled by its workloads and, once, by the call hook."""

    plan: Plan
    config: PerTest  # its settings, resolved once: rounds, warm-up, tolerance, ...
    results: list[WorkloadResult] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    judgement: Judgement | None = None


def judge_test(state: FsperfSession, record: ItemRecord) -> Judgement:
    """The test's one judgement (kept in the record): its thresholds, the baseline, saved
    runs, its gates and comparisons, at the tolerance resolved when it started."""
    s, plan, tolerance = state.settings, record.plan, record.config.tolerance
    chosen = for_item(s, "baseline", plan.baseline, f"{plan.test}: fsperf marker baseline")
    baseline = state.baseline(chosen.value, chosen.where) if chosen.value is not None else None
    earlier = (Earlier(state.earlier_name, state.earlier, state.env, s.compare_last)
               if state.earlier_name else None)
    builds = [c for c in record.comparisons if c.kind.is_gate]
    expected = [c.expectation for c in record.comparisons if c.expectation is not None]
    past = (Past(state.history_runs(), state.env, s.save or "", tolerance)
            if s.history_gate else None)
    options = [c for c in record.comparisons if not c.kind.is_gate]
    record.judgement = judge_item(plan, record.results, baseline, s.gate is Gate.BASELINE, earlier,
                                  tolerance, builds, s.scale, s.baseline_any_scale, expected, past,
                                  options)
    return record.judgement


def report_rows(record: ItemRecord, env: Environment | None) -> list[ResultRow]:
    """The test's results as report rows, with the one judgement in them."""
    j = record.judgement or Judgement({})
    limits = {t.spec.metric: Limit(t.spec.bound, t.limit, f"{t.named} {t.text}")
              for t in record.plan.thresholds}
    rows = []
    for r in record.results:
        earlier = j.earlier.get(r.name)
        rows.append(ResultRow(
            **{f.name: getattr(r, f.name) for f in fields(WorkloadResult)},
            limits=limits if r.judged else {},  # the threshold lines of its charts
            verdict=j.outcomes.get(r.name, Outcome.NOT_JUDGED),
            verdict_own=j.own.get(r.name, Outcome.NOT_JUDGED),
            failures=tuple(j.lines_of(r.name)), not_judged=tuple(j.not_judged.get(r.name, [])),
            baseline_checks=tuple(j.checks.get(r.name, [])),
            baseline=j.baseline if j.baseline and r.name in j.checks else None,
            baseline_key=key_of(r), baseline_entry=entry_of(r),
            fingerprint=runs.fingerprint(r.scenario, r.options, r.mount, env),
            run_comparison=earlier))
    return rows
