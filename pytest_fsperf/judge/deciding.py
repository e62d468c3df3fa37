"""Which figures decide an A/B (a release gate, fsperf.compare), and what they come to together.

A regression users meet after a release is as often in the daemon's CPU, its memory or the
shape of its requests as in its bandwidth (issue 72: JuiceFS's FUSE writes of 128 KiB for
1 MiB, gcsfuse's 600 MB of RSS for a 256 MiB write). So an A/B decides on several figures:
the bandwidth (or ops/s where no bytes moved), every figure the test bounds, and the
registry's gated ones (figures.Metric.gated) - each with its own tolerance, direction and
floor from the registry. Together: any figure worse decides "B worse", else any request
shape that moved (and the test did not accept) "changed", else any still undecided leaves
the comparison undecided, else the bandwidth's (or rate's) outcome stands. The flag's error
is split over the figures (Bonferroni), as a suite's is over its workloads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pytest_fsperf.figures import METRICS, Fig
from pytest_fsperf.plan.marker import KEYWORDS
from pytest_fsperf.result.comparison import MetricComparison
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.vocab import Difference

PRIMARY = "primary"  # in a chosen list: the bandwidth, or ops/s where no bytes moved
DEFAULT = "default"  # in a chosen list: the default set (PRIMARY, bounded, gated)
# s of daemon CPU a run must hold for its CPU per GB to decide: below it, CPU time counted
# in 10 ms ticks moves by 20% and more from run to run (go-fuse's loopback writing 64 MiB:
# 5 or 6 ticks) and a good build waits dozens of pairs to pass
MIN_CPU_SECONDS = 0.5
WORST_FIRST = (Difference.B_WORSE, Difference.CHANGED, Difference.INCONCLUSIVE)


def primary(result: WorkloadResult) -> str:
    """The figure the stopping rule watches first: a write's bandwidth to the store where the
    store counted it (what a buffering daemon's user waits for), else bandwidth where bytes
    moved, else operations per second."""
    if result.single_metrics().get(Fig.STORED_BW):
        return Fig.STORED_BW
    return Fig.BW if result.io_bytes else Fig.OPS


@dataclass(frozen=True)
class Deciding:
    """What decides a test's A/Bs: `chosen` figures (marker gate_on=, --fsperf-gate-on; () or
    DEFAULT among them: the default set), the figures the test `bounded` (its marker's
    keywords' figures) and the request-shape changes it `accepted` (marker gate_accept=)."""

    chosen: tuple[str, ...] = ()
    bounded: tuple[str, ...] = ()
    accepted: tuple[str, ...] = ()

    def figures(self, first: WorkloadResult) -> tuple[str, ...]:
        """The deciding figures of a comparison whose first B run is `first`: those it
        measured, the primary first."""
        have = {k for k, v in first.single_metrics().items() if v is not None}
        daemon = first.daemon
        if daemon is not None and daemon.cpu_seconds < MIN_CPU_SECONDS:
            have.discard(Fig.DAEMON_CPU_PER_GB)  # a few 10 ms ticks a run: too coarse to decide
        lead = primary(first)
        wanted: list[str] = []
        for name in self.chosen or (DEFAULT,):
            if name == DEFAULT:
                wanted += [lead, *self.bounded, *(k for k, m in METRICS.items() if m.gated)]
            else:
                wanted.append(lead if name == PRIMARY else name)
        out: list[str] = []
        for name in wanted:
            name = stand_in(name, have)
            if name in have and METRICS[name].compared and name not in out:
                out.append(name)
        return tuple(out) or (lead,)


BY_DEFAULT = Deciding()  # the default set, nothing bounded or accepted


def stand_in(name: str, have: Iterable[str]) -> str:
    """The figure that decides for `name`: daemon CPU% where bytes moved is its CPU per GB (a
    faster build uses more CPU per second for the same bytes)."""
    instead = METRICS[name].unless if name in METRICS else ""
    return instead if instead and instead in set(have) else name


def tolerance_of(metric: str, test_tolerance: float) -> float:
    """A figure's own tolerance (the registry's), else the test's."""
    return METRICS[metric].tolerance_or(test_tolerance)


def decided_by(metrics: Mapping[str, MetricComparison], figures: tuple[str, ...],
               accepted: tuple[str, ...] = ()) -> str:
    """The figure whose outcome is the comparison's: the first worse, else the first changed
    (not accepted), else the first undecided, else the first (the primary)."""
    judged = [f for f in figures if f in metrics]
    for want in WORST_FIRST:
        for f in judged:
            if metrics[f].outcome == want and not (want == Difference.CHANGED and f in accepted):
                return f
    return judged[0] if judged else (figures[0] if figures else Fig.BW)


def bounded_by(keywords: Iterable[str]) -> tuple[str, ...]:
    """The figures a test's marker keywords bound (max_cpu: daemon CPU; max_rss: peak memory)."""
    out: list[str] = []
    for k in keywords:
        if k in KEYWORDS and (m := KEYWORDS[k].metric) in METRICS and m not in out:
            out.append(m)
    return tuple(out)
