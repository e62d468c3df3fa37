"""An A/B comparison as data: per figure, both sides' runs, B/A over the pairs with its
interval, and what it found. Pure: judged by paired.py, rendered by the reports, judged
into a test's verdict by judge/; run by ab.py."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_fsperf.figures import METRICS, Fig
from pytest_fsperf.judge import where as fuse_where
from pytest_fsperf.judge.deciding import BY_DEFAULT, Deciding, decided_by, tolerance_of
from pytest_fsperf.judge.paired import (
    ALPHA,
    Budget,
    Paired,
    counted,
    log_ratios,
    paired,
    pairs_needed,
    spread_of,
)
from pytest_fsperf.result.comparison import Comparison, MetricComparison
from pytest_fsperf.result.daemon import SHORT_WINDOW
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.vocab import CompareKind, Difference, Direction, EngineKind, Settled

# the figures an A/B judges, as the registry says (figures.METRICS: Metric.compared)
COMPARED = tuple(key for key, m in METRICS.items() if m.compared)


def median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _outcome(metric: str, p: Paired, gate: bool) -> Difference:
    fig = METRICS[metric]
    if p.direction == Direction.SAME:
        return Difference.SAME
    if p.direction in (Direction.UP, Direction.DOWN):
        if fig.shape:  # a request shape: no better direction
            return Difference.CHANGED
        better = (p.direction == Direction.UP) == fig.bigger_is_better
        return Difference.B_BETTER if better else Difference.B_WORSE
    if gate and not fig.shape and (p.not_down if fig.bigger_is_better else p.not_up):
        return Difference.NOT_WORSE
    return Difference.INCONCLUSIVE


def judge_metric(metric: str, av: Sequence[float | None], bv: Sequence[float | None],
                 tolerance: float, anytime: bool = False, gate: bool = False,
                 alpha: float = ALPHA, offsets: Sequence[float] = ()) -> MetricComparison:
    """anytime: the figure is looked at after every pair (paired.py's confidence sequences);
    gate: a release gate's one-sided question, "not worse" decides; alpha: the flag's error;
    offsets: each pair's neighbours adjustment of ln(B/A) (judge/neighbours.py). tolerance:
    the test's; a figure with its own (the registry's) is judged with that, and an exact
    count first by the count's rule (paired.counted)."""
    fig = METRICS[metric]
    tolerance = tolerance_of(metric, tolerance)
    p = paired(av, bv, tolerance, anytime, alpha, offsets, fig.floor)
    if fig.count and (found := counted(av, bv, tolerance, fig.floor)) is not None:
        p = dataclasses.replace(p, direction=found)
    return MetricComparison(metric, tuple(av), tuple(bv), median(av), median(bv), p.ratio,
                            p.low, p.high, p.level, _outcome(metric, p, gate), p.anytime)


def flag_share(alpha: float, figures: tuple[str, ...]) -> float:
    """The flag's error each deciding figure is judged at: alpha split over them (Bonferroni)."""
    return alpha / max(1, len(figures))


def judge_all(a: Sequence[WorkloadResult], b: Sequence[WorkloadResult], figures: tuple[str, ...],
              tolerance: float, anytime: bool, gate: bool, alpha: float,
              offsets: Sequence[float] = (), every: bool = True) -> dict[str, MetricComparison]:
    """Each figure of the pairs judged (every=False: the deciding `figures` only): those in
    `figures` as the stopping rule sees them (looked at after every pair where `anytime`, the
    flag's error `alpha` split over them, the first one's pairs adjusted by `offsets`), the
    others at the plain error, described."""
    out = {}
    share = flag_share(alpha, figures)
    am, bm = [r.single_metrics() for r in a], [r.single_metrics() for r in b]  # once a run
    for metric in COMPARED if every else figures:
        av = tuple(m.get(metric) for m in am)
        bv = tuple(m.get(metric) for m in bm)
        if all(v is None for v in av + bv):
            continue
        watched = metric in figures
        out[metric] = judge_metric(metric, av, bv, tolerance, anytime and watched, gate,
                                   share if watched else ALPHA,
                                   offsets if figures and metric == figures[0] else ())
    return out


IMPLAUSIBLE = 1.5  # a side's spread (middle half, or max/min below 4 runs) past which its
# runs do not measure one thing


