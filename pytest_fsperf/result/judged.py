"""How a result was judged against what it was not measured beside, as a results file holds
it: a documented baseline (its description and each figure's check), a relative baseline's
documented gain, and a saved run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pytest_fsperf.figures import FILE_KEYS, METRICS, Metric
from pytest_fsperf.vocab import RunOutcome

Condition = str | int | float | list[str]


@dataclass(frozen=True)
class Described:
    """A baseline as a result names it: where it came from and what it was measured on."""

    name: str
    origin: str = ""  # "shipped" or the saved file's path
    hardware: str | None = None
    scale: float | None = None
    kernel: str | None = None
    conditions: dict[str, Condition] = field(default_factory=dict)  # vcpu, memory_gib, options



def show_documented(metric: str, low: float, high: float | None = None) -> str:
    """A documented figure (a baseline file's key: bw, cpu, rss) as the registry shows its
    figure; a range as 'low to high', and one whose ends are equal as one figure."""
    show = METRICS[FILE_KEYS[metric]].show
    shown = show(low)
    return shown if high is None or high == low else f"{shown} to {show(high)}"


@dataclass(frozen=True)
class Check:
    baseline: str
    key: str  # scenario id, or TEST:WORKLOAD for a saved run's own workloads
    metric: str  # bw, cpu, rss
    measured: float | None
    documented: float
    printed: str  # as the baseline printed it
    ratio: float | None  # measured / documented
    ok: bool | None  # within tolerance; None: not measured, or not comparable (note says)
    high: float | None = None  # a documented range's top
    note: str = ""  # why the figure is not judged
    per: str = "total"  # "job": each fio job's own figure (measured: the slowest job's)
    measured_high: float | None = None  # per job: the fastest job's

    @property
    def shown(self) -> str:
        """The documented figure in the unit the measured one is shown in."""
        return show_documented(self.metric, self.documented, self.high) + self.unit

    @property
    def unit(self) -> str:
        return " per job" if self.per == "job" else ""

    @property
    def measured_shown(self) -> str:
        if self.measured is None:
            return "-"
        return show_documented(self.metric, self.measured, self.measured_high) + self.unit

    @property
    def figure(self) -> Metric:
        return METRICS[FILE_KEYS[self.metric]]

    def message(self, workload: str, tolerance: float) -> str:
        higher = self.figure.bigger_is_better
        bound = f"{100 * (1 - tolerance):g}% of" if higher else f"{100 * (1 + tolerance):g}% of"
        op = "<" if higher else ">"
        return (f"{workload}: {self.figure.label} {self.measured_shown} {op} {bound} "
                f"{self.baseline}'s {self.shown} ({self.key})")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Expectation:
    baseline: str
    entry: str
    a: str
    b: str
    printed: str
    expected: float  # B/A of the deciding rate
    measured: float | None
    ci_low: float | None
    ci_high: float | None
    outcome: str  # as documented / smaller gain / larger gain / inconclusive
    note: str = ""  # a condition that differs (another scale), and whether it is judged then
    judged: bool = True

    @property
    def failing(self) -> bool:
        return self.judged and self.outcome == SMALLER

    def message(self) -> str:
        shown = f"{self.measured:.2f}x" if self.measured is not None else "-"
        band = (f" [{self.ci_low:.2f}-{self.ci_high:.2f}]"
                if self.ci_low is not None and self.ci_high is not None else "")
        return (f"{self.baseline}:{self.entry}: B/A {shown}{band}, documented {self.expected:.2f}x "
                f"({self.printed} less time, {self.b} against {self.a}): {self.outcome}"
                + (f" ({self.note})" if self.note else ""))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


AS_DOCUMENTED, SMALLER, LARGER, UNDECIDED = ("as documented", "smaller gain than documented",
                                             "larger gain than documented", "inconclusive")


@dataclass(frozen=True)
class RunComparison:
    run: str  # the saved run's name (the newest, against several)
    key: str  # TEST::WORKLOAD
    metric: str  # bw or ops; req_total where the requests grew
    outcome: RunOutcome
    old: list[float]  # its rounds; against several runs, each run's median
    new: list[float]
    ratio: float | None  # median(new) / median(old)
    ci_low: float | None
    ci_high: float | None
    differs: list[str]  # fingerprint fields that differ (incomparable)
    runs: list[str] = field(default_factory=list)  # every run compared with
    canary: float | None = None  # the machine now / then, by the canary
    note: str = ""  # what the comparison cannot show, and what would

    def message(self, tolerance: float, who: str | None = None) -> str:
        """One line, starting with `who` (default: TEST::WORKLOAD)."""
        who = who or self.key
        against = (f"run {self.run!r}" if len(self.runs) <= 1
                   else f"the last {len(self.runs)} matching runs ({', '.join(self.runs)})")
        if self.outcome == RunOutcome.INCOMPARABLE:
            return (f"{who}: not compared with run {self.run!r}: the "
                    f"{', '.join(self.differs)} differ")
        if self.outcome == RunOutcome.MACHINE_CHANGED:
            return (f"{who}: the machine changed since {against}: its canary ran "
                    f"{self.canary:.3f}x as fast (more than half the tolerance, "
                    f"{50 * tolerance:g}%); not judged against the filesystem")
        shown = f"{self.ratio:.3f}" if self.ratio is not None else "-"
        band = (f", 95% interval {self.ci_low:.3f} to {self.ci_high:.3f}"
                if self.ci_low is not None and self.ci_high is not None else "")
        sides = (f"{len(self.new)} rounds vs {len(self.old)} run medians" if len(self.runs) > 1
                 else f"{len(self.new)} vs {len(self.old)} rounds")
        note = f"; {self.note}" if self.note else ""
        return (f"{who}: {self.outcome} against {against}: {self.metric} "
                f"{shown}x ({sides}{band}; tolerance {100 * tolerance:g}%){note}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
