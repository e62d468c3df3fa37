"""A test's measured workloads judged once, as data: thresholds, baseline, saved run.

Pure functions of the plan, the results and what they are compared with; the plugin stores
the Judgement in the test's one record and every report renders it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from pytest_fsperf.baselines import Baseline, described
from pytest_fsperf.baselines.check import check
from pytest_fsperf.judge import history, runs
from pytest_fsperf.judge.thresholds import Verdict, judge
from pytest_fsperf.plan.marker import Plan
from pytest_fsperf.result.comparison import Comparison
from pytest_fsperf.result.environment import Environment
from pytest_fsperf.result.judged import Check, Described, Expectation, RunComparison
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.saved import runs as saved
from pytest_fsperf.saved.runs import SavedResult
from pytest_fsperf.vocab import Difference, Outcome

__all__ = ["Earlier", "Judgement", "Past", "Verdict", "judge", "judge_item"]

BUILD_OUTCOMES = {Difference.B_WORSE: Outcome.REGRESSION, Difference.CHANGED: Outcome.CHANGED,
                  Difference.INCONCLUSIVE: Outcome.INCONCLUSIVE}
@dataclass(frozen=True)
class Earlier:
    """Saved runs to compare with (--fsperf-compare): by TEST::WORKLOAD, each run's result,
    newest run first."""

    name: str
    results: Mapping[str, Sequence[tuple[str, SavedResult]]]
    env: Environment | None  # this run's environment, for the fingerprints
    last: int = 1  # compare with the last N runs whose fingerprint matches


@dataclass(frozen=True)
class Past:
    """Saved runs whose series this run's workloads join (--fsperf-history-gate)."""

    runs: Sequence[saved.Run]
    env: Environment | None  # this run's environment, for the fingerprints and its build
    name: str  # this run's name, as it will be saved
    tolerance: float


@dataclass
class Judgement:
    outcomes: dict[str, Outcome]  # per workload
    failures: list[str] = field(default_factory=list)  # fail the test
    unsure: list[str] = field(default_factory=list)  # inconclusive or incomparable
    machine: list[str] = field(default_factory=list)  # saved runs: the machine canary moved
    notes: list[str] = field(default_factory=list)  # shown with failures (e.g. "not judged")
    checks: dict[str, list[Check]] = field(default_factory=dict)  # against the baseline
    earlier: dict[str, RunComparison] = field(default_factory=dict)  # against a saved run
    baseline: Described | None = None  # the baseline named: name, origin, hardware, scale
    own: dict[str, Outcome] = field(default_factory=dict)  # per workload, saved runs left out
    not_judged: dict[str, list[str]] = field(default_factory=dict)  # per workload: which, why

    def lines_of(self, workload: str) -> list[str]:
        """The failure and inconclusive lines behind one workload's outcome."""
        return [f for f in self.failures + self.unsure + self.machine
                if f.startswith(workload + ":")]


def judge_item(plan: Plan, results: list[WorkloadResult], baseline: Baseline | None = None,
               gated: bool = False, earlier: Earlier | None = None,
               tolerance: float = 0.10, builds: Sequence[Comparison] = (),
               scale: float | None = None, judge_scaled: bool = False,
               expectations: Sequence[Expectation] = (), past: Past | None = None,
               options: Sequence[Comparison] = ()) -> Judgement:
    """Raises UsageError for thresholds no workload of the test can answer. `builds`: the
    release gate's comparisons of the candidate build against the reference; `options`: the
    test's own A/Bs (fsperf.compare), whose outcome is the test's to assert: one that ended
    undecided is unsure, as an undecided gate is (--fsperf-inconclusive)."""
    verdict = judge(plan, results)
    j = Judgement(dict(verdict.per_workload), failures=list(verdict.failures),
                  unsure=list(verdict.inconclusive), notes=list(verdict.notes),
                  not_judged=dict(verdict.not_judged))
    judged = [r for r in results if r.judged]
    if baseline is not None:
        j.baseline = described(baseline)
        for r in judged:
            j.checks[r.name] = check(r, baseline, tolerance, scale, judge_scaled)
            for c in j.checks[r.name]:
                if gated and c.ok is False:
                    j.failures.append(c.message(r.name, tolerance))
                    j.outcomes[r.name] = Outcome.FAIL
    for e in expectations:  # a relative baseline's documented gain, against an A/B's B/A
        if gated and e.failing:
            j.failures.append(e.message())
    j.unsure += [c.message(tolerance) for c in options if c.open_question]
    for gate in builds:
        outcome = BUILD_OUTCOMES.get(gate.outcome)
        if outcome is None:
            continue
        (j.failures if outcome.failing else j.unsure).append(gate.message(tolerance))
        j.outcomes[gate.name] = j.outcomes.get(gate.name, Outcome.NOT_JUDGED).worst(outcome)
    j.own = dict(j.outcomes)
    if earlier is not None:
        for r in judged:
            saved = earlier.results.get(f"{r.test}::{r.name}")
            if not saved:
                continue
            new = _as_saved(r, earlier.env)
            matching = [(n, old) for n, old in saved if old.fingerprint == new.fingerprint]
            history = matching[:earlier.last] or list(saved[:1])  # none: says what differs
            cmp = runs.compare(history[0][0], f"{r.test}::{r.name}", history[0][1], new, tolerance,
                               history)
            j.earlier[r.name] = cmp
            outcome = cmp.outcome.verdict
            if outcome is Outcome.NOT_JUDGED:
                continue
            said = (j.failures if outcome.failing else j.machine
                    if outcome == Outcome.MACHINE_CHANGED else j.unsure)
            said.append(cmp.message(tolerance, r.name))
            j.outcomes[r.name] = j.outcomes[r.name].worst(outcome)
    if past is not None:
        _history_gate(j, judged, past, builds)
    return j


def _as_saved(r: WorkloadResult, env: Environment | None) -> SavedResult:
    """A result of this run as a saved run holds it, to be judged with saved runs."""
    return SavedResult(r.test, r.name, runs.fingerprint(r.scenario, r.options, r.mount, env),
                       r.total(), r.rounds, canary=r.canary)


def _history_gate(j: Judgement, judged: Sequence[WorkloadResult], past: Past,
                  builds: Sequence[Comparison] = ()) -> None:
    """A workload whose series over the saved runs, this run last, starts a worse level now
    (its B/A against the reference build where the run is gated)."""
    doc = {"environment": past.env.to_dict() if past.env else {},
           "results": [asdict(_as_saved(r, past.env)) for r in judged],
           "comparisons": [c.to_dict() for c in builds]}
    run = saved.Run(past.name, time.strftime(saved.CREATED), saved.build_of(doc), doc)
    by_key = {f"{r.test}::{r.name}": r.name for r in judged}
    changes, seen = history.gate_new(past.runs, run, past.tolerance)
    for key in seen:  # judged against its history: passed, unless a change point fails it
        name = by_key[key]
        j.outcomes[name] = j.outcomes.get(name, Outcome.NOT_JUDGED).worst(Outcome.PASS)
    for c in changes:
        name = by_key[c.series.key]
        j.failures.append(f"{name}: history: {c.message()}")
        j.outcomes[name] = j.outcomes[name].worst(Outcome.REGRESSION)
