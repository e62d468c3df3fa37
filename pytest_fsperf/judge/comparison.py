"""An A/B comparison as data: per figure, both sides' runs, B/A over the pairs with its
interval, and what it found. Pure: judged by paired.py, rendered by the reports, judged
into a test's verdict by judge/; run by ab.py."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pytest_fsperf.baselines.relative import Expectation
from pytest_fsperf.errors import NotCompared
from pytest_fsperf.infra import typed
from pytest_fsperf.judge import where as fuse_where
from pytest_fsperf.judge.paired import ALPHA, Budget, Paired, log_ratios, paired, pairs_needed, spread_of
from pytest_fsperf.measure.figures import SHORT_WINDOW
from pytest_fsperf.result.schema import check
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.vocab import METRICS as FIGURES
from pytest_fsperf.vocab import CompareKind, Difference, Direction, EngineKind, Settled, Text

# The figures an A/B compares. Daemon CPU is compared per GB moved: a throttled side uses
# less CPU per second only because it moves less, and must not look "better" for it.
# the figures an A/B judges, as the registry says (vocab.METRICS: Metric.compared)
METRICS = tuple(key for key, m in FIGURES.items() if m.compared)


def median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


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
    ratio: float | None  # geometric mean of the pairs' B/A
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
        return FIGURES[self.metric].bigger_is_better


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
    decided_by: str = ""  # the figure the stopping rule watched
    stopped: str = ""  # why no more pairs were run
    seconds: float = 0.0  # wall time of the comparison, cold starts included
    kind: CompareKind = CompareKind.OPTIONS
    # a relative baseline's documented gain, checked against this B/A (compare(expect=...))
    expectation: Expectation | None = None
    dropped: tuple[str, ...] = ()  # runs not used (not cold after a rerun), each with why
    # a release gate that would pass although its sides differ by more than any build
    # plausibly could, or its runs spread too widely, says why and decides nothing
    # (unstable()); a regression stands
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

    def ratio(self, metric: str = "bw") -> float:
        """B over A (geometric mean of the pairs), e.g. ratio('bw') == 0.5: B has half A's
        bandwidth. Where there is none, NotCompared says what happened and why (the test
        fails in that one line)."""
        m = self.metrics.get(metric)
        if m is None or m.ratio is None:
            label = FIGURES[metric].label if metric in FIGURES else repr(metric)
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
                Difference.INCONCLUSIVE: f"inconclusive against {ref}",
                Difference.SAME: f"same as {ref}"}.get(m.outcome, f"{m.outcome} than {ref}")
        found = (*self.where, *self.profile)
        told = (f"; where: {'; '.join(found)}"
                if found and m.outcome in (Difference.B_WORSE, Difference.B_BETTER) else "")
        more = f"; {self.needed}" if self.needed and m.outcome == Difference.INCONCLUSIVE else ""
        return (f"{self.name}: {what}: {FIGURES[m.metric].label} {m.ratio:.3f}x "
                f"({self.rounds} pairs{band}; tolerance {100 * tolerance:g}%; {self.stopped}{more})"
                + told)

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


def _outcome(metric: str, p: Paired, gate: bool) -> Difference:
    bigger_is_better = FIGURES[metric].bigger_is_better
    if p.direction == Direction.SAME:
        return Difference.SAME
    if p.direction in (Direction.UP, Direction.DOWN):
        better = (p.direction == Direction.UP) == bigger_is_better
        return Difference.B_BETTER if better else Difference.B_WORSE
    if gate and (p.not_down if bigger_is_better else p.not_up):
        return Difference.NOT_WORSE
    return Difference.INCONCLUSIVE


def judge_metric(metric: str, av: Sequence[float | None], bv: Sequence[float | None],
                 tolerance: float, anytime: bool = False, gate: bool = False,
                 alpha: float = ALPHA, offsets: Sequence[float] = ()) -> MetricComparison:
    """anytime: the figure is looked at after every pair (paired.py's confidence sequences);
    gate: a release gate's one-sided question, "not worse" decides; alpha: the flag's error;
    offsets: each pair's neighbours adjustment of ln(B/A) (judge/neighbours.py)."""
    p = paired(av, bv, tolerance, anytime, alpha, offsets)
    return MetricComparison(metric, tuple(av), tuple(bv), median(av), median(bv), p.ratio,
                            p.low, p.high, p.level, _outcome(metric, p, gate), p.anytime)


IMPLAUSIBLE = 1.5  # B/A (or its inverse) no build plausibly makes; a side's spread


def unstable(metrics: dict[str, MetricComparison], decided_by: str, pinned: str = "") -> str:
    """Why a release gate's pairs cannot be trusted ("" where they can): sides that differ by
    more than IMPLAUSIBLE, or the middle half of one side's runs spread that widely, with
    what it looks like - runs in two clusters (bimodal), or the daemon's CPU-seconds per GB
    jumping."""
    m = metrics.get(decided_by)
    if m is None or m.ratio is None:
        return ""
    said = []
    if not 1 / IMPLAUSIBLE <= m.ratio <= IMPLAUSIBLE:
        said.append(f"B/A {m.ratio:.2f}, beyond what a build plausibly changes "
                    f"(1/{IMPLAUSIBLE:g} to {IMPLAUSIBLE:g})")
    said += scattered(m)
    cpu = metrics.get("daemon_cpu_per_gb")
    for side, values in (("A", cpu.a), ("B", cpu.b)) if said and cpu else ():
        if _spread(known := _known(values)):
            said.append(f"{side}'s daemon CPU-s per GB jumps {known[0]:.2g} to {known[-1]:.2g}: "
                        "the same bytes cost the daemon more CPU in some runs, as if it served "
                        "them in two modes (a cache state, its backing store, its own buffers"
                        + (")" if pinned else ", or the scheduler waking the reader on the "
                           "daemon's CPU in some runs and on another in others: "
                           "--fsperf-cpus=split pins them)"))
    return "; ".join(said)


def scattered(m: MetricComparison) -> list[str]:
    """Each side whose runs spread wider than IMPLAUSIBLE, as said (none: [])."""
    said = []
    for side, values in (("A", m.a), ("B", m.b)):
        known = _known(values)
        if spread := _spread(known):
            said.append(f"{side}'s runs spread {spread:.1f}x{_clusters(known)}")
    return said


def _known(values: Sequence[float | None]) -> list[float]:
    """One side's figures that were measured (and not zero), sorted."""
    return sorted(v for v in values if v)


def _spread(known: list[float]) -> float:
    """How widely one side's sorted figures spread, when past IMPLAUSIBLE, else 0: the middle
    half (upper over lower quartile) from 4 runs on - the extremes of many short runs say
    little - and max over min below that."""
    if len(known) < 2:
        return 0.0
    if len(known) >= 4:
        low, _mid, high = statistics.quantiles(known, n=4, method="inclusive")
    else:
        low, high = known[0], known[-1]
    spread = high / low if low > 0 else math.inf
    return spread if spread > IMPLAUSIBLE else 0.0


def _clusters(known: list[float]) -> str:
    """' in two clusters (bimodal: ...)' where the sorted runs split at a gap wider than
    sqrt(IMPLAUSIBLE) with at least a fifth of them (and 2) on each side; else ''."""
    least = max(2, len(known) // 5) if len(known) >= 4 else 1
    gaps = [i for i in range(least - 1, len(known) - least)
            if known[i + 1] / known[i] > IMPLAUSIBLE ** 0.5]
    if not gaps:
        return ""
    gap = max(gaps, key=lambda i: known[i + 1] / known[i])
    return (f" in two clusters (bimodal: {gap + 1} near {statistics.median(known[:gap + 1]):.3g}, "
            f"{len(known) - gap - 1} near {statistics.median(known[gap + 1:]):.3g})")


SHORT_RUN = 2.0  # s: a run shorter than this reads coarsely (timers, cold-start jitter)


def short_runs(runs: Sequence[WorkloadResult]) -> str:
    """Say so when the runs behind a comparison are short, and what lengthens them."""
    walls = [r.wall_seconds for r in runs if r.wall_seconds]
    if not walls or statistics.median(walls) >= SHORT_RUN:
        return ""
    how = ("a larger size or count (size=, count=, entries=)" if runs[0].kind != EngineKind.FIO or
           "time_based" not in runs[0].options else "a longer runtime")
    return (f"runs of {statistics.median(walls):.2g} s at the median, under the {SHORT_RUN:g} s a "
            f"precise reading needs: give the workload {how}")


def primary(result: WorkloadResult) -> str:
    """The figure that decides: a write's bandwidth to the store where the store counted it
    (what a buffering daemon's user waits for), else bandwidth where bytes moved, else
    operations per second."""
    if result.single_metrics().get("stored_bw"):
        return "stored_bw"
    return "bw" if result.io_bytes else "ops"


def compare(test: str, name: str, backend: str, a_options: tuple[str, ...],
            b_options: tuple[str, ...], a: list[WorkloadResult], b: list[WorkloadResult],
            order_run: str, tolerance: float = 0.10, budget: Budget | None = None,
            stopped: str = "", seconds: float = 0.0,
            kind: CompareKind = CompareKind.OPTIONS, dropped: tuple[str, ...] = (),
            died: tuple[str, ...] = (), offsets: Sequence[float] = (),
            adjusted: str = "") -> Comparison:
    """Every figure of the pairs judged; the deciding figure as the stopping rule saw it
    (looked at after every pair when the budget let pairs be added; its pairs' neighbours
    adjustment, `offsets`, said by `adjusted`)."""
    decided_by = primary(b[0]) if b else "bw"
    anytime = budget.anytime if budget else False
    metrics = {}
    for metric in METRICS:
        av = tuple(r.single_metrics().get(metric) for r in a)
        bv = tuple(r.single_metrics().get(metric) for r in b)
        if all(v is None for v in av + bv):
            continue
        watched = metric == decided_by
        metrics[metric] = judge_metric(metric, av, bv, tolerance, anytime and watched,
                                       kind.is_gate, budget.alpha if budget and watched else ALPHA,
                                       offsets if watched else ())
    deciding = metrics.get(decided_by)
    pinned = placed([*a, *b])
    passing = kind.is_gate and deciding is not None and deciding.outcome != Difference.B_WORSE
    return Comparison(test, name, backend, a_options, b_options, len(b), order_run,
                      tuple(r.name for r in a), tuple(r.name for r in b), metrics, decided_by,
                      stopped, seconds, kind, dropped=dropped,
                      unstable=unstable(metrics, decided_by, pinned) if passing else "",
                      short=short_runs([*a, *b]), crashed=_crashed(died, kind),
                      placement=pinned,
                      machine="; ".join(x for x in (machine_during([*a, *b]), adjusted) if x),
                      where=fuse_where.findings(a, b),
                      needed=_needed(deciding, tolerance, kind.is_gate, seconds, budget)
                      if anytime and deciding is not None else "")


def _needed(m: MetricComparison, tolerance: float, gate: bool, seconds: float,
            budget: Budget | None) -> str:
    """What an inconclusive sequence would have needed, said as advice ("" when decided)."""
    pairs = len(log_ratios(m.a, m.b))
    if m.outcome != Difference.INCONCLUSIVE or pairs < 3:
        return ""
    spread = f"at the pairs' spread so far (±{100 * spread_of(m.a, m.b):.0f}% per pair)"
    n = pairs_needed(m.a, m.b, tolerance, gate, FIGURES[m.metric].bigger_is_better,
                     budget.alpha if budget else ALPHA)
    if n is None:
        return (f"{spread} no practical number of pairs would decide: B/A sits at the "
                "tolerance's edge")
    cap = budget.max_pairs if budget else n
    pace = seconds / pairs if seconds else 0.0
    t = f", about {math.ceil(n * pace / 10) * 10:.0f} s at this pace (--fsperf-ab-seconds)" if pace else ""
    over = (f"; more than the cap of {cap} pairs allows: a wider tolerance, or a steadier "
            "machine or workload" if n > cap else "")
    return f"{spread} about {n} pairs in all would decide{t}{over}"


def placed(runs: Sequence[WorkloadResult]) -> str:
    """How the runs were placed on CPUs, when all alike and pinned; "" when unpinned."""
    seen = {r.placement for r in runs}
    if len(seen) > 1:
        return "placed unlike each other: " + "; ".join(
            sorted(p.shown() if p else "unpinned" for p in seen))
    one = seen.pop() if seen else None
    return one.shown() if one else ""


def machine_during(runs: Sequence[WorkloadResult]) -> str:
    """The rest of the machine over the runs, as a range ("" where no run was read)."""
    read = [r.rest for r in runs if r.rest is not None]
    if not read:
        return ""
    cpu, steal = sorted(x.cpu for x in read), sorted(x.steal for x in read)
    said = f"the rest of the machine used {cpu[0]:.2f}-{cpu[-1]:.2f} cores"
    if steal[-1] > 0:
        said += f", steal {steal[0]:.2f}-{steal[-1]:.2f}"
    unread = len(runs) - len(read)
    return said + (f" ({unread} runs under {SHORT_WINDOW:g} s not read)" if unread else "")


def _crashed(died: tuple[str, ...], kind: CompareKind) -> str:
    """B's runs whose daemon died, said as a finding (died: "B3", "A1", ...)."""
    b = [d for d in died if d.startswith("B")]
    if not b:
        return ""
    who = "the candidate's daemon" if kind.is_gate else "B's daemon"
    return (f"{who} died during {len(b)} run{'' if len(b) == 1 else 's'} ({', '.join(b)}; "
            "rerun, not used in the figures): a build that crashes is worse, whatever its speed")


def settled(c: Comparison | Mapping[str, Any]) -> Settled:
    """A comparison's outcome as a whole (the type, or its JSON): crashed, unstable, else its
    deciding figure's outcome."""
    if isinstance(c, Comparison):
        m = c.metrics.get(c.decided_by or "bw")
        said = (Settled.CRASHED if c.crashed else Settled.UNSTABLE if c.unstable
                else Settled(str(m.outcome)) if m is not None else Settled.NOT_MEASURED)
        return said
    if c.get("crashed"):
        return Settled.CRASHED
    if c.get("unstable"):
        return Settled.UNSTABLE
    metric = (c.get("metrics") or {}).get(c.get("decided_by") or "bw") or {}
    try:
        return Settled(str(metric.get("outcome") or "-"))
    except ValueError:
        return Settled.NOT_MEASURED