def unstable(metrics: dict[str, MetricComparison], decided_by: str, pinned: str = "") -> str:
    """Why a release gate's pairs cannot be trusted ("" where they can), judged by the runs
    themselves, never by the size of B/A (a build twice as fast, measured steadily, is a large
    effect and decided: s3fs's readdir change was 1.94x): the middle half of one side's runs
    spread over IMPLAUSIBLE, with what it looks like - runs in two clusters (bimodal), or the
    daemon's CPU-seconds per GB jumping."""
    m = metrics.get(decided_by)
    if m is None or m.ratio is None:
        return ""
    said = scattered(m)
    cpu = metrics.get(Fig.DAEMON_CPU_PER_GB)
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


def compare(test: str, name: str, backend: str, a_options: tuple[str, ...],
            b_options: tuple[str, ...], a: list[WorkloadResult], b: list[WorkloadResult],
            order_run: str, tolerance: float = 0.10, budget: Budget | None = None,
            stopped: str = "", seconds: float = 0.0,
            kind: CompareKind = CompareKind.OPTIONS, dropped: tuple[str, ...] = (),
            died: tuple[str, ...] = (), offsets: Sequence[float] = (),
            adjusted: str = "", deciding: Deciding = BY_DEFAULT) -> Comparison:
    """Every figure of the pairs judged; the deciding ones (deciding.py) as the stopping rule
    saw them (looked at after every pair when the budget let pairs be added; the primary's
    pairs' neighbours adjustment, `offsets`, said by `adjusted`), the comparison's outcome
    theirs together."""
    figures = deciding.figures(b[0]) if b else (Fig.BW,)
    anytime = budget.anytime if budget else False
    alpha = budget.alpha if budget else ALPHA
    metrics = judge_all(a, b, figures, tolerance, anytime, kind.is_gate, alpha, offsets)
    by = decided_by(metrics, figures, deciding.accepted)
    lead = metrics.get(figures[0])
    pinned = placed([*a, *b])
    passing = (kind.is_gate and lead is not None and by in metrics
               and metrics[by].outcome not in (Difference.B_WORSE, Difference.CHANGED))
    return Comparison(test, name, backend, a_options, b_options, len(b), order_run,
                      tuple(r.name for r in a), tuple(r.name for r in b), metrics, by,
                      stopped, seconds, kind, dropped=dropped,
                      unstable=unstable(metrics, figures[0], pinned) if passing else "",
                      short=short_runs([*a, *b]), crashed=_crashed(died, kind),
                      placement=pinned,
                      machine="; ".join(x for x in (machine_during([*a, *b]), adjusted) if x),
                      where=fuse_where.findings(a, b),
                      needed=_needed(metrics[by], tolerance_of(by, tolerance), kind.is_gate,
                                     seconds, budget, flag_share(alpha, figures))
                      if anytime and by in metrics else "",
                      deciding=tuple(f for f in figures if f in metrics),
                      accepted=tuple(f for f in deciding.accepted if f in metrics))


def _needed(m: MetricComparison, tolerance: float, gate: bool, seconds: float,
            budget: Budget | None, alpha: float) -> str:
    """What an inconclusive sequence would have needed, said as advice ("" when decided),
    counted at the flag error `alpha` the figure was judged at (flag_share)."""
    pairs = len(log_ratios(m.a, m.b))
    if m.outcome != Difference.INCONCLUSIVE or pairs < 3:
        return ""
    spread = f"at the pairs' spread so far (±{100 * spread_of(m.a, m.b):.0f}% per pair)"
    n = pairs_needed(m.a, m.b, tolerance, gate, METRICS[m.metric].bigger_is_better, alpha)
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
        m = c.metrics.get(c.decided_by or Fig.BW)
        said = (Settled.CRASHED if c.crashed else Settled.UNSTABLE if c.unstable
                else Settled(str(m.outcome)) if m is not None else Settled.NOT_MEASURED)
        return said
    if c.get("crashed"):
        return Settled.CRASHED
    if c.get("unstable"):
        return Settled.UNSTABLE
    metric = (c.get("metrics") or {}).get(c.get("decided_by") or Fig.BW) or {}
    try:
        return Settled(str(metric.get("outcome") or "-"))
    except ValueError:
        return Settled.NOT_MEASURED
