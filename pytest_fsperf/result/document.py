"""A results file and its rows: each workload's result with its judgement, read once from its JSON
form (this run's, a worker's, a saved run's) into its types - the result's own
(WorkloadResult.from_dict, checked against result/schema.json) and the judgement's. The
renderers read attributes, never keys of the JSON."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pytest_fsperf import typed
from pytest_fsperf.result.comparison import Comparison
from pytest_fsperf.result.environment import Environment
from pytest_fsperf.result.judged import Check, Described, RunComparison
from pytest_fsperf.result.parts import Headline, Spread
from pytest_fsperf.result.versions import upgrade
from pytest_fsperf.result.workload import WorkloadResult, summary
from pytest_fsperf.vocab import Outcome


@dataclass(frozen=True)
class FailedTest:
    """A test that failed or errored, whatever the cause: it makes the decision FAIL."""

    test: str  # pytest's node id
    when: str  # setup, call, teardown or collect
    fsperf: bool = False  # it uses the fsperf fixture or marker
    message: str = ""  # the first line of why, secrets masked

    @classmethod
    def of(cls, given: Mapping[str, Any] | FailedTest) -> FailedTest:
        """From a results file (a field it lacks takes its default; what it cannot hold is
        said as text)."""
        if isinstance(given, FailedTest):
            return given
        return cls(str(given.get("test", "?")), str(given.get("when", "call")),
                   bool(given.get("fsperf", False)), str(given.get("message", "")))


@dataclass(frozen=True)
class _Spreads:
    by: dict[str, Spread]


@dataclass(frozen=True)
class Limit:
    """A threshold the workload was judged by, as a chart draws it across its bar."""

    bound: str  # "min" or "max"
    limit: float
    text: str  # as the user wrote it: "min_bw 2GB/s"


@dataclass(frozen=True)
class ResultRow(WorkloadResult):
    """One measured workload and how it was judged, as every report shows it."""

    verdict: Outcome = Outcome.NOT_JUDGED
    verdict_own: Outcome = Outcome.NOT_JUDGED  # by the test's own thresholds alone
    failures: tuple[str, ...] = ()  # why it failed or is undecided, one line each
    not_judged: tuple[str, ...] = ()  # thresholds that could not be judged (PARTIAL)
    limits: dict[str, Limit] = field(default_factory=dict)  # by figure: the threshold lines
    baseline: Described | None = None  # the shipped or saved baseline it was checked against
    baseline_key: str | None = None
    baseline_checks: tuple[Check, ...] = ()
    baseline_entry: dict[str, dict[str, str | float]] | None = None  # as a baseline file holds them
    fingerprint: dict[str, str | float | None] = field(default_factory=dict)
    run_comparison: RunComparison | None = None

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> ResultRow:
        """The row of a result's JSON form, of the current version (versions.upgrade), checked
        against the schema once (from_dict)."""
        row = cls.from_dict(doc)
        given = doc.get("stats")
        if isinstance(given, Mapping) and given:  # what to_dict worked out (the same, seeded)
            row.__dict__["stats"] = typed.read(_Spreads, {"by": given}, "stats").by
        return row

    @property
    def key(self) -> tuple[str, str]:
        return (self.test, self.name)

    @cached_property
    def headline(self) -> Headline:
        """The headline figures (medians over rounds), worked out once."""
        return self.total()

    @cached_property
    def stats(self) -> dict[str, Spread]:
        """Each figure over the rounds, worked out once (or as the file gave them)."""
        return summary(self)

    def spreads(self) -> dict[str, Spread]:
        return self.stats

    def median(self, metric: str) -> float | None:
        """A figure's median over the rounds (None: not measured)."""
        spread = self.stats.get(metric)
        return spread.median if spread is not None else None


def rows(results: Sequence[Mapping[str, Any] | ResultRow]) -> list[ResultRow]:
    """Each result as its row (made once; rows given are kept)."""
    return [r if isinstance(r, ResultRow) else ResultRow.of(r) for r in results]


def comparisons(given: Iterable[Mapping[str, Any] | Comparison]) -> list[Comparison]:
    """Each comparison as its type (read once; those given as types are kept)."""
    return [c if isinstance(c, Comparison) else Comparison.from_dict(c) for c in given]


@dataclass(frozen=True)
class Document:
    """A results file (--fsperf-json's) read into its types."""

    environment: Environment | None
    results: tuple[ResultRow, ...]
    comparisons: tuple[Comparison, ...]
    failed_tests: tuple[FailedTest, ...]

    @classmethod
    def read(cls, doc: Mapping[str, Any], what: str) -> Document:
        """A file's document of any version this project has written, brought to this one and
        read (ValueError: what is wrong, and where)."""
        try:
            return cls.of(upgrade(doc))
        except ValueError as exc:
            raise ValueError(f"{what}: {exc}") from None

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> Document:
        """ValueError names what does not read (of the current version: read() brings an
        older one to it)."""
        env = doc.get("environment")
        return cls(Environment.from_dict(env) if isinstance(env, Mapping) and env else None,
                   tuple(rows(doc.get("results") or [])),
                   tuple(comparisons(doc.get("comparisons") or [])),
                   tuple(FailedTest.of(t) for t in doc.get("failed_tests") or []
                         if isinstance(t, Mapping)))
