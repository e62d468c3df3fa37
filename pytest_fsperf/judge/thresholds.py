"""Judge a test's measured workloads against the thresholds of its plan."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pytest_fsperf import units
from pytest_fsperf.errors import UsageError
from pytest_fsperf.figures import METRICS, Fig, Source
from pytest_fsperf.plan.marker import Plan, Threshold
from pytest_fsperf.result.daemon import SHORT_WINDOW
from pytest_fsperf.result.timeline import MIN_INTERVALS
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.stats import median_ci
from pytest_fsperf.vocab import ColdRead, Outcome


@dataclass
class Verdict:
    failures: list[str] = field(default_factory=list)
    inconclusive: list[str] = field(default_factory=list)  # the rounds' spread straddles a limit
    notes: list[str] = field(default_factory=list)
    per_workload: dict[str, Outcome] = field(default_factory=dict)
    not_judged: dict[str, list[str]] = field(default_factory=dict)  # workload -> each threshold, why


def judge(plan: Plan, results: list[WorkloadResult]) -> Verdict:
    """Failures name the workload and the threshold. Raises UsageError when a
    threshold cannot be answered by any judged workload of the test."""
    verdict = Verdict()
    judged = [r for r in results if r.judged]
    for r in results:
        verdict.per_workload[r.name] = (Outcome.PASS if plan.thresholds and r.judged
                                     else Outcome.NOT_JUDGED)
    for r in judged if plan.thresholds else ():
        if r.cold_read == ColdRead.NOT_COLD:  # its figures are not those of a cold read
            verdict.inconclusive.append(f"{r.name}: a cold read that was not cold: {r.cold_evidence}")
            verdict.per_workload[r.name] = verdict.per_workload[r.name].worst(Outcome.INCONCLUSIVE)
    _failed_operations(plan, judged, verdict)
    if plan.thresholds and not judged:
        raise UsageError(f"{plan.test}: has fsperf thresholds but measured no judged workload "
                         "(use the fsperf fixture, e.g. fsperf.fio(...))")
    for threshold in plan.thresholds:
        metric = threshold.spec.metric
        base = metric.split(":", 1)[0]  # a per-opcode FUSE figure: its opcode's share of base
        answering = [r for r in judged if base in r.metrics()]
        if not answering:
            kinds = ", ".join(sorted({r.kind for r in judged}))
            raise UsageError(f"{plan.test}: fsperf marker {threshold.named}: "
                             f"{kinds} workloads do not measure {threshold.spec.label}")
        if metric in PER_DAEMON:  # on hosts: every host's daemon apart, not their sum
            answering = [r for r in answering if not _per_host(threshold, r, verdict)]
        for r in answering:
            measured = r.figure(metric)
            if measured is None:
                why = not_measured(r, metric)
                said = f"{threshold.named} not judged ({why})"
                verdict.notes.append(f"{r.name}: {said}")
                verdict.not_judged.setdefault(r.name, []).append(said)
                if verdict.per_workload[r.name] == Outcome.PASS:
                    verdict.per_workload[r.name] = Outcome.PARTIAL
                continue
            values = r.values(metric)
            lo, hi = median_ci(values) if len(values) > 1 else (measured, measured)
            spread = (f" (median of {len(values)} rounds, 95% interval {threshold.spec.show(lo)}"
                      f" to {threshold.spec.show(hi)})") if len(values) > 1 else ""
            if threshold.holds(lo) and threshold.holds(hi):
                continue
            if not threshold.holds(lo) and not threshold.holds(hi):
                verdict.failures.append(threshold.describe_failure(r.name, measured) + spread
                                        + _carried(r, metric))
                verdict.per_workload[r.name] = Outcome.FAIL
            else:
                verdict.inconclusive.append(
                    f"{r.name}: {threshold.named} {threshold.text} inconclusive: "
                    f"{threshold.spec.label} {threshold.spec.show(measured)}{spread}; "
                    "run more rounds (--fsperf-rounds) or steady the machine")
                verdict.per_workload[r.name] = verdict.per_workload[r.name].worst(Outcome.INCONCLUSIVE)
    return verdict


def _carried(r: WorkloadResult, metric: str) -> str:
    """A peak the daemon mostly held before the window (issue 74.1): said in the failure."""
    d = r.daemon
    if metric != Fig.DAEMON_RSS or d is None or not d.carried:
        return ""
    return (f"; the daemon held {units.format_mb(d.start_rss_bytes or 0)} as the window started "
            "(earlier work on this mount): bound the window's own growth with max_rss_growth, "
            "or mount it for the test (fsperf_mount)")


PER_DAEMON = (Fig.DAEMON_CPU, Fig.DAEMON_RSS)  # a limit on one daemon: each host's, apart


def _per_host(threshold: Threshold, r: WorkloadResult, verdict: Verdict) -> bool:
    """A daemon threshold on a run on several hosts (--fsperf-hosts) holds on every host's
    daemon, each judged apart and named (the sum over machines is no one daemon's).
    Returns whether `r` ran on hosts (then it is judged here)."""
    rows = [c for c in r.clients if c.host]
    if not rows:
        return False
    metric = threshold.spec.metric
    for c in rows:
        if c.daemon_of:  # pods of one node: their daemon is judged in its first pod's row
            continue
        d = c.daemon
        value = (None if d is None else d.countable_cpu if metric == Fig.DAEMON_CPU
                 else float(d.peak_rss_bytes))
        if value is None:
            said = (f"{threshold.named} not judged on {c.place} "
                    f"({c.daemon_note or 'its daemon ran too short for a CPU figure'})")
            verdict.notes.append(f"{r.name}: {said}")
            verdict.not_judged.setdefault(r.name, []).append(said)
            if verdict.per_workload[r.name] == Outcome.PASS:
                verdict.per_workload[r.name] = Outcome.PARTIAL
        elif not threshold.holds(value):
            verdict.failures.append(threshold.describe_failure(f"{r.name} on {c.place}", value))
            verdict.per_workload[r.name] = Outcome.FAIL
    return True


def not_measured(r: WorkloadResult, metric: str) -> str:
    """Why a figure of a meter is None: that meter's own reason (figures.Source)."""
    found = METRICS.get(metric.split(":", 1)[0])
    source = found.source if found else Source.DAEMON
    if metric == Fig.DAEMON_CPU and r.daemon is not None:
        return _short_cpu(r)
    return WHY[source](r, metric)


def _no_shape(r: WorkloadResult) -> str:
    if r.timeline is None:
        return f"it ran under {MIN_INTERVALS + 1} s: no timeline"
    return "too few intervals, or the daemon could not be read, for this figure"


def _short_cpu(r: WorkloadResult) -> str:
    """Why a daemon that was found has no CPU figure: its I/O window was too short."""
    assert r.daemon is not None
    seconds = r.daemon.cpu_window_seconds or r.daemon.wall_seconds
    return (f"I/O ran {seconds:.2g} s, under the {SHORT_WINDOW:g} s daemon CPU time needs: it is "
            "counted in 10 ms ticks")


WHY: dict[Source, Callable[[WorkloadResult, str], str]] = {
    Source.RUN: lambda r, m: r.daemon_note,
    Source.DAEMON: lambda r, m: r.daemon_note,
    Source.STORE: lambda r, m: r.requests_note or "no object-store request counters",
    Source.FUSE: lambda r, m: r.fuse_note or "no FUSE trace",
    Source.PAGE_CACHE: lambda r, m: r.page_cache_note or "the page cache was not counted",
    Source.SHAPE: lambda r, m: _no_shape(r),
    Source.CEILING: lambda r, m: r.ceiling_note(m),
}

SAID_ERRORS = 4  # kinds of failed operation named in a failure line


def _failed_operations(plan: Plan, judged: list[WorkloadResult], verdict: Verdict) -> None:
    """Operations the application saw fail fail the workload, with or without a threshold,
    unless the test allows them (max_app_errors): a store that only slows or retries must
    never surface as ENOENT (mountpoint-s3#1422)."""
    if any(t.keyword == "max_app_errors" for t in plan.thresholds):
        return  # judged as any threshold
    for r in judged:
        ops = r.ops
        if ops is None or not ops.failed:
            continue
        kinds = sorted(ops.errors.items(), key=lambda kv: -kv[1])
        said = ", ".join(f"{k} {n}" for k, n in kinds[:SAID_ERRORS])
        more = f" and {len(kinds) - SAID_ERRORS} more kinds" if len(kinds) > SAID_ERRORS else ""
        verdict.failures.append(
            f"{r.name}: {ops.failed} operations failed ({said}{more}; first: {ops.first_error}): "
            "the application saw them; max_app_errors= allows some")
        verdict.per_workload[r.name] = Outcome.FAIL
