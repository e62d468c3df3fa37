"""An A/B comparison as a results file holds it: per figure, both sides' runs, B/A over the
pairs with its interval and what it found (judge/comparison.py makes it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from pytest_fsperf import typed
from pytest_fsperf.errors import NotCompared
from pytest_fsperf.figures import METRICS, Fig
from pytest_fsperf.result.judged import Expectation
from pytest_fsperf.result.schema import check
from pytest_fsperf.vocab import CompareKind, Difference, Text


def interval_name(level: float, anytime: bool) -> str:
    """'98% interval' or '70% anytime interval', as every report names it ('interval' where
    the level is not known: a file from before it was kept)."""
    return f"{f'{100 * level:.4g}% ' if level else ''}{'anytime ' if anytime else ''}interval"


@dataclass(frozen=True)
class MetricComparison:
    metric: str
    a: tuple[float | None, ...]  # one figure per pair, in pair order
    b: tuple[float | None, ...]
    a_median: float | None
    b_median: float | None
    ratio: float | None  # geometric mean of the pairs' B/A (each side at least the figure's floor)
    ci_low: float | None = None  # its interval (paired t on the log ratios) at `level`
    ci_high: float | None = None
    level: float = 0.0
    outcome: Difference = Difference.INCONCLUSIVE
    anytime: bool = False  # the interval is a confidence sequence: it held at every look

    @property
    def interval(self) -> str:
        return interval_name(self.level, self.anytime)

    @property
    def bigger_is_better(self) -> bool:
        return METRICS[self.metric].bigger_is_better


@dataclass(frozen=True)
class Comparison:
    test: str
    name: str
    backend: str
    a_options: tuple[str, ...]  # what A is: options (redacted) or a build
    b_options: tuple[str, ...]
    rounds: int  # pairs run
    order: str  # how the runs went, e.g. "ABBAAB", each after a cold start
    a_results: tuple[str, ...]  # names of the WorkloadResults behind the figures
    b_results: tuple[str, ...]
    metrics: dict[str, MetricComparison]
    decided_by: str = ""  # the deciding figure whose outcome is the comparison's
    stopped: str = ""  # why no more pairs were run
    seconds: float = 0.0  # wall time of the comparison, cold starts included
    kind: CompareKind = CompareKind.OPTIONS
    # a relative baseline's documented gain, checked against this B/A (compare(expect=...))
    expectation: Expectation | None = None
    dropped: tuple[str, ...] = ()  # runs not used (not cold after a rerun), each with why
    # a release gate that would pass although one side's runs spread too widely (judged by
    # the runs, never by the size of B/A) says why and decides nothing (unstable()); a
    # regression stands
    unstable: str = ""
    short: str = ""  # runs too short for a precise reading, and what would lengthen them
    # B's daemon died during some of its runs (they were rerun, not used): whatever the
    # figures say, B is worse - a release gate does not pass a build that crashes
    crashed: str = ""
    # where the runs ran: "daemon on CPU 1, load on CPU 0" when every run was pinned alike
    # (--fsperf-cpus), "" when the scheduler placed them
    placement: str = ""
    # what the rest of the machine used over the runs (measure/rest.py), as a range
    machine: str = ""
    # where the difference came from, in the FUSE requests (judge/where.py), largest first
    where: tuple[str, ...] = ()
    # one more pair run with the daemon profiled (measure/profile.py): the functions whose
    # share of its samples moved most; why not, where it was wanted and could not be done
    profile: tuple[str, ...] = ()
    profile_note: str = ""
    # each side's profile, folded (stack, samples), the most sampled stacks first
    profiles: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    # an inconclusive comparison: how many pairs, at their spread so far, would decide
    needed: str = ""
    # every run it kept a result of (names): its figures' and those it did not use (a rerun, a
    # pair dropped), so that no report shows them as workloads of their own
    runs: tuple[str, ...] = ()
    # the figures that decided together (judge/deciding.py), the bandwidth or rate first; a
    # file from before them: decided_by alone
    deciding: tuple[str, ...] = ()
    # request-shape changes the test accepts (marker gate_accept=): said, not failing
    accepted: tuple[str, ...] = ()

    def ratio(self, metric: str = Fig.BW) -> float:
        """B over A (geometric mean of the pairs), e.g. ratio('bw') == 0.5: B has half A's
        bandwidth. Where there is none, NotCompared says what happened and why (the test
        fails in that one line)."""
        m = self.metrics.get(metric)
        if m is None or m.ratio is None:
            label = METRICS[metric].label if metric in METRICS else repr(metric)
            raise NotCompared(f"{self.name}: no {label} B/A to give: {self.what_happened()}")
        return m.ratio

    def what_happened(self) -> str:
        """The outcome, how far it got and why it stopped, and the runs it could not use."""
        said = [f"{self.outcome} after {self.rounds} pair{'' if self.rounds == 1 else 's'}"
                + (f" ({self.stopped})" if self.stopped else "")]
        if self.unstable:
            said.append(f"unstable: {self.unstable}")
        if self.crashed:
            said.append(self.crashed)
        if self.dropped:
            said.append(f"{len(self.dropped)} run{'' if len(self.dropped) == 1 else 's'} not "
                        f"used, first: {self.dropped[0]}")
        return "; ".join(said)

    @property
    def open_question(self) -> bool:
        """A test's own A/B (not a gate, no documented gain to check) left inconclusive:
        unsure, as an undecided gate is (B better or worse is the test's to assert)."""
        return (not self.kind.is_gate and self.expectation is None
                and self.outcome is Difference.INCONCLUSIVE)

    @property
    def outcome(self) -> Difference:
        if self.crashed:
            return Difference.B_WORSE
        m = self.metrics.get(self.decided_by)
        return m.outcome if m and not self.unstable else Difference.INCONCLUSIVE

    def message(self, tolerance: float) -> str:
        """One line for a test's failure or warning: what was found, on which figure, by what."""
        if self.crashed:
            return f"{self.name}: {self.crashed}"
        m = self.metrics.get(self.decided_by)
        if m is None or m.ratio is None:
            return f"{self.name}: no {self.decided_by} figures on both sides to compare"
        if self.unstable:
            return f"{self.name}: the measurement is unstable, nothing decided: {self.unstable}"
        band = (f", {m.interval} {m.ci_low:.3f} to {m.ci_high:.3f}"
                if m.ci_low is not None and m.ci_high is not None else "")
        ref = {CompareKind.MOUNT_GATE: "the reference mount",
               CompareKind.GATE: "the reference build"}.get(self.kind, "A")
        what = {Difference.B_WORSE: f"regression against {ref}",
                Difference.CHANGED: f"changed against {ref}",
                Difference.INCONCLUSIVE: f"inconclusive against {ref}",
                Difference.SAME: f"same as {ref}"}.get(m.outcome, f"{m.outcome} than {ref}")
        found = (*self.where, *self.profile)
        told = (f"; where: {'; '.join(found)}" if found and m.outcome in
                (Difference.B_WORSE, Difference.B_BETTER, Difference.CHANGED) else "")
        more = f"; {self.needed}" if self.needed and m.outcome == Difference.INCONCLUSIVE else ""
        fig = METRICS[m.metric]
        both = (f", {fig.show(m.b_median)} against {fig.show(m.a_median)}"
                if m.a_median is not None and m.b_median is not None else "")
        own = f"; tolerance {100 * fig.tolerance_or(tolerance):g}%"
        return (f"{self.name}: {what}: {fig.label} {m.ratio:.3f}x{both} "
                f"({self.rounds} pairs{band}{own}; {self.decision_of()}{self.stopped}{more})"
                + told + self.accepted_said())

    def decision_of(self) -> str:
        """Which figures decided together, where more than one did ("" otherwise)."""
        if len(self.deciding) < 2:
            return ""
        return ("decided on " + ", ".join(
            f"{METRICS[f].label} {self.metrics[f].outcome}" if f in self.metrics else METRICS[f].label
            for f in self.deciding if f in METRICS) + "; ")

    def accepted_said(self) -> str:
        """The changes the test accepted, said (a reviewer's decision)."""
        moved = [f for f in self.accepted if (m := self.metrics.get(f)) is not None
                 and m.outcome == Difference.CHANGED]
        return "".join(f"; {METRICS[f].label} changed {self.metrics[f].ratio or 0:.3g}x, accepted "
                       "by the test (gate_accept)" for f in moved)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self, dict_factory=lambda items: {
            k: str(v) if isinstance(v, Text) else v for k, v in items})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Comparison:
        """A comparison read back from its JSON (to_dict's, or an older file's: a field it
        lacks takes its default), checked against the schema's comparison and each field by
        its annotation, the enums as enums; ValueError names the field that is wrong.
        to_dict(from_dict(x)) writes x again."""
        what = f"comparison {str(d.get('name', '?'))[:100]!r}" if isinstance(d, Mapping) else "comparison"
        if not isinstance(d, Mapping):
            raise ValueError(f"{what} is not an object")
        check(d, "comparison", what)
        return typed.read(cls, d, what)
